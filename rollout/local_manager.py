"""A local compose-manager: its HTTP API over real `docker compose`, for tests and rehearsals.

compose-manager itself fetches files from GitHub and runs inside a confidential VM, so
it cannot run here. This server keeps its contract (`rollout/compose-manager.yaml`) and
runs the same `docker compose` commands on the local daemon, so `rollout apply` and
`rollout status` are exercised against real containers: the body fields it reads (the
rest dropped, as serde drops them), the bearer token, one operation at a time (409),
the age gate on the tag's commit date, the file written into the work directory by
every `up` (a down reads the last one written), the project rule, the NDJSON events
(`stdout`, `stderr`, `plan`, `staged`, `done`) and `/version`'s per-project state.
The one difference: files come from a local git repository instead of GitHub.

    python -m rollout.local_manager --repo PATH --work-dir DIR --port 8080
    (the token is read from COMPOSE_MANAGER_TOKEN)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rollout.plan import deployer

TOKEN_ENV = "COMPOSE_MANAGER_TOKEN"
_VERBS = {"Recreate": 3, "Recreated": 3, "Creating": 2, "Created": 2, "Removing": 1, "Removed": 1}
_UNCHANGED = {"Running", "Started", "Skipped"}


class Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Manager:
    """The server's state: where files come from and go, and what is deployed."""

    repo: Path
    work_dir: Path
    token: str
    min_tag_age_hours: int = 48
    env_files: tuple[str, ...] = ()
    compose: tuple[str, ...] = ("docker", "compose")
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: dict[str, Any] | None = None
    last: dict[str, Any] = field(default_factory=dict)  # the last attempted up (legacy fields)
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def default_project(self) -> str:
        return sanitize(self.work_dir.name) or "work"

    # -- the prologue every call shares ---------------------------------------------------

    def tag_commit(self, tag: str) -> tuple[str, datetime]:
        # After --end-of-options a tag is never read as an option (`--output=FILE` wrote a file).
        proc = self._git(["log", "-1", "--format=%H %cI", "--end-of-options", f"{tag}^{{commit}}", "--"])
        if proc.returncode != 0 or not proc.stdout.strip():
            raise Refused(400, f"tag not found: {tag}")
        sha, when = proc.stdout.split()
        committed = datetime.fromisoformat(when)
        if committed > datetime.now(UTC) - timedelta(hours=self.min_tag_age_hours):
            raise Refused(400, f"tag too recent: {committed} is less than {self.min_tag_age_hours} hours old")
        return sha, committed

    def project(self, body: Mapping[str, Any]) -> str:
        raw = body.get("project")
        if raw is None:
            return self.default_project
        name = sanitize(str(raw))
        if not name:
            raise Refused(400, f"invalid compose project name {raw!r}: empty after sanitization")
        if name != raw:
            raise Refused(400, f"compose project name {raw!r} is not canonical")
        if name in deployer.load().reserved_projects:
            raise Refused(400, f"compose project name {name!r} is reserved and cannot be overridden")
        return name

    def services(self, body: Mapping[str, Any]) -> list[str]:
        names = [str(name) for name in body.get("services") or ()]
        flags = [name for name in names if name.startswith("-")]
        if flags:
            # Compose would read it as an option (`--help` ran instead of a down).
            raise Refused(400, f"invalid service name {flags[0]!r}")
        return names

    def env_file(self, body: Mapping[str, Any]) -> Path | None:
        env = body.get("env") or {}
        if not isinstance(env, dict):
            raise Refused(400, "env must be an object of strings")
        for key, value in env.items():
            if not re.fullmatch(deployer.load().env_name_pattern, key):
                raise Refused(400, f"invalid env var key: {key!r}")
            if not isinstance(value, str):
                raise Refused(400, f"env var {key!r} value must be a string")
            if "\n" in value or "\r" in value:
                raise Refused(400, f"env var {key!r} value must not contain newlines")
        if not env:
            return None
        path = self.work_dir / f".env.tmp.{os.urandom(8).hex()}"
        path.write_text("\n".join(f"{key}={value}" for key, value in env.items()), encoding="utf-8")
        return path

    def command(
        self,
        project: str,
        file: str,
        args: Sequence[str],
        services: Sequence[str],
        env: Path | None,
        *,
        dry: bool = False,
    ) -> list[str]:
        words = [*self.compose]
        if dry:
            words.append("--dry-run")
        words += ["-p", project, "-f", file]
        for env_file in self.env_files:
            words += ["--env-file", env_file]
        if env is not None:
            words += ["--env-file", str(env)]
        return [*words, *args, *services]

    def _git(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(self.repo), *args], capture_output=True, text=True, check=False
        )

    # -- the calls -------------------------------------------------------------------------

    def up(self, body: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        tag, file = str(body["tag"]), str(body.get("file") or "docker-compose.yml")
        services = self.services(body)
        sha, _ = self.tag_commit(tag)
        project = self.project(body)
        content = subprocess.run(
            ["git", "-C", str(self.repo), "show", f"{sha}:{file}"], capture_output=True, check=False
        )
        if content.returncode != 0:
            raise Refused(400, f"file '{file}' not found at tag '{tag}'")
        digest = hashlib.sha256(content.stdout).hexdigest()
        target = self.work_dir / file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.stdout)
        env = self.env_file(body)
        mode = (
            "dry_run"
            if body.get("dry_run")
            else "materialize_only"
            if body.get("materialize_only")
            else "apply"
        )
        phases = [list(phase) for phase in deployer.load().runs[deployer.UP][mode]]
        if body.get("force_recreate"):
            phases[-1].append("--force-recreate")
        record = {"tag": tag, "commit": sha, "file": file, "file_sha256": digest}

        def run() -> Iterator[dict[str, Any]]:
            lines: list[str] = []
            code = 0
            try:
                for phase in phases:
                    argv = self.command(project, file, phase, services, env, dry=mode == "dry_run")
                    code = yield from self._stream(argv, lines)
                    if code != 0:
                        break
            finally:
                if env is not None:
                    env.unlink(missing_ok=True)
            if mode == "dry_run":
                yield {"event": "plan", "success": code == 0, "exit_code": code, "plan": parse_plan(lines)}
            elif mode == "materialize_only" and code == 0:
                images = subprocess.run(
                    self.command(project, file, ["images", "-q"], services, None),
                    capture_output=True,
                    text=True,
                    cwd=self.work_dir,
                    env=dict(self.environ),
                    check=False,
                )
                ids = list(dict.fromkeys(line.strip() for line in images.stdout.splitlines() if line.strip()))
                yield {"event": "staged", "tag": tag, "file": file, "file_sha256": digest, "images": ids}
            elif mode == "apply":
                self.last = dict(record)
                if code == 0:
                    entry = self.projects.setdefault(project, {})
                    if entry.get("current"):
                        entry["previous"] = entry["current"]
                    entry["current"] = dict(record)
            yield {"event": "done", "success": code == 0, "exit_code": code}

        return run()

    def down(self, body: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        tag, file = str(body["tag"]), str(body.get("file") or "docker-compose.yml")
        services = self.services(body)
        self.tag_commit(tag)
        project = self.project(body)
        env = self.env_file(body)
        args = ["down", "-v"] if body.get("volumes") else ["down"]

        def run() -> Iterator[dict[str, Any]]:
            try:
                code = yield from self._stream(self.command(project, file, args, services, env), [])
            finally:
                if env is not None:
                    env.unlink(missing_ok=True)
            yield {"event": "done", "success": code == 0, "exit_code": code}

        return run()

    def _stream(self, argv: list[str], lines: list[str]) -> Generator[dict[str, Any], None, int]:
        """Run one phase, yielding its output lines as events; returns its exit code."""
        with subprocess.Popen(
            argv,
            cwd=self.work_dir,
            env=dict(self.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                text = line.rstrip("\n")
                lines.append(text)
                yield {"event": "stderr", "data": text}
            return proc.wait()

    def logs(self, body: Mapping[str, Any]) -> str:
        """`POST /compose/logs`: like compose-manager's, it names no project (the default)."""
        file = str(body.get("file") or "docker-compose.yml")
        services = self.services(body)
        tail = str(int(body.get("tail") or 100))
        argv = self.command(
            self.default_project, file, ["logs", "--no-log-prefix", "--tail", tail], services, None
        )
        proc = subprocess.run(
            argv, capture_output=True, text=True, cwd=self.work_dir, env=dict(self.environ), check=False
        )
        if proc.returncode != 0:
            raise Refused(500, proc.stderr.strip())
        return proc.stdout + proc.stderr

    def docker_ps(self) -> str:
        proc = subprocess.run(
            ["docker", "ps", "--format", "json"],
            capture_output=True,
            text=True,
            env=dict(self.environ),
            check=False,
        )
        if proc.returncode != 0:
            raise Refused(500, proc.stderr.strip())
        return proc.stdout

    def version(self) -> dict[str, Any]:
        return {"status": "ok", **self.last, "projects": self.projects}


def sanitize(name: str) -> str:
    lowered = re.sub(r"[^a-z0-9_-]", "_", name.lower())
    return lowered.lstrip("_-")


def parse_plan(lines: Sequence[str]) -> dict[str, list[str]]:
    """compose-manager's advisory verdict of a dry-run transcript: each resource once, by
    its strongest verb (recreate > create > remove > unchanged)."""
    rank: dict[str, int] = {}
    for raw in lines:
        line = raw.split("DRY-RUN MODE -", 1)[-1].strip()
        if not line or not re.search(r"\s", line):
            continue
        name, verb = line.rsplit(None, 1)
        weight = _VERBS.get(verb, 0 if verb in _UNCHANGED else -1)
        if weight < 0:
            continue
        rank[name.strip()] = max(rank.get(name.strip(), 0), weight)
    buckets: dict[str, list[str]] = {"create": [], "recreate": [], "remove": [], "unchanged": []}
    names = {3: "recreate", 2: "create", 1: "remove", 0: "unchanged"}
    for name, weight in sorted(rank.items()):
        buckets[names[weight]].append(name)
    return buckets


def _handler(manager: Manager) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: tests and rehearsals read the events, not an access log

        def _json(self, code: int, body: Mapping[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, code: int, message: str) -> None:
            self._json(code, {"status": "error", "error": message})

        def _authorized(self) -> bool:
            if self.headers.get("Authorization", "") != f"Bearer {manager.token}":
                self._error(401, "Missing or invalid Authorization header")
                return False
            return True

        def do_GET(self) -> None:
            if not self._authorized():
                return
            if self.path == "/version":
                self._json(200, manager.version())
            elif self.path == "/status":
                self._json(200, {"status": "ok", "in_flight": manager.in_flight})
            elif self.path == "/docker/ps":
                try:
                    self._json(200, {"status": "ok", "output": manager.docker_ps()})
                except Refused as exc:
                    self._error(exc.code, str(exc))
            else:
                self._error(404, "not found")

        def do_POST(self) -> None:
            if not self._authorized():
                return
            if self.path == "/compose/logs":
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                    self._json(200, {"status": "ok", "output": manager.logs(body)})
                except (ValueError, Refused) as exc:
                    self._error(getattr(exc, "code", 400), str(exc))
                return
            action = {"/compose/up": manager.up, "/compose/down": manager.down}.get(self.path)
            if action is None:
                self._error(404, "not found")
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                fields = deployer.load().bodies[f"POST {self.path}"]
                if not isinstance(body, dict):
                    raise Refused(422, "the body is not a JSON object")
                problems = deployer.type_problems(f"POST {self.path}", body)
                if problems:
                    raise Refused(422, problems[0])
                # serde: a field the struct does not declare is dropped without a word.
                body = {key: value for key, value in body.items() if key in fields}
            except (ValueError, Refused) as exc:
                self._error(getattr(exc, "code", 400), str(exc))
                return
            if not manager.lock.acquire(blocking=False):
                busy = (manager.in_flight or {}).get("action", "unknown")
                self._error(409, f"another docker operation is already in progress: {busy}")
                return
            manager.in_flight = {
                "action": f"compose_{self.path.rsplit('/', 1)[1]}",
                "started_at": datetime.now(UTC).isoformat(),
                "tag": body.get("tag"),
                "file": body.get("file"),
                "services": body.get("services") or [],
                "container": None,
            }
            try:
                events = action(body)
            except Refused as exc:
                # The operation is over before the answer leaves: a client that retries at
                # once must not meet its own refused request as a 409.
                manager.in_flight = None
                manager.lock.release()
                self._error(exc.code, str(exc))
                return
            except BaseException:
                manager.in_flight = None
                manager.lock.release()
                raise
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                for event in events:
                    self.wfile.write((json.dumps(event) + "\n").encode())
                    self.wfile.flush()
            finally:
                manager.in_flight = None
                manager.lock.release()

    return Handler


def serve(manager: Manager, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A running server (in a thread of its own); `server.server_address` has the port.
    `server.shutdown()` returns within a tenth of a second."""
    server = ThreadingHTTPServer((host, port), _handler(manager))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rollout.local_manager",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repo", type=Path, required=True, help="the git repository files are fetched from")
    parser.add_argument(
        "--work-dir", type=Path, required=True, help="where files are written and compose runs"
    )
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--min-tag-age-hours", type=int, default=48)
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        parser.error(f"{TOKEN_ENV} is not set")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    server = serve(Manager(args.repo, args.work_dir, token, args.min_tag_age_hours), port=args.port)
    print(f"compose-manager (local) on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
