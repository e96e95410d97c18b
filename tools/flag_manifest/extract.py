"""`python -m tools.flag_manifest extract <wheel>`: an engine wheel's CLI flags, statically.

The wheel decides the reader: a vLLM wheel (it has `vllm serve`'s cli_args.py) is read
by vllm.py, an SGLang wheel by sglang.py. Either way nothing is imported: both engines
drag in torch and CUDA.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path
from typing import Any

from tierops.errors import InputError
from tools.flag_manifest.pyread import _Unresolved, _Wheel
from tools.flag_manifest.sglang import FIELDS_DIR, SERVER_ARGS, _Extractor

VLLM_CLI_ARGS = "vllm/entrypoints/openai/cli_args.py"
_WHEEL_NAME = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-")


def extract(wheel_path: Path) -> dict[str, Any]:
    """The manifest of one sglang wheel: sorted, stable, JSON-able."""
    try:
        data = wheel_path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read wheel: {exc.strerror}", where=str(wheel_path)) from None
    match = _WHEEL_NAME.match(wheel_path.name)
    if match is None or not wheel_path.name.endswith(".whl"):
        raise InputError("not a wheel file name (name-version-...whl)", where=str(wheel_path))
    try:
        archive = zipfile.ZipFile(wheel_path)
    except zipfile.BadZipFile:
        raise InputError("not a zip archive (is the download complete?)", where=str(wheel_path)) from None
    with archive:
        wheel = _Wheel(archive)
        if VLLM_CLI_ARGS in wheel.names:
            return _extract_vllm(wheel_path, wheel, data, match.group("name"), match.group("version"))
        fields = sorted(name for name in wheel.names if name.startswith(FIELDS_DIR) and name.endswith(".py"))
        paths = [SERVER_ARGS, *fields]
        modules = [module for module in (wheel.module(path) for path in paths) if module is not None]
        if not modules or modules[0].path != SERVER_ARGS:
            raise InputError(
                f"{SERVER_ARGS} not found in the wheel; is this an sglang wheel?", where=str(wheel_path)
            )
        flags = _Extractor(wheel, modules).run()
        read = sorted(wheel.modules)
    return {
        "source": {
            "package": match.group("name"),
            "version": match.group("version"),
            "wheel": wheel_path.name,
            "sha256": hashlib.sha256(data).hexdigest(),
            "files": [module.path for module in modules],
            # Other modules of the wheel read to resolve names (choice lists, classes).
            "resolved_from": [path for path in read if path not in {module.path for module in modules}],
        },
        "extractor": "python -m tools.flag_manifest extract <wheel>",
        "flag_count": len(flags),
        "flags": sorted(flags, key=lambda entry: entry["flag"]),
    }


def _extract_vllm(path: Path, wheel: _Wheel, data: bytes, package: str, version: str) -> dict[str, Any]:
    """A vLLM wheel: `vllm serve`'s parser, read by tools/flag_manifest/vllm.py."""
    from tools.flag_manifest.vllm import ARG_UTILS, read_wheel  # vllm.py imports this module

    try:
        flags, positionals, read = read_wheel(wheel)
    except _Unresolved:
        raise InputError(
            f"cannot follow make_arg_parser in {VLLM_CLI_ARGS}; is this a vllm wheel of a known layout?",
            where=str(path),
        ) from None
    files = [VLLM_CLI_ARGS, ARG_UTILS]
    return {
        "source": {
            "package": package,
            "version": version,
            "wheel": path.name,
            "sha256": hashlib.sha256(data).hexdigest(),
            "files": files,
            "resolved_from": [name for name in read if name not in files],
        },
        "extractor": "python -m tools.flag_manifest extract <wheel>",
        # Words `vllm serve` takes before its flags (the model tag).
        "positionals": positionals,
        "flag_count": len(flags),
        "flags": sorted(flags, key=lambda entry: entry["flag"]),
    }
