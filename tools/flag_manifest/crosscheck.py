"""Cross-check the static manifest against sglang's own argparse parser.

The manifest is extracted statically (sglang.py reads the source with `ast`). This
module checks it against a second, independent path: probe.py, run in a child
process, builds the real parser from the same wheel by executing
`ServerArgs.add_cli_args` with every non-sglang import stubbed, and reports each
action. The two must agree on the flag set (every spelling), whether a flag takes a
value, nargs, the value type and the choices.

Where they may legitimately differ, the comparison says why instead of hiding it:
- a choice the manifest records as conditional (`choices_conditional`, e.g.
  `token_oracle`, added only when an environment variable is set) may be absent from
  the runtime parser, which saw the probe's environment; rerun with `--env` to see it;
- a type is compared by its name only (`json.loads` and `loads` are one type).

    python -m tools.flag_manifest crosscheck <wheel> [--manifest PATH] [--env K=V ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tierops.errors import InputError

PROBE = Path(__file__).resolve().parent / "probe.py"
PROBE_TIMEOUT_S = 300


class Difference(NamedTuple):
    flag: str
    aspect: str  # exists | spellings | nargs | type | choices
    static: str
    runtime: str

    def line(self) -> str:
        return f"{self.flag}: {self.aspect}: manifest {self.static}, runtime parser {self.runtime}"


@dataclass(frozen=True)
class Report:
    compared: int
    differences: list[Difference]
    stubbed: list[str]  # third-party modules the probe replaced
    failed: Mapping[str, str]  # sglang modules that failed under the stubs: error


def unpack(wheel: Path, into: Path) -> None:
    """The wheel's `sglang/**.py` sources only (no extension modules, no data)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.startswith("sglang/") and member.endswith(".py") and ".." not in member:
                    archive.extract(member, into)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot unpack the wheel: {exc}", where=str(wheel)) from None


def run_probe(root: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run probe.py on an unpacked tree in a clean interpreter (`-I`: no site hooks,
    no PYTHON* variables; only PATH and the given variables reach it)."""
    child_env = {"PATH": os.environ.get("PATH", ""), **(env or {})}
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-B", str(PROBE), str(root)],
            capture_output=True,
            text=True,
            env=child_env,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InputError(
            f"the argparse probe did not finish within {PROBE_TIMEOUT_S} s", where=str(root)
        ) from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise InputError(f"the argparse probe failed: {tail}", where=str(root))
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise InputError("the argparse probe printed no JSON", where=str(root)) from None
    return result


def runtime_parser(wheel: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tierops-probe-") as folder:
        unpack(wheel, Path(folder))
        return run_probe(Path(folder), env)


def compare(manifest: Mapping[str, Any], probe: Mapping[str, Any]) -> Report:
    actions = [action for action in probe["actions"] if action["option_strings"]]
    by_spelling = {spelling: action for action in actions for spelling in action["option_strings"]}
    differences: list[Difference] = []
    matched: set[int] = set()
    for entry in manifest["flags"]:
        flag = entry["flag"]
        action = by_spelling.get(flag)
        if action is None:
            differences.append(Difference(flag, "exists", "yes", "no"))
            continue
        matched.add(id(action))
        differences.extend(_differences(entry, action))
    for action in actions:
        if id(action) not in matched:
            differences.append(Difference(action["option_strings"][0], "exists", "no", "yes"))
    return Report(
        compared=len(manifest["flags"]),
        differences=differences,
        stubbed=list(probe.get("stubbed", [])),
        failed=dict(probe.get("failed", {})),
    )


def _differences(entry: Mapping[str, Any], action: Mapping[str, Any]) -> list[Difference]:
    flag = entry["flag"]
    found: list[Difference] = []
    spellings = sorted([flag, *entry["aliases"]])
    if spellings != sorted(action["option_strings"]):
        found.append(Difference(flag, "spellings", str(spellings), str(sorted(action["option_strings"]))))
    static_nargs = entry["nargs"] if entry["takes_value"] else None
    if (entry["takes_value"], static_nargs) != (action["takes_value"], action["nargs"]):
        found.append(
            Difference(
                flag,
                "nargs",
                _arity(entry["takes_value"], static_nargs),
                _arity(action["takes_value"], action["nargs"]),
            )
        )
    static_type = _short(entry["type"]) if entry["takes_value"] else None
    runtime_type = (action["type"] or "str") if action["takes_value"] else None
    if static_type != runtime_type:
        found.append(Difference(flag, "type", str(static_type), str(runtime_type)))
    found.extend(_choice_difference(entry, action))
    return found


def _choice_difference(entry: Mapping[str, Any], action: Mapping[str, Any]) -> list[Difference]:
    flag = entry["flag"]
    runtime = action["choices"]
    if entry.get("choices_expr"):
        return [Difference(flag, "choices", f"unknown ({entry['choices_expr']})", _shown(runtime))]
    static = entry["choices"]
    if static is None or runtime is None:
        return (
            []
            if static is None and runtime is None
            else [Difference(flag, "choices", _shown(static), _shown(runtime))]
        )
    every = sorted({str(choice) for choice in static})
    conditional = set(entry.get("choices_conditional") or {})
    seen = sorted(set(runtime))
    if seen == every or seen == sorted(set(every) - conditional):
        return []
    return [Difference(flag, "choices", _shown(every), _shown(seen))]


def _arity(takes_value: bool, nargs: object) -> str:
    return "no value" if not takes_value else "one value" if nargs is None else f"nargs {nargs!r}"


def _short(kind: str | None) -> str | None:
    return kind.rsplit(".", 1)[-1] if kind else kind


def _shown(choices: Sequence[Any] | None) -> str:
    return "none" if choices is None else "[" + ", ".join(str(choice) for choice in choices) + "]"


def crosscheck(wheel: Path, manifest_path: Path, env: Mapping[str, str] | None = None) -> Report:
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the manifest: {exc}", where=str(manifest_path)) from None
    return compare(manifest, runtime_parser(wheel, env))
