"""Compare rendered bytes with the committed files: the byte-identical check.

Pure functions of bytes and a directory listing; the CLI prints the reports, as text
or as JSON (which the check's `generated` stage reads and shows as the same text).
"""

from __future__ import annotations

import difflib
import json
import posixpath
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from generators.render import REGENERATE
from tierops.layout import check_inside, check_prod_name


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
        check_inside(path, prod_dir.parent, shown)
        committed = path.read_bytes()
        if committed == generated:
            reports.append(FileReport(shown, Status.CLEAN))
        else:
            reports.append(FileReport(shown, Status.STALE, unified_diff(committed, generated, shown)))
    if orphans:
        for path in sorted(prod_dir.iterdir()) if prod_dir.is_dir() else ():
            if path.name.startswith(".") or path.name in rendered:
                continue
            check_prod_name(path)  # never print a name that forges a line of this report
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


def report_text(reports: list[FileReport]) -> str:
    """The human report: one status word per file, a stale file's diff, a last line."""
    out: list[str] = []
    for report in reports:
        if report.status is Status.CLEAN:
            out.append(f"ok       {report.path}\n")
        elif report.status is Status.STALE:
            out.append(
                f"stale    {report.path}: differs from what the generators produce (hand-edited, or source changed without `{REGENERATE}`)\n"
            )
            out.append(report.diff)
        elif report.status is Status.MISSING:
            where = posixpath.dirname(report.path)
            out.append(f"missing  {report.path}: a target renders it but it is not in {where}/\n")
        else:
            out.append(
                f"orphaned {report.path}: no target claims it; `git rm` it, or declare its target in a stack's targets file (generators/*.targets.yaml)\n"
            )
    bad = [report for report in reports if not report.ok]
    if not bad:
        out.append(f"{len(reports)} file(s) byte-identical to the generators' output\n")
        return "".join(out)
    fixable = any(report.status is not Status.ORPHANED for report in bad)
    # Regenerating overwrites prod/: a hand edit there is lost unless it is moved into
    # the source or the targets first, so the hint says so rather than only "run it".
    fix = (
        f"; a hand edit belongs in generators/ (the source or the targets), because `{REGENERATE}` "
        "rewrites prod/ and discards it; then run it and commit both"
        if fixable
        else ""
    )
    out.append(f"{len(bad)} of {len(reports)} file(s) not as generated{fix}\n")
    return "".join(out)


def reports_json(reports: list[FileReport]) -> str:
    rows = [{"path": report.path, "status": report.status.value, "diff": report.diff} for report in reports]
    return json.dumps({"format": 1, "files": rows}, indent=1) + "\n"


def reports_from_json(text: str) -> list[FileReport]:
    """`reports_json`'s output read back, strictly: anything else raises ValueError."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != 1 or not isinstance(data.get("files"), list):
        raise ValueError("not the generators' JSON report (format 1)")
    reports = []
    for row in data["files"]:
        if not isinstance(row, dict) or not all(
            isinstance(row.get(key), str) for key in ("path", "status", "diff")
        ):
            raise ValueError(f"a file entry that is not {{path, status, diff}}: {str(row)[:80]}")
        reports.append(FileReport(row["path"], Status(row["status"]), row["diff"]))
    return reports
