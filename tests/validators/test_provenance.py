"""A finding on a generated file names the stack data line that wrote its word."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generators.cli import main as generate
from tests.conftest import FLEET
from tests.validators.conftest import run_cli


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fleet"
    shutil.copytree(FLEET, root)
    monkeypatch.setenv("TIEROPS_FLEET", str(root))
    return root


def _edit(path: Path, old: str, new: str) -> int:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def test_a_typo_in_the_source_is_named_at_its_source_line(fleet: Path) -> None:
    line = _edit(
        fleet / "generators" / "glm53.source.yaml",
        "- --max-queued-requests 8\n",
        "- --max-queud-requests 8\n",
    )
    assert generate(["--write"]) == 0
    rows = run_cli("--format", "json", "--rule", "engine-flags").findings()
    assert rows, "the typo is a finding"
    where = f"; written at generators/glm53.source.yaml:{line}: fix it there, then `nox -s generate`"
    assert all(row["message"].endswith(where) for row in rows), rows


def test_a_word_written_on_several_lines_names_no_line(fleet: Path) -> None:
    # `--tp-size 4` becomes `--tp-size 44`: the flag is traced, its value "44" is not (it is
    # nowhere in the data), and a value on several lines would not be either.
    _edit(fleet / "generators" / "glm53.source.yaml", "- --tp-size 4\n", "- --tp-size 44\n")
    assert generate(["--write"]) == 0
    rows = run_cli("--format", "json", "--rule", "prod-config").findings()
    values = [row for row in rows if "--tp-size is 44" in row["message"]]
    assert values and all("written at" not in row["message"] for row in values)


def test_a_copy_outside_the_fleet_is_not_traced(fleet: Path, tmp_path: Path) -> None:
    _edit(
        fleet / "generators" / "glm53.source.yaml",
        "- --max-queued-requests 8\n",
        "- --max-queud-requests 8\n",
    )
    assert generate(["--write"]) == 0
    copy = tmp_path / "copy.yaml"
    shutil.copy(next((fleet / "prod").glob("*.yaml")), copy)
    rows = run_cli("--format", "json", "--rule", "engine-flags", copy).findings()
    assert rows and all("written at" not in row["message"] for row in rows)


def test_one_typo_is_one_finding_that_says_where_else_and_what_was_meant(fleet: Path) -> None:
    line = _edit(
        fleet / "generators" / "glm53.source.yaml",
        "- --max-queued-requests 8\n",
        "- --max-queud-requests 8\n",
    )
    assert generate(["--write"]) == 0
    result = run_cli("--format", "json")
    rows = result.findings()
    about = [row for row in rows if "--max-queu" in row["message"]]
    # engine-flags speaks for the typo; prod-config's "not in the contract" and "lacks"
    # are the same cause; the other engines and files are named, not repeated
    assert [row["rule"] for row in about] == ["engine-flags"], about
    (message,) = [row["message"] for row in about]
    assert "did you mean --max-queued-requests?" in message
    engines = sum(
        text.count("\n  model-sg-") for text in (p.read_text() for p in (fleet / "prod").glob("*.yaml"))
    )
    assert message.partition("; written at")[0].count(".yaml:") == min(engines - 1, 5), (
        message
    )  # at most five places named
    assert message.endswith(
        f"; written at generators/glm53.source.yaml:{line}: fix it there, then `nox -s generate`"
    )


def test_with_the_contract_alone_the_typo_is_one_finding_with_what_it_lacks(fleet: Path) -> None:
    _edit(
        fleet / "generators" / "glm53.source.yaml",
        "- --max-queued-requests 8\n",
        "- --max-queud-requests 8\n",
    )
    assert generate(["--write"]) == 0
    rows = run_cli("--format", "json", "--rule", "prod-config").findings()
    about = [row["message"] for row in rows if "--max-queu" in row["message"]]
    assert len(about) == 1, about
    assert (
        "argv has --max-queud-requests, which is not in the contract; did you mean --max-queued-requests, which it lacks?"
        " (validators/contracts/glm53.yaml: engines.argv)" in about[0]
    )
