"""What a check verdict is a function of: the input files' hashes and the environment.

`inputs(root)` hashes, per group, every file a stage reads as data: the prod files,
the generators' source (the shared source, the targets and the code that renders
them), the contracts, the flag manifest and the dummy environment. Its `digest`
ties each stage result to the inputs it judged: ci/record.py accepts a result only
when the digest it carries is the digest of the inputs now (ci/stage.py).

`environment()` is the interpreter a stage ran in and every distribution installed
there, so the record can say which tool versions gave the verdict. Stdlib only: it
runs inside every session's environment.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tierops.layout import CODE_ROOT

# group -> (tree, directory, glob patterns); every group is a list of files, hashed one by
# one. The tree is the fleet's (its data) or the code's (tierops itself): the same
# repository unless TIEROPS_FLEET names another fleet (tierops.layout).
INPUT_GROUPS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "prod": (("fleet", "prod", ("*",)),),
    "generators": (("fleet", "generators", ("*.yaml",)), ("code", "generators", ("*.py",))),
    "contracts": (("fleet", "validators/contracts", ("*",)), ("code", "validators/contracts", ("*.txt",))),
    "manifest": (("code", "validators/manifest", ("*.json",)),),
    "dummy_env": (("fleet", "ci", ("dummy.env",)),),
}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prod_files(root: Path) -> tuple[str, ...]:
    """The matrix's rows: prod/*.yaml (and *.yml), repository-relative, sorted."""
    found = [*root.glob("prod/*.yaml"), *root.glob("prod/*.yml")]
    return tuple(sorted(path.relative_to(root).as_posix() for path in found if path.is_file()))


def inputs(root: Path, code: Path = CODE_ROOT) -> dict[str, Any]:
    """{"digest": "sha256:...", group: {path: sha256}} of the fleet at `root` and the code
    at `code`: dotfiles and caches excluded."""
    trees = {"fleet": root, "code": code}
    groups: dict[str, dict[str, str]] = {}
    for group, parts in INPUT_GROUPS.items():
        files: dict[str, str] = {}
        for tree, directory, patterns in parts:
            base = trees[tree]
            for pattern in patterns:
                for path in sorted((base / directory).glob(pattern)):
                    if path.is_file() and not path.name.startswith("."):
                        files[path.relative_to(base).as_posix()] = sha256_file(path)
        groups[group] = dict(sorted(files.items()))
    return {"digest": digest_of(groups), **groups}


def digest_of(groups: Mapping[str, Any]) -> str:
    text = json.dumps(groups, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalise(name: str) -> str:
    """PEP 503: `ruamel.yaml` and `Ruamel_YAML` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def environment() -> dict[str, Any]:
    """This interpreter and its installed distributions (normalised name -> version)."""
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": dict(sorted(installed().items())),
    }


# `{name}-{version}.dist-info`: the wheel spec escapes `-` in both parts, so the first
# `-` splits them (packaging.python.org, "Recording installed projects").
_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


def installed(path: Sequence[str] | None = None) -> dict[str, str]:
    """Every distribution on `path` (default sys.path): normalised name -> version.

    What importlib.metadata.distributions() lists, a later path entry overriding an
    earlier one alike, read from the `.dist-info` directory names the installers write
    (pip and uv): every stage records it, and parsing each METADATA file as an e-mail
    message cost a tenth of a second of every stage. A directory whose name does not
    follow the spec, and legacy `.egg-info`, are read from their metadata.
    """
    packages: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        try:
            names = sorted(item.name for item in Path(entry or ".").iterdir())
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            match = _DIST_INFO.match(name)
            if match is not None:
                packages[normalise(match["name"])] = match["version"]
                continue
            import importlib.metadata  # only here: it costs a stage 50 ms to import

            dist = importlib.metadata.PathDistribution(Path(entry or ".") / name)
            if dist.metadata["Name"]:
                packages[normalise(dist.metadata["Name"])] = dist.version
    return packages
