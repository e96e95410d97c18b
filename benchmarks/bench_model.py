"""Benchmark the one reading of a compose file: load + canonicalise, and hostile input.

Run from the repository root in an environment with the runtime pins (`nox -s bench`
runs it, or `.nox/tests/bin/python benchmarks/bench_model.py`). Prints figures; asserts
nothing (a benchmark, not a timed test). Targets, printed beside each line:

- load + canonicalise MB/s on the prod files and on a synthetic 200-service file;
- a 1 MB file loads (and canonicalises) in at most 0.5 s;
- a 200 KB file of `[` is refused in under 1 s;
- FIFO, /dev/zero, 100k-deep nesting, an alias bomb and a 5 MB file each end in under
  2 s through `python -m validators`, with exit 1 or 2 and one line.

`--sweep N` also runs N random combinations of spelling variants through the real
Compose binary (the equivalence property of tests/tierops/test_equivalence.py, at a
scale that does not fit the test budget).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tierops.canonical import build  # noqa: E402
from tierops.yamlload import LoadError, load_bytes  # noqa: E402

PROD = sorted((ROOT / "prod").glob("*.yaml"))
LONG = ROOT / "prod" / "GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"


def median_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fleet_file(copies: int) -> bytes:
    """One compose file with the long-context services copied `copies` times under new names."""
    text = LONG.read_text(encoding="utf-8")
    head, rest = text.split("\nservices:\n", 1)
    cut = rest.index("\nvolumes:\n")
    block, tail = rest[: cut + 1], rest[cut + 1 :]
    blocks = [
        re.sub(r"^  ([a-z0-9-]+):$", lambda m, i=i: f"  {m.group(1)}-{i}:", block, flags=re.M)
        for i in range(copies)
    ]
    return (head + "\nservices:\n" + "".join(blocks) + tail).encode()


def process_seconds(argv: list[str], runs: int = 5) -> float:
    return median_of(runs, lambda: subprocess.run(argv, capture_output=True, check=False, cwd=ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sweep", type=int, default=0, metavar="N", help="random spelling combinations through the binary"
    )
    args = parser.parse_args()

    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"PYTHONDONTWRITEBYTECODE={'set' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'unset'}"
    )
    reference = process_seconds([sys.executable, "-c", "pass"])
    print(f"reference: python -c pass                         {reference * 1000:8.1f} ms")

    prod = [(path.name, path.read_bytes()) for path in PROD]
    size = sum(len(raw) for _name, raw in prod)
    seconds = median_of(20, lambda: [build(load_bytes(raw, name)) for name, raw in prod])
    print(
        f"load + canonicalise 3 prod files ({size / 1000:.0f} kB)      {seconds * 1000:8.1f} ms {size / seconds / 1e6:6.2f} MB/s"
    )

    per_copy = len(fleet_file(2)) - len(fleet_file(1))
    megabyte = 1 + (1_000_000 - len(fleet_file(1))) // per_copy + 1
    for copies, target in ((25, ""), (megabyte, "  (target: 1 MB in <= 0.5 s)")):
        raw = fleet_file(copies)
        load = median_of(5, lambda raw=raw: load_bytes(raw, "fleet.yaml"))
        loaded = load_bytes(raw, "fleet.yaml")
        canon = median_of(5, lambda loaded=loaded: build(loaded))
        label = f"{len(build(loaded).services)}-service file ({len(raw) / 1e6:.2f} MB)"
        print(
            f"{label:<48} load {load:6.3f} s + canonicalise {canon:6.3f} s = {load + canon:6.3f} s "
            f"{len(raw) / (load + canon) / 1e6:5.2f} MB/s{target}"
        )

    nesting = b"[" * 200_000

    def refuse() -> None:
        try:
            load_bytes(nesting, "nesting.yaml")
        except LoadError:
            return
        raise AssertionError("not refused")

    print(
        f"200 KB of `[` refused in-process                    {median_of(5, refuse) * 1000:8.1f} ms  (target < 1 s)"
    )

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        hostile = {
            "nesting.yaml": b"[" * 100_000,
            "alias-bomb.yaml": (
                b"a: &a [x,x,x,x,x,x,x,x,x,x]\n"
                + b"".join(
                    f"{c}: &{c} [{','.join([f'*{chr(ord(c) - 1)}'] * 10)}]\n".encode() for c in "bcdefg"
                )
            ),
            "five-megabytes.yaml": b"a: " + b"x" * 5_000_000,
        }
        for name, raw in hostile.items():
            (directory / name).write_bytes(raw)
        os.mkfifo(directory / "fifo.yaml")
        paths = [*(directory / name for name in hostile), directory / "fifo.yaml", Path("/dev/zero")]
        for path in paths:
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "validators", str(path)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
                timeout=60,
            )
            took = time.perf_counter() - start
            line = next((line for line in (proc.stdout + proc.stderr).splitlines() if path.name in line), "?")
            print(
                f"python -m validators {path.name:<18} exit {proc.returncode} in {took:5.2f} s (target < 2 s): {line[-80:]}"
            )

    if args.sweep:
        sweep(args.sweep)
    return 0


def sweep(examples: int) -> None:
    import random

    from tests.tierops import oracle
    from tests.tierops.spellings import FAMILIES, family_file

    families = [name for name in FAMILIES if name not in ("ports-target-only", "networks", "entrypoint")]
    rng = random.Random(20261202)
    start = time.perf_counter()
    problems = 0
    for number in range(examples):
        bodies = []
        for _ in range(rng.randint(4, 16)):
            chosen = rng.sample(families, k=min(5, len(families)))
            keys = {}
            for family in chosen:
                body = rng.choice(FAMILIES[family])
                key = body.split(":", 1)[0]
                keys.setdefault(key, body)
            bodies.append("\n".join(keys.values()))
        text, names = family_file(bodies)
        found = oracle.emulation_mismatches(text) + oracle.partition_mismatches(
            text, names, per_variable=False
        )
        if found:
            problems += 1
            print(f"sweep example {number}: {found[:3]}")
    took = time.perf_counter() - start
    print(f"equivalence sweep: {examples} random files, {problems} with a disagreement, {took:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
