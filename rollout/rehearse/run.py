"""One rehearsal: a compose file up on this machine's daemon, probed from outside, then down.

The probes, in order (each named in its verdict line):
  up          `docker compose up` accepts the file plus the override
  healthy     every healthcheck passes, every other service runs, one-shots exit 0
  front-door  each published port answers HTTP(S); chat completions (plain and
              streamed) through it reach every engine
  server-info each engine's /get_server_info equals the file's argv, flag by flag
  restart     an engine killed with SIGKILL is running and answering again
  stop        every container stops on SIGTERM within its stop grace period
A failed probe ends the rehearsal; the containers it names show their last log lines.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollout.rehearse.docker import Docker, last_line
from rollout.rehearse.override import Stack, command_of, read_stack, render

LOG_LINES = 20
DEFAULT_GRACE_S = 10.0
# A container stopped by SIGKILL after its grace period exits 137 (128 + 9).
KILLED = 137
# Seconds between the healthy probe's reads: a stack healthy at once is seen within a
# quarter second, one that takes minutes is read once a second.
HEALTH_POLLS_S = (0.25, 0.25, 0.5, 0.5)
HEALTH_POLL_S = 1.0


class ProbeFailed(Exception):
    def __init__(self, probe: str, message: str, services: list[str] | None = None) -> None:
        super().__init__(message)
        self.probe = probe
        self.services = services or []


def duration(text: Any, default: float) -> float:
    """Seconds of a Compose/Go duration (`1m30s`, `500ms`, `40m0s`) or a number of seconds."""
    if text is None or text == "":
        return default
    if isinstance(text, int | float):
        return float(text) / 1e9 if text > 1e6 else float(text)  # nanoseconds in the JSON model
    total, found = 0.0, False
    for number, unit in re.findall(r"([\d.]+)(ms|us|µs|ns|h|m|s)", str(text)):
        found = True
        total += (
            float(number) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}[unit]
        )
    return total if found else default


@dataclass
class Result:
    file: str
    passed: list[str] = field(default_factory=list)
    failed: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)


@dataclass
class Rehearsal:
    docker: Docker
    file: Path
    tags: dict[str, str]
    say: Callable[[str], None]
    timeout: float | None = None
    keep: bool = False
    cold_start: float = 0.0
    # Which probe runs now: a live line on a terminal (rehearse/cli.py), else nothing.
    progress: Callable[[str], None] = field(default=lambda _text: None)
    project: str = field(default_factory=lambda: f"rehearse-{secrets.token_hex(4)}")
    work: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tierops-rehearse-")))
    stack: Stack | None = None
    override: Path | None = None
    profiles: list[str] = field(default_factory=list)

    # --- docker compose --------------------------------------------------------------
    def compose(self, *args: str, timeout: float = 600) -> tuple[int, str]:
        files = ["-f", str(self.file)] + (["-f", str(self.override)] if self.override else [])
        profiles = [part for profile in self.profiles for part in ("--profile", profile)]
        proc = self.docker.call(
            [
                "compose",
                "-p",
                self.project,
                "--project-directory",
                str(self.file.parent),
                *profiles,
                *files,
                *args,
            ],
            timeout=timeout,
        )
        return proc.returncode, proc.stdout + proc.stderr

    def containers(self) -> dict[str, dict[str, Any]]:
        """service -> `docker inspect` of its container (every state)."""
        ids = self.docker.call(
            ["ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}"]
        ).stdout.split()
        if not ids:
            return {}
        found: list[dict[str, Any]] = json.loads(self.docker.call(["inspect", *ids]).stdout or "[]")
        return {
            item["Config"]["Labels"].get("com.docker.compose.service", item["Name"]): item for item in found
        }

    def logs(self, services: list[str]) -> str:
        parts = []
        running = self.containers()
        for service in services:
            if service in running:
                proc = self.docker.call(
                    ["logs", "--tail", str(LOG_LINES), running[service]["Id"]], timeout=30
                )
                text = (proc.stdout + proc.stderr).rstrip() or "(no output)"
                parts.append(f"--- last {LOG_LINES} log lines of {service} ---\n{text}")
        return "\n".join(parts)

    # --- the rehearsal ---------------------------------------------------------------
    def run(self) -> Result:
        result = Result(str(self.file))
        started = time.monotonic()
        try:
            self.prepare()
            probes = (
                ("up", self.probe_up),
                ("healthy", self.probe_healthy),
                ("front-door", self.probe_front_door),
                ("server-info", self.probe_server_info),
                ("restart", self.probe_restart),
                ("stop", self.probe_stop),
            )
            for number, (name, probe) in enumerate(probes, 1):
                self.progress(f"{self.file.name}: probe {name} ({number} of {len(probes)})")
                begun = time.monotonic()
                note = probe()
                result.timings[name] = time.monotonic() - begun
                result.passed.append(name)
                self.say(f"  ok   {name} ({result.timings[name]:.1f} s){': ' + note if note else ''}")
        except ProbeFailed as failure:
            result.failed = failure.probe
            self.say(f"  FAIL {failure.probe}: {failure}")
            logs = self.logs(failure.services)
            if logs:
                self.say(logs)
        finally:
            result.timings["total"] = time.monotonic() - started
            self.cleanup()
        return result

    def prepare(self) -> None:
        # Every profile the file declares: a tier's file may put all its services in one.
        code, out = self.compose("config", "--profiles", timeout=120)
        if code != 0:
            raise ProbeFailed("config", f"docker compose config refused the file: {last_line(out)}")
        self.profiles = out.split()
        proc = self.docker.call(
            ["compose", "-p", self.project, *[p for name in self.profiles for p in ("--profile", name)],
             "-f", str(self.file), "config", "--format", "json"],
            timeout=120,
        )  # fmt: skip
        if proc.returncode != 0:
            raise ProbeFailed("config", f"docker compose config refused the file: {last_line(proc.stderr)}")
        self.stack = read_stack(json.loads(proc.stdout))
        if not self.stack.services:
            raise ProbeFailed("config", "the file has no services, in any profile")
        override = render(self.stack, self.project, self.tags, self.work, cold_start=self.cold_start)
        self.override = self.work / "override.yaml"
        self.override.write_text(override.text, encoding="utf-8")
        engines = ", ".join(f"{name} ({kind})" for name, kind in self.stack.engines.items()) or "none"
        self.say(f"  project {self.project}; engines: {engines}; override {self.override}, changing:")
        for change in override.changes:
            self.say(change.line())

    def probe_up(self) -> str:
        code, out = self.compose("up", "-d", "--pull", "never", "--quiet-pull")
        if code != 0:
            raise ProbeFailed("up", f"docker compose up failed: {last_line(out)}", self._unwell())
        return ""

    def _unwell(self) -> list[str]:
        return [
            name
            for name, item in self.containers().items()
            if (item["State"].get("Health") or {}).get("Status") not in (None, "healthy")
            or item["State"]["Status"] not in ("running",)
        ]

    def _deadline(self) -> float:
        if self.timeout is not None:
            return self.timeout
        assert self.stack is not None
        longest = 0.0
        for spec in self.stack.services.values():
            check = spec.get("healthcheck") or {}
            if check and not check.get("disable"):
                interval = duration(check.get("interval"), 30)
                longest = max(
                    longest,
                    interval * (duration(check.get("retries"), 3) + 1) + duration(check.get("timeout"), 30),
                )
        return min(longest + 30, 600)

    def probe_healthy(self) -> str:
        assert self.stack is not None
        deadline = time.monotonic() + self._deadline()
        waiting: list[str] = []
        pauses = iter(HEALTH_POLLS_S)
        while True:
            found = self.containers()
            waiting = []
            for name, spec in self.stack.services.items():
                item = found.get(name)
                if item is None:
                    waiting.append(name)
                    continue
                state = item["State"]
                health = (state.get("Health") or {}).get("Status")
                if health == "unhealthy":
                    last = (state["Health"].get("Log") or [{}])[-1].get("Output", "").strip()
                    raise ProbeFailed("healthy", f"{name} is unhealthy: {last[-200:] or 'no output'}", [name])
                if state["Status"] == "exited":
                    if state["ExitCode"] == 0 and str(spec.get("restart") or "no") in ("no", "on-failure"):
                        continue
                    if str(spec.get("restart") or "no") == "no":
                        raise ProbeFailed("healthy", f"{name} exited with {state['ExitCode']}", [name])
                if item.get("RestartCount", 0) >= 2:
                    raise ProbeFailed(
                        "healthy", f"{name} keeps restarting ({item['RestartCount']} restarts)", [name]
                    )
                if state["Status"] != "running" or health not in (None, "healthy"):
                    waiting.append(name)
            if not waiting:
                return f"{len(self.stack.services)} services"
            if time.monotonic() > deadline:
                raise ProbeFailed("healthy", f"not healthy in time: {', '.join(waiting)}", waiting)
            time.sleep(next(pauses, HEALTH_POLL_S))

    def _published(self, service: str) -> list[tuple[int, int]]:
        """(container port, host port) of a service's published ports."""
        item = self.containers()[service]
        pairs = []
        for key, bindings in (item["NetworkSettings"].get("Ports") or {}).items():
            for binding in bindings or []:
                if binding.get("HostIp") in ("127.0.0.1", "0.0.0.0", ""):
                    pairs.append((int(key.split("/")[0]), int(binding["HostPort"])))
        return sorted(set(pairs))

    def _token(self) -> str | None:
        assert self.stack is not None
        for proxy in self.stack.proxies:
            for key, value in (self.stack.services[proxy].get("environment") or {}).items():
                if "TOKEN" in key and value:
                    return str(value)
        return None

    def _request(
        self, scheme: str, port: int, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = http.client.HTTPSConnection(
                "127.0.0.1",
                port,
                timeout=15,
                context=ssl._create_unverified_context(),
            )
        else:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        headers = {"Content-Type": "application/json"}
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            connection.request(
                "POST" if body is not None else "GET", path, json.dumps(body) if body else None, headers
            )
            answer = connection.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            connection.close()

    def _scheme(self, port: int) -> str | None:
        # TLS first: nginx answers plain HTTP on its TLS port too (with a 400), while a
        # handshake with a plain port fails at once.
        for scheme in ("https", "http"):
            try:
                self._request(scheme, port, "/")
                return scheme
            except (OSError, http.client.HTTPException, ssl.SSLError):
                continue
        return None

    def _identities(self) -> dict[str, str]:
        assert self.stack is not None
        found = self.containers()
        return {found[name]["Config"]["Hostname"]: name for name in self.stack.engines if name in found}

    def probe_front_door(self) -> str:
        assert self.stack is not None
        if not self.stack.front_doors:
            return "no service publishes a port: nothing to probe from outside"
        notes = []
        reached: set[str] = set()
        for door in self.stack.front_doors:
            door_reached: set[str] = set()
            # A port may serve something else (a discovery stub answering only
            # /v1/models, a health port): it must answer, and each port that routes
            # completions must reach every engine of the pool it routes to.
            refused: list[str] = []
            for target, port in self._published(door):
                scheme = self._scheme(port)
                if scheme is None:
                    raise ProbeFailed(
                        "front-door",
                        f"{door}: published port {target} answers neither HTTP nor HTTPS",
                        [door],
                    )
                where = f"{door}:{target} ({scheme})"
                if not self.stack.engines:
                    notes.append(f"{where} answers")
                    continue
                route = self._route(where, scheme, port, door)
                if isinstance(route, str):
                    refused.append(route)
                    notes.append(f"{where} answers, routes no completion")
                else:
                    door_reached |= route
                    notes.append(f"{where} -> {len(route)} engine(s)")
            reached |= door_reached
            if self.stack.engines and not door_reached:
                raise ProbeFailed(
                    "front-door",
                    f"no published port of {door} reaches the engines: {'; '.join(refused)}",
                    [door, *self.stack.proxies],
                )
        unreached = sorted(set(self.stack.engines) - reached)
        if self.stack.engines and unreached:
            raise ProbeFailed(
                "front-door",
                f"no published port reaches {', '.join(unreached)}: its model cannot be served from outside",
                [*self.stack.front_doors, *self.stack.proxies],
            )
        return "; ".join(notes)

    def _route(self, where: str, scheme: str, port: int, door: str) -> set[str] | str:
        """The engines requests through the port reach: every engine of the pools of those
        it reached, or ProbeFailed; the refusal when the port answers a chat completion,
        an embedding and a score request with an error (it serves something else). The
        first of those answered is what the port serves, and is sent again."""
        assert self.stack is not None
        identities = self._identities()
        kinds: list[tuple[str, dict[str, Any]]] = [
            (
                "/v1/chat/completions",
                {"model": "rehearse", "messages": [{"role": "user", "content": "ping"}], "max_tokens": 4},
            ),
            # What a pooling model serves instead: embeddings, or scores (a reranker).
            ("/v1/embeddings", {"model": "rehearse", "input": "ping"}),
            ("/v1/score", {"model": "rehearse", "text_1": "ping", "text_2": ["pong"]}),
        ]
        first_refusal = ""
        for path, body in kinds:
            status, headers, data = self._request(scheme, port, path, body)
            if status == 200:
                break
            first_refusal = first_refusal or f"{where} answered {status} to a chat completion: {data[:200]!r}"
        else:
            return first_refusal
        seen: set[str] = {identities.get(headers.get("x-rehearse-engine", ""), "?")}
        tries = 3 * len(self.stack.engines)
        for attempt in range(1, tries):
            status, headers, data = self._request(scheme, port, path, body)
            if status != 200:
                raise ProbeFailed(
                    "front-door",
                    f"{where} answered {status} to request {attempt + 1} ({path}): {data[:200]!r}",
                    [door, *self.stack.proxies],
                )
            seen.add(identities.get(headers.get("x-rehearse-engine", ""), "?"))
        if path == "/v1/chat/completions":
            status, headers, data = self._request(scheme, port, path, {**body, "stream": True})
            if status != 200 or b"data: [DONE]" not in data:
                raise ProbeFailed(
                    "front-door", f"{where}: a streamed completion did not finish ({status})", [door]
                )
        status, _, data = self._request(scheme, port, "/v1/models")
        if status != 200 or b'"data"' not in data:
            raise ProbeFailed("front-door", f"{where}: /v1/models answered {status}", [door])
        engines = seen & set(self.stack.engines)
        pools = {member for name in engines for member in self.stack.pool_of(name)} or set(self.stack.engines)
        missing = sorted(pools - seen)
        if missing:
            raise ProbeFailed(
                "front-door",
                f"{where} never reached {', '.join(missing)} in {tries} requests",
                [*self.stack.proxies, *missing],
            )
        return engines

    def _engine_url(self, name: str) -> str:
        assert self.stack is not None
        item = self.containers()[name]
        networks = item["NetworkSettings"]["Networks"]
        address = next((net["IPAddress"] for net in networks.values() if net.get("IPAddress")), None)
        if address is None:
            raise ProbeFailed("server-info", f"{name} has no address on any network", [name])
        port = _flag(command_of(self.stack.services[name]), "--port") or (
            "30000" if self.stack.engines[name] == "sglang" else "8000"
        )
        return f"http://{address}:{port}"

    def probe_server_info(self) -> str:
        assert self.stack is not None
        for name in self.stack.engines:
            url = self._engine_url(name) + "/get_server_info"
            try:
                with urllib.request.urlopen(url, timeout=10) as answer:
                    info = json.loads(answer.read())
            except (OSError, ValueError) as error:
                raise ProbeFailed("server-info", f"{name}: {url}: {error}", [name]) from None
            for flag, value in _flags(command_of(self.stack.services[name])):
                got = info.get(flag[2:].replace("-", "_"))
                if str(got) != str(value) and not (value is True and got is True):
                    raise ProbeFailed(
                        "server-info",
                        f"{name}: {flag} is {got!r} in the server, {value!r} in the file",
                        [name],
                    )
        return f"{len(self.stack.engines)} engine(s) match their argv"

    def probe_restart(self) -> str:
        assert self.stack is not None
        if not self.stack.engines:
            return "no engine"
        name = next(iter(self.stack.engines))
        before = self.containers()[name]
        # A crash, not `docker kill`: the daemon counts a kill as a manual stop and
        # never restarts it, so the container's main process gets SIGKILL from the host.
        try:
            os.kill(int(before["State"]["Pid"]), signal.SIGKILL)
        except (OSError, ValueError) as error:
            raise ProbeFailed(
                "restart", f"cannot kill {name}'s process from here ({error}): is the daemon remote?"
            ) from None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.containers().get(name)
            if (
                now
                and now["State"]["Status"] == "exited"
                and str(self.stack.services[name].get("restart") or "no") == "no"
            ):
                raise ProbeFailed(
                    "restart", f'{name} stays down after a crash: its restart policy is "no"', [name]
                )
            if now and now["State"]["Running"] and now["State"]["StartedAt"] != before["State"]["StartedAt"]:
                try:
                    with urllib.request.urlopen(self._engine_url(name) + "/health", timeout=3):
                        return f"{name} killed, back in {60 - (deadline - time.monotonic()):.1f} s"
                except OSError:
                    continue
        policy = self.stack.services[name].get("restart") or "no"
        raise ProbeFailed(
            "restart", f"{name} (restart: {policy}) did not come back within 60 s of a SIGKILL", [name]
        )

    def probe_stop(self) -> str:
        assert self.stack is not None
        running = {name: item for name, item in self.containers().items() if item["State"]["Running"]}
        started = time.monotonic()
        code, out = self.compose("stop", timeout=900)
        took = time.monotonic() - started
        if code != 0:
            raise ProbeFailed("stop", f"docker compose stop failed: {last_line(out)}")
        after = self.containers()
        slow = []
        for name in running:
            state = after.get(name, {}).get("State", {})
            if state.get("ExitCode") == KILLED and not state.get("OOMKilled"):
                spec = self.stack.services.get(name, {})
                grace = duration(spec.get("stop_grace_period"), DEFAULT_GRACE_S)
                init = "with" if spec.get("init") else "without"
                slow.append(f"{name} (ignored SIGTERM, killed after its {grace:g} s grace; {init} init)")
        if slow:
            raise ProbeFailed(
                "stop", f"stop took {took:.1f} s: {'; '.join(slow)}", [s.split(" ", 1)[0] for s in slow]
            )
        return f"{len(running)} containers stopped on SIGTERM in {took:.1f} s"

    def cleanup(self) -> None:
        """The stack down (or kept), with SIGINT, SIGTERM and SIGHUP held until it is:
        a second signal during the down would leave containers, networks and volumes."""
        with signals_held():
            self._cleanup()

    def _cleanup(self) -> None:
        if self.keep:
            # The stop probe stopped them: the operator asked for a stack to look at.
            self.compose("start", timeout=300)
            self.say(
                f"  kept: project {self.project} (docker compose -p {self.project} -f {self.file} -f {self.override} down -v)"
            )
            return
        if self.override is not None:
            self.compose("down", "-v", "--remove-orphans", "--timeout", "2", timeout=300)
        shutil.rmtree(self.work, ignore_errors=True)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Block the signals that end a run; one that arrives meanwhile is delivered after."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _flags(argv: list[str]) -> list[tuple[str, Any]]:
    """`--flag value` pairs and bare flags of an argv, in order."""
    pairs: list[tuple[str, Any]] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token.startswith("--"):
            name, sep, inline = token.partition("=")
            if sep:
                pairs.append((name, inline))
            elif index + 1 < len(argv) and not argv[index + 1].startswith("--"):
                pairs.append((name, argv[index + 1]))
                index += 1
            else:
                pairs.append((name, True))
        index += 1
    return pairs


def _flag(argv: list[str], flag: str) -> str | None:
    return next((str(value) for name, value in _flags(argv) if name == flag), None)
