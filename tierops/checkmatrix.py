"""The check-matrix record's one definition of "the same record": its canonical bytes and digest.

`nox -s check` writes `build/check-matrix.json` (ci/record.py assembles it; its schema
is ci/check-matrix.schema.json). The same inputs give the same record except for the
wall-clock durations, so the digest is taken over the record *without* them: two runs
at one commit with the same tools give one digest, which is what a release tag
records as its evidence (rollout/release/record.py) and what anybody can recompute
(`python -m ci.record --digest`).

Stdlib only: the release code and the comment poster read records without the
project's dependencies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

FORMAT = 1
RECORD_NAME = "check-matrix.json"
MARKDOWN_NAME = "check-matrix.md"
# Every duration in the record is a key of this name (per stage, per file): nothing
# else in a record may vary between two runs over the same inputs.
DURATION_KEY = "duration_s"
DIGEST_PREFIX = "sha256:"


def without_durations(value: Any) -> Any:
    """A deep copy of a JSON value with every `duration_s` key removed."""
    if isinstance(value, Mapping):
        return {key: without_durations(item) for key, item in value.items() if key != DURATION_KEY}
    if isinstance(value, list):
        return [without_durations(item) for item in value]
    return value


def canonical(record: Mapping[str, Any]) -> bytes:
    """The record's reproducible part as bytes: no durations, sorted keys, no whitespace."""
    text = json.dumps(without_durations(record), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")


def digest(record: Mapping[str, Any]) -> str:
    """`sha256:<64 hex>` of the canonical bytes."""
    return DIGEST_PREFIX + hashlib.sha256(canonical(record)).hexdigest()


def read_digest(path: Path) -> str | None:
    """The digest of the record at `path`, or None when there is none or it is not a record.

    A file that is not JSON, not an object or not of this FORMAT gives None: the caller
    records "no evidence" rather than a digest of something else.
    """
    data = read_record(path)
    return None if data is None else digest(data)


# --------------------------------------------------------------------------- the headline

PASS, FAIL, ERROR, NOT_RUN = "pass", "fail", "error", "not run"
MAX_NAMED_COUNTS = 2  # rule ids named for a failed repository-wide stage in the headline


def headline(
    record: Mapping[str, Any], clean: Callable[[str], str] = str, name: Callable[[str], str] = str
) -> str:
    """The record's verdict in one line, the same for the summary, the comment and a tag.

    `pass` only when every stage ran and passed. Otherwise what failed first, then what
    did not run and why: `fail: tests (3 failed)`, `fail: diff (error); collector not run
    (no Docker)`, `incomplete: tests not run (no result from this run)`. `clean` makes
    text that came from a tool (a note, a rule id) safe where the line goes (Markdown),
    `name` a stage's name."""
    stages = [stage for stage in record.get("stages") or () if isinstance(stage, Mapping)]
    failed = failing(record, clean, name)
    # Stages that did not run for the same reason share one clause.
    reasons: dict[str, list[str]] = {}
    for stage in stages:
        if stage.get("verdict") == NOT_RUN:
            reasons.setdefault(clean(str(stage.get("note") or "")), []).append(name(str(stage.get("name"))))
    missing = [
        f"{', '.join(names)} not run" + (f" ({reason})" if reason else "")
        for reason, names in reasons.items()
    ]
    if failed:
        return "fail: " + ", ".join(failed) + "".join(f"; {item}" for item in missing)
    if missing:
        return "incomplete: " + "; ".join(missing)
    return PASS if stages else "incomplete: no stage in the record"


def failing(
    record: Mapping[str, Any], clean: Callable[[str], str] = str, name: Callable[[str], str] = str
) -> list[str]:
    """The stages that failed or gave no verdict, each with what it counted:
    `["tests (3 failed)", "diff (error)"]`; empty when none did. `clean` and `name` as
    for `headline`."""
    stages = [stage for stage in record.get("stages") or () if isinstance(stage, Mapping)]
    failed = [_failed(stage, clean, name) for stage in stages if stage.get("verdict") in (FAIL, ERROR)]
    failed += [
        f"{name(str(stage.get('name')))} (unknown verdict)"
        for stage in stages
        if stage.get("verdict") not in (PASS, FAIL, ERROR, NOT_RUN)
    ]
    return failed


def read_record(path: Path) -> dict[str, Any] | None:
    """The record at `path`, or None when there is none or it is not a record of this FORMAT."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def _failed(stage: Mapping[str, Any], clean: Callable[[str], str], shown: Callable[[str], str]) -> str:
    """`tests (3 failed)`, `validate (1 of 3 files)`, `lint (ruff-check 1)`, `diff (error)`."""
    name = shown(str(stage.get("name")))
    if stage.get("verdict") == ERROR:
        return f"{name} (error)"
    repository = stage.get("repository") or {}
    counts = repository.get("counts") or {} if isinstance(repository, Mapping) else {}
    if stage.get("name") == "tests":
        failures, errors = int(counts.get("failed") or 0), int(counts.get("errors") or 0)
        parts = [f"{failures} failed"] if failures else []
        if errors:
            parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        return f"{name} ({', '.join(parts)})" if parts else name
    files = stage.get("files") or {}
    bad = [
        path
        for path, cell in files.items()
        if isinstance(cell, Mapping) and cell.get("verdict") in (FAIL, ERROR)
    ]
    if bad:
        return f"{name} ({len(bad)} of {len(files)} files)"
    ranked = sorted(counts.items(), key=lambda item: (-int(item[1]), str(item[0])))[:MAX_NAMED_COUNTS]
    named = ", ".join(f"{clean(str(rule))} {int(number)}" for rule, number in ranked)
    return f"{name} ({named})" if ranked else name
