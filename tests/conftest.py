"""Fixtures shared by every test package: the tool's own fixture fleet, copied when mutated.

The tests never read the real fleet (prod/, generators/*.yaml, the contracts): they run on
a fleet of their own under tests/fixtures/fleet/, and TIEROPS_FLEET points every tool
there, in this process and in every process a test starts. A change to the real fleet so
needs no test edit; `nox -s check` is what judges it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLEET = ROOT / "tests" / "fixtures" / "fleet"
# Set before any test module imports the tools, which read it at import.
os.environ["TIEROPS_FLEET"] = str(FLEET)
PROD = FLEET / "prod"
SOURCE = FLEET / "generators" / "glm53.source.yaml"
TARGETS = FLEET / "generators" / "glm53.targets.yaml"
LONG_CONTEXT = PROD / "GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"


@pytest.fixture
def prod_copy(tmp_path: Path) -> Path:
    """A private copy of prod/ that a test may edit, delete from or add to."""
    target = tmp_path / "prod"
    shutil.copytree(PROD, target)
    return target


@pytest.fixture
def source_copy(tmp_path: Path) -> tuple[Path, Path]:
    """Private copies of the generator source and targets, for refusal tests."""
    source = tmp_path / "glm53.source.yaml"
    targets = tmp_path / "glm53.targets.yaml"
    shutil.copy(SOURCE, source)
    shutil.copy(TARGETS, targets)
    return source, targets


def replace_once(path: Path, old: str, new: str) -> None:
    """Edit a copied data file in place: `old` must be there, its first occurrence goes."""
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def write_prod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Write text as a prod file of a fleet: a copy of the fixture fleet's contracts and
    dummy env, its committed prod files and this one, that TIEROPS_FLEET names, so the
    file's name selects the stack contract that claims it, as for the fleet's own
    prod/<name>. Without the stacks' data, findings point at the file alone (no "written
    at" data line)."""
    fleet = tmp_path / "fleet"
    for part in ("validators", "ci"):
        shutil.copytree(FLEET / part, fleet / part)
    shutil.copytree(PROD, fleet / "prod")
    monkeypatch.setenv("TIEROPS_FLEET", str(fleet))

    def write(name: str, text: str) -> Path:
        path = fleet / "prod" / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
