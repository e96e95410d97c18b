"""Where a generated file's value is written: the stack data line a finding is fixed at.

A generated file is never edited by hand, so a finding at `prod/...:57:9` says where the
symptom is, not where the fix goes. The file's header names the source it was rendered
from (`# Generator: ... from generators/<stack>.source.yaml ...`). For a finding on such a
file, the word the finding points at is looked up in that source and in the stack's
targets file; when exactly one line there writes it, the finding names that line. A word
written on several lines, or on none (a computed value), names nothing: a guess would send
the reader to the wrong line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tierops import layout
from validators.findings import Finding

_HEADER = re.compile(r"^# Generator: .*\bfrom (?P<source>\S+\.source\.yaml)\b")
# Shorter words ("8", "-1") are written in too many places to be traced.
_SHORTEST = 3


def trace(lines: Sequence[str], findings: list[Finding]) -> list[Finding]:
    """`findings` of one file (its text as `lines`), each naming the data line that
    wrote the word it points at, where that line is the only one."""
    source = next((m.group("source") for line in lines[:4] if (m := _HEADER.match(line))), None)
    if source is None or not findings:
        return findings
    root = layout.fleet_root()
    data: list[tuple[str, list[str]]] = []
    for name in (source, source.removesuffix(".source.yaml") + ".targets.yaml"):
        try:
            data.append((name, (root / name).read_text(encoding="utf-8").splitlines()))
        except (OSError, UnicodeDecodeError):
            continue  # the stack's data is not here (a copied file): nothing to name
    return [_traced(finding, lines, data) for finding in findings]


def _traced(finding: Finding, lines: Sequence[str], data: list[tuple[str, list[str]]]) -> Finding:
    if not 1 <= finding.line <= len(lines) or finding.col < 1:
        return finding
    word = _word(lines[finding.line - 1][finding.col - 1 :])
    if len(word) < _SHORTEST:
        return finding
    pattern = re.compile(r"(?<![\w.-])" + re.escape(word) + r"(?![\w.-])")
    hits = [
        (name, number)
        for name, text in data
        for number, line in enumerate(text, start=1)
        if not line.lstrip().startswith("#") and pattern.search(line)
    ]
    if len(hits) != 1:
        return finding
    name, number = hits[0]
    return finding._replace(source=f"{name}:{number}")


def where_to_fix(finding: Finding) -> Finding:
    """The finding's message with the data line to fix, when it has one."""
    if not finding.source:
        return finding
    return finding._replace(
        message=f"{finding.message}; written at {finding.source}: fix it there, then `nox -s generate`"
    )


def _word(text: str) -> str:
    """The scalar a finding points at: a quoted string, or the text up to `: ` or a comment."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        return text[1:end] if end > 0 else ""
    for stop in (": ", " #"):
        text = text.split(stop, 1)[0]
    return text.rstrip(":").strip()


def read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
