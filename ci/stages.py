"""The stages of the check matrix, and how each one's verdict per prod file is read.

A stage runs the command its nox session names and reads its verdict from the tool's
own machine format: `python -m validators --format json`, `python -m generators --check
--format json`, `python -m validators.compose --format json`, `python -m rollout
diff|plan --format json`, mypy's `--output json`, the collector's JSON file, pytest's
JUnit XML; pre-commit has none, so its fixed `- hook id:` lines. The log shows each
tool's own text report. Nothing here decides a verdict on its own: the tool's exit
code and findings do.

Library code: it returns an `Outcome` (cells, what to print, facts for the record)
and never prints; `python -m ci.stage` (ci/stage.py) prints, writes the result and
exits with the tool's own exit code.

    STAGES["validate"].run(["python", "-m", "validators", "--format", "json"], context)
    -> Outcome(exit_code=1, files={"prod/X.yaml": Cell("fail", {"prod-config": 2}), ...})
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ci.compose_facts import compose_facts, compose_facts_of
from ci.junit import JUNIT, read_junit

PASS = "pass"
FAIL = "fail"
ERROR = "error"  # the tool ran but could not give a verdict (usage error, crash, unreadable output)
NOT_RUN = "not run"
VERDICTS = (PASS, FAIL, ERROR, NOT_RUN)
ERROR_CODE = 3  # an unreadable report: an internal error of the pipeline, never a pass

# Colour codes: CI sets FORCE_COLOR, and the log keeps them; parsing must not see them.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Cell:
    """One stage's verdict on one prod file (or on the repository as a whole)."""

    verdict: str
    counts: Mapping[str, int] = field(default_factory=dict)  # findings (or changes) by rule id
    note: str = ""
    duration_s: float | None = None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"verdict": self.verdict, "counts": dict(sorted(self.counts.items()))}
        if self.note:
            data["note"] = self.note
        if self.duration_s is not None:
            data["duration_s"] = round(self.duration_s, 3)
        return data


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    files: Mapping[str, Cell]  # prod file (repository-relative) -> its cell
    repository: Cell  # the repository-wide verdict and findings tied to no prod file
    stdout: str = ""  # what the stage's log shows (the tool's own report)
    stderr: str = ""
    facts: Mapping[str, Any] = field(default_factory=dict)  # for the record: compose binary, diff base
    markdown: str | None = None  # the diff's / plan's Markdown, for the rendering
    # The stage's one line for the record (the tool's error, why it did not run); empty:
    # ci.stage takes the last line the tool printed when the stage did not pass.
    note: str = ""
    # The stage's verdict when its exit code alone does not tell it (a collector that
    # could not run exits 0 but passed nothing); None: from the exit code.
    verdict: str | None = None


@dataclass(frozen=True)
class Context:
    root: Path  # the repository
    build: Path  # where results go (build/ unless a test says otherwise)
    prod_files: tuple[str, ...]  # prod/*.yaml, repository-relative, sorted
    environ: Mapping[str, str]


@dataclass(frozen=True)
class Stage:
    name: str
    scope: str  # "file": one verdict per prod file; "repository": one verdict
    required: bool  # one of the sessions `nox -s check` requires
    summary: str
    run: Callable[[Sequence[str], Context], Outcome]


# --------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_command(command: Sequence[str], context: Context, *, merge: bool) -> Completed:
    """Run a stage's command in the repository; stdin closed so nothing waits for input."""
    try:
        proc = subprocess.run(
            list(command),
            cwd=context.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge else subprocess.PIPE,
            text=True,
            errors="replace",
            env=dict(context.environ),
            check=False,
        )
    except OSError as error:
        return Completed(127, "", f"cannot run {command[0]!r}: {error}\n")
    # Ended by a signal: 128 + its number, as a shell (and the exit-code table) says.
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    return Completed(code, proc.stdout, proc.stderr or "")


def plain(text: str) -> str:
    return _ANSI.sub("", text)


def stage_verdict(exit_code: int) -> str:
    """A stage's own verdict from the exit-code table: 0 clean, 1 findings, else no verdict."""
    return {0: PASS, 1: FAIL}.get(exit_code, ERROR)


def last_line(text: str, limit: int = 200) -> str:
    """The last non-empty line a tool printed (its one-line error), plain and bounded."""
    for line in reversed(plain(text).splitlines()):
        if line.strip():
            flat = " ".join(line.split())
            return flat if len(flat) <= limit else flat[: limit - 3] + "..."
    return ""


def _error_cells(context: Context, note: str) -> dict[str, Cell]:
    return {path: Cell(ERROR, note=note) for path in context.prod_files}


def _count(counts: dict[str, dict[str, int]], path: str, rule: str) -> None:
    per = counts.setdefault(path, {})
    per[rule] = per.get(rule, 0) + 1


def _no_verdict(context: Context, proc: Completed, code: int, note: str) -> Outcome:
    """A run whose report says nothing per file: every cell an error, with why."""
    return Outcome(code, _error_cells(context, note), Cell(ERROR, note=note), proc.stdout, proc.stderr)


def _repository(outcome_code: int, counts: Mapping[str, int], note: str = "") -> Cell:
    verdict = stage_verdict(outcome_code)
    if verdict == FAIL and not counts:
        verdict = PASS  # findings elsewhere (in prod files), none tied to the repository
    return Cell(verdict, dict(counts), note)


def _exit_note(code: int) -> str:
    return f"exit {code}: no verdict (see the stage's log)"


# --------------------------------------------------------------------------- generated


def run_generated(command: Sequence[str], context: Context) -> Outcome:
    """`python -m generators --check --format json`: a status per file (generators/check.py);
    the log shows the generators' own text report."""
    from generators.check import Status, report_text, reports_from_json

    proc = run_command(command, context, merge=False)
    if proc.returncode not in (0, 1):
        return _no_verdict(context, proc, proc.returncode, _exit_note(proc.returncode))
    try:
        reports = reports_from_json(proc.stdout)
    except ValueError as error:
        return _no_verdict(context, proc, ERROR_CODE, f"unreadable JSON report: {error}")
    files: dict[str, Cell] = {}
    repository: dict[str, int] = {}
    for report in reports:
        status = report.status.value
        if not report.path.startswith("prod/") or not report.path.endswith((".yaml", ".yml")):
            repository[status] = repository.get(status, 0) + 1  # an orphaned non-YAML file
            continue
        files[report.path] = Cell(PASS) if report.status is Status.CLEAN else Cell(FAIL, {status: 1})
    for path in context.prod_files:
        # Every prod file gets a status; one without is a report we cannot read.
        files.setdefault(path, Cell(ERROR, note="no status for this file"))
    return Outcome(
        proc.returncode, files, _repository(proc.returncode, repository), report_text(reports), proc.stderr
    )


# --------------------------------------------------------------------------- validate


def run_validate(command: Sequence[str], context: Context) -> Outcome:
    """`python -m validators --format json`: findings as data; the log shows them as the
    CLI's `--format auto` would (text, plus annotations under GitHub Actions)."""
    from validators import formats
    from validators.findings import Finding, Level

    proc = run_command(command, context, merge=False)
    if proc.returncode not in (0, 1):
        return _no_verdict(context, proc, proc.returncode, _exit_note(proc.returncode))
    try:
        rows = json.loads(proc.stdout)
        findings = [
            Finding(row["path"], row["line"], row["col"], row["rule"], Level(row["level"]), row["message"])
            for row in rows
        ]
    except (ValueError, KeyError, TypeError) as error:
        return _no_verdict(context, proc, ERROR_CODE, f"unreadable JSON report: {error}")
    counts: dict[str, dict[str, int]] = {}
    failing: set[str] = set()
    for finding in findings:
        _count(counts, finding.path, finding.rule)
        if finding.level is Level.ERROR:
            failing.add(finding.path)
    files = {
        path: Cell(FAIL if path in failing else PASS, counts.get(path, {})) for path in context.prod_files
    }
    elsewhere: dict[str, int] = {}
    for path, per in counts.items():
        if path not in files:
            for rule, number in per.items():
                elsewhere[rule] = elsewhere.get(rule, 0) + number
    name = formats.resolve("auto", dict(context.environ))
    return Outcome(
        proc.returncode,
        files,
        _repository(proc.returncode, elsewhere),
        formats.FORMATTERS[name](findings),
        proc.stderr,
    )


# --------------------------------------------------------------------------- compose


def run_compose(command: Sequence[str], context: Context) -> Outcome:
    """`python -m validators.compose --format json`: per file whether it rendered, the
    problems, the binary; the log shows the check's own text report (and, under GitHub
    Actions, its annotations)."""
    proc = run_command(command, context, merge=False)
    if proc.returncode not in (0, 1):
        return _no_verdict(context, proc, proc.returncode, _exit_note(proc.returncode))
    try:
        data = json.loads(proc.stdout)
        if not isinstance(data, dict) or data.get("format") != 1:
            raise ValueError("not the compose check's JSON report (format 1)")
        report = str(data["report"])
        rendered = {str(row["path"]): (row["rendered"], row["seconds"]) for row in data.get("files", [])}
        problems = [
            (str(row["path"]), str(row["rule"]), str(row["message"]), str(row["annotation"]))
            for row in data.get("problems", [])
        ]
        binary = data.get("binary")
    except (ValueError, KeyError, TypeError) as error:
        return _no_verdict(context, proc, ERROR_CODE, f"unreadable JSON report: {error}")
    counts: dict[str, dict[str, int]] = {}
    for path, rule, _, _ in problems:
        _count(counts, path, rule)
    files: dict[str, Cell] = {}
    for path in context.prod_files:
        found = counts.get(path, {})
        ok, seconds = rendered.get(path, (None, None))
        if ok is not None:
            files[path] = Cell(PASS if ok and not found else FAIL, found, duration_s=seconds)
        elif found:
            files[path] = Cell(FAIL, found, note="not rendered")
        else:
            files[path] = Cell(NOT_RUN, note="not rendered (see the repository row)")
    elsewhere: dict[str, int] = {}
    for path, per in counts.items():
        if path not in files:
            for rule, number in per.items():
                elsewhere[rule] = elsewhere.get(rule, 0) + number
    facts = {"compose": compose_facts_of(binary) or compose_facts()}
    if context.environ.get("GITHUB_ACTIONS"):
        report += "".join(annotation + "\n" for _, _, _, annotation in problems)
    # The stage's one line: the check's own summary, and its first problem (a missing dummy
    # names the variable), rather than the summary alone.
    summary = last_line(data["report"])
    note = last_line(f"{summary}; first: {problems[0][2]} ({problems[0][1]})") if problems else ""
    return Outcome(
        proc.returncode,
        files,
        _repository(proc.returncode, elsewhere),
        report,
        proc.stderr,
        facts=facts,
        note=note,
    )


# --------------------------------------------------------------------------- diff, plan


def _json_and_markdown(
    command: Sequence[str], context: Context
) -> tuple[Completed, str, dict[str, Any] | None]:
    """One run of the command: --format json (the data) on stdout, and the Markdown
    rendering of the same result written to a file (`--markdown-to`)."""
    with tempfile.TemporaryDirectory(prefix="tierops-stage-") as scratch:
        target = Path(scratch) / "report.md"
        proc = run_command([*command, "--format", "json", "--markdown-to", str(target)], context, merge=False)
        try:
            markdown = target.read_text(encoding="utf-8", errors="replace")
        except OSError:
            markdown = ""  # the run ended before writing it: its exit code and stderr say why
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    return proc, markdown, data if isinstance(data, dict) else None


def _refs(data: Mapping[str, Any]) -> dict[str, Any]:
    base = data.get("base")
    if not isinstance(base, dict):
        return {}
    return {"base": {key: base.get(key) for key in ("ref", "commit", "how")}}


def _changes_run(
    command: Sequence[str], context: Context, counter: Callable[[Mapping[str, Any]], dict[str, int]]
) -> Outcome:
    data_proc, log, data = _json_and_markdown(command, context)
    code = data_proc.returncode
    err = data_proc.stderr
    if data is None or code not in (0, 2):
        # The tool's own one line (an unknown base ref, say) is the stage's note, once;
        # the files' cells say no more than that they got no verdict.
        said = last_line(err)
        note = said or (_exit_note(code) if code not in (0, 2) else "unreadable JSON report")
        return Outcome(
            code or ERROR_CODE,
            {path: Cell(ERROR) for path in context.prod_files},
            Cell(ERROR, note=note),
            log,
            err,
            markdown=log,
            note=note,
        )
    files: dict[str, Cell] = {path: Cell(PASS) for path in context.prod_files}
    for entry in data.get("files") or ():
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        path = entry["path"]
        if entry.get("error"):
            files[path] = Cell(ERROR, note=str(entry["error"]).splitlines()[0][:200])
            continue
        counts = dict(files[path].counts) if path in files else {}
        for key, number in counter(entry).items():
            counts[key] = counts.get(key, 0) + number
        files[path] = Cell(PASS, counts)
    # exit 2: a file could not be read (its cell says which); the stage has no verdict.
    repository = Cell(PASS) if code == 0 else Cell(ERROR, note="a file could not be read")
    return Outcome(code, files, repository, log, err, facts=_refs(data), markdown=log)


def _diff_counts(entry: Mapping[str, Any]) -> dict[str, int]:
    """Changes by aspect (flag, env, image, ...) over the file's services and others."""
    counts: dict[str, int] = {}
    groups = [*(entry.get("services") or ()), {"changes": entry.get("others") or ()}]
    for group in groups:
        for change in group.get("changes") or () if isinstance(group, dict) else ():
            aspect = str(change.get("aspect", "change")) if isinstance(change, dict) else "change"
            counts[aspect] = counts.get(aspect, 0) + 1
    if entry.get("status") in ("added", "removed") and not counts:
        counts[f"file {entry['status']}"] = 1
    return counts


def _plan_counts(entry: Mapping[str, Any]) -> dict[str, int]:
    stages = [stage for stage in entry.get("stages") or () if isinstance(stage, dict)]
    counts = {"recreate": len(stages)} if stages else {}
    interrupting = sum(1 for stage in stages if stage.get("interrupts_traffic"))
    if interrupting:
        counts["interrupts-traffic"] = interrupting
    return counts


def run_diff(command: Sequence[str], context: Context) -> Outcome:
    """`python -m rollout diff`: changes by aspect per file, and its Markdown."""
    return _changes_run(command, context, _diff_counts)


def run_plan(command: Sequence[str], context: Context) -> Outcome:
    """`python -m rollout plan`: services to recreate per file, and its Markdown."""
    return _changes_run(command, context, _plan_counts)


# --------------------------------------------------------------------------- lint, typecheck

_HOOK_FAILED = re.compile(r"^- hook id: (?P<hook>\S+)$")


def run_lint(command: Sequence[str], context: Context) -> Outcome:
    """pre-commit: one count per failing hook (its `- hook id:` line)."""
    proc = run_command(command, context, merge=True)
    counts: dict[str, int] = {}
    for line in plain(proc.stdout).splitlines():
        match = _HOOK_FAILED.match(line.strip())
        if match:
            counts[match["hook"]] = counts.get(match["hook"], 0) + 1
    note = "" if proc.returncode in (0, 1) else _exit_note(proc.returncode)
    return Outcome(proc.returncode, {}, Cell(stage_verdict(proc.returncode), counts, note), proc.stdout)


def run_typecheck(command: Sequence[str], context: Context) -> Outcome:
    """mypy with `--output json`: one JSON object per line (file, line, column, message,
    hint, code, severity); errors counted by code, and the log shows mypy's usual text."""
    proc = run_command(command, context, merge=False)
    counts: dict[str, int] = {}
    shown: list[str] = []
    unreadable = ""
    for line in proc.stdout.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            where = f"{row['file']}:{row['line']}" + (f":{row['column'] + 1}" if row["column"] >= 0 else "")
            shown.append(f"{where}: {row['severity']}: {row['message']}  [{row['code']}]")
            if row.get("hint"):
                shown.append(f"{where}: note: {row['hint']}")
        except (ValueError, KeyError, TypeError):
            unreadable = unreadable or line
            shown.append(line)
            continue
        if row["severity"] == "error":
            counts[str(row["code"])] = counts.get(str(row["code"]), 0) + 1
    errors = sum(counts.values())
    shown.append(f"mypy: {errors} error(s)" if errors else "mypy: no issues found")
    code, note = proc.returncode, ""
    if code not in (0, 1):
        note = _exit_note(code)
    elif unreadable or (code == 1) != bool(errors):
        # A line that is not mypy's JSON (a crash, a config error), or an exit code the
        # errors do not explain: never read as a verdict.
        code, note = ERROR_CODE, f"unreadable mypy report: {last_line(unreadable or proc.stdout)}"
    return Outcome(code, {}, Cell(stage_verdict(code), counts, note), "\n".join(shown) + "\n", proc.stderr)


# --------------------------------------------------------------------------- collector

COLLECTOR_RESULT = "collector-validate.json"
_COLLECTOR_VERDICTS = {"passed": PASS, "failed": FAIL, "not-run": NOT_RUN}


def run_collector(command: Sequence[str], context: Context) -> Outcome:
    """`python -m ci.collector_validate` (the real collector's `validate`): its JSON file,
    format 1 (`{"files": [{"file", "result": passed|failed|not-run, "message"}]}`).

    The file is removed before the command runs, so only what this run wrote is read."""
    result = context.build / COLLECTOR_RESULT
    result.unlink(missing_ok=True)
    proc = run_command(command, context, merge=True)
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
        entries = data["files"] if data.get("format") == 1 else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        entries = None
    if not isinstance(entries, list):
        note = f"no readable {COLLECTOR_RESULT} (exit {proc.returncode})"
        return Outcome(proc.returncode, _error_cells(context, note), Cell(ERROR, note=note), proc.stdout)
    files: dict[str, Cell] = {
        path: Cell(NOT_RUN, note="not in the collector's result") for path in context.prod_files
    }
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            continue
        verdict = _COLLECTOR_VERDICTS.get(str(entry.get("result")), ERROR)
        counts = {"collector-validate": 1} if verdict == FAIL else {}
        message = str(entry.get("message") or "")
        files[entry["file"]] = Cell(verdict, counts, message.splitlines()[0][:200] if message else "")
    verdicts = {cell.verdict for cell in files.values()}
    if proc.returncode == 0 and verdicts == {NOT_RUN}:
        # Exit 0 without Docker is "nothing judged", never a pass: the column and the
        # headline say why the collector did not run.
        why = "no Docker" if data.get("docker") is False or _no_docker(files) else "no file was validated"
        return Outcome(0, files, Cell(NOT_RUN, note=why), proc.stdout, note=why, verdict=NOT_RUN)
    return Outcome(proc.returncode, files, Cell(stage_verdict(proc.returncode)), proc.stdout)


def _no_docker(files: Mapping[str, Cell]) -> bool:
    return all(cell.note.startswith("not run (no Docker)") for cell in files.values())


# --------------------------------------------------------------------------- tests


def run_tests(command: Sequence[str], context: Context) -> Outcome:
    """pytest, its verdict read from its own `--junitxml` report (never from its text).

    The report goes to build/check/tests.junit.xml, removed before pytest starts, so
    only this run's is read. pytest's output goes straight to the terminal: a long
    run shows its progress as it goes."""
    junit = context.build / "check" / JUNIT
    junit.unlink(missing_ok=True)
    junit.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            [*command, f"--junitxml={junit}"],
            cwd=context.root,
            stdin=subprocess.DEVNULL,
            env=dict(context.environ),
            check=False,
        )
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    except OSError as error:
        note = f"cannot run {command[0]!r}: {error}"
        return Outcome(127, {}, Cell(ERROR, note=note), note=note)
    try:
        report = read_junit(junit, context.root)
    except ValueError as error:
        note = (
            f"pytest exit {code}, and {error}" if junit.exists() else f"pytest exit {code}, no JUnit report"
        )
        return Outcome(code or ERROR_CODE, {}, Cell(ERROR, note=note), note=note)
    if report.failing:
        note = report.note()
        return Outcome(code or 1, {}, Cell(FAIL, report.counts(), note), note=note, verdict=FAIL)
    if code != 0:
        # Nothing failed, yet pytest did not succeed: interrupted, a usage error, no tests.
        note = f"pytest exit {code} with no failing test in its report"
        return Outcome(code, {}, Cell(ERROR, report.counts(), note), note=note, verdict=ERROR)
    return Outcome(0, {}, Cell(PASS, report.counts()), verdict=PASS)


# --------------------------------------------------------------------------- the registry

# In the order the matrix shows them: per-file stages first, then repository-wide ones.
STAGES: dict[str, Stage] = {
    stage.name: stage
    for stage in (
        Stage("generated", "file", True, "prod/ byte-identical to the generators' output", run_generated),
        Stage("validate", "file", True, "the validators' rule families", run_validate),
        Stage("compose", "file", True, "`docker compose config` with ci/dummy.env", run_compose),
        Stage(
            "collector", "file", False, "the pinned collector's own `validate` (needs Docker)", run_collector
        ),
        Stage("diff", "file", True, "semantic diff against the base", run_diff),
        Stage("plan", "file", True, "the rollout plan of that diff", run_plan),
        Stage("lint", "repository", True, "pre-commit hooks", run_lint),
        Stage("typecheck", "repository", True, "mypy --strict", run_typecheck),
        # Not a prerequisite of `check`: the tests run in their own session (and CI step)
        # under the same run id, so the record still has one verdict for both.
        Stage("tests", "repository", False, "pytest (its JUnit XML report)", run_tests),
    )
}
