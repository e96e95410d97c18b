"""What every rule family reads besides the file: the contracts and the engine builds.

A fleet has one contract per stack (`validators/contracts/<stack>.yaml`, each naming the
files it claims under `files:`). A file is judged against the contract that claims it;
a file no contract claims (another team's compose file, a file outside the fleet) gets
only the checks that hold for every compose file, and none of a stack's house policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tierops import layout
from validators.contract import (
    DEFAULT_BUILD,
    PACKS_FILE,
    BuildContract,
    Contract,
    PackClaim,
    load_builds,
    load_contract,
    load_pack_claims,
)
from validators.manifest import HERE as MANIFEST_DIR
from validators.manifest import Manifest, load_manifest
from validators.model import ComposeFile

# Files of the contracts directory that are not a stack's contract.
NOT_STACKS = frozenset({"engine-build.yaml", "wiring.yaml", PACKS_FILE})


@dataclass(frozen=True)
class EngineBuild:
    """A build of engine-build.yaml with its flag manifest loaded."""

    contract: BuildContract
    manifest: Manifest


@dataclass(frozen=True)
class Context:
    contracts: tuple[Contract, ...]
    builds: tuple[EngineBuild, ...]
    # The contract that claims the file being checked; None: no stack claims it.
    contract: Contract | None = None
    # Files of several stacks (contracts/packs.yaml), by stem, and the one being checked.
    packs: Mapping[str, PackClaim] = field(default_factory=dict)
    pack: PackClaim | None = None
    # In a pack's file: the member stacks' contracts that list the file under `files:`.
    members: tuple[Contract, ...] = ()

    def build_of(self, image: str) -> EngineBuild | None:
        """The build whose `images:` lists `image` (None: no known build runs it)."""
        return next((build for build in self.builds if image in build.contract.images), None)

    def for_file(self, stem: str) -> Context:
        """This context with the contract that claims the file `stem` (None if none does)."""
        pack = self.packs.get(stem)
        claiming = [contract for contract in self.contracts if stem in contract.files]
        if pack is not None:
            # A pack's file: no one stack's; its members' contracts judge their own engines.
            members = tuple(c for c in claiming if c.path.stem in pack.members)
            return replace(self, contract=None, pack=pack, members=members)
        return replace(self, contract=claiming[0] if claiming else None, pack=None, members=())

    @property
    def claimed(self) -> Contract:
        """The claiming contract, for the families that run only on claimed files (NEEDS_CONTRACT)."""
        if self.contract is None:
            raise LookupError("a stack's rule ran on a file no contract claims")
        return self.contract

    def known_files(self) -> list[str]:
        return sorted({*(stem for contract in self.contracts for stem in contract.files), *self.packs})


def engine_services(compose: ComposeFile, ctx: Context) -> list[str]:
    """The engines: the claiming contract's replicas; in a file no contract claims, every
    service that starts an engine program (SGLang or vLLM, by its argv or its image)."""
    if ctx.contract is not None:
        return [r.service for r in ctx.contract.replicas.values() if r.service in compose.services]
    return [service.name for service in compose if service.program_name() is not None]


def stack_contracts(directory: Path | None = None) -> list[Path]:
    """Every stack contract in `directory` (default: the fleet's, read now), sorted by name."""
    where = directory if directory is not None else layout.contracts_dir()
    return [path for path in sorted(where.glob("*.yaml")) if path.name not in NOT_STACKS]


def load_context(contracts: Sequence[Path] | None = None, build: Path | None = None) -> Context:
    builds = load_builds(build if build is not None else layout.contracts_dir() / DEFAULT_BUILD.name)
    paths = stack_contracts() if contracts is None else list(contracts)
    # The packs are the fleet's own, read beside its contracts (none with explicit contracts).
    packs = load_pack_claims(layout.contracts_dir() / PACKS_FILE) if contracts is None else {}
    return Context(
        packs=packs,
        contracts=tuple(load_contract(path) for path in paths),
        builds=tuple(EngineBuild(item, load_manifest(MANIFEST_DIR / item.manifest)) for item in builds),
    )
