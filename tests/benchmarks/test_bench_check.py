"""benchmarks/bench_check.py: which commands a row times, and the environment it names (figures are not tested)."""

from __future__ import annotations

from benchmarks.bench_check import STAGES, environment_line, rows
from tests.ci.test_workflows import _session_names


def test_a_row_per_stage_of_check_and_the_two_references() -> None:
    assert list(STAGES) == _session_names()["check"]
    table = rows(["nox"])
    assert table["nox -R -s check"] == ["nox", "-R", "-s", "check"]
    assert [table[f"  {stage}"] for stage in STAGES] == [["nox", "-R", "-s", stage] for stage in STAGES]
    assert table["python -c pass"][1:] == ["-c", "pass"]
    assert table['python -c "import ruamel.yaml"'][1:] == ["-c", "import ruamel.yaml"]


def test_the_environment_says_whether_bytecode_writing_is_off() -> None:
    assert environment_line({"PYTHONDONTWRITEBYTECODE": "1"}).startswith("PYTHONDONTWRITEBYTECODE=1; ")
    line = environment_line({})
    assert line.startswith("PYTHONDONTWRITEBYTECODE unset; ")
    assert " CPU(s); Python 3." in line and "load average" in line
