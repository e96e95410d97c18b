"""The second extraction path: build sglang's real argparse parser with heavy imports stubbed.

Run only as a child process by `tools.flag_manifest.crosscheck` (never imported by the
validators, never inside the test process): it imports the wheel's own
`sglang/srt/server_args.py` from an unpacked copy, lets every `sglang.*` module run
for real, replaces every other third-party module (torch, triton, transformers, ...)
with a permissive stub, calls `ServerArgs.add_cli_args(parser)` and writes the
parser's actions as JSON on stdout. A `sglang` module that fails to import under the
stubs keeps what it defined before the failure and turns into a stub for the rest;
the failures are reported beside the actions, so a flag whose choices came from a
stub shows up as a disagreement, not as silence.

Standard library only: this file runs with `python -I` on an unpacked wheel, where
the project's own packages are not importable.

    python -I -B tools/flag_manifest/probe.py <unpacked wheel root>
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# argparse actions that never take a value (by class name).
NO_VALUE = {
    "_StoreTrueAction",
    "_StoreFalseAction",
    "_StoreConstAction",
    "_CountAction",
    "_HelpAction",
    "_VersionAction",
    "BooleanOptionalAction",
}


class _StubType(type):
    """A class that answers everything: attribute, call, subscript, iteration, `|`.

    Being a class (not an instance) lets a stub serve as a base class, a type in an
    annotation (`Optional[Stub]`), a decorator (`@stub` and `@stub(...)` return the
    decorated function unchanged) and a value (`torch.float16`)."""

    def __getattr__(cls, name: str) -> Any:
        if name == "__version__":
            return "0.0.0"
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub(f"{cls.__qualname__}.{name}")

    def __getitem__(cls, key: object) -> Any:
        return cls

    def __iter__(cls) -> Any:
        return iter(())

    def __len__(cls) -> int:
        return 0

    def __bool__(cls) -> bool:
        return False

    def __or__(cls, other: object) -> Any:
        return cls

    def __ror__(cls, other: object) -> Any:
        return cls

    def __call__(cls, *args: object, **kwargs: object) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _StubType):
            return args[0]
        return _stub(f"{cls.__qualname__}()")

    def __mro_entries__(cls, bases: tuple[type, ...]) -> tuple[type, ...]:
        return (object,)


def _stub(name: str) -> Any:
    return _StubType(name, (), {"__qualname__": name, "__module__": "stub"})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name == "__version__":
            return "0.0.0"
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub(f"{self.__name__}.{name}")


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Tolerant(importlib.abc.Loader):
    """Runs a real sglang module; if it fails under the stubs, it becomes a stub."""

    def __init__(self, real: importlib.abc.Loader, failed: dict[str, str]) -> None:
        self.real = real
        self.failed = failed

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            self.real.exec_module(module)
        except Exception as exc:
            self.failed[module.__name__] = f"{type(exc).__name__}: {exc}"[:300]
            module.__class__ = _StubModule


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.stubbed: list[str] = []
        self.failed: dict[str, str] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".", maxsplit=1)[0]
        if top in sys.stdlib_module_names:
            return None
        if top == "sglang":
            spec = importlib.machinery.PathFinder.find_spec(
                fullname, list(path) if path else [str(self.root)]
            )
            if spec is not None:
                if spec.loader is not None and not isinstance(
                    spec.loader, importlib.machinery.NamespaceLoader
                ):
                    spec.loader = _Tolerant(spec.loader, self.failed)
                return spec
        self.stubbed.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


def _type_name(kind: object) -> str | None:
    if kind is None:
        return None
    name = getattr(kind, "__name__", None)
    return name if isinstance(name, str) else repr(kind)


def _choices(choices: object) -> list[str] | None:
    if choices is None:
        return None
    try:
        return [str(choice) for choice in choices]  # type: ignore[attr-defined]
    except TypeError:
        return [repr(choices)]


def actions(root: Path) -> dict[str, Any]:
    finder = _Finder(root)
    sys.meta_path.insert(0, finder)
    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(add_help=False)
    ServerArgs.add_cli_args(parser)
    found = []
    for action in parser._actions:
        kind = type(action).__name__
        takes_value = kind not in NO_VALUE and action.nargs != 0
        found.append(
            {
                "option_strings": list(action.option_strings),
                "dest": action.dest,
                "action": kind,
                "nargs": action.nargs if takes_value else None,
                "takes_value": takes_value,
                "type": _type_name(action.type) if takes_value else None,
                "choices": _choices(action.choices),
            }
        )
    return {"actions": found, "stubbed": sorted(set(finder.stubbed)), "failed": finder.failed}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: probe.py <unpacked wheel root>\n")
        return 2
    sys.stdout.write(json.dumps(actions(Path(args[0]).resolve()), sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
