"""`python -m ci.bench_check` (`nox -s bench-check`): where a warm `nox -R -s check` spends its time.

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
STAGES = ("generated", "validate", "compose", "lint", "typecheck", "diff", "plan")
FLAG = "PYTHONDONTWRITEBYTECODE"


def timed(argv: Sequence[str], env: Mapping[str, str], repeat: int) -> float:
    """Best wall-clock seconds of `repeat` runs; a failing run raises."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, env=dict(env), capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise RuntimeError(f"`{' '.join(argv)}` failed (exit {proc.returncode}):\n{tail}")
        best = min(best, elapsed)
    return best


def measure(nox: Sequence[str], env: Mapping[str, str], repeat: int) -> dict[str, float]:
    timed([*nox, "-R", "-s", "check"], env, 1)  # warm-up, and proof that it passes
    rows = {"nox -R -s check": timed([*nox, "-R", "-s", "check"], env, repeat)}
    rows["nox start-up (nox -R -l)"] = timed([*nox, "-R", "-l"], env, repeat)
    for stage in STAGES:
        rows[f"  {stage}"] = timed([*nox, "-R", "-s", stage], env, repeat)
    python = ROOT / ".nox" / "generated" / "bin" / "python"
    interpreter = str(python) if python.exists() else sys.executable
    rows["python -c pass"] = timed([interpreter, "-c", "pass"], env, repeat)
    rows['python -c "import ruamel.yaml"'] = timed([interpreter, "-c", "import ruamel.yaml"], env, repeat)
    return rows


def environment_line(env: Mapping[str, str]) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    flag = f"{FLAG}={env[FLAG]}" if env.get(FLAG) else f"{FLAG} unset"
    return (
        f"{flag}; {os.cpu_count()} CPU(s); Python {platform.python_version()} ({sys.platform}); "
        f"load average {load:.2f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ci.bench_check",
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
    columns: list[tuple[str, dict[str, float]]] = []
    for name, env in variants:
        print(f"measuring ({name}): {environment_line(env)}", flush=True)
        try:
            columns.append((name, measure(nox, env, args.repeat)))
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
    labels = list(columns[0][1])
    width = max(len(label) for label in labels)
    print()
    print(
        f"warm check, best of {args.repeat}, seconds (stage rows: `nox -R -s STAGE`, nox start-up included)"
    )
    print(f"{'':<{width}}  " + "  ".join(f"{name:>24}" for name, _ in columns))
    for label in labels:
        print(f"{label:<{width}}  " + "  ".join(f"{rows[label]:>24.2f}" for _, rows in columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
