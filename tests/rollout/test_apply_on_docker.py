"""`rollout apply` through a local compose-manager, on a real Docker daemon.

The local compose-manager (`rollout/local_manager.py`) keeps compose-manager's contract
and runs the same `docker compose` commands, with files fetched from a git repository
instead of GitHub. Here a stack is deployed at one release tag through its API, a plan
to the next tag is applied, a change whose verification cannot pass is rolled back, a
busy host is refused, and an applied plan run again does nothing.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.local_manager import Manager, parse_plan, serve
from rollout.plan import deployer
from rollout.plan.deploy import Applier, Host, Journal, load_plan, plan_digest, preview_mismatch
from tests.dockerkit import IMAGE, Docker, daemon
from tests.rollout.diffkit import commit, git, new_repo, run_cli
from tests.rollout.plankit import tagged_plan

FILE = "prod/stack.yaml"
TOKEN = "test-token-" + "x" * 8
NEXT_IMAGE = IMAGE.replace(":1", ":2")


def service(command: str = "3600", extra: str = "") -> str:
    # `init: true`: a `sleep` as PID 1 ignores SIGTERM, so every down, recreate and stop
    # would wait out the grace period; under docker-init it ends on the signal at once.
    return (
        f"    image: {IMAGE}\n    pull_policy: never\n    init: true\n    stop_grace_period: 1s\n"
        f'    command: [sleep, "{command}"]\n{extra}'
    )


# Checks every 250 ms: a verification reads `healthy` (or `unhealthy`) within a poll.
HEALTHY = "    healthcheck: {test: [CMD, 'true'], interval: 250ms, timeout: 1s, retries: 1}\n"
SICK = "    healthcheck: {test: [CMD, 'false'], interval: 250ms, timeout: 1s, retries: 1}\n"
# A verification of SICK fails only when its wait runs out: long enough for Docker to
# have judged the container unhealthy (the tests assert it read so), no longer.
SICK_WAIT = "4"
UNHEALTHY = r"^FAILED 1\.4 verify api-a: healthy: expected api-a running healthy, status Up .*\(unhealthy\)$"
POLL = 0.25


def stack(a: str, b: str) -> str:
    return f"name: fixture\nservices:\n  api-a:\n{a}  api-b:\n{b}"


def running(docker: Docker, project: str) -> dict[str, str]:
    out = docker.run(["ps", "--filter", f"label=com.docker.compose.project={project}", "--format", "json"])
    rows = [json.loads(line) for line in out.splitlines()]
    return {
        dict(item.split("=", 1) for item in row["Labels"].split(",") if "=" in item)[
            "com.docker.compose.service"
        ]: row["Command"]
        for row in rows
    }


@dataclass(frozen=True)
class World:
    """A stack's repository served by a local compose-manager on a Docker daemon."""

    docker: Docker
    project: str
    repo: Path
    manager: Manager
    url: str
    endpoints: Path  # the endpoints file naming the manager's URL


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    docker = daemon()
    project = f"tierops-test-{secrets.token_hex(4)}"
    work = tmp_path / "work"
    work.mkdir()
    targets = f"stack:\n  hosts: [local]\n  project: {project}\n"
    repo = new_repo(
        tmp_path, {FILE: stack(service(extra=HEALTHY), service()), "generators/fleet.targets.yaml": targets}
    )
    # The test repositories' commits are dated weeks back: compose-manager's default gate passes.
    manager = Manager(repo, work, TOKEN, environ=docker.env)
    server = serve(manager)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text(f"local: {url}\n", encoding="utf-8")
    try:
        yield World(docker, project, repo, manager, url, endpoints)
    finally:
        server.shutdown()
        server.server_close()
        ids = docker.run(["ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"]).split()
        if ids:
            docker.run(["rm", "-f", *ids], check=False)
        docker.run(["network", "rm", f"{project}_default"], check=False)


def deploy(world: World, tag: str) -> None:
    host = Host("local", world.url, TOKEN)
    events = list(host.stream(deployer.UP, {"tag": tag, "file": FILE, "project": world.project}))
    assert events[-1] == {"event": "done", "success": True, "exit_code": 0}, events


def plan_to(
    world: World, head_text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    repo = world.repo
    base = git(repo, "rev-parse", "HEAD")
    out = tagged_plan(monkeypatch, capsys, repo, base, commit(repo, {FILE: head_text}, "change"))
    path = repo.parent / "plan.json"
    path.write_text(out, encoding="utf-8")
    return path


def apply(
    world: World, plan: Path, capsys: pytest.CaptureFixture[str], *extra: str, wait: str = "20"
) -> tuple[int, str, str]:
    code = main(
        ["apply", str(plan), "--endpoints", str(world.endpoints), "--wait", wait, "--poll", str(POLL), *extra]
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_a_plan_is_applied_host_by_host_and_a_second_run_resumes_with_nothing_left(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", TOKEN)
    deploy(world, "HEAD")
    before = running(world.docker, world.project)
    assert set(before) == {"api-a", "api-b"}
    plan = plan_to(world, stack(service("3601", HEALTHY), service()), monkeypatch, capsys)
    code, out, err = apply(world, plan, capsys)
    assert (code, err) == (0, ""), out + err
    assert "  1.4 verify api-a" in out and "      ok: healthy" in out
    assert TOKEN not in out
    after = running(world.docker, world.project)
    assert after["api-a"] != before["api-a"] and after["api-b"] == before["api-b"]
    version = Host("local", world.url, TOKEN).get("/version")
    assert version["projects"][world.project]["current"]["tag"] == "v0.0.2"
    # The journal holds every step: a second run sends nothing.
    code, out, err = apply(world, plan, capsys)
    assert (code, err) == (0, "")
    assert "POST" not in out and "preview" not in out


def test_a_verification_that_fails_is_rolled_back(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", TOKEN)
    deploy(world, "HEAD")
    before = running(world.docker, world.project)
    plan = plan_to(world, stack(service("3602", SICK), service()), monkeypatch, capsys)
    code, out, _ = apply(world, plan, capsys, "--rollback-on-failure", wait=SICK_WAIT)
    assert code == 1
    # Docker's verdict (unhealthy), not a wait cut short while the check was still starting.
    assert re.search(UNHEALTHY, out, re.MULTILINE), out
    assert "rolling back what ran, in the rollback's order" in out
    assert running(world.docker, world.project) == before


def test_without_the_option_the_rollback_is_printed_not_sent(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", TOKEN)
    deploy(world, "HEAD")
    plan = plan_to(world, stack(service("3602", SICK), service()), monkeypatch, capsys)
    code, out, _ = apply(world, plan, capsys, wait=SICK_WAIT)
    assert code == 1
    assert re.search(UNHEALTHY, out, re.MULTILINE), out
    assert "to undo what ran, send these calls in order" in out
    assert '  R1.2 POST /compose/down {"tag": "v0.0.2"' in out
    assert running(world.docker, world.project)["api-a"].endswith('3602"')


def test_a_busy_host_is_refused_before_any_call(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", TOKEN)
    plan = plan_to(world, stack(service("3601", HEALTHY), service()), monkeypatch, capsys)
    manager: Manager = world.manager
    with manager.lock:
        manager.in_flight = {"action": "compose_up"}
        code, out, err = apply(world, plan, capsys)
        manager.in_flight = None
    assert (code, out) == (2, "")
    assert err.startswith("local: compose-manager runs compose_up now; apply starts only on an idle host")


def test_the_local_manager_keeps_the_contract_rules(world: World) -> None:
    host = Host("local", world.url, TOKEN)
    manager: Manager = world.manager
    # A down with dry_run is a real down: the field is dropped, as serde drops it.
    deploy(world, "HEAD")
    events = list(
        host.stream(deployer.DOWN, {"tag": "HEAD", "file": FILE, "project": world.project, "dry_run": True})
    )
    assert events[-1]["success"] is True
    assert running(world.docker, world.project) == {}
    # The age gate on the tag's commit date, the reserved project, a wrong token.
    manager.min_tag_age_hours = 24 * 3650
    with pytest.raises(Exception, match="tag too recent"):
        list(host.stream(deployer.UP, {"tag": "HEAD", "file": FILE}))
    manager.min_tag_age_hours = 48
    with pytest.raises(Exception, match="reserved"):
        list(host.stream(deployer.UP, {"tag": "HEAD", "file": FILE, "project": "work"}))
    with pytest.raises(Exception, match="HTTP 401"):
        Host("local", world.url, "wrong").get("/status")
    # Nothing a caller sends is read as an option by git or Compose, and env is strings.
    planted = world.repo.parent / "planted"
    with pytest.raises(Exception, match="tag not found"):
        list(host.stream(deployer.UP, {"tag": f"--output={planted}", "file": FILE}))
    assert not list(world.repo.parent.glob("planted*"))
    with pytest.raises(Exception, match="invalid service name '--help'"):
        list(host.stream(deployer.DOWN, {"tag": "HEAD", "file": FILE, "services": ["--help"]}))
    with pytest.raises(Exception, match="must be a string"):
        list(host.stream(deployer.UP, {"tag": "HEAD", "file": FILE, "env": {"A": 1}}))


def test_the_dry_run_verdict_is_read_as_compose_manager_reads_it() -> None:
    lines = [
        " DRY-RUN MODE -  Container p-api-a-1  Recreate",
        " DRY-RUN MODE -  Container p-api-a-1  Recreated",
        " DRY-RUN MODE -  Container 0123abcd_p-api-a-1  Started",
        " DRY-RUN MODE -  Container p-api-b-1  Running",
    ]
    plan = parse_plan(lines)
    assert plan["recreate"] == ["Container p-api-a-1"]
    assert preview_mismatch(plan, "p", "api-a", "recreate") == ""
    assert preview_mismatch(plan, "p", "api-b", "recreate").startswith("api-b is not under recreate")
    assert (
        preview_mismatch(plan, "p", "api-b", "unchanged")
        == "it would also create or recreate Container p-api-a-1"
    )


def status_of(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    code, out, err = run_cli(monkeypatch, capsys, world.repo, ["status", "--endpoints", str(world.endpoints)])
    assert err == ""
    return code, out


def test_status_reports_an_older_tag_a_stopped_container_a_swapped_image_and_an_orphan(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", TOKEN)
    docker: Docker = world.docker
    project = world.project
    plan = plan_to(world, stack(service("3601", HEALTHY), service()), monkeypatch, capsys)
    deploy(world, "v0.0.1")
    code, out = status_of(world, monkeypatch, capsys)
    assert (code, out) == (
        1,
        f"DRIFT local [{project}] {FILE}: deployed v0.0.1; the newest release with this file is v0.0.2\n",
    )
    assert apply(world, plan, capsys)[0] == 0
    code, out = status_of(world, monkeypatch, capsys)
    assert (code, out) == (0, f"local [{project}] {FILE}: in sync at v0.0.2\n")
    # By hand, behind compose-manager's back: one container stopped, one image swapped,
    # one container the file does not define.
    work: Path = world.manager.work_dir
    docker.run(["stop", "-t", "1", f"{project}-api-a-1"])
    swapped = work / "swapped.yaml"
    swapped.write_text((work / FILE).read_text(encoding="utf-8").replace(IMAGE, NEXT_IMAGE), encoding="utf-8")
    docker.run(["tag", IMAGE, NEXT_IMAGE])
    docker.run(["compose", "-p", project, "-f", str(swapped), "up", "-d", "api-b"], cwd=work)
    docker.run(
        [
            "run",
            "-d",
            "--label",
            f"com.docker.compose.project={project}",
            "--label",
            "com.docker.compose.service=stray",
            IMAGE,
            "sleep",
            "3600",
        ]
    )
    code, out = status_of(world, monkeypatch, capsys)
    assert code == 1
    assert out.splitlines() == [
        f"DRIFT local [{project}] {FILE} api-a: not running",
        f"DRIFT local [{project}] {FILE} api-b: runs {NEXT_IMAGE}, its definition at v0.0.2 says {IMAGE}",
        f"DRIFT local [{project}] {FILE} stray: runs, but {FILE} at v0.0.2 does not define it (an orphan)",
    ]


def test_a_verification_that_waits_says_so_while_it_waits(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deploy(world, "HEAD")
    plan_path = plan_to(world, stack(service("3602", SICK), service()), monkeypatch, capsys)
    lines: list[str] = []
    hosts = {"local": Host("local", world.url, TOKEN)}
    with Journal.open(tmp_path / "journal", plan_digest(plan_path)) as journal:
        applier = Applier(
            load_plan(plan_path), hosts, journal, lines.append, wait=2, poll=0.25, report_every=0.5
        )
        assert applier.run() is False
    waiting = [line for line in lines if line.startswith("      waiting: healthy")]
    assert waiting and all(" s of 2 s)" in line for line in waiting)
