"""The check-matrix record's one definition of "the same record": its canonical bytes and digest.

`nox -s check` writes `build/check-matrix.json` (ci/record.py assembles it; its schema
is ci/check-matrix.schema.json). The same inputs give the same record except for the
wall-clock durations, so the digest is taken over the record *without* them: two runs
at one commit with the same tools give one digest, which is what a release tag
records as its evidence (rollout/release.py) and what anybody can recompute
(`python -m ci.record --digest`).

Stdlib only: the release code and the comment poster read records without the
project's dependencies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    return digest(data)
