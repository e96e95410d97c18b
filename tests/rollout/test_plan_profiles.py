"""Every command for a service behind a compose profile carries it (issue 11).

The canary file puts every service behind `w4afp8-canary`, so an unscoped `up` starts
nothing. compose-manager's payload has no profile field (naming the service activates
its profile); the plain commands and the verification commands pass `--profile`, and
each call says so in its note.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.rollout.diffkit import R2, prod_text
from tests.rollout.plankit import calls, plan_of, step, text_of

CANARY = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"
PROFILE = "w4afp8-canary"


@pytest.fixture
def canary_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    old = prod_text(CANARY)
    new = old.replace("      - write_through\n", "      - write_back\n")
    assert new != old
    return plan_of(tmp_path, monkeypatch, capsys, {CANARY: old}, {CANARY: new}, "--tag", "v0.0.8")


def test_every_call_of_the_canary_file_carries_its_profile(canary_plan: dict[str, Any]) -> None:
    (stage,) = canary_plan["files"][0]["stages"]
    assert stage["service"] == R2
    note = (
        f"{R2} sit(s) behind the compose profile {PROFILE}: the payload has no profile field, Compose "
        f"activates it for a service named in `services`; the command passes --profile {PROFILE}"
    )
    for item in stage["steps"]:
        if "payload" not in item:
            continue
        assert f"docker compose --profile {PROFILE} -f {CANARY} " in item["command"].replace("--dry-run ", "")
        assert (item["profiles"], item["note"]) == ([PROFILE], note)
        assert "profile" not in item["payload"]  # the API has no such field
        for call in item["rollback"]:
            assert f"--profile {PROFILE}" in call["command"]
            assert call["note"] == note
    assert step(stage, "up (dry run)")["command"] == (
        f"git checkout --quiet v0.0.8 && docker compose --dry-run --profile {PROFILE} -f {CANARY} "
        f"up -d --no-deps --remove-orphans {R2}"
    )
    assert calls(step(stage, "up")) == [
        ("POST /compose/down", "v0.0.8", R2),
        ("POST /compose/up", "<OLD_TAG>", R2),
    ]


def test_the_verification_commands_carry_the_profile_too(canary_plan: dict[str, Any]) -> None:
    (stage,) = canary_plan["files"][0]["stages"]
    commands = [check["command"] for check in step(stage, "verify")["checks"]]
    compose = [command for command in commands if "docker compose" in command]
    assert len(compose) == 4  # health, completion, container label, server_args
    assert all(f"docker compose --profile {PROFILE} -f {CANARY} " in command for command in compose)
    for rollback_stage in canary_plan["files"][0]["rollback"]:
        for item in rollback_stage["steps"]:
            assert "payload" not in item or f"--profile {PROFILE}" in item["command"]


def test_a_file_without_profiles_has_no_profile_flag_or_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = old.replace("keepalive 64;", "keepalive 128;")
    plan = plan_of(
        tmp_path,
        monkeypatch,
        capsys,
        {"prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml": old},
        {"prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml": new},
    )
    for stage in plan["files"][0]["stages"]:
        for item in stage["steps"]:
            assert "--profile" not in item.get("command", "")
            assert "note" not in item and "profiles" not in item


def test_the_text_plan_names_the_profile_once_per_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text(CANARY)
    new = old.replace("      - write_through\n", "      - write_back\n")
    out = text_of(tmp_path, monkeypatch, capsys, {CANARY: old}, {CANARY: new})
    note = (
        f"     note: {R2} sit(s) behind the compose profile {PROFILE}: the payload has no profile field, "
        f"Compose activates it for a service named in `services`; the command passes --profile {PROFILE}"
    )
    assert out.splitlines().count(note) == 2  # the step and its reverse in the rollback
    commands = [line.strip() for line in out.splitlines() if line.strip().startswith("$ git checkout")]
    assert commands and all(f"--profile {PROFILE} -f {CANARY}" in command for command in commands)
