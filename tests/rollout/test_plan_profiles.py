"""A service behind a compose profile: named, never given `--profile`, as compose-manager does.

The canary file puts every service behind one profile, so an unscoped `up` starts
nothing. compose-manager has no profile field and passes no `--profile`: Compose
enables the profile of a service named on its command line. The plan's calls and
commands do exactly that, and the real Compose binary shows that naming is enough.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.rollout.plankit import plan_of
from tierops.composebin import find_compose, run_config

CANARY = "prod/canary.yaml"
PROFILE = "canary-window"
FILE = f"""\
name: fixture
services:
  engine-r1:
    image: lmsysorg/sglang@sha256:{"a" * 64}
    container_name: engine-r1
    profiles: [{PROFILE}]
    command: [serve, --port, "8000", --chunk, "4096"]
  engine-r2:
    image: lmsysorg/sglang@sha256:{"a" * 64}
    container_name: engine-r2
    profiles: [{PROFILE}]
    command: [serve, --port, "8000", --chunk, "4096"]
"""


@pytest.fixture
def canary_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    new = FILE.replace('--chunk, "4096"]\n', '--chunk, "8192"]\n', 2)
    return plan_of(tmp_path, monkeypatch, capsys, {CANARY: FILE}, {CANARY: new}, "--tag", "v0.0.8")


def test_no_call_or_command_of_a_profiled_service_names_its_profile(canary_plan: dict[str, Any]) -> None:
    file = canary_plan["files"][0]
    stages = file["stages"] + file["rollback"]
    assert sorted(stage["service"] for stage in file["stages"]) == ["engine-r1", "engine-r2"]
    for stage in stages:
        for item in stage["steps"]:
            if "payload" in item:
                assert item["payload"]["services"] == [stage["service"]]
                assert "profile" not in json.dumps(item["payload"])
                assert "--profile" not in item["command"]
            for check in item.get("checks", ()):
                assert "--profile" not in check["command"]


def test_naming_the_service_is_enough_for_compose_to_enable_its_profile(tmp_path: Path) -> None:
    compose = find_compose()
    path = tmp_path / "canary.yaml"
    path.write_text(FILE, encoding="utf-8")
    env = tmp_path / "empty.env"
    env.write_text("", encoding="utf-8")
    unscoped = run_config(compose, path, env_file=env, extra_args=("--format", "json"))
    named = run_config(compose, path, env_file=env, extra_args=("engine-r2", "--format", "json"))
    assert (unscoped.ok, list(json.loads(unscoped.stdout).get("services") or {})) == (True, [])
    assert (named.ok, list(json.loads(named.stdout)["services"])) == (True, ["engine-r2"])
