"""Benchmark the validators: the three prod files, 100 synthetic stacks, and parser choices.

Run: `nox -s bench` (or `python benchmarks/bench_validators.py` from the repository
root). Prints seconds, MB/s and the share of time spent parsing. A benchmark, not a
test: nothing here fails on a slow machine. Target (issue 3): under 0.5 s in-process
for the three committed files.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from tierops.yamlio import roundtrip  # noqa: E402
from validators.context import load_context  # noqa: E402
from validators.loader import Document, parse  # noqa: E402
from validators.model import build  # noqa: E402
from validators.registry import RULES  # noqa: E402
from validators.runner import check_bytes, run  # noqa: E402

PROD = sorted((ROOT / "prod").glob("*.yaml"))
STACKS = 100


def best_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def median_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def line(label: str, seconds: float, size: int) -> str:
    return f"{label:<48} {seconds * 1000:9.2f} ms {size / seconds / 1e6:8.2f} MB/s"


def main() -> int:
    start = time.perf_counter()
    ctx = load_context()
    setup = time.perf_counter() - start
    files = [(path.name, path.read_bytes()) for path in PROD]
    size = sum(len(raw) for _name, raw in files)
    texts = [raw.decode("utf-8") for _name, raw in files]
    print(
        f"prod files: {len(files)}, {size / 1000:.1f} kB; contracts + manifest load: {setup * 1000:.1f} ms (once per run)"
    )

    def validate_all() -> None:
        for name, raw in files:
            check_bytes(raw, name, ctx)

    def parse_all() -> None:
        for name, raw in files:
            parse(raw, name)

    total = median_of(20, validate_all)
    parsing = median_of(20, parse_all)
    print(line("validate 3 prod files (parse + every rule)", total, size))
    print(line("  of which parsing (libyaml events + composer)", parsing, size))
    print(f"  parse share: {parsing / total:.0%}; target < 500 ms: {'met' if total < 0.5 else 'MISSED'}")

    documents = [parse(raw, name) for name, raw in files]
    for rule_id, module in RULES.items():
        composes = [build(doc) for doc in documents if isinstance(doc, Document)]
        spent = median_of(
            10, lambda module=module, composes=composes: [list(module.check(c, ctx)) for c in composes]
        )
        print(f"  rule {rule_id:<20} {spent * 1000:9.2f} ms")

    print("parser choices on the same bytes (median of 10, or best of 3 for ruamel):")
    print(line("  libyaml events + composer (validators.loader)", median_of(10, parse_all), size))
    print(
        line(
            "  PyYAML CSafeLoader compose() (nodes with marks)",
            median_of(10, lambda: [yaml.compose(text, Loader=yaml.CSafeLoader) for text in texts]),
            size,
        )
    )
    print(
        line(
            "  PyYAML CSafeLoader load() (no positions)",
            median_of(10, lambda: [yaml.load(text, Loader=yaml.CSafeLoader) for text in texts]),
            size,
        )
    )
    print(
        line(
            "  ruamel.yaml round-trip load (pure)",
            best_of(3, lambda: [roundtrip().load(text) for text in texts]),
            size,
        )
    )

    with tempfile.TemporaryDirectory() as tmp:
        stacks: list[tuple[Path, str]] = []
        for index in range(STACKS):
            name, raw = files[index % len(files)]
            folder = Path(tmp) / f"stack-{index:03d}"
            folder.mkdir()
            # Each stack differs in its header comment so nothing can be cached by content.
            path = folder / name
            path.write_bytes(raw.replace(b"# To change it:", f"# stack {index}\n# To change it:".encode(), 1))
            stacks.append((path, str(path)))
        stack_size = sum(path.stat().st_size for path, _ in stacks)
        spent = median_of(3, lambda: run(stacks, ctx))
        report = run(stacks, ctx)
        print(line(f"validate {STACKS} synthetic stacks ({stack_size / 1e6:.2f} MB)", spent, stack_size))
        print(f"  findings: {len(report.findings)} (expected 0: every stack is a committed prod file)")

    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "validators", "--format", "text"], cwd=ROOT, capture_output=True, check=False
    )
    cold = time.perf_counter() - start
    print(
        f"python -m validators (3 files, interpreter start-up included): {cold * 1000:.0f} ms, exit {proc.returncode}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
