"""`python -m ci.github_report`: the summary says what exists, what failed, and nothing more."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from ci.github_report import SUMMARY_LIMIT, append_summary, fit, markdown_section
from rollout.cli import COMMANDS


def _script(tmp_path: Path, body: str) -> tuple[str, ...]:
    script = tmp_path / "fake_rollout.py"
    script.write_text(body, encoding="utf-8")
    return (sys.executable, str(script))


def test_an_absent_command_is_said_to_be_absent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(COMMANDS, "diff", raising=False)
    text, code = markdown_section("diff", "Semantic diff of prod/")
    assert code == 0
    assert text == "## Semantic diff of prod/\n\n_`rollout diff` is not on this revision; nothing to show._\n"
    assert (
        capsys.readouterr().out
        == "::notice title=rollout diff::`python -m rollout diff` is not on this revision\n"
    )


def test_a_registered_command_s_markdown_is_passed_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(COMMANDS, "plan", types.ModuleType("plan"))
    rollout = _script(
        tmp_path, "import sys\nprint('## Rollout plan'); print('args:', ' '.join(sys.argv[1:]))\n"
    )
    text, code = markdown_section("plan", "Rollout plan", rollout=rollout)
    assert (text, code) == ("## Rollout plan\nargs: plan --format markdown\n", 0)


def test_a_failing_command_fails_the_step_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(COMMANDS, "diff", types.ModuleType("diff"))
    rollout = _script(tmp_path, "import sys\nprint('partial')\nsys.exit(3)\n")
    text, code = markdown_section("diff", "Semantic diff of prod/", rollout=rollout)
    assert code == 3
    assert "_`rollout diff` failed with exit code 3; see the job log._" in text
    assert text.endswith("partial\n")


def test_oversized_markdown_is_truncated_under_githubs_limit() -> None:
    small = "## ok\n"
    assert fit(small) == small
    big = fit("x" * (SUMMARY_LIMIT + 10))
    assert len(big.encode("utf-8")) <= SUMMARY_LIMIT
    assert big.endswith("Run `nox -s diff` and `nox -s plan` locally._\n")


def test_summary_is_appended_not_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n", encoding="utf-8")
    append_summary(target, "## diff\n")
    assert target.read_text(encoding="utf-8") == "earlier step\n## diff\n"
