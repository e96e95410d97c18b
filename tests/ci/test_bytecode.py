"""ci/bytecode.py: checked-hash pycs that Python reads under PYTHONDONTWRITEBYTECODE=1, never stale."""

from __future__ import annotations

import ast
import importlib.util
import marshal
import os
import subprocess
import sys
from pathlib import Path

from ci.bytecode import PACKAGES, compile_tree, is_current

ROOT = Path(__file__).resolve().parents[2]


def _package(tmp_path: Path, body: str) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    module = package / "mod.py"
    module.write_text(body, encoding="utf-8")
    return module


def _run(tmp_path: Path, code: str) -> str:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def test_compiles_once_then_only_checks(tmp_path: Path) -> None:
    module = _package(tmp_path, "VALUE = 1\n")
    first = compile_tree([tmp_path / "pkg"])
    assert (first.checked, first.written, first.failed) == (2, 2, ())
    pyc = Path(importlib.util.cache_from_source(str(module)))
    assert is_current(module.read_bytes(), pyc)
    assert compile_tree([tmp_path / "pkg"]).written == 0


def test_python_reads_the_pyc_even_with_pythondontwritebytecode(tmp_path: Path) -> None:
    module = _package(tmp_path, "VALUE = 1\n")
    compile_tree([tmp_path / "pkg"])
    # Proof that the importer reads the pyc: keep its header (the source's hash) and
    # swap in a marker code object.
    pyc = Path(importlib.util.cache_from_source(str(module)))
    header = pyc.read_bytes()[:16]
    pyc.write_bytes(header + marshal.dumps(compile("VALUE = 'from the pyc'\n", str(module), "exec")))
    assert _run(tmp_path, "import pkg.mod as m; print(m.VALUE)") == "from the pyc"


def test_an_edit_with_the_same_size_and_mtime_is_never_run_from_a_stale_pyc(tmp_path: Path) -> None:
    """A timestamp pyc would be trusted here (same mtime, same size); a checked-hash one is not."""
    module = _package(tmp_path, "VALUE = 1\n")
    compile_tree([tmp_path / "pkg"])
    stat = module.stat()
    module.write_text("VALUE = 2\n", encoding="utf-8")  # same length
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    pyc = Path(importlib.util.cache_from_source(str(module)))
    assert not is_current(module.read_bytes(), pyc)
    assert _run(tmp_path, "import pkg.mod as m; print(m.VALUE)") == "2"
    assert compile_tree([tmp_path / "pkg"]).written == 1
    assert is_current(module.read_bytes(), pyc)


def test_a_source_that_does_not_compile_is_reported_not_raised(tmp_path: Path) -> None:
    module = _package(tmp_path, "def broken(:\n")
    result = compile_tree([tmp_path / "pkg"])
    assert result.failed == (str(module),)
    assert not Path(importlib.util.cache_from_source(str(module))).exists()


def test_the_project_packages_exist() -> None:
    assert all((ROOT / name / "__init__.py").is_file() for name in PACKAGES)


def test_the_test_session_lets_pytest_keep_its_rewritten_modules() -> None:
    """pytest writes its assertion-rewrite cache only when Python may write bytecode:
    the tests session removes PYTHONDONTWRITEBYTECODE for pytest alone (nox drops a
    variable whose value is None)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    session = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "tests")
    runs = [
        node
        for node in ast.walk(session)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "session.run"
    ]
    assert len(runs) == 1
    assert ast.unparse(runs[0]).startswith("session.run('python', '-m', 'pytest', *args")
    env = next(keyword.value for keyword in runs[0].keywords if keyword.arg == "env")
    assert ast.unparse(env) == "env"
    # the session's `env` is exactly this, never changed afterwards
    start = next(
        node.value
        for node in ast.walk(session)
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "env" and node.value is not None
    )
    assert ast.literal_eval(start) == {"PYTHONDONTWRITEBYTECODE": None}
    assignments = [
        ast.unparse(node)
        for node in ast.walk(session)
        if isinstance(node, ast.Assign) and any("env" in ast.unparse(target) for target in node.targets)
    ]
    assert assignments == []
