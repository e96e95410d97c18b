"""The shared core stands alone: tierops/ imports none of the packages built on it."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "tierops"
UPPER = ("rollout", "validators", "generators", "ci")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_core_imports_no_package_built_on_it() -> None:
    offenders = {path.name: sorted(_imported(path) & set(UPPER)) for path in sorted(CORE.rglob("*.py"))}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_roles_live_in_the_core() -> None:
    # Both the rollout plan and the wiring rule read roles; the rule may not import rollout.
    assert (CORE / "roles.py").is_file()
    assert not (CORE.parent / "rollout" / "roles.py").exists()
