"""A real HTTP server on 127.0.0.1 that plays a remote API answering as a test says:
each request is logged (path, Authorization) and answered by the test's function."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

Answer = Callable[[BaseHTTPRequestHandler], None]
Seen = list[tuple[str, str | None]]


class _Handler(BaseHTTPRequestHandler):
    answer: ClassVar[Answer]
    seen: ClassVar[Seen]

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        # Read the request's body: a socket closed with it unread resets the connection.
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.answer()

    do_PATCH = do_POST = do_GET


@contextlib.contextmanager
def servers() -> Iterator[Callable[[Answer], tuple[str, Seen]]]:
    """`start(answer)` -> (the server's base URL, the requests it saw); all stopped at the end."""
    started: list[ThreadingHTTPServer] = []

    def start(answer: Answer) -> tuple[str, Seen]:
        seen: Seen = []
        server = ThreadingHTTPServer(
            ("127.0.0.1", 0), type("Handler", (_Handler,), {"answer": answer, "seen": seen})
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", seen

    try:
        yield start
    finally:
        for server in started:
            server.shutdown()
            server.server_close()


def reply(status: int, body: bytes, **headers: str) -> Answer:
    """An answer: `status`, `headers`, then `body`."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        # The client may stop reading a reply it refuses: not the server's failure.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.wfile.write(body)

    return answer


def trickle(handler: BaseHTTPRequestHandler) -> None:
    """An answer that sends its body a byte every 0.1 s, for 4 s: each read within any
    per-read timeout, the whole reply never within a short deadline."""
    handler.send_response(200)
    handler.send_header("Content-Length", "100")
    handler.end_headers()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        for _ in range(40):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.1)
