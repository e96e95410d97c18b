"""`release history`'s text read back into its parts, for the tests that check one of them.

An entry is a block of lines (blocks are separated by blank lines):

    v0.0.5  4c1869bf01a5  2026-10-05T12:00:00Z  r2: 16 running requests
      by Release Test <release@example.invalid>; tagged 2026-10-05T12:10:00Z
      deployable: no, from 2026-10-07T12:00:00Z; changed; definition ed64769056b7; check matrix -
      note: tagged with --no-verify
      - model-sg-glm53-w4afp8-tp4-r2: --max-running-requests: 24 -> 16
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAG_LINE = re.compile(
    r"^(?P<tag>v0\.0\.\d+)  (?P<commit>[0-9a-f]{12})  (?P<committed>\S+)  (?P<subject>.*)$"
)
_BY_LINE = re.compile(r"^  by (?P<author>.*); tagged (?P<tagged>\S+)$")
_FACTS = re.compile(
    r"^  deployable: (?P<deployable>.*?); (?P<change>[^;]+); definition (?P<definition>.+?); "
    r"check matrix (?P<check_matrix>\S+)$"
)


@dataclass(frozen=True)
class Shown:
    tag: str
    commit: str
    committed: str
    subject: str
    author: str
    tagged: str
    deployable: str  # "yes (since T)" or "no, from T"
    change: str  # "changed", "first recorded", "file removed", ...
    definition: str
    check_matrix: str
    notes: tuple[str, ...]
    changes: tuple[str, ...]  # the "- service: ..." lines, without the dash


def shown(out: str) -> list[Shown]:
    """Every tag entry of `release history`'s text output, newest first."""
    found: list[Shown] = []
    lines = out.splitlines()
    for index, line in enumerate(lines):
        head = _TAG_LINE.match(line)
        if head is None:
            continue
        by = _BY_LINE.match(lines[index + 1])
        facts = _FACTS.match(lines[index + 2])
        assert by is not None and facts is not None, lines[index : index + 3]
        rest: list[str] = []
        for item in lines[index + 3 :]:
            if not item.startswith("  "):
                break
            rest.append(item)
        notes = tuple(item.removeprefix("  note: ") for item in rest if item.startswith("  note: "))
        changes = tuple(item.removeprefix("  - ") for item in rest if item.startswith("  - "))
        found.append(
            Shown(**head.groupdict(), **by.groupdict(), **facts.groupdict(), notes=notes, changes=changes)
        )
    return found
