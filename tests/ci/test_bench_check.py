"""ci/bench_check.py: which commands a row times, and the environment it names (figures are not tested)."""

from __future__ import annotations

from pathlib import Path

from ci.bench_check import IN_ORDER, ROW_ENV, STAGES, environment_line, rows
from tests.ci.test_workflows import _session_names


def test_a_row_per_stage_of_check_and_the_two_references() -> None:
    assert list(STAGES) == _session_names()["check"]
    table = rows(["nox"])
    assert table["nox -R -s check"] == ["nox", "-R", "-s", "check"]
    # the same command, run with the stages ahead switched off
    assert table[IN_ORDER] == ["nox", "-R", "-s", "check"]
    assert ROW_ENV == {IN_ORDER: {"TIEROPS_STAGES_AHEAD": "0"}}
    assert [table[f"  {stage}"] for stage in STAGES] == [["nox", "-R", "-s", stage] for stage in STAGES]
    assert table["python -c pass"][1:] == ["-c", "pass"]
    assert table['python -c "import ruamel.yaml"'][1:] == ["-c", "import ruamel.yaml"]


def test_the_environment_says_whether_bytecode_writing_is_off() -> None:
    assert environment_line({"PYTHONDONTWRITEBYTECODE": "1"}).startswith("PYTHONDONTWRITEBYTECODE=1; ")
    line = environment_line({})
    assert line.startswith("PYTHONDONTWRITEBYTECODE unset; ")
    assert " CPU(s); Python 3." in line and "load average" in line


def test_the_in_order_row_alone_runs_with_the_stages_ahead_switched_off(tmp_path: Path) -> None:
    """measure runs every row with its ROW_ENV (a stand-in for nox records what it got)."""
    import json
    import os
    import sys

    from ci.bench_check import measure

    log = tmp_path / "runs.jsonl"
    recorder = tmp_path / "fake_nox.py"
    recorder.write_text(
        "import json, os, sys\n"
        f"with open({str(log)!r}, 'a') as out:\n"
        "    out.write(json.dumps([sys.argv[1:], os.environ.get('TIEROPS_STAGES_AHEAD')]) + '\\n')\n",
        encoding="utf-8",
    )
    env = {key: value for key, value in os.environ.items() if key != "TIEROPS_STAGES_AHEAD"}
    measure([sys.executable, str(recorder)], [env], repeat=1)
    runs = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    checks = [switch for argv, switch in runs if argv == ["-R", "-s", "check"]]
    assert sorted(checks, key=str) == ["0", None, None]  # the warm-up, the default row, the in-order row
    assert all(switch is None for argv, switch in runs if argv != ["-R", "-s", "check"])
