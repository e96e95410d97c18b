"""A release tag records the check-matrix digest of the check that ran at its commit,
and `release history` shows it; records without it (older tags) stay readable."""

from __future__ import annotations

import json
import os
import shlex
import sys
from datetime import datetime
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.release import record as release
from tests.rollout.history_text import shown
from tests.rollout.release_world import LONG, R2, T0, World, days, git, set_flag
from tierops.checkmatrix import digest

# A check that passes and writes a (minimal) record where `nox -s check` writes its own.
RECORD = {"format": 1, "verdict": "pass", "stages": [{"name": "validate", "duration_s": 0.31}]}
WRITES_RECORD = shlex.join(
    [
        sys.executable,
        "-c",
        "import pathlib; build = pathlib.Path('build'); build.mkdir(exist_ok=True); "
        f"(build / 'check-matrix.json').write_text({json.dumps(RECORD)!r})",
    ]
)
WRITES_NOTHING = shlex.join([sys.executable, "-c", "pass"])


def message(world: World, name: str) -> str:
    return git(world.a, "cat-file", "-p", name).split("\n\n", 1)[1]


def test_the_tag_records_the_digest_of_the_record_the_check_wrote(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", WRITES_RECORD)
    head = git(world.a, "rev-parse", "HEAD")
    assert main(["release", "tag", "--repo", str(world.a), "--push"]) == 0

    expected = digest(RECORD)
    assert f"check-matrix: {expected}\n" in message(world, "v0.0.1")
    record = release.parse_message(message(world, "v0.0.1"))
    assert record is not None and record.check_matrix == expected and record.commit == head
    assert f"check matrix {expected[:19]}" in capsys.readouterr().out
    # the durations are not part of the evidence: a slower run gives the same digest
    slower = json.loads(json.dumps(RECORD))
    slower["stages"][0]["duration_s"] = 9.0
    assert digest(slower) == expected


def test_a_check_that_wrote_no_record_records_no_digest(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", WRITES_NOTHING)
    assert main(["release", "tag", "--repo", str(world.a), "--push"]) == 0
    assert "check-matrix:" not in message(world, "v0.0.1")
    record = release.parse_message(message(world, "v0.0.1"))
    assert record is not None and record.check_matrix is None


def test_no_verify_records_no_digest(world: World) -> None:
    assert main(["release", "tag", "--repo", str(world.a), "--push", "--no-verify"]) == 0
    assert "check-matrix:" not in message(world, "v0.0.1")


def test_history_shows_the_evidence_of_each_tag_and_a_dash_for_none(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["release", "tag", "--repo", str(world.a), "--push", "--no-verify"]) == 0
    world.commit(world.a, "r2: 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", WRITES_RECORD)
    assert main(["release", "tag", "--repo", str(world.a), "--push"]) == 0
    monkeypatch.setattr(release, "utcnow", lambda: datetime(2026, 10, 30, tzinfo=T0.tzinfo))
    capsys.readouterr()

    assert main(["release", "history", LONG, R2, "--repo", str(world.a)]) == 0

    newer, older = shown(capsys.readouterr().out)
    short = digest(RECORD).removeprefix("sha256:")[:12]
    assert (newer.tag, newer.check_matrix) == ("v0.0.2", short)
    assert (older.tag, older.check_matrix) == ("v0.0.1", "-")


def test_an_old_record_without_the_line_still_reads() -> None:
    old = (
        f"release v0.0.3 of {'a' * 12}\n\ntierops-release: 1\ncommit: {'a' * 40}\nverify: passed: nox -s check\n"
        f"service: prod/x.yaml s {'d' * 12}\n"
    )
    record = release.parse_message(old)
    assert record is not None and record.check_matrix is None and record.verified
    # A record of no services is never written by `release tag`: a hand-made one is no release.
    with pytest.raises(release.RecordError, match="no 'service:' line"):
        release.parse_message(old.replace(f"service: prod/x.yaml s {'d' * 12}\n", ""))


def test_the_line_survives_formatting_and_parsing_and_a_malformed_one_is_refused() -> None:
    record = release.Record(
        "b" * 40, release.VERIFY_PASSED, {"prod/x.yaml": {"s": "d" * 12}}, "sha256:" + "c" * 64
    )
    assert release.parse_message(release.format_message("v0.0.4", record)) == record
    broken = release.format_message("v0.0.4", record).replace("c" * 64, "not-a-digest")
    with pytest.raises(release.RecordError, match="malformed check-matrix line"):
        release.parse_message(broken)


def test_records_keeps_the_record_the_tag_names_for_the_workflow_to_attest(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", WRITES_RECORD)
    records = tmp_path / "records"
    assert main(["release", "tag", "--repo", str(world.a), "--push", "--records", str(records)]) == 0
    kept = records / "v0.0.1.check-matrix.json"
    # The bytes the check wrote, whose digest is the evidence the tag message records.
    assert json.loads(kept.read_bytes()) == RECORD
    record = release.parse_message(message(world, "v0.0.1"))
    assert record is not None and digest(json.loads(kept.read_bytes())) == record.check_matrix
    assert f"; record {kept}" in capsys.readouterr().out


@pytest.mark.parametrize("held", ["fifo", "file", "link", "record-fifo"])
def test_a_records_dir_that_cannot_take_the_record_stops_the_run_before_anything_is_tagged(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    held: str,
) -> None:
    """The tag is pushed before its record is written: a DIR that would refuse the record
    must refuse the run first, or the tag is out and its record lost."""
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", WRITES_RECORD)
    records = tmp_path / "records"
    if held == "fifo":
        os.mkfifo(records)
    elif held == "file":
        records.write_text("x\n", encoding="utf-8")
    elif held == "link":
        (tmp_path / "elsewhere").mkdir()
        records.symlink_to(tmp_path / "elsewhere")
    else:
        records.mkdir()
        os.mkfifo(records / "v0.0.1.check-matrix.json")
    capsys.readouterr()
    assert main(["release", "tag", "--repo", str(world.a), "--push", "--records", str(records)]) == 2
    err = capsys.readouterr().err
    assert "nothing was tagged" in err and err.count("\n") == 1 and "Traceback" not in err
    assert git(world.a, "tag", "-l", "v0.0.*") == ""
    assert git(world.a, "ls-remote", "--tags", "origin") == ""
