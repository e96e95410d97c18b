"""Run rule families over files: parse each file once, collect every finding.

Library code: returns a Report, never prints or exits. A file that cannot be read at
all is recorded in `unreadable` and the run goes on with the next one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tierops.errors import InputError
from validators.context import Context
from validators.findings import Finding, Level
from validators.loader import load_file, parse
from validators.model import build
from validators.registry import RULES


@dataclass
class Report:
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    unreadable: list[InputError] = field(default_factory=list)

    def count(self, level: Level) -> int:
        return sum(1 for finding in self.findings if finding.level is level)


def check_bytes(raw: bytes, display: str, ctx: Context, rules: Sequence[str] = tuple(RULES)) -> list[Finding]:
    """Every finding of the selected rule families for one file's bytes."""
    document = parse(raw, display)
    if isinstance(document, Finding):
        return [document]
    return _rules(build(document), ctx, rules)


def check_path(path: Path, display: str, ctx: Context, rules: Sequence[str] = tuple(RULES)) -> list[Finding]:
    document = load_file(path, display)
    if isinstance(document, Finding):
        return [document]
    return _rules(build(document), ctx, rules)


def _rules(compose: object, ctx: Context, rules: Sequence[str]) -> list[Finding]:
    from validators.model import ComposeFile

    assert isinstance(compose, ComposeFile)
    found: list[Finding] = []
    for rule in rules:
        found.extend(RULES[rule].check(compose, ctx))
    # One mutation can be seen twice by one family (e.g. a value and its position);
    # identical findings are printed once.
    return sorted(set(found), key=Finding.sort_key)


def run(files: Sequence[tuple[Path, str]], ctx: Context, rules: Sequence[str] = tuple(RULES)) -> Report:
    report = Report()
    for path, display in files:
        try:
            report.findings.extend(check_path(path, display, ctx, rules))
        except InputError as exc:
            report.unreadable.append(exc)
            continue
        report.files += 1
    return report
