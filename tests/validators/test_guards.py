"""Every check is guarded: silence any registered check and a test fails.

validators/registry.py names each check (`family/check` -> a function of the family's
module). For each one, tests/validators/guard_cases.py holds a single fault whose exact
finding (rule id, line:col, the message with its subject) that check reports. Here:

- every registered check has a guard case, and every function of a family module that
  yields findings is a registered check or a declared helper (so a new check cannot
  slip in unguarded);
- each guard's finding is reported, at its line:col, with its message;
- with the check silenced (its function replaced by one that yields nothing, as if its
  body were deleted) the finding is gone: the meta-test that makes "delete a check,
  suite stays green" impossible.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Generator
from types import ModuleType
from typing import Any

import pytest

from tests.validators.conftest import run_cli
from tests.validators.guard_cases import GUARDS, Guard
from validators.context import Context, load_context
from validators.findings import Finding
from validators.registry import CHECKS, HELPERS, RULES
from validators.runner import check_bytes

# The families whose checks are registered one by one. (A new family joins by listing
# its checks in CHECKS and adding guard cases.)
GUARDED_FAMILIES = sorted({family for family, _attr in CHECKS.values()})


@pytest.fixture(scope="module")
def ctx() -> Context:
    return load_context()


def _silent(*_args: Any, **_kwargs: Any) -> Generator[Finding, None, list[Any]]:
    """A check with its body deleted: yields nothing (returns [] for checks read by value)."""
    yield from ()
    return []  # `fields = yield from _csv(...)` reads this


def _findings(guard: Guard, ctx: Context) -> set[tuple[str, int, int, str, str]]:
    found = check_bytes(guard.text().encode("utf-8"), f"prod/{guard.file}", ctx)
    return {(f.path, f.line, f.col, f.rule, f.message) for f in found}


def _expected(guard: Guard) -> tuple[str, int, int, str, str]:
    # The path too: a mutant passing None for it survived the first mutmut run.
    return (f"prod/{guard.file}", guard.line, guard.col, guard.rule, guard.message)


def test_every_registered_check_has_a_guard_case() -> None:
    assert sorted({guard.check for guard in GUARDS}) == sorted(CHECKS)


def test_the_guarded_families_are_the_ones_this_suite_knows() -> None:
    assert set(GUARDED_FAMILIES) >= {
        "prod-config",
        "engine-flags",
        "otel-labels",
        "dcgm-metrics",
        "compose-hygiene",
        "collector-config",
        "style",
    }


@pytest.mark.parametrize("family", GUARDED_FAMILIES)
def test_every_function_yielding_findings_is_a_registered_check_or_a_helper(family: str) -> None:
    module = RULES[family]
    assert isinstance(module, ModuleType)
    # A rule is a module, or a package whose parts hold its checks: the functions each
    # defines (not imports) whose annotation says they yield findings.
    names = [module.__name__]
    if hasattr(module, "__path__"):
        names += [f"{module.__name__}.{part.name}" for part in pkgutil.iter_modules(module.__path__)]
    yielding = {
        name
        for part in map(importlib.import_module, names)
        for name, value in vars(part).items()
        if inspect.isfunction(value)
        and value.__module__ == part.__name__
        and re.search(r"(Iterator|Generator)\[Finding", str(inspect.signature(value).return_annotation))
    }
    registered = {attr for fam, attr in CHECKS.values() if fam == family}
    assert yielding - {"check"} - HELPERS.get(family, frozenset()) == registered
    for attr in registered:
        assert callable(getattr(module, attr)), attr


@pytest.mark.parametrize("guard", GUARDS, ids=lambda guard: guard.check)
def test_guard_fault_gets_its_finding_at_line_and_column(guard: Guard, ctx: Context) -> None:
    found = _findings(guard, ctx)
    assert _expected(guard) in found, sorted(found)


@pytest.mark.parametrize("guard", GUARDS, ids=lambda guard: guard.check)
def test_silencing_the_check_loses_its_finding(
    guard: Guard, ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    family, attr = CHECKS[guard.check]
    module = RULES[family]
    assert isinstance(module, ModuleType)
    # In a rule package, silence the check in every part that calls it by name.
    for name, part in list(sys.modules.items()):
        if (name == module.__name__ or name.startswith(module.__name__ + ".")) and hasattr(part, attr):
            monkeypatch.setattr(part, attr, _silent)
    assert _expected(guard) not in _findings(guard, ctx)


def test_list_checks_prints_every_registered_check() -> None:
    result = run_cli("--list-checks")
    assert (result.code, result.out.splitlines()) == (0, list(CHECKS))
