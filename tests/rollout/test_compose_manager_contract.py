"""Every call the tools print is one compose-manager honours as its own source states it.

compose-manager drops a body field it does not declare without a word, so a call that
looks right can do something else: a down "dry run" is a real down that stops an engine
while it serves. The contract (`rollout/compose-manager.yaml`) is the server's request
structs as data; these tests read every call of a plan, of its rollback and of the
documentation against it, and pin the order the real API can honour: stage image
changes first, preview before every down, never a down dry run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rollout.plan import deployer
from rollout.plan.steps import Action, ComposeCall, Mode
from tests.rollout.diffkit import ROOT
from tests.rollout.plankit import HAND, hand, plan_of

NEW_IMAGE = "vllm/vllm-openai:v0.11.1"


def calls_of(file: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(stage, step) for every step with a call, in the order they run, rollback last."""
    out: list[tuple[str, dict[str, Any]]] = []
    if file.get("staging"):
        out.append(("staging", file["staging"]))
    for stage in file["stages"]:
        out += [(stage["service"], step) for step in stage["steps"] if "payload" in step]
    if file.get("rollback_staging"):
        out.append(("staging", file["rollback_staging"]))
    for stage in file["rollback"]:
        out += [(stage["service"], step) for step in stage["steps"] if "payload" in step]
    return out


@pytest.fixture
def image_bump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    return plan_of(
        tmp_path,
        monkeypatch,
        capsys,
        {HAND: hand()},
        {HAND: hand().replace("vllm-openai:v0.11.0", NEW_IMAGE[5:])},
    )


def test_the_contract_refuses_what_the_server_would_drop_or_refuse() -> None:
    up, down = deployer.UP, deployer.DOWN
    ok = {"tag": "v0.0.8", "file": "prod/x.yaml", "services": ["a"]}
    assert deployer.problems(up, {**ok, "dry_run": True}) == []
    assert deployer.problems(up, {**ok, "materialize_only": True, "project": "glm53"}) == []
    assert deployer.problems(down, ok) == []
    assert deployer.problems(down, {**ok, "dry_run": True}) == [
        "POST /compose/down: unknown field 'dry_run' (a down cannot be previewed)"
    ]
    assert deployer.problems(down, {**ok, "force_recreate": False}) == [
        "POST /compose/down: unknown field 'force_recreate' (it is dropped)"
    ]
    assert deployer.problems(up, {"file": "prod/x.yaml"}) == [
        "POST /compose/up: required field 'tag' missing"
    ]
    assert deployer.problems(up, {**ok, "project": "work"}) == [
        "POST /compose/up: project 'work' is reserved (omit it to use the default)"
    ]
    assert deployer.problems(up, {**ok, "project": "GLM-5.1"}) == [
        "POST /compose/up: project 'GLM-5.1' is not canonical ([a-z0-9][a-z0-9_-]*)"
    ]
    assert deployer.problems(up, {**ok, "dry_run": True, "materialize_only": True}) == [
        "POST /compose/up: dry_run and materialize_only together (a preview stages nothing)"
    ]
    assert deployer.problems(up, {**ok, "services": "a"}) == [
        "POST /compose/up: 'services' must be a list, not str"
    ]
    assert deployer.problems(up, {**ok, "env": {"A-B": "x"}}) == [
        "POST /compose/up: env name 'A-B' is refused"
    ]


def test_a_down_cannot_be_built_as_a_dry_run_or_a_stage() -> None:
    for mode in (Mode.DRY_RUN, Mode.STAGE):
        with pytest.raises(ValueError, match="always real"):
            ComposeCall(Action.DOWN, "v0.0.8", "prod/x.yaml", ("a",), mode)


def test_the_command_is_what_compose_manager_runs_for_the_body() -> None:
    stage = ComposeCall(Action.UP, "v0.0.8", "prod/x.yaml", ("a", "b"), Mode.STAGE, "glm53")
    assert stage.command() == (
        "git checkout --quiet v0.0.8 && docker compose -p glm53 -f prod/x.yaml pull --ignore-buildable a b"
        " && docker compose -p glm53 -f prod/x.yaml build a b"
    )
    preview = ComposeCall(Action.UP, "v0.0.8", "prod/x.yaml", ("a",), Mode.DRY_RUN)
    assert preview.command().endswith(
        "docker compose --dry-run -p work -f prod/x.yaml up -d --remove-orphans a"
    )
    down = ComposeCall(Action.DOWN, "v0.0.7", "prod/x.yaml", ("a",))
    assert down.command() == "docker compose -p work -f prod/x.yaml down a"  # a down fetches no file


def test_an_image_bump_stages_first_previews_every_down_and_verifies_the_image(
    image_bump: dict[str, Any],
) -> None:
    (file,) = image_bump["files"]
    sequence = calls_of(file)
    for _, step in sequence:
        assert deployer.problems(step["endpoint"], step["payload"]) == [], step
    # The images are pulled while everything serves, before any down.
    first = sequence[0][1]
    assert (first["action"], first["payload"]["materialize_only"]) == ("stage", True)
    assert set(first["payload"]["services"]) == {"vllm-a", "vllm-b"}
    for stage in file["stages"] + file["rollback"]:
        actions = [step["action"] for step in stage["steps"]]
        assert "down" not in actions or actions.index("preview") < actions.index("down")
    # The verification proves the new image runs: the variant label would pass with the old.
    verify = next(step for step in file["stages"][0]["steps"] if step["action"] == "verify")
    image = [check for check in verify["checks"] if check["what"] == "it runs the new image"]
    assert [check["expect"] for check in image] == [NEW_IMAGE]
    assert (
        image[0]["api"]
        == f"GET /docker/ps: the line whose Names is {file['stages'][0]['service']}: Image is {NEW_IMAGE}"
    )
    # Its rollback stages the old image first.
    assert file["rollback_staging"]["payload"]["tag"] == "<OLD_TAG>"


def test_a_plan_without_image_changes_stages_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    new = hand().replace("--max-model-len 32768", "--max-model-len 65536")
    (file,) = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: new})["files"]
    assert (file["staging"], file["rollback_staging"]) == (None, None)
    checks = [
        check["what"]
        for stage in file["stages"]
        for step in stage["steps"]
        for check in step.get("checks", ())
    ]
    assert "it runs the new image" not in checks


_CALL = re.compile(r"POST (/compose/(?:up|down))\s*(\{.*?\})(?=\s*(?:\n\s*\n|```|$|\n[^\s{\"]))", re.DOTALL)


def documented_calls() -> list[tuple[str, str, dict[str, Any]]]:
    """Every `POST /compose/...` body the README and docs/ show, as JSON."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in _CALL.finditer(text):
            body = json.loads(match.group(2))
            found.append((path.name, f"POST {match.group(1)}", body))
    return found


def test_every_call_the_documentation_shows_is_one_the_server_reads_as_written() -> None:
    calls = documented_calls()
    assert calls, "the runbooks show compose-manager calls"
    for name, endpoint, body in calls:
        assert deployer.problems(endpoint, body) == [], (name, body)
