"""`python -m benchmarks.bench_check` (`nox -s bench-check`): where a warm `nox -R -s check` spends its time.

Runs `nox -R -s check` once to warm up (it must pass), then, best of --repeat:

- the whole warm `nox -R -s check`;
- each stage alone, `nox -R -s <stage>` (so each row includes nox's own start-up, shown
  on its own row as `nox -R -l`, which loads the noxfile and runs nothing);
- this machine's reference: `python -c pass` and `python -c "import ruamel.yaml"` with
  the interpreter of the `generated` session's environment, so readers on another
  machine can compare ratios rather than seconds.

Figures are printed with the environment: PYTHONDONTWRITEBYTECODE (set or not), the
CPU count, the Python version, the load average. `--both` measures twice, with
PYTHONDONTWRITEBYTECODE=1 and without it, side by side. Prints only; nothing fails on
a slow machine (a failing check stops the benchmark: timing a failure means nothing).
stdlib only: it runs in nox's own interpreter.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("generated", "validate", "compose", "lint", "typecheck", "diff", "plan", "record")
FLAG = "PYTHONDONTWRITEBYTECODE"


def run_once(argv: Sequence[str], env: Mapping[str, str]) -> float:
    """Wall-clock seconds of one run; a failing run raises."""
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=dict(env), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise RuntimeError(f"`{' '.join(argv)}` failed (exit {proc.returncode}):\n{tail}")
    return elapsed


def rows(nox: Sequence[str]) -> dict[str, list[str]]:
    python = ROOT / ".nox" / "generated" / "bin" / "python"
    interpreter = str(python) if python.exists() else sys.executable
    table = {
        "nox -R -s check": [*nox, "-R", "-s", "check"],
        "nox start-up (nox -R -l)": [*nox, "-R", "-l"],
    }
    table.update({f"  {stage}": [*nox, "-R", "-s", stage] for stage in STAGES})
    table["python -c pass"] = [interpreter, "-c", "pass"]
    table['python -c "import ruamel.yaml"'] = [interpreter, "-c", "import ruamel.yaml"]
    return table


def measure(nox: Sequence[str], envs: Sequence[Mapping[str, str]], repeat: int) -> list[dict[str, float]]:
    """Best of `repeat` per row and environment; the environments alternate run by run,
    so a change in the machine's load hits every column alike."""
    for env in envs:
        run_once([*nox, "-R", "-s", "check"], env)  # warm-up, and proof that it passes
    best: list[dict[str, float]] = [{} for _ in envs]
    for label, argv in rows(nox).items():
        for _ in range(repeat):
            for column, env in zip(best, envs, strict=True):
                elapsed = run_once(argv, env)
                column[label] = min(column.get(label, elapsed), elapsed)
    return best


def environment_line(env: Mapping[str, str]) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    flag = f"{FLAG}={env[FLAG]}" if env.get(FLAG) else f"{FLAG} unset"
    return (
        f"{flag}; {os.cpu_count()} CPU(s); Python {platform.python_version()} ({sys.platform}); "
        f"load average {load:.2f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the best is shown (default 3)")
    parser.add_argument("--both", action="store_true", help=f"measure with {FLAG}=1 and without it")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    nox = [sys.executable, "-m", "nox"]
    base = {key: value for key, value in os.environ.items() if key != FLAG}
    variants: list[tuple[str, dict[str, str]]] = []
    if args.both:
        variants = [(f"{FLAG}=1", {**base, FLAG: "1"}), (f"{FLAG} unset", base)]
    else:
        variants = [("this shell", dict(os.environ))]
    for name, env in variants:
        print(f"measuring ({name}): {environment_line(env)}", flush=True)
    try:
        results = measure(nox, [env for _, env in variants], args.repeat)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 1
    columns = [(name, result) for (name, _), result in zip(variants, results, strict=True)]
    print(f"after: load average {os.getloadavg()[0]:.2f}")
    labels = list(columns[0][1])
    width = max(len(label) for label in labels)
    print()
    print(
        f"warm check, best of {args.repeat}, seconds (stage rows: `nox -R -s STAGE`, nox start-up included)"
    )
    print(f"{'':<{width}}  " + "  ".join(f"{name:>24}" for name, _ in columns))
    for label in labels:
        print(f"{label:<{width}}  " + "  ".join(f"{column[label]:>24.2f}" for _, column in columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
