"""A prod file that is a symbolic link out of the fleet is refused by every tool that
reads prod/, before anything of it is read, printed or rendered."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from generators.cli import main as generate
from tests.conftest import FLEET
from validators.cli import main as validate
from validators.compose import main as compose_check

SECRET = "SECRET-OUTSIDE-123"
# Each tool that reads prod/, as called with the build directory it may render into.
TOOLS: list[Callable[[Path], int]] = [
    lambda build: validate(["--format", "text"]),
    lambda build: compose_check(["--compose", "pinned", "--rendered-dir", str(build)]),
    lambda build: generate(["--check"]),
]
TOOL_NAMES = ["validators", "compose check", "generators --check"]


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture fleet, named by TIEROPS_FLEET and the working directory."""
    root = tmp_path / "fleet"
    shutil.copytree(FLEET, root)
    monkeypatch.setenv("TIEROPS_FLEET", str(root))
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize("tool", TOOLS, ids=TOOL_NAMES)
def test_a_prod_symlink_out_of_the_fleet_is_refused(
    tmp_path: Path, fleet: Path, capsys: pytest.CaptureFixture[str], tool: Callable[[Path], int]
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(f"services:\n  app:\n    image: busybox\n    environment:\n      TOKEN: {SECRET}\n")
    # Under a name a target renders too, so the generators' comparison would read it.
    target = fleet / "prod" / "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"
    target.unlink()
    target.symlink_to(outside)
    build = tmp_path / "rendered"
    assert tool(build) == 2
    out, err = capsys.readouterr()
    assert "a symbolic link that leads outside the fleet" in err
    assert SECRET not in out + err
    assert not build.exists()


@pytest.mark.parametrize("name", ["a b.yaml", "x\n  app: + image: evil.yaml", "esc\x1b[31mred.yaml"])
@pytest.mark.parametrize("tool", TOOLS, ids=TOOL_NAMES)
def test_a_prod_file_name_that_could_forge_a_line_is_refused_and_never_printed(
    tmp_path: Path, fleet: Path, capsys: pytest.CaptureFixture[str], tool: Callable[[Path], int], name: str
) -> None:
    shutil.copy(fleet / "prod" / "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml", fleet / "prod" / name)
    assert tool(tmp_path / "rendered") == 2
    out, err = capsys.readouterr()
    assert "a name holds only letters, digits" in err and len(err.splitlines()) == 1
    assert name.isprintable() or name not in out + err  # shown escaped, never raw
