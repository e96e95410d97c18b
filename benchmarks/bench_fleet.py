"""`python -m benchmarks.bench_fleet` (`nox -s fleet-bench`): the check of a synthetic fleet of 1, 10, 50 and 100 stacks.

A stack is a copy of one of the three prod files under another name
(`stack-007-<prod file name>`), its `deployment` labels renamed to match, as the
otel-labels contract asks. For each size the fleet is a git repository of its own
(the prod files and ci/dummy.env) with one commit; then every stack gets a one-flag
edit (r1's --max-running-requests 32 -> 24) so that diff and plan have work to do.

The check of the fleet is every stage of `nox -s check` that reads the prod files,
each run as its nox session runs it (one `python -m ...` process, in the fleet's
repository, with the project on PYTHONPATH):

  validate      python -m validators FILES
  compose       python -m validators.compose FILES (variable scan, one real render per file, in parallel)
  lint's hooks  python -m ci.file_checks FILES (the per-file hook `nox -s check` runs on prod
                files; the compose-spec hook it leaves to `compose`: ci/lint_scope.py)
  diff, plan    python -m rollout diff|plan --base HEAD --format json --markdown-to FILE prod

`generated` does not apply (the generators write exactly the three prod files),
`typecheck` and the rest of `lint` read code, not prod files, and the collector needs
Docker. With --unchanged the stacks stay as committed (diff and plan find nothing to
do). Prints, best of --repeat, each stage's seconds per size, the total, ms per
file, and CPU seconds over wall seconds (above 1: more than one core at work), then
the marginal cost per added file. Every stage must pass: timing a failure means
nothing, so a failing stage stops the benchmark (exit 1).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import io
import itertools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tierops import layout
from tierops.exitcodes import ExitCode, epilog
from tierops.yamlio import roundtrip

ROOT = Path(__file__).resolve().parent.parent
PRODS = sorted(layout.prod_dir().glob("*.yaml"))
# Every healthcheck's retries 3 -> 4: a change in every stack that the contract allows
# (the replicas stay alike), so diff and plan have work to do.
EDIT = ("\n      retries: 3\n", "\n      retries: 4\n")
SIZES = (1, 10, 50, 100)
# The code a check runs; the fleet's repository holds a copy, so the contracts can name the stacks.
PACKAGES = ("validators", "tierops", "rollout", "ci")
CONTRACTS = "validators/contracts/glm53.yaml"


def stack_name(index: int, prod: Path) -> str:
    return f"stack-{index:03d}-{prod.name}"


def stack_text(prod: Path, name: str) -> str:
    """The prod file's text with its deployment labels naming the stack (the file's stem)."""
    stem = Path(name).stem
    text = prod.read_text(encoding="utf-8")
    return text.replace(f"deployment: {prod.stem}\n", f"deployment: {stem}\n")


def make_fleet(repo: Path, size: int, *, edit: bool = True) -> list[str]:
    """A copy of the project's code with `size` stacks in prod/ (committed, then each
    edited) and a contract per stack (a copy of its prod file's); the stacks' paths."""
    for package in PACKAGES:  # with their __pycache__: the checked-hash pycs stay valid
        shutil.copytree(ROOT / package, repo / package)
    (repo / "prod").mkdir()
    (repo / "build").mkdir()  # where the diff and plan write their Markdown
    # The fleet's data over the code's copy: the fleet measured is the one TIEROPS_FLEET names.
    shutil.copyfile(layout.dummy_env(), repo / "ci" / "dummy.env")
    for contract in layout.contracts_dir().glob("*.yaml"):
        shutil.copyfile(contract, repo / "validators" / "contracts" / contract.name)
    contracts_path = repo / CONTRACTS
    yaml = roundtrip()
    contracts = yaml.load(contracts_path.read_text(encoding="utf-8"))
    names = []
    for index in range(size):
        prod = PRODS[index % len(PRODS)]
        name = stack_name(index, prod)
        (repo / "prod" / name).write_text(stack_text(prod, name), encoding="utf-8")
        contracts["files"][Path(name).stem] = copy.deepcopy(contracts["files"][prod.stem])
        names.append(f"prod/{name}")
    for prod in PRODS:  # the fleet is the stacks alone
        del contracts["files"][prod.stem]
    out = io.StringIO()
    yaml.dump(contracts, out)
    contracts_path.write_text(out.getvalue(), encoding="utf-8")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "fleet"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    for name in names if edit else ():
        path = repo / name
        text = path.read_text(encoding="utf-8")
        if EDIT[0] not in text:
            raise LookupError(
                f"{name}: no {EDIT[0].strip()!r} to edit: update benchmarks/bench_fleet.py's EDIT"
            )
        path.write_text(text.replace(*EDIT), encoding="utf-8")
    return names


def stages(files: Sequence[str]) -> dict[str, list[list[str]]]:
    py = sys.executable
    return {
        "validate": [[py, "-m", "validators", "--format", "text", *files]],
        "compose": [
            [
                py,
                "-m",
                "validators.compose",
                "--env-file",
                "ci/dummy.env",
                "--rendered-dir",
                "build/rendered",
                *files,
            ]
        ],
        "lint hooks": [[py, "-m", "ci.file_checks", *files]],
        # as their stages run them (ci/stages.py): the JSON, and the Markdown to a file
        "diff": [
            [
                py,
                "-m",
                "rollout",
                "diff",
                "--base",
                "HEAD",
                "--format",
                "json",
                "--markdown-to",
                "build/diff.md",
                "prod",
            ]
        ],
        "plan": [
            [
                py,
                "-m",
                "rollout",
                "plan",
                "--base",
                "HEAD",
                "--format",
                "json",
                "--markdown-to",
                "build/plan.md",
                "prod",
            ]
        ],
    }


def _run_one(argv: Sequence[str], repo: Path, env: Mapping[str, str]) -> float:
    """Run one command to its end; its own CPU seconds (from its rusage); a failure raises."""
    with tempfile.TemporaryFile() as output:
        proc = subprocess.Popen(
            list(argv),
            cwd=repo,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            output.seek(0)
            tail = "\n".join(output.read().decode("utf-8", "replace").splitlines()[-10:])
            raise RuntimeError(f"`{' '.join(argv[:4])} ...` failed (exit {proc.returncode}):\n{tail}")
    return usage.ru_utime + usage.ru_stime


def timed(commands: Sequence[Sequence[str]], repo: Path, env: Mapping[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one stage's commands, one after the other (as its session
    runs them), with the fleet's copy of the code first on the path; a failure raises."""
    env = {**env, "PYTHONPATH": str(repo), layout.FLEET_ENV: str(repo)}
    started = time.perf_counter()
    cpu = sum(_run_one(argv, repo, env) for argv in commands)
    return time.perf_counter() - started, cpu


def check_once(
    files: Sequence[str], repo: Path, env: Mapping[str, str], *, serial: bool
) -> tuple[dict[str, tuple[float, float]], float]:
    """Every stage once: one after another as `nox -s check` runs them, or side by side;
    each stage's (wall, CPU) and the whole run's wall."""
    commands = stages(files)
    started = time.perf_counter()
    if serial:
        run = {name: timed(argvs, repo, env) for name, argvs in commands.items()}
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(commands)) as pool:
            futures = {name: pool.submit(timed, argvs, repo, env) for name, argvs in commands.items()}
            run = {name: future.result() for name, future in futures.items()}
    return run, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_fleet",
        description=__doc__,
        epilog=epilog("a stage failed on the fleet"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="stacks per fleet")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best total is shown")
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="run the stages all at once instead of one after another as `nox -s check` runs them",
    )
    parser.add_argument(
        "--unchanged",
        action="store_true",
        help="leave the stacks as committed: diff and plan find no change (a pull request that touches no stack)",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return ExitCode.OK if exc.code in (0, None) else ExitCode.USAGE
    env = dict(os.environ)
    env.pop("GITHUB_ACTIONS", None)  # plain text, no annotations
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    flag = (
        "PYTHONDONTWRITEBYTECODE=1"
        if os.environ.get("PYTHONDONTWRITEBYTECODE")
        else "PYTHONDONTWRITEBYTECODE unset"
    )
    print(
        f"fleet check: {flag}; {os.cpu_count()} CPU(s); Python {platform.python_version()}; "
        f"load average {load:.2f}; best of {args.repeat}; "
        + ("no stack changed" if args.unchanged else "every stack changed since the base")
        + (
            "; stages side by side"
            if args.side_by_side
            else "; stages one after another, as `nox -s check` runs them"
        ),
        flush=True,
    )
    names = list(stages(["f"]))
    print(
        "seconds, wall (CPU of its processes); total: the whole run's wall (CPU of all); "
        "CPU/wall above 1: more than one core at work"
    )
    header = "  ".join(f"{name:>13}" for name in names)
    print(f"{'stacks':>6}  {header}  {'total s':>13}  {'ms/stack':>8}  {'CPU/wall':>8}")
    totals: dict[int, float] = {}
    cpus: dict[int, float] = {}
    for size in args.sizes:
        best: tuple[dict[str, tuple[float, float]], float] | None = None
        with tempfile.TemporaryDirectory(prefix="tierops-fleet-") as tmp:
            repo = Path(tmp) / "fleet"
            files = make_fleet(repo, size, edit=not args.unchanged)
            for _ in range(args.repeat):
                try:
                    run = check_once(files, repo, env, serial=not args.side_by_side)
                except RuntimeError as error:
                    print(f"{size} stacks: {error}", file=sys.stderr)
                    return ExitCode.FINDINGS
                if best is None or run[1] < best[1]:
                    best = run
        assert best is not None
        per_stage, wall = best
        cpu = sum(c for _, c in per_stage.values())
        totals[size] = wall
        cpus[size] = cpu
        cells = "  ".join(f"{per_stage[name][0]:>6.2f} ({per_stage[name][1]:>4.2f})" for name in names)
        print(
            f"{size:>6}  {cells}  {wall:>6.2f} ({cpu:>4.2f})  {1000 * wall / size:>8.1f}  {cpu / wall:>8.2f}",
            flush=True,
        )
    sizes = sorted(totals)
    for low, high in itertools.pairwise(sizes):
        step = (totals[high] - totals[low]) / (high - low)
        cpu_step = (cpus[high] - cpus[low]) / (high - low)
        print(
            f"from {low} to {high} stacks: {1000 * step:.1f} ms per added stack "
            f"({1000 * cpu_step:.1f} ms of CPU; equal steps mean a linear cost)"
        )
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
