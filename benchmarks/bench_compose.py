"""`python -m benchmarks.bench_compose` (`nox -s compose-bench`): how the compose check scales with files.

Copies one prod file 1, 10 and 50 times into a temporary directory and times the two
stages of `nox -s compose` on them: the variable scan (in process) and the parallel
`docker compose config` renders (one compose process per file). Prints one row per
size, best of --repeat runs; the figures are kept in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tierops.composebin import DUMMY_ENV, ROOT, find_compose, run_config_many
from tierops.exitcodes import ExitCode, epilog
from validators.interpolation import scan_file

DEFAULT_FILE = ROOT / "prod" / "GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_compose",
        description=__doc__,
        epilog=epilog("a render failed"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="the prod file to copy")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50], help="copies per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best is shown")
    parser.add_argument("--jobs", type=int, default=None, help="parallel renders (default: CPU count)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return ExitCode.OK if exc.code == 0 else ExitCode.USAGE

    binary = find_compose()
    print(f"compose: {binary.origin}; {os.cpu_count()} CPU(s); {args.file.name}; best of {args.repeat}")
    print(f"{'files':>5}  {'scan s':>7}  {'render s':>8}  {'total s':>7}  {'ms/file':>7}")
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="tierops-bench-") as tmp:
            files = []
            for index in range(size):
                copy = Path(tmp) / f"copy-{index:03d}.yaml"
                shutil.copyfile(args.file, copy)
                files.append(copy)
            best: tuple[float, float] | None = None
            for _ in range(args.repeat):
                started = time.perf_counter()
                scans = [scan_file(file, file.name) for file in files]
                scanned = time.perf_counter()
                results = run_config_many(
                    binary,
                    files,
                    env_file=DUMMY_ENV,
                    profiles={scan.path: scan.profiles for scan in scans},
                    jobs=args.jobs,
                )
                rendered = time.perf_counter()
                failed = [result for result in results if not result.ok]
                if failed:
                    print(f"render failed: {failed[0].file}: {failed[0].error_line()}")
                    return ExitCode.FINDINGS
                run = (scanned - started, rendered - scanned)
                if best is None or sum(run) < sum(best):
                    best = run
            assert best is not None
            total = sum(best)
            print(f"{size:>5}  {best[0]:>7.3f}  {best[1]:>8.3f}  {total:>7.3f}  {1000 * total / size:>7.1f}")
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
