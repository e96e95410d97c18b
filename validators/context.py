"""What every rule family reads besides the file: the contracts and the flag manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from validators.contract import (
    DEFAULT_BUILD,
    DEFAULT_CONTRACT,
    BuildContract,
    Contract,
    load_build,
    load_contract,
)
from validators.manifest import HERE as MANIFEST_DIR
from validators.manifest import Manifest, load_manifest


@dataclass(frozen=True)
class Context:
    contract: Contract
    build: BuildContract
    manifest: Manifest


def load_context(contract: Path = DEFAULT_CONTRACT, build: Path = DEFAULT_BUILD) -> Context:
    build_contract = load_build(build)
    return Context(
        contract=load_contract(contract),
        build=build_contract,
        manifest=load_manifest(MANIFEST_DIR / build_contract.manifest),
    )
