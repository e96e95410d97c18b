"""Shared helpers: the committed prod files, single-edit mutations, the CLI in-process."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
