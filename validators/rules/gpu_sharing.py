"""Rule `gpu-sharing`: services on one GPU share it on purpose, and leave each other memory.

Two services that reserve the same GPU (`deploy.resources.reservations.devices[*].
device_ids`) both start, and the second engine to load finds the memory the first took:
it fails at start, or later under load. Sharing is sometimes the plan (small models
beside each other on a host that packs several), so it is declared: every service on a
shared GPU carries `x-gpu-share: <why>` (Compose ignores `x-` keys). The metrics
exporter, which watches every GPU and uses none, is not a sharer.

- An undeclared overlap is an error in a pack's file (contracts/packs.yaml) and a
  warning in a file nothing claims: another team may share GPUs on purpose without our
  declaration. In a stack's file the contract's GPU assignment (prod-config) decides.
- Engines on a shared GPU each set their share of its memory (SGLang
  `--mem-fraction-static`, vLLM `--gpu-memory-utilization`); without it the engine takes
  its default, most of the GPU. The shares of one GPU add up to 1.0 at most. An error in
  a claimed file, a warning in a file nothing claims, whose services on one GPU may be
  alternatives deployed one at a time.

Passing example::

    embed:  {command: [vllm, serve, ..., --gpu-memory-utilization, "0.15"], x-gpu-share: two small models, deploy: ... device_ids: ["0"]}
    rerank: {command: [vllm, serve, ..., --gpu-memory-utilization, "0.15"], x-gpu-share: two small models, deploy: ... device_ids: ["0"]}

Failing example::

    embed:  {command: [vllm, serve, ..., --gpu-memory-utilization, "0.60"], x-gpu-share: ..., device_ids: ["0"]}
    rerank: {command: [vllm, serve, ..., --gpu-memory-utilization, "0.60"], x-gpu-share: ..., device_ids: ["0"]}   # 1.2 of GPU 0
    chat:   {command: [vllm, serve, ...], device_ids: ["0"]}   # not declared, and no share of memory
"""

from __future__ import annotations

from collections.abc import Iterator

from tierops.argv import MEMORY_FRACTION
from tierops.roles import Role
from validators.context import Context, engine_services
from validators.findings import Finding, error, warning
from validators.model import ComposeFile, Service, Token
from validators.rules.wiring.graph import service_roles

ID = "gpu-sharing"

SUMMARY = "services on one GPU declare it (x-gpu-share); engines sharing a GPU set memory shares that add up to 1.0 at most"

SHARE_KEY = "x-gpu-share"


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    on = _on_gpus(compose, ctx)
    if ctx.contract is None:
        yield from _undeclared(compose, on, strict=ctx.pack is not None)
    yield from _memory(compose, on, strict=ctx.contract is not None or ctx.pack is not None)


def _on_gpus(compose: ComposeFile, ctx: Context) -> dict[str, list[tuple[Service, Token]]]:
    """Each GPU id and the services reserving it (the metrics exporter left out), in file order."""
    roles = service_roles(compose, engine_services(compose, ctx), {})
    on: dict[str, list[tuple[Service, Token]]] = {}
    for service in compose:
        if roles.get(service.name) is Role.DCGM:
            continue
        for token in service.gpu_ids() or ():
            held = on.setdefault(token.text, [])
            if all(other.name != service.name for other, _ in held):
                held.append((service, token))
    return on


def _declared(service: Service) -> bool:
    reason = service.data.get(SHARE_KEY)  # as written: compose drops `x-` keys
    return isinstance(reason, str) and bool(reason.strip())


def _undeclared(
    compose: ComposeFile, on: dict[str, list[tuple[Service, Token]]], *, strict: bool
) -> Iterator[Finding]:
    level = error if strict else warning
    for gpu, held in on.items():
        if len(held) < 2:
            continue
        for service, token in held:
            if _declared(service):
                continue
            others = ", ".join(other.name for other, _ in held if other.name != service.name)
            yield level(
                compose.path,
                token.pos,
                ID,
                f"{service.name} GPU {gpu} is also reserved by {others}; give each its own GPU, or declare "
                f"the sharing on every service of GPU {gpu} (`{SHARE_KEY}: <why>`)",
            )


def _memory(
    compose: ComposeFile, on: dict[str, list[tuple[Service, Token]]], *, strict: bool
) -> Iterator[Finding]:
    # In a file nothing claims, services on one GPU may be alternatives deployed one at a
    # time (a TP4 replica and the TP2 pair that replaces it): advice, not an error.
    found = error if strict else warning
    alternatives = "" if strict else " (unless these services never run together)"
    for gpu, held in on.items():
        engines = [(service, token) for service, token in held if service.program_name() is not None]
        if len(held) < 2 or not engines:
            continue
        total = 0.0
        complete = True
        for service, token in engines:
            flag = MEMORY_FRACTION.get(service.program_name() or "")
            share = next((f for f in service.flags() if f.flag == flag), None)
            if flag is None:
                continue
            if share is None or share.value is None:
                complete = False
                yield found(
                    compose.path,
                    token.pos,
                    ID,
                    f"{service.name} shares GPU {gpu} but sets no {flag}: it takes its default share, most of the GPU; "
                    f"give each engine on GPU {gpu} its share ({flag} 0.4 for two of them, for instance)"
                    + alternatives,
                )
                continue
            try:
                total += float(share.value)
            except ValueError:
                complete = False  # not a number: engine-flags says so
        if complete and total > 1.0 + 1e-9:
            service, token = engines[-1]
            shares = ", ".join(
                f"{s.name} {next((f.value for f in s.flags() if f.flag == MEMORY_FRACTION.get(s.program_name() or '')), '?')}"
                for s, _ in engines
            )
            yield found(
                compose.path,
                token.pos,
                ID,
                f"the engines on GPU {gpu} ask for {total:.2f} of its memory ({shares}); lower their shares to 1.0 in all"
                + alternatives,
            )
