"""Compile the project's own modules to checked-hash `.pyc` files (stdlib only).

Why: with `PYTHONDONTWRITEBYTECODE=1` (set on this machine and on many CI images)
Python never writes `.pyc`, so every `python -m validators` compiled every project
module from source again. It still *reads* `.pyc` files. The noxfile calls
`compile_tree` before a session runs project code, so each module is compiled once
per change instead of once per process.

Why checked-hash pycs (PEP 552) rather than the default timestamp ones: a timestamp
pyc is trusted when the source's mtime (whole seconds) and size match, so an edit
within the same second that keeps the size would run stale code. A checked-hash pyc
records a hash of the source, and the importer compares it with the source on every
import: a `.pyc` can never stand in for a source it was not compiled from. Files land
where Python looks for them (`__pycache__/`, or under `sys.pycache_prefix` when
PYTHONPYCACHEPREFIX is set); `__pycache__/` is gitignored.

`python -m ci.bytecode [DIR ...]` does the same by hand.
"""

from __future__ import annotations

import importlib.util
import py_compile
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

# PEP 552 flags word: bit 0 = hash-based, bit 1 = check_source.
CHECKED_HASH_FLAGS = 0b11
HEADER = 16  # magic (4), flags (4), source hash (8)
# The project's packages: what the sessions import (tests/ are pytest's: it rewrites them).
PACKAGES = ("generators", "validators", "rollout", "tierops", "ci")
SKIP_DIRS = frozenset({"__pycache__", ".nox", ".git", ".venv", "build"})


class Compiled(NamedTuple):
    checked: int  # sources looked at
    written: int  # .pyc files (re)written because missing or stale
    failed: tuple[str, ...]  # sources that do not compile (the import will report them)


def is_current(source: bytes, pyc: Path) -> bool:
    """True iff `pyc` is a checked-hash pyc of exactly `source` for this interpreter."""
    try:
        with pyc.open("rb") as handle:
            header = handle.read(HEADER)
    except OSError:
        return False
    return (
        len(header) == HEADER
        and header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == CHECKED_HASH_FLAGS
        and header[8:16] == importlib.util.source_hash(source)
    )


def sources(roots: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_file() and root.suffix == ".py":
            found.append(root)
            continue
        for path in sorted(root.rglob("*.py")):
            if not SKIP_DIRS.intersection(path.relative_to(root).parts[:-1]):
                found.append(path)
    return found


def compile_tree(roots: Iterable[Path]) -> Compiled:
    """Bring the pyc of every `*.py` under `roots` up to date; cheap when nothing changed."""
    checked = written = 0
    failed: list[str] = []
    for path in sources(roots):
        checked += 1
        try:
            source = path.read_bytes()
        except OSError:
            continue
        pyc = Path(importlib.util.cache_from_source(str(path)))
        if is_current(source, pyc):
            continue
        try:
            py_compile.compile(
                str(path),
                cfile=str(pyc),
                doraise=True,
                invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
            )
        except (py_compile.PyCompileError, OSError):
            failed.append(str(path))
            continue
        written += 1
    return Compiled(checked, written, tuple(failed))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(arg.startswith("-") for arg in args):
        print(__doc__)
        return 0 if set(args) <= {"-h", "--help"} else 2
    roots = [Path(arg) for arg in args] or [Path(name) for name in PACKAGES]
    result = compile_tree(roots)
    print(f"bytecode: {result.written} of {result.checked} module(s) compiled, {len(result.failed)} failed")
    for name in result.failed:
        print(f"  does not compile: {name}")
    return 1 if result.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
