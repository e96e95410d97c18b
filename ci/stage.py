"""`python -m ci.stage NAME -- COMMAND...`: run one stage of the check matrix and keep its result.

What every session of `nox -s check` runs (noxfile.py `stage()`): COMMAND is the
session's own tool, unchanged (`python -m generators --check`, `pre-commit run
--all-files ...`); its report is printed as usual and its exit code is this one's.
Besides, the stage's verdict per prod file (ci/stages.py reads it from the tool's
output) goes to `build/check/NAME.json`, and the diff's and plan's Markdown to
`build/check/NAME.md`, for `python -m ci.record` to assemble.

Staleness is impossible by construction: the old result is deleted *before* the
command starts (a stage that crashes or is interrupted leaves none), and the new one
carries the run id (`$TIEROPS_CHECK_RUN`, one per nox invocation or CI job) and the
digest of the inputs when the stage started (ci/inputs.py). The record takes a result
only when both match its own; anything else is "not run", never "pass".
"""

from __future__ import annotations

if __name__ == "__main__":
    # Before the imports below: `launch` imports this module again under its signal
    # handlers, so an interrupt during those imports ends with 130 and one line.
    from tierops.entry import launch

    launch("ci.stage")

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ci import inputs
from ci.stages import ERROR, PASS, STAGES, Cell, Context, Outcome, last_line, stage_verdict
from tierops import layout
from tierops.atomic import write_bytes_atomic
from tierops.checkmatrix import FORMAT
from tierops.cli import guarded, parse
from tierops.exitcodes import epilog

ROOT = Path(__file__).resolve().parent.parent
RUN_ENV = "TIEROPS_CHECK_RUN"
RESULTS = "check"  # build/check/<stage>.json


def result_path(build: Path, name: str) -> Path:
    return build / RESULTS / f"{name}.json"


def markdown_path(build: Path, name: str) -> Path:
    return build / RESULTS / f"{name}.md"


def _parser() -> argparse.ArgumentParser:
    stages = "\n".join(f"  {name:<10} {stage.summary}" for name, stage in STAGES.items())
    parser = argparse.ArgumentParser(
        prog="python -m ci.stage",
        description=f"{__doc__}\nstages:\n{stages}",
        epilog=epilog("the stage's own exit code: its tool found problems"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("stage", choices=list(STAGES), metavar="NAME", help="the stage")
    parser.add_argument("command", nargs="+", metavar="COMMAND", help="the stage's tool (after --)")
    parser.add_argument(
        "--build-dir", type=Path, default=ROOT / "build", help="where results go (default: build/)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: run(args.stage, args.command, args.build_dir, os.environ), tool="ci.stage")


def run(name: str, command: Sequence[str], build: Path, environ: Mapping[str, str]) -> int:
    stage = STAGES[name]
    for old in (result_path(build, name), markdown_path(build, name)):
        old.unlink(missing_ok=True)  # first: a crash below leaves no result, so "not run"
    run_id = environ.get(RUN_ENV) or None
    started = inputs.inputs(layout.fleet_root())["digest"]
    context = Context(ROOT, build, inputs.prod_files(layout.fleet_root()), dict(environ))
    clock = time.monotonic()
    try:
        outcome = stage.run(command, context)
    except Exception:
        # A bug in reading the stage's report: say so in the record, then fail as one.
        note = "internal error while reading the stage's report"
        broken = Outcome(
            3,
            {path: Cell(ERROR, note=note) for path in context.prod_files},
            Cell(ERROR, note=note),
            note=note,
        )
        _write(build, name, broken, run_id, started, time.monotonic() - clock)
        raise
    seconds = time.monotonic() - clock
    sys.stdout.write(outcome.stdout)
    sys.stdout.flush()
    sys.stderr.write(outcome.stderr)
    _write(build, name, outcome, run_id, started, seconds)
    if run_id is None:
        print(
            f"note: ${RUN_ENV} is not set, so no check-matrix record will use this result "
            "(nox -s check sets it)",
            file=sys.stderr,
        )
    code = outcome.exit_code
    return code if 0 <= code <= 255 else 3


def _write(build: Path, name: str, outcome: Outcome, run_id: str | None, digest: str, seconds: float) -> None:
    verdict = outcome.verdict or stage_verdict(outcome.exit_code)
    # One line of why a stage did not pass, for the record's notes: the stage's own, else
    # the last line its tool printed (its error, or its summary of the findings).
    note = outcome.note
    if not note and verdict != PASS:
        note = last_line(outcome.stderr) or last_line(outcome.stdout)
    result: dict[str, Any] = {
        "format": FORMAT,
        "stage": name,
        "run": run_id,
        "inputs_digest": digest,
        "exit_code": outcome.exit_code,
        "verdict": verdict,
        "note": note,
        "duration_s": round(seconds, 3),
        "files": {path: cell.as_json() for path, cell in sorted(outcome.files.items())},
        "repository": outcome.repository.as_json(),
        "environment": inputs.environment(),
        "facts": dict(outcome.facts),
        "markdown_sha256": None,
    }
    if outcome.markdown is not None:
        data = outcome.markdown.encode("utf-8")
        write_bytes_atomic(markdown_path(build, name), data, parents=True)
        result["markdown_sha256"] = hashlib.sha256(data).hexdigest()
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    write_bytes_atomic(result_path(build, name), text.encode("utf-8"), parents=True)
