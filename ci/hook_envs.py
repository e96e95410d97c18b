"""`python -m ci.hook_envs` (run by `nox -s lint`): build pre-commit's hook environments, compiled.

pre-commit builds the environment of our Python hooks with virtualenv and pip from the
pins in `.pre-commit-config.yaml`. Under `PYTHONDONTWRITEBYTECODE=1` pip writes no
`.pyc`, and neither does any hook run after it: every run of check-jsonschema or
pre-commit-hooks then compiled its whole import tree again (about half a second per
schema hook here). This does what `pre-commit install-hooks` does, then compiles each
Python hook environment's site-packages once, so later runs only read bytecode.

It uses pre-commit's own functions (pre-commit is pinned in the `lint` group), so the
environments are exactly the ones `pre-commit run` uses. The noxfile runs it when the
hook configuration or the `lint` lock changed (a stamp in the session's venv).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tierops.exitcodes import ExitCode

CONFIG = Path(".pre-commit-config.yaml")


def python_envs(config: Path = CONFIG) -> list[Path]:
    """Install the hook environments of `config` and return the Python ones' directories."""
    from pre_commit.clientlib import load_config
    from pre_commit.lang_base import environment_dir
    from pre_commit.languages import python
    from pre_commit.repository import all_hooks, install_hook_envs
    from pre_commit.store import Store

    store = Store()
    hooks = all_hooks(load_config(str(config)), store)
    install_hook_envs(hooks, store)
    envs: dict[str, Path] = {}
    for hook in hooks:
        if hook.language == "python":
            path = environment_dir(hook.prefix, python.ENVIRONMENT_DIR, hook.language_version)
            envs[path] = Path(path)
    return list(envs.values())


def env_python(env: Path) -> Path:
    for candidate in (env / "bin" / "python", env / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{env}: no interpreter")


def compile_env(env: Path) -> bool:
    """Compile the environment's site-packages with its own interpreter (its own pyc tag)."""
    python = env_python(env)
    code = "import compileall, site, sys; sys.exit(0 if all(compileall.compile_dir(p, quiet=1, workers=0) for p in site.getsitepackages()) else 1)"
    return subprocess.run([str(python), "-c", code], check=False).returncode == 0


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv):
        print(__doc__)
        return ExitCode.USAGE
    envs = python_envs()
    ok = True
    for env in envs:
        compiled = compile_env(env)
        ok &= compiled
        print(f"hook environment ready{', bytecode compiled' if compiled else ''}: {env}")
    return ExitCode.OK if ok else ExitCode.FINDINGS


if __name__ == "__main__":
    raise SystemExit(main())
