"""Output formats: pure functions of the findings (and the summary counts).

text:   path:line:col: [level] message (rule-id)
json:   a list of objects with path, line, col, level, rule, message
github: the text report, then one workflow command per finding
        (`::error file=...,line=...,col=...,title=rule-id::message`). GitHub shows at
        most 10 annotations per step, so the full text report is always printed too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from validators.findings import Finding, Level

FORMATS = ("text", "json", "github", "auto")


def text_line(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.col}: [{finding.level.value}] {finding.message} ({finding.rule})"


def summary(files: int, findings: Sequence[Finding], omitted: int = 0) -> str:
    errors = sum(1 for finding in findings if finding.level is Level.ERROR)
    warnings = len(findings) - errors
    noun = "file" if files == 1 else "files"
    line = f"{files} {noun} checked: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    return line + (f" ({omitted} more past the per-file cap, not shown)" if omitted else "")


def text(findings: Sequence[Finding]) -> str:
    return "".join(text_line(finding) + "\n" for finding in findings)


def as_json(findings: Sequence[Finding]) -> str:
    rows = [
        {
            "path": finding.path,
            "line": finding.line,
            "col": finding.col,
            "level": finding.level.value,
            "rule": finding.rule,
            "message": finding.message,
        }
        for finding in findings
    ]
    return json.dumps(rows, indent=2) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(findings: Sequence[Finding]) -> str:
    lines = [text(findings)]
    for finding in findings:
        command = "error" if finding.level is Level.ERROR else "warning"
        lines.append(
            f"::{command} file={_escape_property(finding.path)},line={finding.line},col={finding.col},"
            f"title={_escape_property(finding.rule)}::{_escape_data(finding.message)}\n"
        )
    return "".join(lines)


FORMATTERS: dict[str, Callable[[Sequence[Finding]], str]] = {"text": text, "json": as_json, "github": github}


def resolve(name: str, environ: dict[str, str]) -> str:
    """`auto` is github inside GitHub Actions, text elsewhere."""
    if name != "auto":
        return name
    return "github" if environ.get("GITHUB_ACTIONS") == "true" else "text"
