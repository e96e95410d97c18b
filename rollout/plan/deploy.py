"""Send a rollout plan's calls to each host's compose-manager, verify, and roll back.

`python -m rollout apply PLAN.json` reads the plan `python -m rollout plan --format
json` wrote and, per file, host by host in the plan's order (the canary host first),
sends every call of its steps to that host's compose-manager, reads the NDJSON stream
to its `done` event, and checks what each step promised:

- stage: a `staged` event;
- preview: the `plan` event names the service under the expected verdict, no other
  service under `create` or `recreate`, nothing under `remove`;
- down and up: `done` with success;
- verify: the checks compose-manager can answer (`GET /docker/ps`: running, healthy,
  the image, a label; `POST /compose/logs`: the startup `server_args`), polled until
  they hold or the wait runs out. Checks only a shell or the metrics can answer are
  listed for the operator.

It stops at the first failure and undoes what was already past its down, in the
plan's rollback order (performed with `--rollback-on-failure`, else printed). A
journal records every step done, so an interrupted apply resumes where it stopped.
Nothing here prints: the caller passes `report`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollout.plan import deployer
from tierops.atomic import write_bytes_atomic
from tierops.entry import visible
from tierops.errors import RefusedError, TieropsError, UsageError
from tierops.exitcodes import ExitCode
from tierops.yamlload.files import read_regular

TOKEN_ENV = "COMPOSE_MANAGER_TOKEN"
# The most a reply (or one line of a stream) may hold: compose-manager's are a few KiB;
# more is not its reply, and is not read into memory.
REPLY_LIMIT = 16 << 20
MAX_EVENTS = 1_000_000
REPLY_S = 120.0  # a status, `docker ps` or logs reply: seconds for all of it
JOURNAL_LIMIT = (
    16 << 20
)  # a line a step: a journal this large is not one  # a compose call prints a line per container step, not millions
PLAN_FORMAT = "tierops.rollout.plan/2"
WAIT_REPORT = 30.0  # seconds between the lines that say a verification still waits
API_KINDS = frozenset({"running", "healthy", "image", "label", "server_args"})
Report = Callable[[str], None]


class Unreachable(TieropsError):
    """A host's compose-manager did not answer (exit 3: nothing the command line can fix)."""

    exit_code = ExitCode.INTERNAL


class CallFailed(TieropsError):
    """compose-manager refused a call, or a step's result is not what the plan promised."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the bearer token to whatever host it names: refused (the
    3xx then fails the call like any other status)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


@dataclass(frozen=True)
class Host:
    name: str
    url: str
    token: str
    timeout: float = 3600.0  # an up waits for a container start; a pull can take long

    def shown(self, text: object) -> str:
        """Text a host sent, for one line of output: the token masked, controls escaped,
        bounded."""
        line = str(text).replace(self.token, "<token>") if self.token else str(text)
        line = visible(line).replace("\n", "\\u000a")  # after the mask: it escapes what a token may hold
        return line if len(line) <= 300 else line[:297] + "..."

    def _request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url.rstrip("/") + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            return _OPENER.open(request, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                try:
                    reply = json.loads(exc.read(REPLY_LIMIT) or b"{}")
                except (ValueError, RecursionError):
                    reply = None
            message = (reply.get("error") if isinstance(reply, dict) else None) or exc.reason
            if 300 <= exc.code < 400:
                message = (
                    f"a redirect to {exc.headers.get('Location')!r}, not followed (it would carry the token)"
                )
            raise CallFailed(
                f"{self.name}: {method} {path}: HTTP {exc.code}: {self.shown(message)}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise Unreachable(f"{self.name} ({self.url}) does not answer: {self.shown(reason)}") from None

    def _object(self, raw: bytes, method: str, path: str) -> dict[str, Any]:
        """One JSON object of a reply; CallFailed (the normal failure path, with its undo)
        for anything else."""
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            raise CallFailed(
                f"{self.name}: {method} {path}: not a reply of compose-manager (a JSON object): "
                f"{self.shown(raw[:80].decode('utf-8', 'replace'))}"
            )
        return value

    def _read(self, response: Any, method: str, path: str) -> bytes:
        """A whole reply within REPLY_S (a host that sends a byte at a time never trips
        the per-read timeout, and a verification must end within its --wait)."""
        deadline = time.monotonic() + REPLY_S
        chunks: list[bytes] = []
        size = 0
        try:
            while size <= REPLY_LIMIT and (chunk := response.read1(min(1 << 16, REPLY_LIMIT + 1 - size))):
                if time.monotonic() > deadline:
                    raise Unreachable(
                        f"{self.name} ({self.url}): {method} {path}: no whole reply within {REPLY_S:.0f} s"
                    )
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:  # the connection reset or timed out mid-reply
            raise Unreachable(f"{self.name} ({self.url}) stopped answering: {self.shown(exc)}") from None
        raw = b"".join(chunks)
        if len(raw) > REPLY_LIMIT:
            raise CallFailed(f"{self.name}: {method} {path}: a reply of more than {REPLY_LIMIT} bytes")
        return raw

    def _line(self, response: Any) -> bytes:
        try:
            line: bytes = response.readline(REPLY_LIMIT + 1)
        except OSError as exc:  # the connection reset or timed out mid-stream
            raise Unreachable(f"{self.name} ({self.url}) stopped answering: {self.shown(exc)}") from None
        return line

    def get(self, path: str) -> dict[str, Any]:
        with self._request("GET", path, timeout=REPLY_S) as response:
            return self._object(self._read(response, "GET", path), "GET", path)

    def post_json(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with self._request("POST", path, body, timeout=REPLY_S) as response:
            return self._object(self._read(response, "POST", path), "POST", path)

    def stream(self, endpoint: str, body: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The NDJSON events of a compose call, as they arrive."""
        method, path = endpoint.split(" ", 1)
        with self._request(method, path, body) as response:
            while line := self._line(response):
                if len(line) > REPLY_LIMIT:
                    raise CallFailed(f"{self.name}: {endpoint}: an event of more than {REPLY_LIMIT} bytes")
                if line.strip():
                    yield self._object(line, method, path)


@dataclass
class Journal:
    """The steps done, one JSON line each; an apply run again skips them. Its first line
    names the plan (a digest of its file): a journal is never read against another plan,
    whose step numbers would mean other calls. It is locked while a run uses it: two
    applies on one journal would each send every call."""

    path: Path
    plan: str
    done: set[str] = field(default_factory=set)
    lines: list[dict[str, Any]] = field(default_factory=list)
    _lock: Any = None

    @classmethod
    def open(cls, path: Path, plan: str) -> Journal:
        journal = cls(path, plan)
        if not path.exists() and not path.is_symlink():
            write_bytes_atomic(path, (json.dumps({"plan": plan}) + "\n").encode())
        raw = read_regular(path, str(path), limit=JOURNAL_LIMIT)
        if len(raw) > JOURNAL_LIMIT:
            raise UsageError(f"{path}: larger than {JOURNAL_LIMIT} bytes: not a journal of rollout apply")
        try:
            lines = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"{path}: not a journal of rollout apply: {exc}") from None
        if not lines or not all(isinstance(line, dict) for line in lines):
            raise UsageError(f"{path}: not a journal of rollout apply: every line is a JSON object")
        if lines[0].get("plan") != plan:
            raise UsageError(
                f"{path} is the journal of another plan: its steps would be skipped in this one",
                hint="move it away to start this plan from its first step, or pass --journal FILE",
            )
        journal._lock = path.open("a", encoding="utf-8")  # held for the run
        try:
            fcntl.flock(journal._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            journal._lock.close()
            raise RefusedError(
                f"{path}: another apply is using this journal", hint="wait for it to finish"
            ) from None
        journal.lines = lines
        journal.done.update(str(line["key"]) for line in lines[1:] if "key" in line)
        return journal

    def close(self) -> None:
        """Release the lock (the next run may use the journal)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, key: str) -> None:
        self.done.add(key)
        line = {"key": key, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self.lines.append(line)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    def forget(self, host: str, path: str) -> None:
        """Drop a file's steps on a host: after a failure, a run again starts that file
        over (a rollback undid its steps; the ones done no longer hold)."""
        prefix = f"{host}\t{path}\t"
        self.done = {key for key in self.done if not key.startswith(prefix)}
        self.lines = [line for line in self.lines if not str(line.get("key", "")).startswith(prefix)]
        text = "".join(json.dumps(line) + "\n" for line in self.lines)
        write_bytes_atomic(self.path, text.encode())


def load_endpoints(path: Path, token: str) -> dict[str, Host]:
    from tierops.yamlload import LoadError, load_path  # the loader only when a file is given

    try:
        documents = load_path(path).documents
    except LoadError as exc:
        raise UsageError(f"{path}:{exc.pos}: {exc.message}") from None
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise UsageError(f"{path}: an endpoints file is one mapping of HOST: URL")
    hosts: dict[str, Host] = {}
    for name, url in documents[0].items():
        problem = _url_problem(url)
        if problem:
            shown = visible(url if isinstance(url, str) and "@" not in url else "<not shown>")
            raise UsageError(f"{path}: host {visible(str(name))}: the endpoint {problem}: {shown}")
        hosts[str(name)] = Host(str(name), url, token)
    return hosts


def _url_problem(url: object) -> str | None:
    """Why `url` is no endpoint, or None."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return "must be an http(s) URL"
    if not url.isprintable() or " " in url:
        return "holds a space or a control character"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a port that is not one
    except ValueError:
        return "is not a URL (its host or port cannot be read)"
    if "@" in parts.netloc:
        return "must not hold a user or password (the token is the credential; it is not shown)"
    if not parts.hostname:
        return "names no host"
    return None


def plan_digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def load_plan(path: Path) -> dict[str, Any]:
    try:
        plan: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a plan: {exc}") from None
    if plan.get("format") != PLAN_FORMAT:
        raise UsageError(
            f"{path}: not a plan of format {PLAN_FORMAT} (write it with `rollout plan --format json`)"
        )
    for file in plan.get("files") or ():
        if file.get("error"):
            raise UsageError(f"{path}: {file['path']}: the plan could not plan it: {file['error']}")
    tags = plan.get("tags") or {}
    for which, option in (("new", "--tag"), ("old", "--base-tag")):
        name = str(tags.get(which) or "")
        if name.startswith("<"):
            raise UsageError(
                f"{path}: the plan names {name}, a placeholder: compose-manager needs the real tag",
                hint=f"write the plan again with {option} TAG",
            )
    deployable = str(tags.get("deployable") or "")
    if deployable.startswith("deployable from"):
        raise RefusedError(
            f"{path}: {tags['new']} is not {deployable}: compose-manager refuses a younger tag",
            hint="apply it then; the age gate has no per-call exception",
        )
    return plan


@dataclass
class Applier:
    plan: Mapping[str, Any]
    hosts: Mapping[str, Host]
    journal: Journal
    report: Report
    rollback_on_failure: bool = False
    wait: float = 2700.0  # a verify waits this long for health (an engine loads in minutes)
    poll: float = 2.0
    report_every: float = WAIT_REPORT

    def run(self) -> bool:
        """True when every step of every host passed; False after a failure (undone or
        printed). Raises UsageError/RefusedError before any call when it cannot start."""
        files = list(self.plan.get("files") or ())
        for file in files:
            if not file["hosts"]:
                raise UsageError(f"{file['path']}: the plan names no host (the fleet's data must name them)")
            missing = [host for host in file["hosts"] if host not in self.hosts]
            if missing:
                raise UsageError(
                    f"no endpoint for {', '.join(missing)} (add HOST: URL to the endpoints file)"
                )
        for name in dict.fromkeys(host for file in files for host in file["hosts"]):
            try:
                in_flight = self.hosts[name].get("/status").get("in_flight")
            except CallFailed as exc:
                # Before any call: the host answers but cannot be read, like one that does not answer.
                raise Unreachable(f"{exc}; nothing was sent") from None
            if in_flight:
                action = in_flight.get("action") if isinstance(in_flight, dict) else None
                raise RefusedError(
                    f"{name}: compose-manager runs {self.hosts[name].shown(action or 'an operation')} now; "
                    "apply starts only on an idle host",
                    hint="wait for it to finish (GET /status), then run apply again",
                )
        for file in files:
            for name in file["hosts"]:
                if not self._file_on_host(file, self.hosts[name]):
                    return False
        return True

    def _file_on_host(self, file: Mapping[str, Any], host: Host) -> bool:
        self.report(f"{file['path']} on {host.name}")
        stages = (
            [{"number": 0, "service": "", "steps": [file["staging"]]}] if file.get("staging") else []
        ) + list(file["stages"])
        for stage in stages:
            passed_down = False
            for step in stage["steps"]:
                key = f"{host.name}\t{file['path']}\t{step['number']}"
                if key in self.journal.done:
                    passed_down = passed_down or step["action"] in ("down", "up")
                    continue
                try:
                    self._step(file, host, stage, step)
                except CallFailed as exc:
                    self.report(f"FAILED {step['number']} {step['action']} {stage['service']}: {exc}")
                    self._undo(file, host, int(stage["number"]), passed_down)
                    self.journal.forget(host.name, file["path"])
                    return False
                except Unreachable as exc:
                    # The host went away mid-file: what to send once it answers, then exit 3.
                    self.report(f"FAILED {step['number']} {step['action']} {stage['service']}: {exc}")
                    self._undo(file, host, int(stage["number"]), passed_down, send=False)
                    self.journal.forget(host.name, file["path"])
                    raise
                self.journal.record(key)
                passed_down = passed_down or step["action"] in ("down", "up")
        self.report(f"{file['path']} on {host.name}: every step passed")
        return True

    def _step(
        self, file: Mapping[str, Any], host: Host, stage: Mapping[str, Any], step: Mapping[str, Any]
    ) -> None:
        service = str(stage["service"])
        self.report(f"  {step['number']} {step['action']} {service}".rstrip())
        if step["action"] == "verify":
            self._verify(file, host, service, step)
            return
        problems = deployer.problems(step["endpoint"], step["payload"])
        if problems:
            raise CallFailed(f"the plan's call would not be read as written: {problems[0]}")
        events: list[dict[str, Any]] = []  # the ones a step is judged by; output is printed, not kept
        for count, event in enumerate(host.stream(step["endpoint"], step["payload"])):
            if count > MAX_EVENTS:
                raise CallFailed(f"more than {MAX_EVENTS} events from one call: a stream that does not end")
            if event.get("event") in ("stdout", "stderr"):
                self.report(f"      {host.shown(event.get('data', ''))}")
            else:
                events.append(event)
        done = next((event for event in events if event.get("event") == "done"), None)
        if done is None or done.get("success") is not True:
            code = done.get("exit_code") if done else "no done event"
            raise CallFailed(f"compose-manager's stream ended without success (exit {code})")
        if step["action"] == "stage" and not any(event.get("event") == "staged" for event in events):
            raise CallFailed("no `staged` event: the images did not land")
        if step["action"] == "preview":
            plan = next((event.get("plan") for event in events if event.get("event") == "plan"), None)
            project = file.get("project") or deployer.load().default_project
            why = preview_mismatch(plan, project, service, str(step.get("verdict") or "recreate"))
            if why:
                raise CallFailed(f"the preview does not match the plan: {why}")

    def _verify(self, file: Mapping[str, Any], host: Host, service: str, step: Mapping[str, Any]) -> None:
        project = file.get("project") or deployer.load().default_project
        for check in step.get("checks") or ():
            if check.get("kind") not in API_KINDS:
                self.report(f"      for the operator: {check['what']}: expect {check['expect']}")
                continue
            started = time.monotonic()
            said = started
            while True:
                seen = self._read(file, host, project, service, check)
                if seen is None:
                    self.report(f"      ok: {check['what']}")
                    break
                now = time.monotonic()
                if now - started >= self.wait:
                    raise CallFailed(f"{check['what']}: expected {check['expect']}, {seen}")
                if now - said >= self.report_every:  # a cold start takes long: say it still waits
                    self.report(
                        f"      waiting: {check['what']}: {seen} ({now - started:.0f} s of {self.wait:.0f} s)"
                    )
                    said = now
                time.sleep(self.poll)

    def _read(
        self, file: Mapping[str, Any], host: Host, project: str, service: str, check: Mapping[str, Any]
    ) -> str | None:
        """None when the check holds, else what was seen."""
        if check["kind"] == "server_args":
            body = {"file": file["path"], "services": [service], "tail": 100000}
            output = str(host.post_json("/compose/logs", body).get("output") or "")
            line = next((text for text in output.splitlines() if "server_args" in text), "")
            return None if check["expect"] in line else f"server_args: {line[:200] or 'not logged yet'}"
        rows = containers(str(host.get("/docker/ps").get("output") or ""), project, service)
        if not rows:
            return "no running container"
        row = rows[0]
        kind = check["kind"]
        if kind == "running":
            return None if row.get("State") == "running" else f"state {row.get('State')}"
        if kind == "healthy":
            healthy = row.get("State") == "running" and "(healthy)" in str(row.get("Status"))
            return None if healthy else f"status {row.get('Status')}"
        if kind == "image":
            return None if row.get("Image") == check["expect"] else f"image {row.get('Image')}"
        labels = labels_of(row)
        value = labels.get(str(check.get("key")))
        return None if value == check["expect"] else f"label {value}"

    def _undo(
        self, file: Mapping[str, Any], host: Host, failed: int, passed_down: bool, *, send: bool = True
    ) -> None:
        """The rollback stages that undo what already ran, in the rollback's order: sent
        with --rollback-on-failure (and `send`), else printed."""
        last = failed if passed_down else failed - 1
        stages = [stage for stage in file.get("rollback") or () if int(stage.get("undoes") or 0) <= last]
        if not stages:
            self.report("nothing to undo: the failing service had not been taken down")
            return
        if file.get("rollback_staging"):
            stages = [{"number": "R0", "service": "", "steps": [file["rollback_staging"]]}, *stages]
        if not (self.rollback_on_failure and send):
            self.report("to undo what ran, send these calls in order (or apply with --rollback-on-failure):")
            for stage in stages:
                for step in stage["steps"]:
                    if "payload" in step:
                        self.report(f"  {step['number']} {step['endpoint']} {json.dumps(step['payload'])}")
            return
        self.report("rolling back what ran, in the rollback's order")
        for stage in stages:
            for step in stage["steps"]:
                key = f"{host.name}\t{file['path']}\t{step['number']}"
                if key in self.journal.done:
                    continue
                try:
                    self._step(file, host, stage, step)
                except CallFailed as exc:
                    self.report(
                        f"ROLLBACK FAILED at {step['number']} {step['action']} {stage['service']}: {exc}"
                    )
                    return
                self.journal.record(key)


def labels_of(row: Mapping[str, Any]) -> dict[str, str]:
    raw = row.get("Labels") or ""
    if isinstance(raw, Mapping):
        return {str(key): str(value) for key, value in raw.items()}
    return dict(item.split("=", 1) for item in str(raw).split(",") if "=" in item)


def ps_rows(output: str) -> list[dict[str, Any]]:
    """The JSON objects of `docker ps --format json` output, one a line; any other line
    (a warning docker printed, garbage from a host) is no container."""
    rows = []
    for line in output.splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def containers(output: str, project: str, service: str) -> list[dict[str, Any]]:
    """The `docker ps --format json` rows of one service of one compose project."""
    rows = []
    for row in ps_rows(output):
        labels = labels_of(row)
        if (
            labels.get("com.docker.compose.project") == project
            and labels.get("com.docker.compose.service") == service
        ):
            rows.append(row)
    return rows


def preview_mismatch(plan: Mapping[str, Any] | None, project: str, service: str, verdict: str) -> str:
    """Why a dry run's `plan` event does not match the plan's preview, or "". Its names
    are containers: the service's `container_name`, or Compose's PROJECT-SERVICE-N."""
    if plan is None:
        return "no `plan` event"
    if not isinstance(plan, Mapping) or not all(
        isinstance(names, list) and all(isinstance(name, str) for name in names) for names in plan.values()
    ):
        return "the `plan` event is not a mapping of verdicts to container names"
    buckets: Mapping[str, Sequence[str]] = plan
    pattern = re.compile(
        rf"(?:Container )?(?:{re.escape(service)}|{re.escape(project)}-{re.escape(service)}-\d+)"
    )

    def mine(name: str) -> bool:
        return bool(pattern.fullmatch(name.strip()))

    if not any(mine(name) for name in buckets.get(verdict) or ()):
        return f"{service} is not under {verdict}: {json.dumps(dict(buckets))}"
    others = [name for key in ("create", "recreate") for name in buckets.get(key) or () if not mine(name)]
    if others:
        return f"it would also create or recreate {', '.join(others)}"
    if buckets.get("remove"):
        return f"it would remove {', '.join(buckets['remove'])}"
    return ""
