"""ci/schemas.py: both vendored schema checks in one process, with check-jsonschema's own verdicts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci.schemas import assign, main
from tests.conftest import FLEET

ROOT = Path(__file__).resolve().parents[2]
PROD = sorted(f"prod/{path.name}" for path in (FLEET / "prod").glob("*.yaml"))
WORKFLOWS = sorted(str(path.relative_to(ROOT)) for path in (ROOT / ".github" / "workflows").glob("*.yml"))


def test_files_are_routed_to_the_schema_their_path_selects() -> None:
    groups, unclaimed = assign([*PROD, *WORKFLOWS, "README.md", "prod/sub/x.yaml"])
    assert groups == {"vendor.compose-spec": PROD, "vendor.github-workflows": WORKFLOWS}
    assert unclaimed == ["README.md", "prod/sub/x.yaml"]


def test_the_repository_s_files_pass(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(WORKFLOWS) == 0
    monkeypatch.chdir(FLEET)
    assert main(PROD) == 0
    out = capsys.readouterr().out
    assert out.count("ok -- validation done") == 2


def test_a_broken_workflow_fails_and_the_prod_files_are_still_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / "prod").mkdir()
    shutil.copy(FLEET / PROD[0], tmp_path / PROD[0])
    (tmp_path / ".github" / "workflows" / "x.yml").write_text("on: push\njobs: {a: {}}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main([PROD[0], ".github/workflows/x.yml"]) == 1
    out = capsys.readouterr().out
    assert "ok -- validation done" in out  # the compose-spec run
    assert "Schema validation errors were encountered." in out
    assert ".github/workflows/x.yml" in out


def test_a_file_no_schema_claims_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["README.md"]) == 2
    assert capsys.readouterr().err == "README.md: no schema for this path (ci/schemas.py SCHEMAS)\n"
