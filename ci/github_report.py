"""`python -m ci.github_report` (`nox -s ci-report`): the run's step summary.

The semantic diff and the rollout plan, as Markdown appended once to
$GITHUB_STEP_SUMMARY: `python -m rollout diff --format markdown`, `python -m rollout plan
--format markdown`. This is the only step that writes the summary.

It makes no annotations: validator findings become annotations in exactly one place,
`nox -s validate` (`--format auto` under GitHub Actions), so each finding is annotated
once.

A tool that is not on this revision (no `diff` or `plan` in `rollout.cli.COMMANDS`) is
said to be absent, in the log and in the summary; it never passes for a clean result. A
tool that exists and fails makes this step fail. Outside GitHub Actions (no
$GITHUB_STEP_SUMMARY) the Markdown goes to standard output.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tierops.exitcodes import ExitCode, epilog

# GitHub shows at most 1 MiB of summary per step; past that it drops the whole summary.
SUMMARY_LIMIT = 1_000_000


def rollout_command_exists(name: str) -> bool:
    from rollout.cli import COMMANDS  # the registry: a command exists iff it is listed

    return name in COMMANDS


ROLLOUT = (sys.executable, "-m", "rollout")


def markdown_section(command: str, title: str, *, rollout: Sequence[str] = ROLLOUT) -> tuple[str, int]:
    """The Markdown of `python -m rollout COMMAND --format markdown`, and an exit code."""
    if not rollout_command_exists(command):
        print(f"::notice title=rollout {command}::`python -m rollout {command}` is not on this revision")
        return f"## {title}\n\n_`rollout {command}` is not on this revision; nothing to show._\n", ExitCode.OK
    proc = subprocess.run(
        [*rollout, command, "--format", "markdown"],
        check=False,
        stdout=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != ExitCode.OK:
        note = f"_`rollout {command}` failed with exit code {proc.returncode}; see the job log._\n"
        return f"## {title}\n\n{note}\n{proc.stdout}", proc.returncode
    return proc.stdout, ExitCode.OK


def fit(markdown: str, limit: int = SUMMARY_LIMIT) -> str:
    data = markdown.encode("utf-8")
    if len(data) <= limit:
        return markdown
    cut = data[: limit - 200].decode("utf-8", errors="ignore")
    return (
        cut
        + "\n\n_Truncated: GitHub keeps 1 MiB of summary per step. Run `nox -s diff` and `nox -s plan` locally._\n"
    )


def append_summary(target: Path, markdown: str) -> None:
    """Append (other steps' summaries in the same file stay)."""
    with target.open("a", encoding="utf-8") as handle:
        handle.write(markdown)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ci.github_report",
        description=__doc__,
        epilog=epilog("a report tool failed (its output says why)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    try:
        parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its usage error
        return ExitCode.OK if exc.code == 0 else ExitCode.USAGE
    codes = []
    sections = []
    for command, title in (("diff", "Semantic diff of prod/"), ("plan", "Rollout plan")):
        text, code = markdown_section(command, title)
        sections.append(text.rstrip("\n") + "\n")
        codes.append(code)
    markdown = fit("\n".join(sections))
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        append_summary(Path(target), markdown)
        print(f"appended {len(markdown.encode('utf-8'))} bytes of Markdown to the step summary")
    else:
        sys.stdout.write(markdown)
    failed = [code for code in codes if code != ExitCode.OK]
    return max(failed) if failed else ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
