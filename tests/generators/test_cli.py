"""`python -m generators`: the byte-identical check, writing, listing and usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generators.cli import main
from tests.conftest import LONG_CONTEXT, PROD, ROOT, SOURCE, TARGETS

FILES = sorted(path.name for path in PROD.glob("*.yaml"))


def test_committed_files_are_byte_identical_to_the_generators_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--check"]) == 0
    out = capsys.readouterr().out
    for name in FILES:
        assert f"ok       prod/{name}" in out
    assert out.rstrip().endswith("3 file(s) byte-identical to the generators' output")


def test_stdout_prints_exactly_the_committed_bytes(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    for path in sorted(PROD.glob("*.yaml")):
        assert main(["--stdout", path.stem]) == 0
        assert capsysbinary.readouterr().out == path.read_bytes()


def test_a_one_byte_edit_is_stale_with_a_diff_and_the_fix_command(
    prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = prod_copy / LONG_CONTEXT.name
    data = edited.read_bytes()
    # "--prefill-decode-interval" value of r2: 2 -> 3, one byte.
    index = data.index(b'- "2"\n      - --cuda-graph-max-bs-decode')
    edited.write_bytes(data[: index + 3] + b"3" + data[index + 4 :])
    assert main(["--check", "--prod-dir", str(prod_copy)]) == 1
    out = capsys.readouterr().out
    assert (
        f"stale    {_shown(prod_copy)}/{LONG_CONTEXT.name}: differs from what the generators produce" in out
    )
    assert f"--- {_shown(prod_copy)}/{LONG_CONTEXT.name} (committed)" in out
    assert '-      - "3"' in out and '+      - "2"' in out
    # The fix says that regenerating discards the hand edit, not only which command to run.
    assert (
        "a hand edit belongs in generators/" in out
        and "`nox -s generate` rewrites prod/ and discards it" in out
    )
    # Only the edited file is stale.
    assert out.count("stale ") == 1


def test_a_deleted_file_is_missing(prod_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (prod_copy / FILES[0]).unlink()
    assert main(["--check", "--prod-dir", str(prod_copy)]) == 1
    out = capsys.readouterr().out
    assert f"missing  {_shown(prod_copy)}/{FILES[0]}" in out


def test_a_file_no_target_claims_is_orphaned(prod_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (prod_copy / "GLM-5.3-Flash-Old.yaml").write_text("services: {}\n")
    assert main(["--check", "--prod-dir", str(prod_copy)]) == 1
    out = capsys.readouterr().out
    assert f"orphaned {_shown(prod_copy)}/GLM-5.3-Flash-Old.yaml: no target claims it" in out
    # An orphan is not fixed by regenerating: the fix hint is not printed.
    assert "nox -s generate" not in out.splitlines()[-1]


def test_check_as_json_gives_each_files_status_and_a_stale_files_diff(
    prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (prod_copy / FILES[0]).write_text("services: {}\n")
    (prod_copy / FILES[1]).unlink()
    (prod_copy / "Old.yaml").write_text("services: {}\n")
    assert main(["--check", "--format", "json", "--prod-dir", str(prod_copy)]) == 1
    report = json.loads(capsys.readouterr().out)
    status = {Path(row["path"]).name: row["status"] for row in report["files"]}
    assert report["format"] == 1
    assert status[FILES[0]] == "stale" and status[FILES[1]] == "missing" and status["Old.yaml"] == "orphaned"
    assert set(status.values()) == {"clean", "stale", "missing", "orphaned"}
    stale = next(row for row in report["files"] if row["status"] == "stale")
    assert stale["diff"].startswith(f"--- {_shown(prod_copy)}/{FILES[0]} (committed)")


def test_write_creates_missing_files_and_leaves_unchanged_ones_alone(
    prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (prod_copy / FILES[0]).unlink()
    before = {name: (prod_copy / name).stat().st_mtime_ns for name in FILES[1:]}
    assert main(["--write", "--prod-dir", str(prod_copy)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {_shown(prod_copy)}/{FILES[0]}" in out
    assert (prod_copy / FILES[0]).read_bytes() == (PROD / FILES[0]).read_bytes()
    for name, mtime in before.items():
        assert (prod_copy / name).stat().st_mtime_ns == mtime
    assert main(["--check", "--prod-dir", str(prod_copy)]) == 0


def test_write_of_one_target_writes_only_that_file(prod_copy: Path) -> None:
    for name in FILES:
        (prod_copy / name).unlink()
    assert main(["--write", "--prod-dir", str(prod_copy), f"prod/{LONG_CONTEXT.name}"]) == 0
    assert sorted(p.name for p in prod_copy.iterdir()) == [LONG_CONTEXT.name]


def test_list_names_every_target_with_its_replicas_features(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    assert (
        "GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext  prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml" in out
    )
    assert "    r1: chunk 8192, qsplit, hicache, pdi 1, dyntok" in out
    assert "    r2: chunk 4096, hicache, pdi 1" in out


def test_an_unknown_target_is_a_usage_error_naming_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--stdout", "GLM-9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("unknown target 'GLM-9'; targets: GLM-5.3-Flash-SGL-TP4-W4AFP8, ")
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [[], ["--check", "--write"], ["--frobnicate"]])
def test_bad_usage_exits_2_with_a_usage_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage: python -m generators" in capsys.readouterr().err


def test_help_shows_the_exit_code_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for line in ("0  clean", "1  stale, missing or orphaned files", "2  usage error", "3  internal error"):
        assert line in out


def test_a_missing_source_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", "--source", str(tmp_path / "nope.yaml"), "--targets-file", str(TARGETS)]) == 2
    err = capsys.readouterr().err
    assert err == f"{tmp_path / 'nope.yaml'}: file not found; check the path\n"


def _bomb(depth: int = 8) -> str:
    text = "bomb:\n  a0: &a0 [" + ", ".join(["lol"] * 9) + "]\n"
    for level in range(1, depth):
        text += f"  a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]\n"
    return text


@pytest.mark.parametrize(
    ("hostile", "said"),
    [
        (os.mkfifo, "not a regular file"),
        (lambda path: path.write_text(f"x: {'9' * 5000}\n" + path.read_text()), "invalid YAML"),
        (lambda path: path.write_text(f"x: {'[' * 20000}{']' * 20000}\n"), "nesting deeper than 64"),
        (lambda path: path.write_text(_bomb() + path.read_text()), "alias expansion exceeds"),
    ],
    ids=["fifo", "a 5,000-digit int", "20,000 levels", "alias bomb"],
)
def test_hostile_stack_data_is_one_line_and_exit_2_fast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hostile: Any, said: str
) -> None:
    source = tmp_path / "s.source.yaml"
    if said != "not a regular file":
        source.write_text(SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
    hostile(source)
    assert main(["--check", "--source", str(source), "--targets-file", str(TARGETS)]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_an_internal_error_is_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import generators.cli

    def explode(*_: object) -> dict[str, bytes]:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(generators.cli, "render_all", explode)
    monkeypatch.delenv("TIEROPS_DEBUG", raising=False)
    assert main(["--check"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: ZeroDivisionError: boom")
    assert "Traceback" not in err


def test_the_entry_point_runs_as_a_module_with_any_hash_seed() -> None:
    """The one subprocess smoke test: `python -m generators`, under two hash seeds."""
    outputs = []
    for seed in ("0", "12345"):
        proc = subprocess.run(
            [sys.executable, "-m", "generators", "--stdout", LONG_CONTEXT.stem],
            cwd=ROOT,
            capture_output=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1] == LONG_CONTEXT.read_bytes()


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
