"""The plan's calls, run as compose-manager runs them, on a real Docker daemon.

A plan is only as good as what its calls do on a host. Here a small stack is deployed
at a release tag, and a change that covers every kind of step (a changed service, an
image bump, a service whose only change is a mounted config, one removed, one added)
is planned between two release tags. Every step's command (the one compose-manager
runs for its call, from a checkout of the repository that plays compose-manager's work
directory) is run in order, and the containers are read after each: the preview
changes nothing and names only its service, a down stops exactly its service, an up
brings up the new definition, the verification's own commands pass. Then the plan's
rollback brings the stack back to the base. Images are built locally from busybox;
nothing is pulled.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from rollout.plan import deployer
from tests.dockerkit import IMAGE, Docker, daemon
from tests.rollout.diffkit import commit, git, new_repo
from tests.rollout.plankit import tagged_plan

FILE = "prod/stack.yaml"
NEXT_IMAGE = IMAGE.replace(":1", ":2")


def service(command: str = "3600", image: str = IMAGE, extra: str = "") -> str:
    # `init: true`: a `sleep` as PID 1 ignores SIGTERM, so each down would wait out the
    # grace period; under docker-init it ends on the signal at once.
    return (
        f"    image: {image}\n    pull_policy: never\n    init: true\n    stop_grace_period: 1s\n"
        f'    command: [sleep, "{command}"]\n{extra}'
    )


def stack(*, head: bool) -> str:
    config = "    configs: [{source: settings, target: /settings}]\n"
    services = {
        "old-svc": None if head else service(),
        "changed": service("3601" if head else "3600"),
        "bumped": service(image=NEXT_IMAGE if head else IMAGE),
        "collector": service(extra=config),
        "new-svc": service() if head else None,
    }
    body = "".join(f"  {name}:\n{text}" for name, text in services.items() if text)
    content = "b: 2" if head else "a: 1"
    return f"name: fixture\nservices:\n{body}configs:\n  settings:\n    content: '{content}'\n"


def state(docker: Docker, project: str) -> dict[str, tuple[str, str]]:
    """Service -> (state, image) of every container of the project."""
    out = docker.run(
        ["ps", "-a", "--filter", f"label=com.docker.compose.project={project}", "--format", "json"]
    )
    result: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        row = json.loads(line)
        labels = dict(item.split("=", 1) for item in row["Labels"].split(",") if "=" in item)
        result[labels["com.docker.compose.service"]] = (row["State"], row["Image"])
    return result


def run_step(docker: Docker, work: Path, step: dict[str, Any]) -> str:
    assert deployer.problems(step["endpoint"], step["payload"]) == []
    code, out = docker.shell(step["command"], work)
    assert code == 0, f"{step['number']} {step['action']}: {out}"
    return out


def check_verify(docker: Docker, work: Path, step: dict[str, Any]) -> None:
    """The verification's own commands, where they read the container (not a PromQL query
    or an engine's HTTP answer, which a busybox stand-in cannot give)."""
    for check in step["checks"]:
        if check["what"] == "running":
            code, out = docker.shell(check["command"], work)
            assert code == 0 and out.split()[:2] == [check["expect"].split()[0], "running"], (check, out)
        elif check["what"] == "it runs the new image":
            code, out = docker.shell(check["command"], work)
            assert (code, out.strip()) == (0, check["expect"]), (check, out)


def run_stages(docker: Docker, work: Path, project: str, staging: Any, stages: list[dict[str, Any]]) -> None:
    # Only the steps change the host: what one step leaves is what the next one meets.
    after = state(docker, project)
    if staging:
        assert staging["action"] == "stage"
        before = after
        run_step(docker, work, staging)
        after = state(docker, project)
        assert after == before  # staging starts and stops nothing
    for stage in stages:
        name = stage["service"]
        for step in stage["steps"]:
            if step["action"] == "verify":
                check_verify(docker, work, step)
                continue
            before = after
            out = run_step(docker, work, step)
            after = state(docker, project)
            if step["action"] == "preview":
                assert after == before, f"a preview changed the host: {out}"
                assert "Remov" not in out, out
                verdict = step["expect"].split("`plan` event: ")[1].split(" ")[0]
                verb = {"recreate": "Recreate", "create": "Creat", "unchanged": "Running"}[verdict]
                lines = [line for line in out.splitlines() if verb in line]
                assert lines and all(name in line for line in lines), out
            elif step["action"] == "down":
                assert name not in after and {k: v for k, v in before.items() if k != name} == after, out
            elif step["action"] == "up":
                assert after[name][0] == "running", out
                assert {k: v for k, v in before.items() if k != name} == {
                    k: v for k, v in after.items() if k != name
                }, out


def test_the_plan_and_its_rollback_do_on_a_real_daemon_what_they_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    docker = daemon()
    docker.run(["tag", IMAGE, NEXT_IMAGE])
    project = f"tierops-test-{secrets.token_hex(4)}"
    targets = f"stack:\n  hosts: [rehearsal]\n  project: {project}\n"
    repo = new_repo(tmp_path, {FILE: stack(head=False), "generators/fleet.targets.yaml": targets})
    base = git(repo, "rev-parse", "HEAD")
    head = commit(repo, {FILE: stack(head=True)}, "change every kind of service")
    out = tagged_plan(monkeypatch, capsys, repo, base, head)
    (file,) = json.loads(out)["files"]
    assert [stage["service"] for stage in file["stages"]] == [
        "old-svc",
        "changed",
        "bumped",
        "collector",
        "new-svc",
    ]

    work = tmp_path / "work"  # compose-manager's work directory: a checkout it writes files into
    git(tmp_path, "clone", "-q", str(repo), str(work))
    compose = f"docker compose -p {project} -f {FILE}"
    try:
        code, out = docker.shell(f"git checkout --quiet v0.0.1 && {compose} up -d --remove-orphans", work)
        assert code == 0, out
        assert set(state(docker, project)) == {"old-svc", "changed", "bumped", "collector"}

        run_stages(docker, work, project, file["staging"], file["stages"])
        final = state(docker, project)
        assert set(final) == {"changed", "bumped", "collector", "new-svc"}
        assert final["bumped"][1] == NEXT_IMAGE
        assert docker.shell(f"{compose} exec -T collector cat /settings", work)[1] == "b: 2"

        run_stages(docker, work, project, file["rollback_staging"], file["rollback"])
        back = state(docker, project)
        assert set(back) == {"old-svc", "changed", "bumped", "collector"}
        assert back["bumped"][1] == IMAGE
        assert docker.shell(f"{compose} exec -T collector cat /settings", work)[1] == "a: 1"
    finally:
        ids = docker.run(["ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"]).split()
        if ids:
            docker.run(["rm", "-f", *ids], check=False)
        docker.run(["network", "rm", f"{project}_default"], check=False)
