"""Rule `prod-config`: each prod file says what validators/contracts/glm53.yaml says.

Per file (found by its stem under `files:` in the contract): the service set
(missing and unexpected reported separately); each engine's argv is the base
contract with that file's and replica's values plus its features' flags, exactly
once each, in feature order, and nothing else (unknown, missing, duplicated,
reordered and changed tokens are each named); the engine env has exactly the
contract's variables and values; `config_variant` recomputed from the engine's own
argv and env equals its label and its scrape job's label; replicas are identical
except what the contract lets differ; GPU ids exactly as specified, disjoint, inside
one NVLink island, as many as `--tp-size`; `--dist-init-addr` unique; the proxy pool
lists the engines in replica order at their `--port` and the proxy does not
`depends_on` an engine; pairing rules (chunk 16384 only with the DSA indexer split;
the split only on an allow-listed image); profiles (the canary's every service, no
other file's); downloader, nginx ports and registrar env.

Passing example (long-context r2, abridged)::

    command: [sglang, serve, ..., --chunked-prefill-size, "8192", ...,
              --prefill-decode-interval, "2", ..., --enable-dynamic-batch-tokenizer]
    labels:
      tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2-h200-tp4-ep4-dyntok

Failing example (the ingestion flag dropped on r2)::

    command: [sglang, serve, ..., --hicache-mem-layout, page_first_direct]
    # -> model-sg-glm53-w4afp8-tp4-r2 argv lacks --enable-dynamic-batch-tokenizer,
    #    which model-sg-glm53-w4afp8-tp4-r1 carries (prod-config)
"""

from __future__ import annotations

from collections.abc import Iterator

from tierops import layout
from validators.context import Context
from validators.contract import Contract, FileContract, Replica
from validators.findings import Finding, error
from validators.model import ComposeFile, Service

# The checks live in the parts, by what they read; the registry finds each here by name.
from validators.rules.prod_config.argv import _argv, _env, _order
from validators.rules.prod_config.common import _cite, _settings
from validators.rules.prod_config.engines import (
    _chunk_needs_split,
    _engine_settings,
    _gpu_devices,
    _gpu_island,
    _gpu_overlap,
    _gpu_tp,
    _gpus,
    _pairing,
    _rendezvous,
    _split_image,
    _variant,
    recompute_variant,
)
from validators.rules.prod_config.parity import _parity
from validators.rules.prod_config.sidecars import _downloader, _nginx, _proxy, _registrar

__all__ = [
    "ID",
    "NEEDS_CONTRACT",
    "SUMMARY",
    "_argv",
    "_chunk_needs_split",
    "_cite",
    "_downloader",
    "_engine_settings",
    "_env",
    "_gpu_devices",
    "_gpu_island",
    "_gpu_overlap",
    "_gpu_tp",
    "_gpus",
    "_nginx",
    "_order",
    "_pairing",
    "_parity",
    "_proxy",
    "_registrar",
    "_rendezvous",
    "_settings",
    "_split_image",
    "_variant",
    "check",
    "recompute_variant",
]  # fmt: skip

# A stack\'s own policy: runs only on files a stack contract claims (validators/runner.py).
ID = "prod-config"

NEEDS_CONTRACT = True
# In a pack's file, each member stack's contract judges that stack's own services.
JUDGES_PACK_MEMBERS = True


SUMMARY = "the argv/env/variant/GPU/parity/pool/pairing contract of the stack that claims the file (validators/contracts/)"


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    contract_file = layout.shown(ctx.claimed.path)
    for finding in _check(compose, ctx):
        yield _cite(finding, contract_file)


def _check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    contract = ctx.claimed
    path = compose.path
    file = contract.files[compose.stem]
    # In a pack's file the contract is one member's: its services are there, beside the
    # other members' and the host's (whose front door and registrar are the pack's).
    member = ctx.pack is not None
    yield from _service_set(compose, contract, member=member)
    yield from _profiles(compose, file)
    engines: list[tuple[Replica, Service]] = [
        (replica, compose.services[replica.service])
        for replica in contract.replicas.values()
        if replica.service in compose.services
    ]
    contract_findings: dict[str, int] = {}
    for replica, service in engines:
        findings = [
            *_engine_settings(path, service, replica, contract),
            *_argv(path, service, replica, file, contract, engines),
            *_env(path, service, replica, file, contract),
        ]
        contract_findings[replica.name] = len(findings)
        yield from findings
        yield from _variant(compose, service, replica, file, contract)
        yield from _gpus(path, service, replica, contract)
        yield from _pairing(path, service, contract)
    if not member:  # in a pack, gpu-sharing judges the GPUs the members share
        yield from _gpu_overlap(path, engines)
    yield from _rendezvous(path, engines)
    yield from _parity(path, engines, file, contract, contract_findings)
    yield from _proxy(compose, contract, engines)
    yield from _downloader(compose, contract)
    if not member:
        yield from _nginx(compose, contract, file)
        yield from _registrar(compose, contract, file)


def _service_set(compose: ComposeFile, contract: Contract, *, member: bool = False) -> Iterator[Finding]:
    for name in contract.services:
        if name not in compose.services:
            yield error(
                compose.path,
                compose.services_pos(),
                ID,
                f"service {name} is missing (the contract's service set)",
            )
    for service in compose:
        if not member and service.name not in contract.services:
            yield error(
                compose.path,
                service.pos,
                ID,
                f"unexpected service {service.name}; the contract's services are {', '.join(contract.services)}",
            )


def _profiles(compose: ComposeFile, file: FileContract) -> Iterator[Finding]:
    for service in compose:
        profiles = service.get("profiles")
        names = list(profiles) if isinstance(profiles, list) else []
        if file.profile is not None:
            if names != [file.profile]:
                yield error(
                    compose.path,
                    service.at("profiles"),
                    ID,
                    f"{service.name} must be behind exactly the profile {file.profile} (so an unscoped `up` starts nothing), not {names or 'none'}",
                )
        elif profiles is not None:
            yield error(
                compose.path,
                service.at("profiles"),
                ID,
                f"{service.name} has profiles {names}; in {compose.stem} every service starts with a plain `up`",
            )
