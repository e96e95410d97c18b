"""Shared helpers: the committed prod files, single-edit mutations, the CLI in-process."""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FLEET
from validators.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROD = FLEET / "prod"
BASE = "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"
CANARY = "GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"
LONG = "GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def findings(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = json.loads(self.out)
        return rows


def run_cli(*argv: str | Path) -> Result:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(arg) for arg in argv], stdout=out, stderr=err)
    return Result(code, out.getvalue(), err.getvalue())


def prod_text(name: str) -> str:
    return (PROD / name).read_text(encoding="utf-8")


def replace_nth(text: str, old: str, new: str, nth: int = 1) -> tuple[str, int]:
    """Replace the nth occurrence of `old`; return the text and the 1-based line where it was."""
    start = -1
    for _ in range(nth):
        start = text.find(old, start + 1)
        if start < 0:
            raise AssertionError(f"mutation anchor not found (occurrence {nth}): {old!r}")
    return text[:start] + new + text[start + len(old) :], text.count("\n", 0, start) + 1


def line_of(text: str, needle: str, nth: int = 1) -> int:
    start = -1
    for _ in range(nth):
        start = text.find(needle, start + 1)
        if start < 0:
            raise AssertionError(f"not found (occurrence {nth}): {needle!r}")
    return text.count("\n", 0, start) + 1


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
