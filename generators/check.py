"""Compare rendered bytes with the committed files: the byte-identical check.

Pure functions of bytes and a directory listing; the CLI prints the reports.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path


class Status(Enum):
    CLEAN = "clean"
    STALE = "stale"  # committed bytes differ from the generator's
    MISSING = "missing"  # a target has no committed file
    ORPHANED = "orphaned"  # a committed file no target claims


@dataclass(frozen=True)
class FileReport:
    path: str  # as shown to the user, e.g. prod/X.yaml
    status: Status
    diff: str = ""

    @property
    def ok(self) -> bool:
        return self.status is Status.CLEAN


def compare(
    rendered: dict[str, bytes], prod_dir: Path, shown_dir: str, *, orphans: bool = True
) -> list[FileReport]:
    """One report per rendered file (in target order), then one per orphaned file (sorted)."""
    reports: list[FileReport] = []
    for filename, generated in rendered.items():
        shown = f"{shown_dir}/{filename}"
        path = prod_dir / filename
        if not path.is_file():
            reports.append(FileReport(shown, Status.MISSING))
            continue
        committed = path.read_bytes()
        if committed == generated:
            reports.append(FileReport(shown, Status.CLEAN))
        else:
            reports.append(FileReport(shown, Status.STALE, unified_diff(committed, generated, shown)))
    if orphans:
        for path in sorted(prod_dir.iterdir()) if prod_dir.is_dir() else ():
            if path.name.startswith(".") or path.name in rendered:
                continue
            reports.append(FileReport(f"{shown_dir}/{path.name}", Status.ORPHANED))
    return reports


def unified_diff(committed: bytes, generated: bytes, shown: str) -> str:
    old = committed.decode("utf-8", errors="replace").splitlines(keepends=True)
    new = generated.decode("utf-8", errors="replace").splitlines(keepends=True)
    lines = difflib.unified_diff(old, new, f"{shown} (committed)", f"{shown} (generated)")
    # A last line without a newline still gets one, and says so, like diff(1).
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
