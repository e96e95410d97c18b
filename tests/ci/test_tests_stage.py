"""The record's `tests` stage: pytest's verdict read from its own JUnit XML, and one headline for all.

Real pytest runs on small test files in a temporary directory (one passes, one fails,
one errors in a fixture), through `python -m ci.stage tests`, then `ci.record`
assembles the record and `ci.matrix_markdown` renders its headline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ci import matrix_markdown, record, stage
from ci.inputs import prod_files
from ci.junit import JUNIT, JunitReport, read_junit
from ci.record import assemble, parse_outcomes
from ci.stage import ROOT, RUN_ENV, result_path
from ci.stages import Context, run_tests
from tests.ci.matrix_records import cell, passing_record, sample_record
from tests.conftest import FLEET
from tierops.checkmatrix import headline
from tierops.errors import UsageError

PY = sys.executable

PASSING = "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    pass\n"
FAILING = (
    "import pytest\n\n\n"
    "def test_ok():\n    pass\n\n\n"
    "def test_wrong():\n    assert 1 == 2\n\n\n"
    "@pytest.fixture\ndef broken():\n    raise RuntimeError('no fixture')\n\n\n"
    "def test_needs_broken(broken):\n    pass\n\n\n"
    "@pytest.mark.skip(reason='not here')\ndef test_skipped():\n    pass\n"
)


def suite(directory: Path, body: str) -> list[str]:
    """A pytest command over one test file under `directory/tests`, with its own empty
    configuration (not this repository's)."""
    (directory / "tests").mkdir(parents=True)
    (directory / "tests" / "test_sample.py").write_text(body, encoding="utf-8")
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(directory / "pytest.ini"),
            "--rootdir", str(directory), str(directory / "tests")]  # fmt: skip


def stage_result(
    build: Path, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv(RUN_ENV, "run-1")
    code = stage.run("tests", command, build, os.environ)
    return code, json.loads(result_path(build, "tests").read_text(encoding="utf-8"))


def pick_tests(data: dict[str, Any]) -> dict[str, Any]:
    return next(item for item in data["stages"] if item["name"] == "tests")


# --------------------------------------------------------------------------- reading the JUnit report


def test_a_failing_suite_is_a_fail_with_its_counts_and_failing_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, result = stage_result(tmp_path / "build", suite(tmp_path / "suite", FAILING), monkeypatch)

    assert code == 1
    assert result["verdict"] == "fail"
    assert result["repository"]["counts"] == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert result["note"].startswith("1 failed, 1 error: ")
    assert "tests.test_sample::test_wrong" in result["note"] and "test_needs_broken" in result["note"]
    assert (tmp_path / "build" / "check" / JUNIT).is_file()


def test_test_ids_are_pytest_node_ids_where_the_file_is_under_the_root(tmp_path: Path) -> None:
    command = suite(tmp_path, FAILING)
    outcome = run_tests(command, Context(tmp_path, tmp_path / "build", (), dict(os.environ)))

    assert outcome.verdict == "fail"
    assert outcome.note == (
        "1 failed, 1 error: tests/test_sample.py::test_wrong, tests/test_sample.py::test_needs_broken"
    )


def test_a_passing_suite_passes_and_a_report_that_is_not_junit_is_refused(tmp_path: Path) -> None:
    outcome = run_tests(suite(tmp_path, PASSING), Context(tmp_path, tmp_path / "build", (), dict(os.environ)))
    assert (outcome.verdict, outcome.exit_code, dict(outcome.repository.counts)) == ("pass", 0, {"passed": 2})

    other = tmp_path / "other.xml"
    other.write_text("<html/>", encoding="utf-8")
    with pytest.raises(ValueError, match="not a JUnit report"):
        read_junit(other, tmp_path)
    other.write_text("<testsuites><testsuite>", encoding="utf-8")
    with pytest.raises(ValueError, match="unreadable JUnit report"):
        read_junit(other, tmp_path)


def test_no_report_is_no_verdict_never_a_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest refuses an unknown option before it writes any report: exit 4, no JUnit.
    code, result = stage_result(tmp_path, [PY, "-m", "pytest", "--no-such-option"], monkeypatch)
    assert code == 4
    assert result["verdict"] == "error"
    assert result["note"] == "pytest exit 4, no JUnit report"


def test_the_note_names_three_failing_ids_then_counts_the_rest() -> None:
    ids = tuple(f"tests/test_x.py::test_{index}" for index in range(5))
    report = JunitReport(passed=7, failed=5, errors=0, skipped=0, failing=ids)
    assert report.note() == f"5 failed: {', '.join(ids[:3])} and 2 more"
    assert report.note(limit=50) == "5 failed: tests/test_x.py::test_0 and 4 more"
    assert len(report.note(limit=12)) <= 12


# --------------------------------------------------------------------------- the record and its headline


def test_a_record_built_from_a_junit_file_with_a_failure_says_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = tmp_path / "build"
    stage_result(build, suite(tmp_path / "suite", FAILING), monkeypatch)

    data = assemble(ROOT, build, "run-1").record
    item = pick_tests(data)

    assert data["verdict"] == "fail"
    assert item["verdict"] == "fail" and item["note"].startswith("1 failed, 1 error: ")
    # the stages that did not run for one reason share one clause
    assert headline(data) == (
        "fail: tests (1 failed, 1 error); generated, validate, compose, collector, diff, plan, lint, "
        "typecheck not run (no result from this run)"
    )
    text = matrix_markdown.render(data, None, None)
    assert text.startswith("### Check matrix: **fail**: tests (1 failed, 1 error); generated, validate, ")
    assert "- tests: `1 failed, 1 error: tests.test_sample::test_wrong, " in text


def test_a_record_without_a_tests_result_says_not_run(tmp_path: Path) -> None:
    data = assemble(ROOT, tmp_path, "run-1").record
    item = pick_tests(data)
    assert (item["verdict"], item["note"]) == ("not run", "no result from this run")
    assert data["verdict"] == "not run"
    assert "tests not run (no result from this run)" in headline(data)


def test_a_failed_tests_step_is_never_a_pass_whatever_result_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The step failed before pytest wrote anything (an install, say): no result at all.
    data = assemble(ROOT, tmp_path, "run-1", {"tests": "failure"}).record
    item = pick_tests(data)
    assert (item["verdict"], item["note"]) == ("error", "the job's tests step failed, but it left no result")
    assert data["verdict"] == "fail"
    assert headline(data).startswith("fail: tests (error)")

    stage_result(tmp_path, suite(tmp_path / "suite", PASSING), monkeypatch)
    assert pick_tests(assemble(ROOT, tmp_path, "run-1", {"tests": "success"}).record)["verdict"] == "pass"
    item = pick_tests(assemble(ROOT, tmp_path, "run-1", {"tests": "failure"}).record)
    assert (item["verdict"], item["note"]) == (
        "error",
        "the job's tests step failed, but its result says pass",
    )

    skipped = pick_tests(assemble(ROOT, tmp_path / "none", "run-1", {"tests": "skipped"}).record)
    assert (skipped["verdict"], skipped["note"]) == ("not run", "the job's tests step was skipped")

    # the collector's step alike: a red collector step is never shown as not run only
    data = assemble(ROOT, tmp_path / "none", "run-1", {"collector": "failure"}).record
    collector = next(item for item in data["stages"] if item["name"] == "collector")
    assert (collector["verdict"], collector["note"]) == (
        "error",
        "the job's collector step failed, but it left no result",
    )


def test_step_outcomes_are_stage_equals_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert parse_outcomes("tests=failure") == {"tests": "failure"}
    assert parse_outcomes("tests=") == {}  # a step without an outcome yet
    with pytest.raises(UsageError, match="want STAGE=OUTCOME"):
        parse_outcomes("pytest=failure")
    with pytest.raises(UsageError, match="is not one of"):
        parse_outcomes("tests=red")
    # the CLI takes them from the environment, as check.yml hands them over
    monkeypatch.setenv(record.OUTCOMES_ENV, "tests=failure")
    assert record.main(["--build-dir", str(tmp_path), "--run", "run-1"]) == 0
    assert capsys.readouterr().out.startswith("check matrix: fail: tests (error); ")
    written = json.loads((tmp_path / "check-matrix.json").read_text(encoding="utf-8"))
    assert written["verdict"] == "fail"


# --------------------------------------------------------------------------- the headline's wording


def _stage(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(item for item in data["stages"] if item["name"] == name)


def test_the_headline_says_pass_only_when_every_stage_ran_and_passed() -> None:
    data = passing_record()
    assert headline(data) == "pass"
    assert matrix_markdown.header(data).startswith("### Check matrix: pass\n")


def test_the_headline_of_a_failing_suite_names_the_counts() -> None:
    data = passing_record()
    _stage(data, "tests").update(verdict="fail", exit_code=1, note="3 failed: tests/test_a.py::test_b")
    _stage(data, "tests")["repository"] = cell("fail", {"failed": 3, "passed": 400})
    assert headline(data) == "fail: tests (3 failed)"
    assert matrix_markdown.header(data).startswith("### Check matrix: **fail**: tests (3 failed)\n")


def test_the_headline_of_a_local_check_says_what_did_not_run_and_why() -> None:
    data = passing_record()
    _stage(data, "tests").update(verdict="not run", exit_code=None, note="no result from this run")
    _stage(data, "collector").update(verdict="not run", note="no Docker")
    assert headline(data) == (
        "incomplete: collector not run (no Docker); tests not run (no result from this run)"
    )
    assert matrix_markdown.header(data).startswith(
        "### Check matrix: _incomplete_: collector not run (no Docker); tests not run (no result from this run)\n"
    )


def test_the_headline_of_a_stage_without_a_verdict_says_error_and_the_note_says_why_once() -> None:
    data = sample_record()
    diff = _stage(data, "diff")
    note = "rollout: error: unknown base ref 'nope' (git rev-parse: not a commit)"
    diff.update(verdict="error", exit_code=2, note=note)
    diff["files"] = {path: cell("error") for path in diff["files"]}
    diff["repository"] = cell("error", note=note)
    assert headline(data).startswith("fail: validate (1 of 3 files), diff (error), lint (")
    text = matrix_markdown.render(data, None, None)
    assert text.count("unknown base ref") == 1
    assert "unreadable JSON report" not in text


def test_cell_notes_several_files_share_are_shown_once() -> None:
    data = sample_record()
    plan = _stage(data, "plan")
    plan.update(verdict="error", exit_code=2, note="a file could not be read")
    plan["files"] = {path: cell("error", note="cannot read the base") for path in plan["files"]}
    notes = matrix_markdown.notes(data)
    assert "- plan, 3 files: cannot read the base\n" in notes
    assert notes.count("cannot read the base") == 1


# --------------------------------------------------------------------------- a tool's one-line error


def test_an_unknown_base_ref_reaches_the_record_and_the_markdown_as_the_tools_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "prod").mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t.invalid", GIT_CONFIG_GLOBAL=os.devnull)
    for path in prod_files(FLEET):
        (repo / path).write_bytes((FLEET / path).read_bytes())
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    monkeypatch.setenv(RUN_ENV, "run-1")
    monkeypatch.setenv("TIEROPS_BASE_REF", "no-such-ref")
    build = tmp_path / "build"
    for name in ("diff", "plan"):
        command = [
            PY, "-c",
            f"import os, sys; os.chdir({str(repo)!r}); sys.path.insert(0, {str(ROOT)!r}); "
            f"from rollout.cli import main; raise SystemExit(main([{name!r}, *sys.argv[1:]]))",
        ]  # fmt: skip
        assert stage.run(name, command, build, os.environ) == 2

    line = "unknown git ref 'no-such-ref'; check the name with `git rev-parse --verify`"
    data = assemble(ROOT, build, "run-1").record
    for name in ("diff", "plan"):
        item = next(entry for entry in data["stages"] if entry["name"] == name)
        assert (item["verdict"], item["note"]) == ("error", line)
        assert all("note" not in cell for cell in item["files"].values())
    text = matrix_markdown.render(data, None, None)
    assert "**fail**: diff (error), plan (error); " in text
    assert text.count("unknown git ref") == 1
    assert (
        "- diff, plan: unknown git ref 'no-such-ref'; check the name with ?git rev-parse --verify?\n" in text
    )
    assert "unreadable JSON report" not in text
