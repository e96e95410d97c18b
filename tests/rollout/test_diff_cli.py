"""`python -m rollout diff`: refs, formats, exit codes and the step summary, pinned in-process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rollout.diff.report import render_markdown
from rollout.markdown import DIFF_BUDGET, PLAN_BUDGET, STEP_SUMMARY_LIMIT
from tests.rollout.diffkit import (
    LONG,
    R1,
    R2,
    ROOT,
    changeset,
    commit,
    git,
    new_repo,
    prod_text,
    run_cli,
    write,
)

ONE = "services:\n  app:\n    image: app:1\n"
TWO = "services:\n  app:\n    image: app:2\n"
DYNTOK = "      - --enable-dynamic-batch-tokenizer\n"


def dyntok_repo(tmp_path: Path) -> Path:
    """main without the ingestion flag; the working tree with it (our real file)."""
    head = prod_text()
    base = head.replace(DYNTOK, "").replace("-ep4-dyntok", "-ep4")
    repo = new_repo(tmp_path, {LONG: base})
    write(repo, {LONG: head})
    return repo


def test_the_dyntok_change_reads_as_a_reviewer_would_write_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = dyntok_repo(tmp_path)
    code, out, err = run_cli(monkeypatch, capsys, repo, ["diff"])
    v1 = "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4"
    v2 = "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2-h200-tp4-ep4"
    base = git(repo, "rev-parse", "--short=7", "HEAD")
    assert (code, err) == (0, "")
    assert out == (
        f"diff of prod: base the merge-base of HEAD and origin/main ({base}) -> head the working tree: "
        "1 file(s) changed, 0 unreadable\n"
        f"{LONG}: 2 service(s) changed; 1 config(s) changed\n"
        f"  {R1}, {R2}: + --enable-dynamic-batch-tokenizer\n"
        f"  {R1}: label tierops.otel.config_variant: {v1} -> {v1}-dyntok\n"
        f"  {R2}: label tierops.otel.config_variant: {v2} -> {v2}-dyntok\n"
        "  config otelcol_app_config (used by otelcol-contrib):\n"
        f"    scrape job {R1}: label config_variant: {v1} -> {v1}-dyntok\n"
        f"    scrape job {R2}: label config_variant: {v2} -> {v2}-dyntok\n"
    )


def test_exit_code_is_0_without_changes_1_with_and_2_on_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/a.yaml": ONE})
    assert run_cli(monkeypatch, capsys, repo, ["diff", "--exit-code"]) == (
        0,
        "no changes in prod between the merge-base of HEAD and origin/main (de48f44) and the working tree\n",
        "",
    )
    write(repo, {"prod/a.yaml": TWO})
    assert run_cli(monkeypatch, capsys, repo, ["diff", "--exit-code"])[0] == 1
    assert run_cli(monkeypatch, capsys, repo, ["diff"])[0] == 0
    write(repo, {"prod/a.yaml": "services: ["})
    assert run_cli(monkeypatch, capsys, repo, ["diff", "--exit-code"])[0] == 2
    assert run_cli(monkeypatch, capsys, repo, ["diff"])[0] == 2


def test_the_base_comes_from_the_environment_when_no_flag_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/a.yaml": ONE})
    commit(repo, {"prod/a.yaml": TWO}, "two")
    git(repo, "tag", "v0.0.1", "HEAD~1")
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["diff"], base_env="v0.0.1")
    assert code == 0
    assert out.splitlines()[0].startswith("diff of prod: base v0.0.1 (de48f44) -> head the working tree")
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["diff", "--base", "HEAD"], base_env="v0.0.1")
    assert out.startswith("no changes in prod between HEAD (")


def test_default_base_is_the_merge_base_with_origin_main_else_main_else_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/a.yaml": ONE})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"prod/a.yaml": TWO}, "feature work")
    out = run_cli(monkeypatch, capsys, repo, ["diff"])[1]
    assert out.splitlines()[1:] == ["prod/a.yaml: 1 service(s) changed", "  app: image: app:1 -> app:2"]
    git(repo, "remote", "remove", "origin")
    out = run_cli(monkeypatch, capsys, repo, ["diff"])[1]
    assert out.startswith("diff of prod: base the merge-base of HEAD and main (de48f44)")
    git(repo, "branch", "-q", "-m", "main", "trunk")
    out = run_cli(monkeypatch, capsys, repo, ["diff"])[1]
    assert out.startswith("no changes in prod between HEAD (")


def test_json_is_the_change_model_and_markdown_has_a_table_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = dyntok_repo(tmp_path)
    model = json.loads(run_cli(monkeypatch, capsys, repo, ["diff", "--format", "json"])[1])
    assert model["format"] == "tierops.rollout.diff/1"
    assert model["masked"] is True
    (file,) = model["files"]
    assert [service["name"] for service in file["services"]] == [R1, R2]
    added = file["services"][0]["changes"][0]
    # Where the flag is written in the head file (the list item's line, column 9).
    at = added.pop("at")
    assert at[0] is None and at[1].endswith(":9")
    assert added.pop("written") == [None, "--enable-dynamic-batch-tokenizer"]  # the flag word as written
    assert added == {
        "aspect": "argv",
        "op": "added",
        "path": ["services", R1, "command", "args", 25],
        "subject": "--enable-dynamic-batch-tokenizer",
        "new": {"flag": "--enable-dynamic-batch-tokenizer", "value": None},
    }
    markdown = run_cli(monkeypatch, capsys, repo, ["diff", "--format", "markdown"])[1]
    assert f"#### `{LONG}`" in markdown
    assert "| service | role | change |\n|---|---|---|" in markdown
    assert "| config otelcol\\_app\\_config (used by otelcol-contrib) | change |" in markdown


def test_markdown_stays_under_the_limit_with_a_note_when_cut() -> None:
    old = {f"prod/f{n:03d}.yaml": ONE for n in range(200)}
    new = {f"prod/f{n:03d}.yaml": TWO for n in range(200)}
    result = changeset(old, new)
    full = render_markdown(result)
    assert "Truncated" not in full
    cut = render_markdown(result, limit=4000)
    assert len(cut.encode()) <= 4000
    assert cut.rstrip().endswith(
        "(its 3 KiB share of GitHub's 1024 KiB step summary). The full report: `python -m rollout diff --format text`."
    )
    assert len(full.encode()) < DIFF_BUDGET


def test_the_diff_and_the_plan_together_fit_one_step_summary() -> None:
    assert DIFF_BUDGET + PLAN_BUDGET < 1_000_000 < STEP_SUMMARY_LIMIT


def test_help_shows_the_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(monkeypatch, capsys, tmp_path, ["diff", "--help"])
    assert code == 0
    assert "TIEROPS_BASE_REF" in out
    assert "exit codes:\n  0  clean\n  1  changes found (only with --exit-code)\n  2  usage error" in out


def test_every_command_is_registered_under_its_name_and_listed_in_the_top_level_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rollout.cli import COMMANDS, command

    code, out, _ = run_cli(monkeypatch, capsys, tmp_path, ["--help"])
    assert code == 0
    for name in COMMANDS:
        module = command(name)
        assert name == module.NAME
        first_words = " ".join(module.HELP.split()[:3])
        assert re.search(rf"^    {name} +{re.escape(first_words)}", out, re.MULTILINE), name


def test_python_dash_m_rollout_diff_runs_as_a_program(tmp_path: Path) -> None:
    repo = dyntok_repo(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TIEROPS_BASE_REF", None)
    proc = subprocess.run(
        [sys.executable, "-m", "rollout", "diff", "--exit-code"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (1, "")
    assert f"  {R1}, {R2}: + --enable-dynamic-batch-tokenizer" in proc.stdout.splitlines()


def test_the_default_paths_are_the_repository_s_prod_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/a.yaml": ONE, "docs/readme.md": "x"})
    write(repo, {"prod/a.yaml": TWO})
    code, out, _ = run_cli(monkeypatch, capsys, repo / "docs", ["diff", "--exit-code"])
    assert code == 1
    assert out.splitlines()[1:] == ["prod/a.yaml: 1 service(s) changed", "  app: image: app:1 -> app:2"]
    code, out, _ = run_cli(monkeypatch, capsys, repo / "prod", ["diff", "--exit-code", "a.yaml"])
    assert code == 1
    assert out.startswith("diff of prod/a.yaml: ")
