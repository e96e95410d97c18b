"""Where a plan runs, which tags it may name, and that it reads on one screen.

The hosts and compose project of a file come from the fleet's data (a targets file under
generators/); a tag given by hand must carry the reviewed files and move forward; the
summary of an image bump over several files fits a pull-request comment.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollout.plan import deployer
from tests.rollout.diffkit import commit, git, new_repo, run_cli, write
from tests.rollout.plankit import HAND, hand, plan_of, release_tag

TARGETS = "generators/fleet.targets.yaml"


def targets(**placements: str) -> str:
    return "".join(f"{stem}:\n{body}" for stem, body in placements.items())


def test_the_plan_runs_on_the_hosts_and_project_the_fleet_data_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = targets(hand="  hosts: [h1, h2]\n  project: team-a\n")
    new = hand().replace("--max-model-len 32768", "--max-model-len 65536")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand(), TARGETS: data}, {HAND: new})
    (file,) = plan["files"]
    assert (file["hosts"], file["project"], file["hosts_from"]) == (["h1", "h2"], "team-a", TARGETS)
    for stage in file["stages"] + file["rollback"]:
        for step in stage["steps"]:
            if "payload" in step:
                assert step["payload"]["project"] == "team-a"
                assert deployer.problems(step["endpoint"], step["payload"]) == []
                assert " -p team-a -f " in step["command"]
            for check in step.get("checks", ()):
                assert (
                    "docker compose -p team-a" in check["command"] or "docker compose" not in check["command"]
                )
    # Two engines a host, two hosts, one engine out at a time over the whole plan.
    (capacity,) = plan["capacity"]
    assert (capacity["engines"], capacity["hosts"], capacity["lowest"]) == (4, 2, 3)


def test_a_placement_that_names_no_host_is_said_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = targets(hand="  hosts: [any base host]\n")
    new = hand().replace("--max-model-len 32768", "--max-model-len 65536")
    repo = new_repo(tmp_path, {HAND: hand(), TARGETS: data})
    write(repo, {HAND: new})
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert code == 0
    assert (
        f"{HAND} on any base host (compose-manager's default project; the fleet's data names no host)" in out
    )
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["plan", "--format", "json"])
    file = json.loads(out)["files"][0]
    assert (file["hosts"], file["hosts_note"], file["project"]) == ([], "any base host", None)


def test_a_tag_whose_file_is_not_the_reviewed_one_or_that_goes_back_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {HAND: hand()})
    base = git(repo, "rev-parse", "HEAD")
    head = commit(repo, {HAND: hand().replace("--max-model-len 32768", "--max-model-len 65536")}, "longer")
    later = commit(repo, {HAND: hand().replace("--max-model-len 32768", "--max-model-len 8192")}, "shorter")
    release_tag(repo, "v0.0.1", base)
    release_tag(repo, "v0.0.2", head)
    release_tag(repo, "v0.0.3", later)
    plan = ["plan", "--base", base, "--head", head]
    # The tags of the reviewed commits: accepted, and the summary says when it deploys.
    code, out, err = run_cli(monkeypatch, capsys, repo, [*plan, "--tag", "v0.0.2", "--base-tag", "v0.0.1"])
    assert (code, err) == (0, "")
    assert out.splitlines()[1].startswith("tags: deploy v0.0.2 (deployable ")
    # A newer tag whose file is not the one reviewed.
    code, out, err = run_cli(monkeypatch, capsys, repo, [*plan, "--tag", "v0.0.3"])
    assert (code, out) == (2, "")
    assert err.startswith(f"--tag v0.0.3: {HAND} at v0.0.3 differs from the reviewed head (")
    assert len(err.splitlines()) == 1
    # Backwards, given or found on the base commit.
    code, out, err = run_cli(monkeypatch, capsys, repo, [*plan, "--tag", "v0.0.1", "--base-tag", "v0.0.2"])
    assert (code, out) == (2, "")
    assert err.startswith("--tag v0.0.1 is not newer than the deployed v0.0.2 (--base-tag)")
    code, out, err = run_cli(monkeypatch, capsys, repo, [*plan, "--tag", "v0.0.1"])
    assert err.startswith("--tag v0.0.1 is not newer than the deployed v0.0.1 (the base's release tag)")


def test_an_image_bump_over_three_files_reads_on_one_screen_and_fits_a_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [f"prod/stack-{index}.yaml" for index in range(3)]
    old = {name: hand() for name in names}
    new = {name: hand().replace("vllm-openai:v0.11.0", "vllm-openai:v0.11.1") for name in names}
    repo = new_repo(tmp_path, old)
    write(repo, new)
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert code == 0
    summary = out.split("\n\nprod/stack-0.yaml: the calls")[0].splitlines()
    assert len(summary) <= 40, "\n".join(summary)
    code, markdown, _ = run_cli(monkeypatch, capsys, repo, ["plan", "--format", "markdown"])
    assert code == 0
    # A pull-request comment holds 65,536 characters, shared with the record and the diff.
    assert len(markdown.encode()) < 24 * 1024
    assert "Truncated" not in markdown
    assert markdown.index("<details>") > markdown.index("Rollback, in this order")


RATE = "      BACKENDS: http://vllm-a:8000,http://vllm-b:8000\n"


def with_rate(reference: str) -> str:
    return hand().replace(RATE, RATE + f"      RATE_LIMIT: {reference}\n")


def test_a_new_variable_is_listed_with_what_a_host_without_it_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: with_rate('"${PROXY_RPS:-50}"')})
    (variable,) = plan["files"][0]["variables"]
    assert variable == {
        "name": "PROXY_RPS",
        "kinds": ["default"],
        "default": "50",
        "services": ["router"],
        "declared": False,
    }
    (tmp_path / "text").mkdir()
    repo = new_repo(tmp_path / "text", {HAND: hand()})
    write(repo, {HAND: with_rate('"${PROXY_RPS:?set it on every host}"')})
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert code == 0
    assert (
        "  new host variables, set in compose-manager's env files on every host before the first up: "
        "PROXY_RPS (required: the up fails on a host without it)"
    ) in out.splitlines()


def test_a_new_bare_variable_is_refused_unless_the_fleet_data_says_every_host_sets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {HAND: hand()})
    write(repo, {HAND: with_rate("${PROXY_RPS}")})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert (code, out) == (2, "")
    assert err.startswith(
        f"{HAND}: new variable ${{PROXY_RPS}} has no default and no `?`: Compose starts router with it empty "
        "on a host that does not set it; write ${PROXY_RPS:?set on every host}"
    )
    assert len(err.splitlines()) == 1
    write(repo, {TARGETS: targets(hand="  hosts: [h1]\n  host_variables: [PROXY_RPS]\n")})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert (code, err) == (0, "")
    assert "PROXY_RPS (set on every host (fleet data))" in out
