"""Wall and CPU seconds of a warm `nox -r -s check` and of `python -m rollout diff|plan`, best of N.

Run from a clone's root after one `nox -r -s check` (it uses `.nox/plan/bin/python`
and the nox on PATH, or $NOX). Each row is printed beside `python -c pass` of the same
interpreter and the load average. Arguments: `check` and/or `checkj` (the check with
`-j 2`) add those rows; `--base REF` (repeatable) the bases of the diff and plan rows.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """The least wall and the least CPU seconds of `runs` runs (exit 0 or 1 only)."""
    walls, cpus = [], []
    for _ in range(runs):
        started, cpu = time.perf_counter(), _cpu()
        proc = subprocess.run(argv, env=env, capture_output=True, check=False)
        walls.append(time.perf_counter() - started)
        cpus.append(_cpu() - cpu)
        if proc.returncode not in (0, 1):
            sys.exit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]!r}")
    return min(walls), min(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("rows", nargs="*", help="check, checkj")
    parser.add_argument("--base", action="append", default=[])
    args = parser.parse_args()
    if set(args.rows) - {"check", "checkj"}:
        parser.error("rows are check and checkj")
    python = str(Path(".nox/plan/bin/python").absolute())  # not resolve(): the venv's python is a symlink
    nox = os.environ.get("NOX") or shutil.which("nox") or "nox"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    rows: list[tuple[str, list[str], int]] = []
    if "check" in args.rows:
        rows.append(("nox -r -s check", [nox, "-r", "-s", "check"], 3))
    if "checkj" in args.rows:
        rows.append(("nox -r -j 2 -s check", [nox, "-r", "-j", "2", "-s", "check"], 3))
    for base in args.base or ["HEAD~1"]:
        for command in ("diff", "plan"):
            rows.append(
                (
                    f"python -m rollout {command} --base {base}",
                    [python, "-m", "rollout", command, "--base", base],
                    5,
                )
            )
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    print(f"HEAD {head.stdout.strip()}; PYTHONDONTWRITEBYTECODE=1; load average {os.getloadavg()[0]:.2f}")
    for label, argv, runs in rows:
        wall, cpu = best(argv, runs, env)
        reference, _ = best([python, "-c", "pass"], 5, env)
        print(
            f"{label} (best of {runs}): {wall:.2f} s wall, {cpu:.2f} s CPU; "
            f"python -c pass {reference:.3f} s; load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
