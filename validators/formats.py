"""Output formats: pure functions of the findings (and the summary counts).

text:   path:line:col: [level] message (rule-id)
json:   a list of objects with path, line, col, level, rule, message
github: the text report, then one workflow command per finding
        (`::error file=...,line=...,col=...,title=rule-id::message`). GitHub shows at
        most 10 annotations per step, so the full text report is always printed too.
sarif:  one SARIF 2.1.0 log for code scanning: every rule family as a rule with its help,
        every finding as a result with its file, line:col, level and a fingerprint that
        survives lines moving above it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import PurePath, PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import quote

from validators.findings import Finding, Level

FORMATS = ("text", "json", "github", "sarif", "auto")
# Formats whose stdout is one document a program reads: the summary goes to stderr.
DOCUMENTS = frozenset({"json", "sarif"})


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


# --- SARIF 2.1.0 ---------------------------------------------------------------------

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "tierops-validators"
# Code scanning resolves this base id to the repository root; a relative path from the
# repository root is what CI passes (`python -m validators` there checks prod/*.yaml).
SRCROOT = "%SRCROOT%"
FINGERPRINT = "tieropsFinding/v1"
DOCS = "docs/validators.md"

# Parts of a message that change when lines move above a finding (a line named in the
# text, such as "already publishes (line 268)" or a YAML error's "line 3, column 5"):
# left out of the fingerprint so that the finding keeps its identity.
# So are the places a finding names as `FILE.yaml:LINE` (the stack data line to fix, the
# other places one data line caused it).
_VOLATILE = re.compile(r"\b(?:lines?|columns?) \d+(?:(?:, | and )\d+)*|\.ya?ml:\d+")


class RuleInfo(NamedTuple):
    """What the SARIF log says about one rule family: its id, summary and checks."""

    id: str
    summary: str
    checks: tuple[str, ...]


def rule_catalogue() -> tuple[RuleInfo, ...]:
    """Every rule family the validators have, in `--list-rules` order, with its checks.

    Imported here, not at module level: the check stage's wrapper imports this module for
    the text and annotations, and should not load every rule family for that.
    """
    from validators import loader
    from validators.registry import ALL_IDS, CHECKS, LOADER_ID, RULES
    from validators.rules import wiring

    rules = []
    for rule_id in ALL_IDS:
        summary = loader.SUMMARY if rule_id == LOADER_ID else RULES[rule_id].SUMMARY
        if rule_id == wiring.ID:
            checks = tuple(wiring.CHECKS)  # the wiring family names its checks as data
        else:
            checks = tuple(name.split("/", 1)[1] for name in CHECKS if name.split("/", 1)[0] == rule_id)
        rules.append(RuleInfo(rule_id, " ".join(summary.split()), checks))
    return tuple(rules)


def _descriptor(rule: RuleInfo) -> dict[str, Any]:
    checks = f" Checks: {', '.join(rule.checks)}." if rule.checks else ""
    where = f"{DOCS}#{rule.id}"
    return {
        "id": rule.id,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary}.{checks}"},
        # helpUri must be an absolute URI, and the log cannot know where the repository
        # is served from, so the pointer to the docs is part of the help text.
        "help": {
            "text": f"{rule.summary}.{checks} Passing and failing examples: {where} in this repository.",
            "markdown": (
                f"{rule.summary}.{checks}\n\nPassing and failing examples: `{where}` "
                f"(the section `{rule.id}`) in this repository."
            ),
        },
    }


def artifact_uri(path: str) -> tuple[str, str | None]:
    """The uri of a finding's file, and its base id: %SRCROOT% for a relative path."""
    pure = PurePath(path)
    if pure.is_absolute():
        return pure.as_uri(), None
    return quote(PurePosixPath(*pure.parts).as_posix(), safe="/"), SRCROOT


def stable_message(message: str) -> str:
    """The message with the line and column numbers it names replaced by `#`."""
    return _VOLATILE.sub(lambda match: re.sub(r"\d+", "#", match.group(0)), message)


def fingerprint(rule: str, uri: str, message: str, occurrence: int) -> str:
    """A finding's identity without its position: the rule, the file, the message without
    line numbers, and which of the findings alike it is (0 for the first in the file)."""
    text = "\0".join((rule, uri, stable_message(message), str(occurrence)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sarif(findings: Sequence[Finding], rules: Sequence[RuleInfo] | None = None) -> str:
    """One run of one tool: every rule, then every finding in order. Same findings, same bytes."""
    catalogue = list(rule_catalogue() if rules is None else rules)
    known = {rule.id for rule in catalogue}
    # A rule id no family declares (none today) still gets a descriptor, so that every
    # result's ruleIndex points at its rule.
    catalogue += [RuleInfo(rule, rule, ()) for rule in sorted({f.rule for f in findings} - known)]
    index = {rule.id: position for position, rule in enumerate(catalogue)}
    seen: Counter[tuple[str, str, str]] = Counter()
    results = []
    for finding in findings:
        uri, base = artifact_uri(finding.path)
        alike = (finding.rule, uri, stable_message(finding.message))
        occurrence = seen[alike]
        seen[alike] += 1
        location: dict[str, Any] = {"uri": uri}
        if base is not None:
            location["uriBaseId"] = base
        results.append(
            {
                "ruleId": finding.rule,
                "ruleIndex": index[finding.rule],
                "level": "error" if finding.level is Level.ERROR else "warning",
                "message": {"text": finding.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": location,
                            "region": {"startLine": finding.line, "startColumn": finding.col},
                        }
                    }
                ],
                "partialFingerprints": {
                    FINGERPRINT: fingerprint(finding.rule, uri, finding.message, occurrence)
                },
            }
        )
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": {"name": TOOL_NAME, "rules": [_descriptor(rule) for rule in catalogue]}},
                # the loader counts columns in characters, as ruamel.yaml's marks do
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, sort_keys=True) + "\n"


FORMATTERS: dict[str, Callable[[Sequence[Finding]], str]] = {
    "text": text,
    "json": as_json,
    "github": github,
    "sarif": sarif,
}


def resolve(name: str, environ: dict[str, str]) -> str:
    """`auto` is github inside GitHub Actions, text elsewhere."""
    if name != "auto":
        return name
    return "github" if environ.get("GITHUB_ACTIONS") == "true" else "text"
