"""tools/check_faults.py: its faults still apply to the repository, and its judgement of a record.

The script itself runs five whole `nox -s check` (about a minute): it is run by hand
(`nox -s check-faults`, docs/development.md), not here. These tests keep it from
rotting: a fault whose text left the repository would make it fail, not pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.ci.matrix_records import FILES, cell, sample_record
from tests.conftest import FLEET
from tools.check_faults import FAULTS, Fault, apply, caught, rule_counts, stage_of


def test_the_faults_are_a_byte_edit_a_validator_finding_a_missing_dummy_and_a_schema_violation() -> None:
    assert [(fault.stage, fault.rule) for fault in FAULTS] == [
        ("generated", None),
        ("validate", "compose-hygiene"),
        ("compose", "dummy-missing"),
        ("compose", "compose-config"),
    ]


@pytest.mark.parametrize("fault", FAULTS, ids=[fault.name for fault in FAULTS])
def test_each_fault_applies_to_a_fleet_and_changes_one_file(tmp_path: Path, fault: Fault) -> None:
    for part in ("prod", "ci"):
        shutil.copytree(FLEET / part, tmp_path / part)
    edited = apply(tmp_path, fault)
    before = (FLEET / edited.relative_to(tmp_path)).read_bytes()
    after = edited.read_bytes()
    assert after != before
    assert edited.match(fault.glob)
    if fault.rule == "dummy-missing":  # the removed dummy is one a prod file reads
        (removed,) = set(before.decode().splitlines()) - set(after.decode().splitlines())
        name = removed.partition("=")[0]
        assert any(
            f"${{{name}" in path.read_text(encoding="utf-8") for path in (FLEET / "prod").glob("*.yaml")
        )


def test_a_fault_whose_text_is_gone_is_an_error_not_a_pass(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "x.yaml").write_text(
        "services: {a: {image: x, environment: [A=${USED}]}}\n", encoding="utf-8"
    )
    (tmp_path / "ci" / "dummy.env").write_text("OTHER=dummy\n", encoding="utf-8")
    with pytest.raises(LookupError, match=r"update tools/check_faults\.py"):
        apply(tmp_path, FAULTS[2])


def test_a_fault_is_caught_only_by_a_failing_check_whose_stage_fails_with_the_rule() -> None:
    validator = FAULTS[1]
    record = sample_record()
    stage_of(record, "validate")["files"][FILES[0]] = cell("fail", {"compose-hygiene": 1})
    assert caught(1, record, validator) is None
    assert caught(0, record, validator) == "the check passed"
    assert caught(1, None, validator) == "no record was written"
    assert caught(1, record, FAULTS[2]) == "compose is pass, not fail"
    stage_of(record, "validate")["files"][FILES[0]] = cell("fail", {"prod-config": 1})
    assert caught(1, record, validator) == "validate counts no compose-hygiene finding"


def test_rule_counts_add_up_files_and_the_repository_cell() -> None:
    record = sample_record()
    assert rule_counts(stage_of(record, "validate")) == {
        "prod-config": 2,
        "engine-flags": 1,
        "compose-hygiene": 1,
    }
    assert rule_counts(stage_of(record, "lint")) == {"ruff-check": 1, "check-yaml": 1}
