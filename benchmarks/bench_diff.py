"""Benchmark: `python -m rollout diff` end to end on a 200-service pair, and its parts.

Builds a synthetic pair of 200-service compose files (80-token argv, 20 labels, 10 env
vars per service; 50 services changed in varied ways: a flag inserted in the middle,
removed, its value changed, values swapped between two flags, a label, an env var, a
nested key) and prints:

- the real program end to end: `python -m rollout diff --base HEAD` in a git
  repository holding the base, the head in the working tree (at most 0.5 s on
  a 2-core machine), beside `python -c pass` (the interpreter's own start-up);
- its parts in process: reading both files through the one loader and the canonical
  model (`rollout/diff/forms.py`), then the change model, masking and the text lines;
- a whole-tree DeepDiff on the same compared forms, for scale.

Run: `python benchmarks/bench_diff.py` (from the repository root, with the runtime
dependency group installed). It exits 1 if a planted change is missing from the model.
Prints figures; it is not a timed test.
"""

from __future__ import annotations

import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rollout.diff.boundary import mask_file
from rollout.diff.describe import describe
from rollout.diff.document import diff_document
from rollout.diff.forms import Document, _read, read
from rollout.diff.report import sections
from tierops.yamlload import _shared

ROOT = Path(__file__).resolve().parent.parent
SERVICES = 200
CHANGED = 50
FLAGS = 39  # "sglang serve" + 39 flag/value pairs = 80 tokens
LABELS = 20
ENV = 10
RUNS = 7
PROGRAM_RUNS = 9


def service(number: int) -> dict[str, Any]:
    argv = ["sglang", "serve"]
    for flag in range(FLAGS):
        argv += [f"--option-{flag:02d}", f"value-{number}-{flag}"]
    return {
        "image": "docker.io/example/sglang@sha256:" + f"{number:064x}",
        "container_name": f"engine-{number:03d}",
        "restart": "unless-stopped",
        "command": argv,
        "environment": {f"ENV_{key:02d}": f"env-{number}-{key}" for key in range(ENV)},
        "labels": {f"tierops.bench.label{key:02d}": f"label-{number}-{key}" for key in range(LABELS)},
        "deploy": {
            "resources": {
                "reservations": {
                    "devices": [
                        {"driver": "nvidia", "device_ids": [str(number % 8)], "capabilities": ["gpu"]}
                    ]
                }
            }
        },
        "ulimits": {"memlock": -1, "stack": 67108864},
        "healthcheck": {"test": ["CMD", "curl", "-fsS", "http://localhost:8000/health"], "interval": "15s"},
    }


def mutate(head: dict[str, Any], number: int, kind: int) -> list[str]:  # noqa: PLR0911 (one return per kind)
    """Change service `number` of `head` in one of seven ways; return the expected subjects."""
    svc = head["services"][f"engine-{number:03d}"]
    argv: list[str] = svc["command"]
    if kind == 0:  # insert a flag in the middle
        argv[40:40] = ["--enable-dynamic-batch-tokenizer"]
        return ["--enable-dynamic-batch-tokenizer"]
    if kind == 1:  # change a value
        argv[argv.index("--option-10") + 1] = "changed"
        return ["--option-10"]
    if kind == 2:  # remove a flag and its value
        at = argv.index("--option-20")
        del argv[at : at + 2]
        return ["--option-20"]
    if kind == 3:  # swap the values of two flags (a value moving between flags)
        a, b = argv.index("--option-05") + 1, argv.index("--option-06") + 1
        argv[a], argv[b] = argv[b], argv[a]
        return ["--option-05", "--option-06"]
    if kind == 4:
        svc["labels"]["tierops.bench.label07"] = "changed"
        return ["tierops.bench.label07"]
    if kind == 5:
        svc["environment"]["ENV_03"] = "changed"
        return ["ENV_03"]
    svc["ulimits"]["memlock"] = 0
    return ["ulimits.memlock"]


def build(directory: Path) -> tuple[Path, Path, dict[str, list[str]]]:
    base = {"name": "bench", "services": {f"engine-{n:03d}": service(n) for n in range(SERVICES)}}
    head = copy.deepcopy(base)
    expected: dict[str, list[str]] = {}
    step = SERVICES // CHANGED
    for index, number in enumerate(range(0, SERVICES, step)):
        expected[f"engine-{number:03d}"] = mutate(head, number, index % 7)
    base_path, head_path = directory / "base.yaml", directory / "head.yaml"
    # JSON is YAML: one line per document keeps the writing fast and the parse real.
    base_path.write_text(json.dumps(base, indent=1), encoding="utf-8")
    head_path.write_text(json.dumps(head, indent=1), encoding="utf-8")
    return base_path, head_path, expected


def best(work: Callable[[], object]) -> tuple[float, object]:
    times: list[float] = []
    result: object = None
    for _ in range(RUNS):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


Times = tuple[list[float], list[float]]  # wall times, CPU times


def program_times(directory: Path, base_path: Path, head_path: Path) -> tuple[Times, Times]:
    """`python -m rollout diff` on the pair, and `python -c pass`: wall and CPU times."""
    repo = directory / "repo"
    (repo / "prod").mkdir(parents=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    env.pop("TIEROPS_BASE_REF", None)
    target = repo / "prod" / "bench.yaml"
    target.write_bytes(base_path.read_bytes())
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    target.write_bytes(head_path.read_bytes())

    def timed(argv: list[str]) -> tuple[list[float], list[float]]:
        """Wall times and CPU times (user + sys of the process and its git children)."""
        walls, cpus = [], []
        for _ in range(PROGRAM_RUNS):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=False)
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-500:]}")
        return walls, cpus

    return timed([sys.executable, "-m", "rollout", "diff", "--base", "HEAD"]), timed(
        [sys.executable, "-c", "pass"]
    )


def main() -> int:
    from deepdiff import DeepDiff

    DeepDiff({"warm": [1]}, {"warm": [2]})  # import and first-call costs out of the timing
    with tempfile.TemporaryDirectory() as tmp:
        base_path, head_path, expected = build(Path(tmp))
        size = base_path.stat().st_size

        def read_both() -> tuple[Document, Document]:
            _read.cache_clear()  # a reading is kept per process: time a fresh one each run
            _shared.cache_clear()
            return (
                read(base_path.read_bytes(), where="base.yaml"),
                read(head_path.read_bytes(), where="head.yaml"),
            )

        read_time, docs = best(read_both)
        program, bare = program_times(Path(tmp), base_path, head_path)
    base_doc, head_doc = docs  # type: ignore[misc]

    def rollout_diff() -> list[str]:
        file = mask_file(diff_document(base_doc, head_doc, path="bench.yaml"))
        parts = sections(file)
        return [row.text for row in parts.services]

    ours, _ = best(rollout_diff)
    theirs, deep = best(lambda: DeepDiff(base_doc.form, head_doc.form))
    file = diff_document(base_doc, head_doc, path="bench.yaml")
    reported = {service.name: [change.subject for change in service.changes] for service in file.services}
    missing = [
        f"{name}: {subject}"
        for name, subjects in expected.items()
        for subject in subjects
        if subject not in reported.get(name, [])
    ]
    extra = sorted(set(reported) - set(expected))
    lines = sum(len(service.changes) for service in file.services)
    print(
        f"synthetic pair: {SERVICES} services, {2 + 2 * FLAGS}-token argv, {LABELS} labels, {ENV} env vars;"
    )
    print(f"  {CHANGED} services changed ({len(expected)} planted), {size / 1024:.0f} KiB per file")
    for label, (walls, cpus) in (("python -m rollout diff, end to end", program), ("python -c pass", bare)):
        print(
            f"  {label + ':':36} wall median {statistics.median(walls):6.3f} s, best {min(walls):6.3f} s;"
            f" CPU median {statistics.median(cpus):6.3f} s (of {PROGRAM_RUNS} runs)"
        )
    load = os.getloadavg()[0]
    print(f"  (target for the diff: <= 0.5 s wall; load average now {load:.1f} on {os.cpu_count()} CPUs)")
    print(
        f"  in process: read both files (loader + canonical model):  {read_time * 1000:8.1f} ms"
        f"  ({2 * size / read_time / 1e6:.1f} MB/s)"
    )
    print(f"  in process: change model + masking + text lines:        {ours * 1000:8.1f} ms")
    print(f"  whole-tree DeepDiff on the same forms (for scale):       {theirs * 1000:8.1f} ms")
    print(
        f"  rollout diff reported {lines} changes on {len(reported)} services; "
        f"DeepDiff reported {sum(len(v) for v in deep.values())} items"  # type: ignore[attr-defined]
    )
    print(
        f"  example lines: {describe(file.services[0].changes[0])!r}, {describe(file.services[3].changes[0])!r}"
    )
    if missing or extra:
        print(f"  MISSING: {missing}; UNEXPECTED: {extra}")
        return 1
    print(f"  every planted change reported (in-process times: best of {RUNS} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
