"""`python -m ci.record` (`nox -s record`, the last prerequisite of `nox -s check`): the check-matrix record.

Assembles `build/check-matrix.json` from the results the stages of this run left in
`build/check/` (ci/stage.py), and renders it once as Markdown
(`build/check-matrix.md`, ci/matrix_markdown.py). The record's format is
ci/check-matrix.schema.json (format 1); every record is validated against it before
it is written. It holds:

- stages: per stage (generated, validate, compose, collector, diff, plan, lint,
  typecheck, tests) its verdict, exit code, duration and one line of why it did not
  pass, and per prod file the verdict and the finding counts by rule id;
- inputs: the sha256 of every prod file, of the generators' source, targets and
  code, of the contracts, the flag manifest and the dummy environment;
- tools: the Python version, every package installed in the stages' environments
  with its version and its pin in pyproject.toml, the Compose binary's version and
  sha256, the pre-commit hook pins;
- commits: the head commit (and whether the tree was dirty) and the diff's base;
- verdict: pass only when every stage ran and passed (`overall`); the headline
  (tierops.checkmatrix.headline) says what failed or did not run, and why.

A stage result counts only when it carries this run's id and the digest of the
inputs as they are now; a missing, foreign or stale result is "not run", never
"pass". Nothing in the record varies between two runs over the same inputs except
the `duration_s` values (tierops.checkmatrix.digest leaves them out).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci import inputs, matrix_markdown, record_schema
from ci.stage import RUN_ENV, markdown_path, result_path
from ci.stages import ERROR, FAIL, NOT_RUN, PASS, STAGES, VERDICTS
from tierops import layout
from tierops.atomic import write_bytes_atomic
from tierops.checkmatrix import FORMAT, MARKDOWN_NAME, RECORD_NAME, digest, headline
from tierops.cli import guarded, parse
from tierops.errors import TieropsError, UsageError
from tierops.exitcodes import ExitCode, epilog

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = Path(__file__).resolve().parent / "check-matrix.schema.json"
PULL_REQUEST_NAME = "pull-request.json"
SUMMARY_ENV = "TIEROPS_RECORD_SUMMARY"
RUN_URL_ENV = "TIEROPS_RECORD_RUN_URL"
PULL_REQUEST_ENV = "TIEROPS_RECORD_PULL_REQUEST"
OUTCOMES_ENV = "TIEROPS_RECORD_STEP_OUTCOMES"
# The schema's pattern for a count's rule id (cell.counts propertyNames).
COUNT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_. ()/-]{0,63}")


@dataclass(frozen=True)
class Assembled:
    record: dict[str, Any]
    diff_markdown: str | None
    plan_markdown: str | None


# --------------------------------------------------------------------------- reading results


def _fresh(build: Path, name: str, run_id: str, inputs_digest: str) -> tuple[dict[str, Any] | None, str]:
    """This run's result of stage `name`, or None and why not."""
    path = result_path(build, name)
    if not path.is_file():
        return None, "no result from this run"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None, "its result is unreadable"
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("stage") != name:
        return None, "its result is not a format-1 result of this stage"
    if data.get("run") != run_id:
        return None, "stale: its result is from another run"
    if data.get("inputs_digest") != inputs_digest:
        return None, "stale: the inputs changed after it ran"
    return data, ""


def _markdown(build: Path, name: str, result: Mapping[str, Any] | None) -> str | None:
    """The stage's Markdown, only when it is the very text its result names."""
    want = result.get("markdown_sha256") if result else None
    path = markdown_path(build, name)
    if not isinstance(want, str) or not path.is_file():
        return None
    data = path.read_bytes()
    return data.decode("utf-8", errors="replace") if hashlib.sha256(data).hexdigest() == want else None


def _cell(raw: Any) -> dict[str, Any]:
    """A result's cell, reduced to what the schema allows (a result is our own file, but
    the record must validate whatever a tool printed)."""
    if not isinstance(raw, Mapping) or raw.get("verdict") not in VERDICTS:
        return {"verdict": NOT_RUN, "counts": {}, "note": "no cell in its result"}
    counts = raw.get("counts")
    kept: dict[str, int] = {}
    for key, value in sorted(counts.items()) if isinstance(counts, Mapping) else ():
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            # A rule id the schema would refuse (a tool printed something odd) still counts.
            name = str(key) if COUNT_KEY.fullmatch(str(key)) else "other"
            kept[name] = kept.get(name, 0) + value
    cell: dict[str, Any] = {"verdict": raw["verdict"], "counts": kept}
    if raw.get("note"):
        cell["note"] = str(raw["note"])[:200]
    if isinstance(raw.get("duration_s"), int | float):
        cell["duration_s"] = raw["duration_s"]
    return cell


# --------------------------------------------------------------------------- assembling


def assemble(
    root: Path, build: Path, run_id: str, step_outcomes: Mapping[str, str] | None = None
) -> Assembled:
    """The record of run `run_id` from the results in `build`. `step_outcomes` is what the
    CI job says of a stage's step (`tests` -> `failure`, from `steps.tests.outcome`): a
    failed step never shows as a pass, whatever result it left."""
    step_outcomes = step_outcomes or {}
    current = inputs.inputs(layout.fleet_root(), root)
    results: dict[str, dict[str, Any] | None] = {}
    notes: dict[str, str] = {}
    for name in STAGES:
        results[name], notes[name] = _fresh(build, name, run_id, current["digest"])

    rows = set(inputs.prod_files(layout.fleet_root()))
    for result in results.values():
        for path in (result or {}).get("files") or {}:
            if isinstance(path, str) and path.startswith("prod/"):
                rows.add(path)
    # A name the record cannot carry (a space, a newline) is left out of the rows: the
    # tools refuse such a file with one line, so the stages that read prod/ fail and say
    # why, and the record (and the comment built from it) stays valid.
    schema = load_schema()
    prod_path = schema["$defs"]["prodPath"]["pattern"]
    files = sorted(row for row in rows if record_schema.matches(prod_path, row))

    stages = []
    for name, stage in STAGES.items():
        result = results[name]
        entry: dict[str, Any] = {"name": name, "scope": stage.scope, "required": stage.required}
        if result is None:
            entry.update(verdict=NOT_RUN, exit_code=None, duration_s=None, note=notes[name])
            cells = {path: {"verdict": NOT_RUN, "counts": {}} for path in files}
            entry["repository"] = {"verdict": NOT_RUN, "counts": {}}
        else:
            entry.update(
                verdict=result.get("verdict") if result.get("verdict") in VERDICTS else NOT_RUN,
                exit_code=result.get("exit_code") if isinstance(result.get("exit_code"), int) else None,
                duration_s=result.get("duration_s"),
                note=" ".join(str(result.get("note") or "").split())[:200],
            )
            given = result.get("files") or {}
            cells = {
                path: _cell(given[path]) if path in given else {"verdict": NOT_RUN, "counts": {}}
                for path in files
            }
            entry["repository"] = _cell(result.get("repository"))
        entry["files"] = cells if stage.scope == "file" else {}
        if name in step_outcomes:
            _step_outcome(entry, step_outcomes[name])
        stages.append(entry)

    record: dict[str, Any] = {
        "format": FORMAT,
        "verdict": overall(stages),
        "files": files,
        "stages": stages,
        "inputs": current,
        "tools": tools(root, results),
        "commits": commits(root, results),
    }
    problems = record_schema.validate(record, schema)
    if problems:  # our own output: a mismatch is a bug here, never the user's input
        raise TieropsError(f"the assembled record does not match its schema: {problems[0]}")
    return Assembled(
        record, _markdown(build, "diff", results["diff"]), _markdown(build, "plan", results["plan"])
    )


def overall(stages: Sequence[Mapping[str, Any]]) -> str:
    """fail when any stage failed (or gave no verdict); else not run when any stage did
    not run (the tests in a `check` alone, the collector without Docker); else pass. A
    pass therefore means every stage ran and passed."""
    verdicts = [stage["verdict"] for stage in stages]
    if any(verdict not in (PASS, NOT_RUN) for verdict in verdicts):
        return FAIL
    if NOT_RUN in verdicts:
        return NOT_RUN
    return PASS


# What GitHub Actions calls a step's outcome (steps.<id>.outcome).
STEP_OUTCOMES = ("success", "failure", "cancelled", "skipped")


def _step_outcome(entry: dict[str, Any], outcome: str) -> None:
    """Reconcile a stage with its CI step's outcome: a failed step is never a pass (the
    step may have failed before the stage wrote anything, or after), and a step that
    did not run says so."""
    if outcome == "failure" and entry["verdict"] in (PASS, NOT_RUN):
        said = "its result says pass" if entry["verdict"] == PASS else "it left no result"
        entry["verdict"] = ERROR
        entry["note"] = f"the job's {entry['name']} step failed, but {said}"
        entry["repository"] = {**entry["repository"], "verdict": ERROR}
    elif outcome in ("cancelled", "skipped") and entry["verdict"] == NOT_RUN:
        entry["note"] = f"the job's {entry['name']} step was {outcome}"


def parse_outcomes(text: str) -> dict[str, str]:
    """`tests=failure check=success` -> {"tests": "failure", ...}; a UsageError for
    anything else (an empty value, from a step that has no outcome yet, is left out)."""
    found: dict[str, str] = {}
    for item in text.split():
        name, sep, outcome = item.partition("=")
        if not sep or name not in STAGES:
            raise UsageError(f"step outcome {item!r}: want STAGE=OUTCOME with a stage of {', '.join(STAGES)}")
        if outcome and outcome not in STEP_OUTCOMES:
            raise UsageError(f"step outcome {item!r}: {outcome!r} is not one of {', '.join(STEP_OUTCOMES)}")
        if outcome:
            found[name] = outcome
    return found


def load_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return schema


# --------------------------------------------------------------------------- tools, commits


def pins(root: Path) -> dict[str, str]:
    """Every `name==version` of pyproject.toml's dependency groups (normalised names)."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for group in (data.get("dependency-groups") or {}).values():
        for item in group:
            if isinstance(item, str) and "==" in item:
                name, _, version = item.partition("==")
                found[inputs.normalise(name.strip())] = version.strip()
    return found


def hook_pins(root: Path) -> dict[str, Any]:
    """The pre-commit configuration's hash, its repositories and the hooks' pins."""
    import yaml  # PyYAML: in every environment that runs the record (the runtime group)

    path = root / ".pre-commit-config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    repos = []
    dependencies: set[str] = set()
    for repo in config.get("repos") or ():
        repos.append({"repo": str(repo.get("repo")), "rev": repo.get("rev")})
        for hook in repo.get("hooks") or ():
            dependencies.update(str(dep) for dep in hook.get("additional_dependencies") or ())
    return {
        "config_sha256": inputs.sha256_file(path),
        "repos": repos,
        "additional_dependencies": sorted(dependencies),
    }


def tools(root: Path, results: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any]:
    pinned = pins(root)
    pythons: set[str] = set()
    packages: dict[tuple[str, str], list[str]] = {}
    compose = None
    for name, result in results.items():
        if result is None:
            continue
        env = result.get("environment") or {}
        if isinstance(env.get("python"), str):
            pythons.add(env["python"])
        for package, version in (env.get("packages") or {}).items():
            packages.setdefault((str(package), str(version)), []).append(name)
        facts = result.get("facts") or {}
        if name == "compose" and isinstance(facts.get("compose"), Mapping):
            compose = dict(facts["compose"])
    return {
        "python": sorted(pythons),
        "packages": [
            {"name": package, "version": version, "pin": pinned.get(package), "stages": stages}
            for (package, version), stages in sorted(packages.items())
        ],
        "compose": compose,
        "hooks": hook_pins(root),
    }


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    except OSError:
        return None
    return proc.stdout if proc.returncode == 0 else None


def commits(root: Path, results: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any]:
    """The head commit and the base the diff compared with (as the diff itself reported it)."""
    head = (_git(root, "rev-parse", "--verify", "HEAD") or "").strip() or None
    status = _git(root, "status", "--porcelain")
    base = None
    for name in ("diff", "plan"):
        facts = (results.get(name) or {}).get("facts") or {}
        if isinstance(facts.get("base"), Mapping):
            base = {key: facts["base"].get(key) for key in ("ref", "commit", "how")}
            break
    return {"head": head, "dirty": bool(status.strip()) if status is not None else None, "base": base}


# --------------------------------------------------------------------------- the CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ci.record",
        description=__doc__,
        epilog=epilog("not used: the record describes verdicts, the sessions give them"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build", help="default: build/")
    parser.add_argument("--run", metavar="ID", help=f"the run whose results to take (default: ${RUN_ENV})")
    # Defaults from the environment, as the diff's base is: `nox -s record` takes no
    # posargs (it is a prerequisite of `check`, and nox hands check's posargs to all).
    parser.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        default=os.environ.get(SUMMARY_ENV) or None,
        help=f"also append the Markdown to FILE (default: ${SUMMARY_ENV}; CI sets it to $GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument(
        "--run-url",
        metavar="URL",
        default=os.environ.get(RUN_URL_ENV) or None,
        help=f"the CI run's page, linked from the Markdown (default: ${RUN_URL_ENV})",
    )
    parser.add_argument(
        "--pull-request",
        metavar="N",
        default=os.environ.get(PULL_REQUEST_ENV) or None,
        help=f"also write build/pull-request.json with this number, for the comment workflow "
        f"(default: ${PULL_REQUEST_ENV})",
    )
    parser.add_argument(
        "--step-outcomes",
        metavar="STAGE=OUTCOME ...",
        default=os.environ.get(OUTCOMES_ENV) or "",
        help="what the CI job says of a stage's own step, e.g. `tests=failure` "
        f"(steps.<id>.outcome; default ${OUTCOMES_ENV}): a failed step is never shown as a pass",
    )
    parser.add_argument(
        "--digest",
        nargs="?",
        const="",
        metavar="FILE",
        help="print the digest of the existing record (or of FILE, a record kept by a release) and exit",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: _run(args), tool="ci.record")


def _run(args: argparse.Namespace) -> int:
    build: Path = args.build_dir
    if args.digest is not None:
        path = Path(args.digest) if args.digest else build / RECORD_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise UsageError(f"no readable record at {path}", hint="run `nox -s check` first") from None
        print(digest(data))
        return ExitCode.OK
    run_id = args.run or os.environ.get(RUN_ENV)
    if not run_id:
        raise UsageError(
            f"no run id: pass --run or set ${RUN_ENV}",
            hint="`nox -s check` sets it for every session of one run",
        )
    assembled = assemble(ROOT, build, run_id, parse_outcomes(args.step_outcomes))
    text = json.dumps(assembled.record, indent=2, sort_keys=False) + "\n"
    write_bytes_atomic(build / RECORD_NAME, text.encode("utf-8"), parents=True)
    markdown = matrix_markdown.render(
        assembled.record,
        assembled.diff_markdown,
        assembled.plan_markdown,
        limit=matrix_markdown.SUMMARY_LIMIT,
        run_url=args.run_url,
    )
    write_bytes_atomic(build / MARKDOWN_NAME, markdown.encode("utf-8"), parents=True)
    if args.pull_request is not None:
        if not args.pull_request.isdigit():
            raise UsageError(f"--pull-request {args.pull_request!r} is not a number")
        info = json.dumps({"number": int(args.pull_request)}) + "\n"
        write_bytes_atomic(build / PULL_REQUEST_NAME, info.encode("utf-8"), parents=True)
    if args.summary is not None:
        with args.summary.open("a", encoding="utf-8") as handle:
            handle.write(markdown)
    record = assembled.record
    ran = sum(1 for stage in record["stages"] if stage["verdict"] != NOT_RUN)
    print(
        f"check matrix: {headline(record)} ({ran} of {len(record['stages'])} stages ran) -> "
        f"{_shown(build / RECORD_NAME)}, {_shown(build / MARKDOWN_NAME)}; {digest(record)}"
    )
    return ExitCode.OK


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    from tierops.entry import launch

    launch(main)
