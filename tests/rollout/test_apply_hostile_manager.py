"""`rollout apply` and `status` against a compose-manager that answers badly: a redirect,
a reply that is not its JSON, one too large, text with the token or terminal controls.
A real HTTP server on 127.0.0.1 plays the host."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rollout.cli import main
from rollout.plan import deploy
from rollout.plan.deploy import CallFailed, Host

TOKEN = "tok-" + "9" * 12  # built here, not a credential-shaped literal
Answer = Callable[[BaseHTTPRequestHandler], None]


class _Handler(BaseHTTPRequestHandler):
    answer: ClassVar[Answer]
    seen: ClassVar[list[tuple[str, str | None]]]

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        self.answer()

    do_POST = do_GET


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], tuple[str, list[tuple[str, str | None]]]]]:
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Answer) -> tuple[str, list[tuple[str, str | None]]]:
        seen: list[tuple[str, str | None]] = []
        handler = type("Handler", (_Handler,), {"answer": answer, "seen": seen})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", seen

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _reply(status: int, body: bytes, **headers: str) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def test_a_redirect_is_not_followed_so_the_token_goes_nowhere_else(serve: Any) -> None:
    elsewhere, seen_there = serve(_reply(200, b"{}"))
    url, _ = serve(_reply(302, b"", Location=f"{elsewhere}/status"))
    with pytest.raises(CallFailed, match=r"a redirect to .* not followed"):
        Host("h1", url, TOKEN).get("/status")
    assert seen_there == []


@pytest.mark.parametrize(
    "body", [b"<html>proxy error</html>", b"[1, 2]", b"[" * 200_000], ids=["html", "a list", "deep"]
)
def test_a_reply_that_is_not_a_json_object_is_a_failed_call(serve: Any, body: bytes) -> None:
    """A failed call takes apply's failure path, which undoes what passed its down; a
    ValueError ended the run as a bug and left a service down."""
    url, _ = serve(_reply(200, body))
    with pytest.raises(CallFailed, match="not a reply of compose-manager"):
        Host("h1", url, TOKEN).get("/status")
    streamed = b'{"event": "stdout", "data": "ok"}\n' + body + b"\n"
    url, _ = serve(_reply(200, streamed))
    events = Host("h1", url, TOKEN).stream("POST /compose/up", {})
    assert next(events) == {"event": "stdout", "data": "ok"}
    with pytest.raises(CallFailed, match="not a reply of compose-manager"):
        next(events)


def test_a_reply_past_the_limit_is_not_read(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy, "REPLY_LIMIT", 1000)
    url, _ = serve(_reply(200, b'{"a": "' + b"x" * 5000 + b'"}'))
    with pytest.raises(CallFailed, match="a reply of more than 1000 bytes"):
        Host("h1", url, TOKEN).get("/status")


def test_what_a_host_sends_is_shown_with_the_token_masked_and_controls_escaped() -> None:
    shown = Host("h1", "http://127.0.0.1:1", TOKEN).shown(f"token is {TOKEN}\x1b]0;x\x07\x1b[2J\nsecond")
    assert shown == "token is <token>\\u001b]0;x\\u0007\\u001b[2J\\u000asecond"


def _plan(tmp_path: Path) -> Path:
    plan = {
        "format": "tierops.rollout.plan/2",
        "tags": {"new": "v0.0.2", "old": "v0.0.1", "notes": [], "deployable": "deployable now"},
        "files": [{"path": "prod/x.yaml", "hosts": ["h1"], "stages": [], "rollback": []}],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def test_a_host_that_fails_its_status_is_exit_3_before_any_call(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", TOKEN)
    url, seen = serve(_reply(500, json.dumps({"error": f"boom {TOKEN}\nline"}).encode()))
    endpoints = tmp_path / "hosts.yaml"
    endpoints.write_text(f"h1: {url}\n", encoding="utf-8")
    assert main(["apply", str(_plan(tmp_path)), "--endpoints", str(endpoints)]) == 3
    err = capsys.readouterr().err
    assert err == "h1: GET /status: HTTP 500: boom <token>\\u000aline; nothing was sent\n"
    assert [path for path, _ in seen] == ["/status"]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:1 foo", "holds a space or a control character"),
        ("http://[::1", "is not a URL"),
        ("http://127.0.0.1:99999", "is not a URL"),
        ("http://user:hunter2@127.0.0.1:1/", "must not hold a user or password"),
    ],
)
def test_an_endpoint_that_is_no_url_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str, said: str
) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", TOKEN)
    endpoints = tmp_path / "hosts.yaml"
    endpoints.write_text(f"h1: {json.dumps(url)}\n", encoding="utf-8")
    assert main(["apply", str(_plan(tmp_path)), "--endpoints", str(endpoints)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{endpoints}: host h1: the endpoint {said}") and len(err.splitlines()) == 1
    assert "hunter2" not in err
