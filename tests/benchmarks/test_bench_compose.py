"""`python -m benchmarks.bench_compose` prints one row per size (the numbers themselves are not tested)."""

from __future__ import annotations

import re

import pytest

from benchmarks.bench_compose import main


def test_benchmark_prints_a_row_per_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sizes", "1", "2", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("compose: ")
    assert lines[1].split() == ["files", "scan", "s", "render", "s", "total", "s", "ms/file"]
    assert [line.split()[0] for line in lines[2:]] == ["1", "2"]
    assert all(re.fullmatch(r"\s*\d+(\s+\d+\.\d+){4}", line) for line in lines[2:])
