"""`rollout apply` refuses, before any call, a plan it cannot send as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rollout.cli import main
from rollout.plan.deploy import Journal, plan_digest
from tierops.errors import RefusedError, UsageError

PLAN: dict[str, Any] = {
    "format": "tierops.rollout.plan/2",
    "tags": {
        "new": "v0.0.2",
        "old": "v0.0.1",
        "notes": [],
        "deployable": "deployable now under MIN_TAG_AGE_HOURS=48",
    },
    "files": [],
}


def apply(tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    endpoints = tmp_path / "hosts.yaml"
    endpoints.write_text("h1: http://127.0.0.1:9\n", encoding="utf-8")
    code = main(["apply", str(path), "--endpoints", str(endpoints)])
    out, err = capsys.readouterr()
    assert out == ""
    return code, err


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPOSE_MANAGER_TOKEN", "t")


def test_a_plan_with_a_placeholder_tag_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = {**PLAN, "tags": {**PLAN["tags"], "new": "<NEW_TAG>"}}
    code, err = apply(tmp_path, capsys, plan)
    assert code == 2
    assert err.startswith(f"{tmp_path / 'plan.json'}: the plan names <NEW_TAG>, a placeholder")
    assert err.rstrip().endswith("write the plan again with --tag TAG")


def test_a_tag_younger_than_the_gate_is_refused_with_when_it_deploys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = "deployable from 2026-12-05T10:00:00Z (MIN_TAG_AGE_HOURS=48)"
    code, err = apply(tmp_path, capsys, {**PLAN, "tags": {**PLAN["tags"], "deployable": later}})
    assert code == 2
    assert f"v0.0.2 is not {later}" in err


def test_not_a_plan_and_a_missing_token_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, err = apply(tmp_path, capsys, {"format": "something else"})
    assert (code, len(err.splitlines())) == (2, 1)
    assert "not a plan of format tierops.rollout.plan/2" in err
    monkeypatch.delenv("COMPOSE_MANAGER_TOKEN")
    code, err = apply(tmp_path, capsys, PLAN)
    assert (code, err.splitlines()[0].split(";")[0]) == (2, "COMPOSE_MANAGER_TOKEN is not set")


def test_an_unreachable_host_is_named_and_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = {**PLAN, "files": [{"path": "prod/x.yaml", "hosts": ["h1"], "stages": [], "rollback": []}]}
    code, err = apply(tmp_path, capsys, plan)
    assert code == 3
    assert err.startswith("h1 (http://127.0.0.1:9) does not answer")


def test_a_journal_of_another_plan_is_refused_not_read(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN), encoding="utf-8")
    with Journal.open(tmp_path / "plan.json.journal", plan_digest(plan)) as journal:
        journal.record("h1\tprod/x.yaml\t1.1")
        # While one run holds it, another is refused: both would send every call.
        with pytest.raises(RefusedError, match="another apply is using this journal"):
            Journal.open(tmp_path / "plan.json.journal", plan_digest(plan))
    # The same plan resumes: the step done is known.
    with Journal.open(tmp_path / "plan.json.journal", plan_digest(plan)) as again:
        assert again.done == {"h1\tprod/x.yaml\t1.1"}
    # A plan written again (another change, the same file name) is another plan.
    plan.write_text(json.dumps({**PLAN, "tags": {**PLAN["tags"], "new": "v0.0.3"}}), encoding="utf-8")
    with pytest.raises(UsageError, match="is the journal of another plan"):
        Journal.open(tmp_path / "plan.json.journal", plan_digest(plan))


@pytest.mark.parametrize(
    ("flag", "value"), [("--poll", "0"), ("--poll", "nan"), ("--wait", "-1"), ("--poll", "1e300")]
)
def test_a_poll_or_wait_that_is_not_a_positive_number_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    path = tmp_path / "plan.json"
    path.write_text("{}", encoding="utf-8")
    code = main(["apply", str(path), "--endpoints", str(tmp_path / "hosts.yaml"), flag, value])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(
        "--poll and --wait must be numbers of seconds from 0 (excluded) to 86400"
    )
