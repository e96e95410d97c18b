"""A top-level `configs:` or `secrets:` of the wrong type is a finding, never a crash
(found by the structured-mutation property: `configs: 0` made `in` fail on an int)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.validators import structured
from tests.validators.conftest import run_cli
from tests.validators.test_hardening import FILES


@pytest.mark.parametrize("wrong", range(len(structured.WRONG_TYPES)))
def test_a_retyped_top_level_section_is_no_internal_error(tmp_path: Path, wrong: int) -> None:
    name = "GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"
    text = structured.mutate(FILES[name], "retype", 423, wrong)
    assert text is not None
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = run_cli("--format", "text", path)
    assert "internal error" not in result.err
    assert result.code in (0, 1, 2), result.err
