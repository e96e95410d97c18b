"""The registry: unique ids, every rule module registered, every family documented."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

from tests.validators.conftest import ROOT
from validators import loader
from validators.registry import ALL_IDS, LOADER_ID, RULES, Rule

PACKAGE = ROOT / "validators" / "rules"
DOCS = ROOT / "docs" / "validators.md"


def _declared_id(name: str) -> str | None:
    """The `ID` of a module of validators/, or None."""
    declared = vars(importlib.import_module(name)).get("ID")
    return declared if isinstance(declared, str) else None


def _modules_declaring_an_id() -> dict[str, str]:
    """Rule modules by name: `validators/rules/<name>.py`, or a package `validators/rules/<name>/`
    whose `__init__.py` declares the id (its parts declare none)."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules([str(PACKAGE)]):
        declared = _declared_id(f"validators.rules.{info.name}")
        if declared is not None:
            found[info.name] = declared
    return found


def _parts() -> list[str]:
    """The modules inside rule packages (a package's parts)."""
    return [
        f"validators.rules.{package.name}.{part.name}"
        for package in pkgutil.iter_modules([str(PACKAGE)])
        if package.ispkg
        for part in pkgutil.iter_modules([str(PACKAGE / package.name)])
    ]


def test_the_parts_of_a_rule_package_report_under_the_packages_id() -> None:
    parts = _parts()
    assert any(".wiring." in part for part in parts)  # the package layout is seen
    for part in parts:
        package = part.rsplit(".", 1)[0]
        own = vars(importlib.import_module(part)).get("ID")
        assert own in (None, _declared_id(package)), part


def _module(rule: Rule) -> ModuleType:
    """A registered rule is a module of validators/rules/ (the registry lists modules)."""
    assert isinstance(rule, ModuleType), rule
    return rule


def test_rule_ids_are_unique() -> None:
    assert len(ALL_IDS) == len(set(ALL_IDS))


def test_every_module_with_an_id_is_registered_under_it() -> None:
    declared = _modules_declaring_an_id()
    assert _declared_id("validators.loader") == LOADER_ID
    assert {_module(rule).__name__.rsplit(".", 1)[-1]: rule_id for rule_id, rule in RULES.items()} == declared


def test_module_names_are_the_ids_users_type() -> None:
    for rule_id, rule in RULES.items():
        assert _module(rule).__name__ == "validators.rules." + rule_id.replace("-", "_")


def test_every_family_has_a_docstring_with_a_passing_and_a_failing_example() -> None:
    for module in [loader, *map(_module, RULES.values())]:
        doc = module.__doc__ or ""
        assert doc.startswith(f"Rule `{module.ID}`"), module.__name__
        assert "Passing example" in doc and "Failing example" in doc, module.__name__


def test_every_family_is_documented_in_docs_validators_md() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for rule_id in ALL_IDS:
        assert f"## `{rule_id}`" in text, rule_id


def test_summaries_are_one_line() -> None:
    for module in RULES.values():
        assert "\n" not in module.SUMMARY and len(module.SUMMARY) < 130


def test_docs_do_not_name_a_rule_that_does_not_exist() -> None:
    text = DOCS.read_text(encoding="utf-8")
    headings = [line[4:].split("`")[0] for line in text.splitlines() if line.startswith("## `")]
    assert headings == list(ALL_IDS)
    assert Path(DOCS).is_file()
