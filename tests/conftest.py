"""Fixtures shared by every test package: the repository's own files, copied when mutated."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROD = ROOT / "prod"
SOURCE = ROOT / "generators" / "glm53.source.yaml"
TARGETS = ROOT / "generators" / "glm53.targets.yaml"
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
