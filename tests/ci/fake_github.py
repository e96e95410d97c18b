"""A local fake of the GitHub REST endpoints the sticky comment uses: a real HTTP server on 127.0.0.1.

    GET   /repos/{owner}/{repo}/issues/{n}/comments?per_page=&page=   (Link: rel="next")
    POST  /repos/{owner}/{repo}/issues/{n}/comments                   201, the new comment
    PATCH /repos/{owner}/{repo}/issues/comments/{id}                  200, the edited comment
    GET   /repos/{owner}/{repo}/pulls/{n}                             the pull request's head and state

Every request must carry `Authorization: Bearer <token>`; every request is logged
(method, path) so a test can assert exactly what was sent.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "fake-token-for-tests"
BOT = "github-actions[bot]"


@dataclass
class State:
    repo: str
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue -> comments
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    log: list[tuple[str, str]] = field(default_factory=list)
    next_id: int = 1000
    max_per_page: int = 100
    redirect_to: str | None = None  # answer every request with a 302 there

    def add(self, number: int, body: str, login: str = BOT) -> dict[str, Any]:
        self.next_id += 1
        comment = {"id": self.next_id, "body": body, "user": {"login": login, "type": "Bot"}}
        self.comments.setdefault(number, []).append(comment)
        return comment

    def writes(self) -> list[tuple[str, str]]:
        return [entry for entry in self.log if entry[0] != "GET"]


def _handler(state: State, base: list[str]) -> type[BaseHTTPRequestHandler]:
    prefix = f"/repos/{state.repo}/"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
            payload = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def _route(self, method: str) -> None:  # noqa: PLR0911, PLR0912  (one router, one branch per endpoint)
            url = urllib.parse.urlsplit(self.path)
            state.log.append((method, url.path))
            if state.redirect_to is not None:
                self.send_response(302)
                self.send_header("Location", state.redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, {"message": "Bad credentials"})
                return
            if not url.path.startswith(prefix):
                self._send(404, {"message": "Not Found"})
                return
            rest = url.path[len(prefix) :]
            body = None
            if method in ("POST", "PATCH"):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
            query = urllib.parse.parse_qs(url.query)
            if match := re.fullmatch(r"issues/(\d+)/comments", rest):
                number = int(match.group(1))
                if method == "GET":
                    self._list(number, query)
                    return
                if method == "POST" and isinstance(body, dict) and isinstance(body.get("body"), str):
                    self._send(201, state.add(number, body["body"]))
                    return
            if (match := re.fullmatch(r"issues/comments/(\d+)", rest)) and method == "PATCH":
                for comments in state.comments.values():
                    for comment in comments:
                        if comment["id"] == int(match.group(1)) and isinstance(body, dict):
                            comment["body"] = body["body"]
                            self._send(200, comment)
                            return
            if (match := re.fullmatch(r"pulls/(\d+)", rest)) and method == "GET":
                pull = state.pulls.get(int(match.group(1)))
                if pull is not None:
                    self._send(200, pull)
                    return
            self._send(404, {"message": "Not Found"})

        def _list(self, number: int, query: dict[str, list[str]]) -> None:
            per_page = min(int(query.get("per_page", ["30"])[0]), state.max_per_page)
            page = int(query.get("page", ["1"])[0])
            comments = state.comments.get(number, [])
            chunk = comments[(page - 1) * per_page : page * per_page]
            headers = {}
            if page * per_page < len(comments):
                link = f"{base[0]}{prefix}issues/{number}/comments?per_page={per_page}&page={page + 1}"
                headers["Link"] = f'<{link}>; rel="next", <{link}>; rel="last"'
            self._send(200, chunk, headers)

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def do_PATCH(self) -> None:
            self._route("PATCH")

    return Handler


@contextmanager
def fake_github(repo: str = "tierops/tierops") -> Iterator[tuple[str, State]]:
    """(the API base URL, the server's state) while the server runs."""
    state = State(repo)
    base: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, base))
    base.append(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield base[0], state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
