"""`rollout apply` and `status` against a compose-manager that answers badly: a redirect,
a reply that is not its JSON, one too large, text with the token or terminal controls.
A real HTTP server on 127.0.0.1 plays the host."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rollout.cli import main
from rollout.plan import deploy, deployer
from rollout.plan.deploy import CallFailed, Host
from tests.httpstub import Answer, Seen, reply, servers, trickle
from tierops.errors import TieropsError, UsageError

TOKEN = "tok-" + "9" * 12  # built here, not a credential-shaped literal


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], tuple[str, Seen]]]:
    with servers() as start:
        yield start


def test_a_redirect_is_not_followed_so_the_token_goes_nowhere_else(serve: Any) -> None:
    elsewhere, seen_there = serve(reply(200, b"{}"))
    url, _ = serve(reply(302, b"", Location=f"{elsewhere}/status"))
    with pytest.raises(CallFailed, match=r"a redirect to .* not followed"):
        Host("h1", url, TOKEN).get("/status")
    assert seen_there == []


@pytest.mark.parametrize(
    "body", [b"<html>proxy error</html>", b"[1, 2]", b"[" * 200_000], ids=["html", "a list", "deep"]
)
def test_a_reply_that_is_not_a_json_object_is_a_failed_call(serve: Any, body: bytes) -> None:
    """A failed call takes apply's failure path, which undoes what passed its down; a
    ValueError ended the run as a bug and left a service down."""
    url, _ = serve(reply(200, body))
    with pytest.raises(CallFailed, match="not a reply of compose-manager"):
        Host("h1", url, TOKEN).get("/status")
    streamed = b'{"event": "stdout", "data": "ok"}\n' + body + b"\n"
    url, _ = serve(reply(200, streamed))
    events = Host("h1", url, TOKEN).stream("POST /compose/up", {})
    assert next(events) == {"event": "stdout", "data": "ok"}
    with pytest.raises(CallFailed, match="not a reply of compose-manager"):
        next(events)


def test_a_reply_past_the_limit_is_not_read(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy, "REPLY_LIMIT", 1000)
    url, _ = serve(reply(200, b'{"a": "' + b"x" * 5000 + b'"}'))
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
    url, seen = serve(reply(500, json.dumps({"error": f"boom {TOKEN}\nline"}).encode()))
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


def test_a_token_with_an_accent_or_a_quote_is_masked_before_it_is_escaped() -> None:
    for token in ("tök3n-" + "x" * 8, 'ab"cd' + "x" * 8):
        assert Host("h1", "http://127.0.0.1:1", token).shown(f"v9.{token}") == "v9.<token>"
    from rollout.commands.status import _masked

    token = "tök3n-" + "x" * 8
    assert _masked({"files": [{"deployed": f"v9.{token}"}]}, token) == {"files": [{"deployed": "v9.<token>"}]}


def test_docker_ps_rows_that_are_not_json_objects_are_no_containers() -> None:
    """docker may print a warning before its rows; a host may send anything."""
    output = 'WARNING: something\n[1, 2]\n{"Labels": "a=b", "State": "running"}\n' + "[" * 100_000 + "\n"
    assert deploy.ps_rows(output) == [{"Labels": "a=b", "State": "running"}]


class _FakeHost:
    """A host whose calls play a script: each is a list of events, or an exception."""

    def __init__(self, script: list[Any]) -> None:
        self.name, self.script = "h1", script
        self.sent: list[str] = []

    def shown(self, text: object) -> str:
        return str(text)

    def get(self, path: str) -> dict[str, Any]:
        return {}

    def stream(self, endpoint: str, body: Any) -> Iterator[dict[str, Any]]:
        self.sent.append(endpoint)
        answer = self.script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        yield from answer


def _two_step_plan() -> dict[str, Any]:
    down = {"number": "1.1", "action": "down", "endpoint": "POST /compose/down", "payload": {"tag": "v0.0.2"}}
    up = {"number": "1.2", "action": "up", "endpoint": "POST /compose/up", "payload": {"tag": "v0.0.2"}}
    back = {"number": "R1.1", "action": "up", "endpoint": "POST /compose/up", "payload": {"tag": "v0.0.1"}}
    return {
        "files": [
            {
                "path": "prod/x.yaml",
                "hosts": ["h1"],
                "stages": [{"number": 1, "service": "a", "steps": [down, up]}],
                "rollback": [{"number": "R1", "service": "a", "undoes": 1, "steps": [back]}],
            }
        ]
    }


DONE = [{"event": "done", "success": True, "exit_code": 0}]


@pytest.mark.parametrize(
    ("up_answer", "raised"),
    [
        ([{"event": "done", "success": "false", "exit_code": 1}], None),
        (deploy.Unreachable("h1 (http://x) does not answer: reset"), deploy.Unreachable),
    ],
    ids=["success as a string", "the host gone mid-file"],
)
def test_a_failure_after_the_down_undoes_it_and_a_run_again_starts_the_file_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, up_answer: Any, raised: type[BaseException] | None
) -> None:
    monkeypatch.setattr(deployer, "problems", lambda endpoint, payload: [])  # payloads are not the point here
    plan_path = tmp_path / "plan.json"
    plan_path.write_text("{}", encoding="utf-8")
    host = _FakeHost([DONE, up_answer, DONE])
    lines: list[str] = []
    with deploy.Journal.open(tmp_path / "journal", deploy.plan_digest(plan_path)) as journal:
        hosts: dict[str, Any] = {"h1": host}
        applier = deploy.Applier(_two_step_plan(), hosts, journal, lines.append, rollback_on_failure=True)
        if raised is None:
            assert applier.run() is False
            assert host.sent == [
                "POST /compose/down",
                "POST /compose/up",
                "POST /compose/up",
            ]  # the rollback sent
        else:
            with pytest.raises(raised):
                applier.run()
            # Unreachable: the undo is printed, never sent to a host that does not answer.
            assert (
                "to undo what ran, send these calls in order (or apply with --rollback-on-failure):" in lines
            )
        assert journal.done == set()
    with deploy.Journal.open(tmp_path / "journal", deploy.plan_digest(plan_path)) as again:
        assert again.done == set()  # a run again sends the down and the up again


def test_a_journal_that_is_a_fifo_or_not_a_journal_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TieropsError, match="not a regular file"):
        deploy.Journal.open(fifo, "sha256:x")
    for text in ("[1]\n", "null\n", '{"plan": "sha256:x"}\n5\n'):
        (tmp_path / "j").write_text(text, encoding="utf-8")
        with pytest.raises(UsageError, match="not a journal of rollout apply"):
            deploy.Journal.open(tmp_path / "j", "sha256:x")
    with pytest.raises(UsageError, match="no directory to write into"):
        deploy.Journal.open(tmp_path / "nodir" / "j", "sha256:x")


def test_a_reply_sent_a_byte_at_a_time_ends_at_its_deadline(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each byte within the per-read timeout, the whole never: a verification polling
    such a host would never reach its --wait."""
    monkeypatch.setattr(deploy, "REPLY_S", 1.0)

    url, _ = serve(trickle)
    started = time.monotonic()
    with pytest.raises(deploy.Unreachable, match="no whole reply within 1 s"):
        Host("h1", url, TOKEN).get("/docker/ps")
    assert time.monotonic() - started < 3
