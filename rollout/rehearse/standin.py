"""Stand-ins for what cannot run here, as one stdlib-only program copied into the rehearsal image.

`standin.py ROLE ARGS...`:
  engine   an SGLang or vLLM server: ARGS are the compose file's command (`sglang serve
           --port 8000 ...`); it listens where that argv says and answers /health,
           /v1/models, /v1/chat/completions (plain and SSE), /metrics and /get_server_info
           (the server args parsed from its own argv, for the rehearsal's probe); a
           pooling model (vLLM `--runner pooling`, SGLang `--is-embedding`) answers
           /v1/embeddings, or /v1/score when converted to a classifier, and refuses chat
           as the real servers do; with REHEARSE_COLD_START_S set, it answers 503 for
           that many seconds first.
  proxy    the engines' load balancer: reads the proxy's own environment contract
           (VLLM_BACKEND_URLS, LISTEN_ADDR, PROXY_API_TOKEN) and forwards round robin.
  gateway  the upstream gateway a registrar announces itself to: accepts any request.
  noop     a one-shot tool of the engine image (a model download): succeeds at once.
  idle     a service whose program needs hardware or a network absent here: waits for
           SIGTERM and exits 0.

It runs inside the image with Debian's python3, so it imports nothing of tierops.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

ENGINE_PROGRAMS = ("sglang", "vllm")
IDENTITY = socket.gethostname()


def parse_server_args(argv: list[str]) -> dict[str, Any]:
    """`--flag value` pairs and bare `--flag`s after the engine program, as SGLang names them
    (dashes to underscores); a bare positional after `serve` is vLLM's model."""
    args: dict[str, Any] = {}
    positional: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token.startswith("--"):
            name, sep, inline = token[2:].partition("=")
            key = name.replace("-", "_")
            if sep:
                args[key] = inline
            elif index + 1 < len(argv) and not argv[index + 1].startswith("--"):
                args[key] = argv[index + 1]
                index += 1
            else:
                args[key] = True
        else:
            positional.append(token)
        index += 1
    if positional and "model_path" not in args and "model" not in args:
        args["model"] = positional[-1]
    return args


def engine_args(argv: list[str]) -> tuple[str, list[str]]:
    """The engine's kind and the argv after its program and subcommand (`sglang serve`,
    `vllm serve`, `python3 -m sglang.launch_server`)."""
    for index, token in enumerate(argv):
        base = token.rsplit("/", 1)[-1]
        for kind in ENGINE_PROGRAMS:
            if base == kind or base.startswith(kind + "."):
                rest = argv[index + 1 :]
                if rest and rest[0] == "serve":
                    rest = rest[1:]
                return kind, rest
    return "sglang", argv


def exit_on_term() -> None:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))


class EngineHandler(BaseHTTPRequestHandler):
    server_args: ClassVar[dict[str, Any]] = {}
    kind = "sglang"
    requests_served = 0
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"engine {self.command} {self.path}\n")

    def model(self) -> str:
        return str(
            self.server_args.get("served_model_name")
            or self.server_args.get("model_path")
            or self.server_args.get("model")
            or "model"
        )

    def reply(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Rehearse-Engine", IDENTITY)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if time.monotonic() < READY_AT:
            # Loading, as a real engine is while it reads weights: every endpoint refuses.
            self.reply(503, b'{"error": "loading"}')
        elif path in ("/health", "/health_generate", "/ping"):
            self.reply(200, b"")
        elif path == "/v1/models":
            data = {
                "object": "list",
                "data": [{"id": self.model(), "object": "model", "owned_by": self.kind}],
            }
            self.reply(200, json.dumps(data).encode())
        elif path == "/get_server_info":
            self.reply(
                200, json.dumps({**self.server_args, "engine": self.kind, "identity": IDENTITY}).encode()
            )
        elif path == "/metrics":
            prefix = "sglang" if self.kind == "sglang" else "vllm"
            text = (
                f"# HELP {prefix}:num_requests_total Requests served by the stand-in.\n"
                f"# TYPE {prefix}:num_requests_total counter\n"
                f'{prefix}:num_requests_total{{model_name="{self.model()}"}} {EngineHandler.requests_served}\n'
            )
            self.reply(200, text.encode(), "text/plain; version=0.0.4")
        else:
            self.reply(404, b'{"error":"not found"}')

    def pooling(self) -> str | None:
        """What a pooling model serves ("embed" or "classify"); None: it generates text."""
        args = self.server_args
        if args.get("runner") == "pooling" or args.get("is_embedding") is True:
            return "classify" if args.get("convert") == "classify" else "embed"
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        if time.monotonic() < READY_AT:
            self.reply(503, b'{"error": "loading"}')
            return
        path = self.path.split("?", 1)[0]
        pooling = self.pooling()
        served = {"embed": ("/v1/embeddings",), "classify": ("/v1/score",)}.get(
            pooling or "", ("/v1/chat/completions", "/v1/completions", "/generate")
        )
        if path not in served:
            known = path in ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/score")
            # A pooling model refuses generation (and a generating one pooling) with 400.
            self.reply(400 if known else 404, b'{"error":"the model does not support this API"}')
            return
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            self.reply(400, b'{"error":"body is not JSON"}')
            return
        EngineHandler.requests_served += 1
        if pooling == "embed":
            data: dict[str, Any] = {
                "object": "list",
                "model": self.model(),
                "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5, 0.125]}],
            }
            self.reply(200, json.dumps(data).encode())
            return
        if pooling == "classify":
            data = {
                "object": "list",
                "model": self.model(),
                "data": [{"object": "score", "index": 0, "score": 0.5}],
            }
            self.reply(200, json.dumps(data).encode())
            return
        created = int(time.time())
        text = f"stand-in {self.kind} engine {IDENTITY}"
        if request.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("X-Rehearse-Engine", IDENTITY)
            self.send_header("Connection", "close")
            self.end_headers()
            for word in text.split():
                chunk = {
                    "id": "rehearse",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": self.model(),
                    "system_fingerprint": IDENTITY,
                    "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
            return
        data = {
            "id": "rehearse",
            "object": "chat.completion",
            "created": created,
            "model": self.model(),
            "system_fingerprint": IDENTITY,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 4, "total_tokens": 5},
        }
        self.reply(200, json.dumps(data).encode())


# When the stand-in engine starts answering (REHEARSE_COLD_START_S after it starts).
READY_AT = time.monotonic() + float(os.environ.get("REHEARSE_COLD_START_S") or 0)


def serve_engine(argv: list[str]) -> None:
    kind, rest = engine_args(argv)
    args = parse_server_args(rest)
    EngineHandler.server_args = args
    EngineHandler.kind = kind
    host = str(args.get("host") or "0.0.0.0")
    port = int(args.get("port") or (30000 if kind == "sglang" else 8000))
    sys.stderr.write(f"stand-in {kind} engine listening on {host}:{port}\n")
    ThreadingHTTPServer((host, port), EngineHandler).serve_forever()


class ProxyHandler(BaseHTTPRequestHandler):
    backends: ClassVar[list[str]] = []
    token = ""
    turn = itertools.count()
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"proxy {self.command} {self.path}\n")

    def reply(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for name, value in (headers or {"Content-Type": "application/json"}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def healthy(self) -> bool:
        for backend in self.backends:
            try:
                with urllib.request.urlopen(backend + "/health", timeout=3):
                    return True
            except (OSError, urllib.error.URLError):
                continue
        return False

    def forward(self, body: bytes | None) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self.reply(200 if self.healthy() else 503, b"")
            return
        if path == "/metrics":
            self.reply(200, b"# stand-in proxy\n", {"Content-Type": "text/plain"})
            return
        if self.token and self.headers.get("Authorization") != f"Bearer {self.token}":
            self.reply(401, b'{"error":"unauthorized"}')
            return
        if not self.backends:
            self.reply(503, b'{"error":"no backends"}')
            return
        backend = self.backends[next(self.turn) % len(self.backends)]
        request = urllib.request.Request(backend + self.path, data=body, method=self.command)
        request.add_header("Content-Type", self.headers.get("Content-Type") or "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                payload = answer.read()
                headers = {
                    k: v for k, v in answer.getheaders() if k.lower() in ("content-type", "x-rehearse-engine")
                }
                self.reply(answer.status, payload, headers)
        except urllib.error.HTTPError as error:
            self.reply(error.code, error.read())
        except OSError as error:
            self.reply(502, json.dumps({"error": f"{backend}: {error}"}).encode())

    def do_GET(self) -> None:
        self.forward(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.forward(self.rfile.read(length))


def serve_proxy() -> None:
    ProxyHandler.backends = [
        url.strip().rstrip("/") for url in os.environ.get("VLLM_BACKEND_URLS", "").split(",") if url.strip()
    ]
    ProxyHandler.token = os.environ.get("PROXY_API_TOKEN", "")
    host, _, port = os.environ.get("LISTEN_ADDR", "0.0.0.0:8000").rpartition(":")
    sys.stderr.write(f"stand-in proxy on {host}:{port} to {ProxyHandler.backends}\n")
    ThreadingHTTPServer((host or "0.0.0.0", int(port)), ProxyHandler).serve_forever()


class GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"gateway {self.command} {self.path}\n")

    def answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = answer


def main(argv: list[str]) -> int:
    exit_on_term()
    role, rest = (argv[0], argv[1:]) if argv else ("idle", [])
    if role == "engine":
        serve_engine(rest)
    elif role == "proxy":
        serve_proxy()
    elif role == "gateway":
        ThreadingHTTPServer(("0.0.0.0", int(rest[0]) if rest else 8000), GatewayHandler).serve_forever()
    elif role == "noop":
        sys.stderr.write(f"stand-in: skipped {' '.join(rest)} (nothing to fetch in a rehearsal)\n")
    else:
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
