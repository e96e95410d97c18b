"""Benchmark the validators: the three prod files, a 100-file fleet, and parser choices.

Run: `nox -s bench` (or `python benchmarks/bench_validators.py` from the repository
root). Prints figures; a benchmark, not a test: nothing here fails on a slow machine.

Targets: `python -m validators` on the 3 prod files under 0.3 s wall
in a fresh process (printed beside `python -c pass`, the interpreter's own start-up on
this machine); throughput in files/s and MB/s on a synthetic 100-file fleet.

`--sweep` also runs the structured single mutations of tests/validators/structured.py
over every path of every prod file (delete, retype with each wrong type, duplicate,
swap) and prints crashes and the slowest file: the big brother of the hypothesis
property in tests/validators/test_hardening.py.
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


def fresh_process(argv: list[str], runs: int) -> tuple[float, float, int]:
    """Median and best wall time of `argv` in a new interpreter each run, and its exit code."""
    times, code = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        code = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False).returncode
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), code


def sweep(ctx: object) -> None:
    """Every structured single mutation of every prod file: crashes and the slowest."""
    from tests.validators import structured
    from validators.context import Context

    assert isinstance(ctx, Context)
    runs = crashes = 0
    slowest = (0.0, "")
    for path in PROD:
        text = path.read_text(encoding="utf-8")
        for kind in structured.KINDS:
            wrongs = range(len(structured.WRONG_TYPES)) if kind == "retype" else range(1)
            for choice in range(structured.count(text, kind)):
                for wrong in wrongs:
                    mutated = structured.mutate(text, kind, choice, wrong)
                    if mutated is None:
                        continue
                    runs += 1
                    start = time.perf_counter()
                    try:
                        check_bytes(mutated.encode("utf-8"), f"prod/{path.name}", ctx)
                    except Exception as exc:  # counted and shown: the point of the sweep
                        crashes += 1
                        print(f"  CRASH {path.name} {kind} #{choice}/{wrong}: {type(exc).__name__}: {exc}")
                    spent = time.perf_counter() - start
                    if spent > slowest[0]:
                        slowest = (spent, f"{path.name} {kind} #{choice}/{wrong}")
    print(
        f"sweep: {runs} single mutations, {crashes} crashes; slowest {slowest[0] * 1000:.0f} ms ({slowest[1]})"
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print("Preliminary if the machine is shared: figures move with its load.")
    reference, reference_best, _ = fresh_process([sys.executable, "-c", "pass"], 7)
    cli, cli_best, code = fresh_process([sys.executable, "-m", "validators", "--format", "text"], 7)
    print(
        f"fresh process, 3 prod files: python -m validators {cli * 1000:.0f} ms median, {cli_best * 1000:.0f} ms best "
        f"(exit {code}); python -c pass {reference * 1000:.0f} ms median, {reference_best * 1000:.0f} ms best; "
        f"target < 300 ms: {'met' if cli < 0.3 else 'MISSED'}"
    )
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
            # Each file differs in its header comment so nothing can be cached by content.
            path = folder / name
            path.write_bytes(raw.replace(b"# To change it:", f"# stack {index}\n# To change it:".encode(), 1))
            stacks.append((path, str(path)))
        stack_size = sum(path.stat().st_size for path, _ in stacks)
        spent = median_of(3, lambda: run(stacks, ctx))
        report = run(stacks, ctx)
        print(line(f"validate a {STACKS}-file fleet ({stack_size / 1e6:.2f} MB)", spent, stack_size))
        print(
            f"  throughput: {STACKS / spent:.0f} files/s, {stack_size / spent / 1e6:.2f} MB/s (in-process, contracts loaded)"
        )
        print(f"  findings: {len(report.findings)} (expected 0: every file is a committed prod file)")

    if "--sweep" in args:
        sweep(ctx)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
