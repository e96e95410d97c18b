"""Render one target into the bytes of its production file.

The document is built as ruamel.yaml round-trip containers and emitted by the one YAML
factory (tierops.yamlio): no string surgery on YAML. Output is deterministic: fresh
containers (no comments leak from the source), every string styled by one rule
(`_scalar`), UTF-8, LF, exactly one trailing newline.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

from generators.engine import Engine, build_engines, source_conflicts
from generators.pack import HOST_ROLES, Member, Pack
from generators.reader import fill
from generators.source import GenerationRefused, Source, Target, engine_name
from generators.telemetry import Subject, host_labels, labels_for, scrape_job
from tierops.argv import switch_of
from tierops.shellwords import quote
from tierops.yamlio import roundtrip

REGENERATE = "nox -s generate"
GENERATOR = "python -m generators"
NVIDIA_DEVICE = {"driver": "nvidia", "capabilities": ["gpu"]}
# On an engine whose GPUs the pack shares with another engine: why (a pack's gpu_sharing).
SHARE_KEY = "x-gpu-share"

# Strings that a YAML 1.1 or 1.2 reader (compose, PyYAML, ruamel) could take for a
# number, bool, null or timestamp are double-quoted; so is anything made only of
# digits, dots and colons ("0.80", "8000:8000", "127.0.0.1:29510"), which readers
# disagree about. Every other string is emitted plain when YAML allows it.
_AMBIGUOUS = re.compile(
    r"""^(?:
        ~|null|Null|NULL
      | y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
      | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])*
      | [-+]?0[xob][0-9a-fA-F_]+
      | [-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?
      | [-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+
      | [-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*
      | [-+0-9.:]+
    )$""",
    re.VERBOSE,
)


# Inside a flow collection (`[CMD, curl, ...]`) libyaml, unlike ruamel.yaml, refuses a
# plain scalar with a colon (`http://localhost:8000/health`): quote those.
_FLOW_UNSAFE = re.compile(r"[:,\[\]{}#]")


def render_all(source: Source, targets: list[Target]) -> dict[str, bytes]:
    """Every target's file name and bytes; refusals of all targets are reported together."""
    problems: list[str] = []
    if targets and targets[0].replicas:
        first = engine_name(source, next(iter(targets[0].replicas)))
        problems += source_conflicts(source, f"{first} ({targets[0].name})")
    rendered: dict[str, bytes] = {}
    for target in targets:
        try:
            rendered[target.filename] = render_target(source, target)
        except GenerationRefused as refused:
            problems.extend(line for line in refused.lines if line not in problems)
    if problems:
        raise GenerationRefused(problems)
    return rendered


def render_target(source: Source, target: Target) -> bytes:
    engines = build_engines(source, target)
    document = _document(source, target, engines)
    stream = io.StringIO()
    roundtrip().dump(document, stream)
    text = _header(source, target) + stream.getvalue()
    return (text.rstrip("\n") + "\n").encode("utf-8")


def _header(source: Source, target: Target) -> str:
    hosts = ", ".join(target.hosts) or "-"
    return (
        "# GENERATED FILE: DO NOT EDIT. Every byte is checked by `nox -s generated`.\n"
        f"# Generator: {GENERATOR} (generators/, from {source.display} and the targets file)\n"
        f"# Target: {target.name} (tier {target.tier}; hosts: {hosts})\n"
        f"# To change it: edit the source or the targets, run `{REGENERATE}`, commit both.\n"
    )


def _document(source: Source, target: Target, engines: list[Engine]) -> CommentedMap:
    services = CommentedMap()
    subjects = _stack_services(services, source, target, engines)
    for name, port in source.scrape_ports.items():
        subjects.append(labels_for(source, target, name, port))
    _label(services, subjects)
    _refuse_unfilled(source.display, services)
    document = CommentedMap()
    document["name"] = source.project
    document["services"] = services
    document["volumes"] = _out(source.volumes)
    document["networks"] = _out(source.networks)
    nginx_extra = ""
    if target.discovery_port is not None:
        nginx_extra = source.configs[_DISCOVERY_CONFIG].replace("{port}", str(target.discovery_port))
    document["configs"] = _configs(
        source.configs, services, subjects, source.collector_config, {"nginx_conf": nginx_extra}
    )
    return document


def _stack_services(
    services: CommentedMap,
    source: Source,
    target: Target,
    engines: list[Engine],
    *,
    skip_roles: tuple[str, ...] = (),
    sharing: Mapping[str, str] | None = None,
) -> list[Subject]:
    """Add a stack's sidecars (but those of `skip_roles`) and its engines to `services`,
    the engines right after the last service they depend on; their telemetry subjects."""
    subjects: list[Subject] = []
    engine_deps = set(source.engine.service.get("depends_on") or ())
    pending = list(engines)
    for name, spec in source.services.items():
        if str(spec.get("role")) in skip_roles:
            engine_deps.discard(name)
            continue
        services[name] = _sidecar(source, target, engines, str(name), spec)
        if name in engine_deps:
            engine_deps.discard(name)
        if not engine_deps and pending:
            for engine in pending:
                services[engine.name] = _engine_service(
                    source, target, engine, (sharing or {}).get(engine.name)
                )
                subjects.append(labels_for(source, target, engine.name, engine.port, engine))
            pending = []
    if pending:
        raise GenerationRefused(
            [
                f"{source.display}: refused: engines depend on services the source does not define: {', '.join(sorted(engine_deps))}"
            ]
        )
    for engine in engines:
        uses = sorted(
            target.replicas[engine.replica], key=lambda use: engine.features.index(use.feature.name)
        )
        features = ", ".join(use.text for use in uses) or "no features"
        services.yaml_set_comment_before_after_key(
            engine.name, before=f"{engine.replica}: {features}\nconfig_variant {engine.variant}", indent=2
        )
    return subjects


def _label(services: CommentedMap, subjects: list[Subject]) -> None:
    order = list(services)
    for subject in sorted(subjects, key=lambda subject: order.index(subject.service)):
        services[subject.service]["labels"] = _out(dict(subject.labels))
    subjects.sort(key=lambda subject: order.index(subject.service))


def _refuse_unfilled(display: str, services: CommentedMap) -> None:
    unfilled = [f"{name}.{path}" for name, service in services.items() for path in _nulls(service)]
    if unfilled:
        raise GenerationRefused(
            [f"{display}: refused: placeholder(s) `~` that nothing computes: {', '.join(unfilled)}"]
        )


def render_pack(pack: Pack) -> bytes:
    """One pack's file: each member's engines and own services, then the host's."""
    problems: list[str] = []
    services = CommentedMap()
    subjects: list[Subject] = []
    engines: list[Engine] = []
    sharing = {engine: item.reason for item in pack.sharing for engine in item.engines}
    images = _pack_images(pack, problems)
    for member in pack.members:
        try:
            built = build_engines(member.source, member.target)
            subjects += _stack_services(
                services, member.source, member.target, built, skip_roles=HOST_ROLES, sharing=sharing
            )
        except GenerationRefused as refused:
            problems.extend(refused.lines)
            continue
        engines += built
        subjects += [
            labels_for(member.source, member.target, name, port)
            for name, port in member.source.scrape_ports.items()
            if name in services
        ]
    if problems:
        raise GenerationRefused(problems)
    for name, spec in pack.services.items():
        service = _head(images, None, str(name), str(spec["image"]))
        for key, value in spec.items():
            if key not in ("image", "role"):
                service[str(key)] = _out(value)
        _PACK_COMPUTED[str(spec.get("role"))](service, pack, engines)
        services[name] = service
    subjects += [host_labels(pack.name, name, port) for name, port in pack.scrape_ports.items()]
    _label(services, subjects)
    _refuse_unfilled(pack.display, services)

    document = CommentedMap()
    document["name"] = pack.project
    document["services"] = services
    document["volumes"] = _out(_union(pack, "volumes", problems))
    document["networks"] = _out(_union(pack, "networks", problems))
    configs: dict[str, str] = {}
    for member in pack.members:
        configs.update(member.source.configs)
    configs.update(pack.configs)
    member_blocks = "".join(
        fill(configs.get(_PACK_SERVER_CONFIG, ""), {"port": str(member.port), "proxy": _proxy_of(member)})
        for member in pack.members
    )
    document["configs"] = _configs(
        configs, services, subjects, pack.collector_config, {_PACK_NGINX_CONFIG: member_blocks}
    )
    if problems:
        raise GenerationRefused(problems)
    stream = io.StringIO()
    roundtrip().dump(document, stream)
    hosts = ", ".join(pack.hosts) or "-"
    members = ", ".join(member.stack for member in pack.members)
    header = (
        "# GENERATED FILE: DO NOT EDIT. Every byte is checked by `nox -s generated`.\n"
        f"# Generator: {GENERATOR} (generators/, the pack {pack.display} of the stacks {members})\n"
        f"# Target: {pack.name} (tier {pack.tier}; hosts: {hosts})\n"
        f"# To change it: edit the pack or its stacks' sources, run `{REGENERATE}`, commit both.\n"
    )
    return ((header + stream.getvalue()).rstrip("\n") + "\n").encode("utf-8")


def _pack_images(pack: Pack, problems: list[str]) -> dict[str, str]:
    """The members' image catalogues and the pack's as one: a key pinned differently by
    two of them is refused."""
    images: dict[str, str] = {}
    for owner, catalogue in [
        *((m.source.display, m.source.images) for m in pack.members),
        (pack.display, pack.images),
    ]:
        for key, ref in catalogue.items():
            if images.setdefault(key, ref) != ref:
                problems.append(
                    f"{owner}: refused: image '{key}' is {ref} here but {images[key]} in "
                    f"another member of {pack.name}; one file runs one image per name"
                )
    return images


def _union(pack: Pack, key: str, problems: list[str]) -> dict[str, Any]:
    """The members' (and the pack's) top-level `volumes:` or `networks:` as one mapping."""
    merged: dict[str, Any] = {}
    for owner, value in [
        *((m.source.display, getattr(m.source, key)) for m in pack.members),
        (pack.display, getattr(pack, key)),
    ]:
        for name, body in (value or {}).items():
            if name in merged and merged[name] != body:
                problems.append(
                    f"{owner}: refused: {key} '{name}' is defined differently by two members of {pack.name}"
                )
            merged.setdefault(str(name), body)
    return merged


def _proxy_of(member: Member) -> str:
    return next(
        (str(name) for name, spec in member.source.services.items() if spec.get("role") == "proxy"), ""
    )


def _member_networks(pack: Pack) -> list[str]:
    return list(
        dict.fromkeys(str(name) for member in pack.members for name in (member.source.networks or {}))
    )


def _pack_front_door(service: CommentedMap, pack: Pack, engines: list[Engine]) -> None:
    # One TLS port per model, each to its own proxy; and every member's network.
    for member in pack.members:
        service["ports"].append(_scalar(f"{member.port}:{member.port}"))
    service["depends_on"] = _out([_proxy_of(member) for member in pack.members])
    networks = service.get("networks") or CommentedSeq()
    service["networks"] = _out(list(dict.fromkeys([*networks, *_member_networks(pack)])))


def _pack_registrar(service: CommentedMap, pack: Pack, engines: list[Engine]) -> None:
    # What the script announces: each model's served name and the port it is reached at.
    models = " ".join(f"{member.source.model.served_name}={member.port}" for member in pack.members)
    service["environment"]["MODELS"] = _scalar(models)


def _pack_dcgm(service: CommentedMap, pack: Pack, engines: list[Engine]) -> None:
    _dcgm(service, pack.members[0].source, pack.members[0].target, engines)


def _pack_collector(service: CommentedMap, pack: Pack, engines: list[Engine]) -> None:
    # Scrapes over every member's network: each member's engines and proxy live there.
    networks = service.get("networks") or CommentedSeq()
    service["networks"] = _out(list(dict.fromkeys([*networks, *_member_networks(pack)])))


_PACK_COMPUTED: dict[str, Callable[[CommentedMap, Pack, list[Engine]], None]] = {
    "front-door": _pack_front_door,
    "registrar": _pack_registrar,
    "metrics-exporter": _pack_dcgm,
    "collector": _pack_collector,
}
# The pack's front door config, and the block repeated in it for every member
# ({port}: the member's port; {proxy}: its proxy's service name).
_PACK_NGINX_CONFIG = "pack_nginx_conf"
_PACK_SERVER_CONFIG = "pack_nginx_member"


def _head(images: Mapping[str, str], profile: str | None, name: str, image_key: str) -> CommentedMap:
    service = CommentedMap()
    # A built sidecar's image is the tag it builds, written as is.
    service["image"] = _scalar(images.get(image_key, image_key))
    service["container_name"] = _scalar(name)
    if profile:
        service["profiles"] = _out([profile])
    return service


def _engine_service(
    source: Source, target: Target, engine: Engine, shared: str | None = None
) -> CommentedMap:
    skeleton = source.engine.service
    service = _head(source.images, target.profile, engine.name, engine.image)
    for key, value in skeleton.items():
        if key != "image":
            service[str(key)] = _out(value)
    # Assigning an existing key keeps its position: the `~` placeholders of the source.
    if any(switch_of(word) for word in engine.argv):
        # A list would keep an unset switch as an empty argument; a string drops it.
        service["command"] = _scalar(
            " ".join(word if switch_of(word) else quote(word) for word in engine.argv)
        )
    else:
        service["command"] = _out(list(engine.argv))
    service["environment"] = _out(dict(engine.environment))
    service["deploy"] = _gpu_reservation(engine.gpus)
    if shared is not None:
        # Compose ignores `x-` keys; the validators read it: this engine's GPUs are shared
        # on purpose, and the engines on each one must leave each other memory.
        service[SHARE_KEY] = _scalar(shared)
    return service


def _gpu_reservation(gpus: tuple[str, ...]) -> CommentedMap:
    device = {
        "driver": NVIDIA_DEVICE["driver"],
        "device_ids": list(gpus),
        "capabilities": NVIDIA_DEVICE["capabilities"],
    }
    reservation: CommentedMap = _out({"resources": {"reservations": {"devices": [device]}}})
    return reservation


def _sidecar(
    source: Source, target: Target, engines: list[Engine], name: str, spec: Mapping[str, Any]
) -> CommentedMap:
    service = _head(source.images, target.profile, name, str(spec["image"]))
    for key, value in spec.items():
        if key not in ("image", "role"):
            service[str(key)] = _out(value)
    hook = _COMPUTED.get(str(spec.get("role")))
    if hook is not None:
        hook(service, source, target, engines)
    return service


# Keys of sidecars that are computed, not written in the source (the source says so
# in a comment at each place).
def _downloader(service: CommentedMap, source: Source, target: Target, engines: list[Engine]) -> None:
    service["command"] = _out(["download", source.model.repo, "--revision", source.model.revision])


def _proxy(service: CommentedMap, source: Source, target: Target, engines: list[Engine]) -> None:
    # The proxy's pool: every engine, in replica order, at its --port.
    urls = ",".join(f"http://{engine.name}:{engine.port}" for engine in engines)
    service["environment"]["VLLM_BACKEND_URLS"] = _scalar(urls)


def _nginx(service: CommentedMap, source: Source, target: Target, engines: list[Engine]) -> None:
    if target.discovery_port is not None:
        port = str(target.discovery_port)
        service["ports"].append(_scalar(f"{port}:{port}"))


def _registrar(service: CommentedMap, source: Source, target: Target, engines: list[Engine]) -> None:
    for key, value in target.registrar_environment.items():
        service["environment"][key] = _scalar(value)


def _dcgm(service: CommentedMap, source: Source, target: Target, engines: list[Engine]) -> None:
    # DCGM must see every GPU any engine uses.
    gpus = sorted({gpu for engine in engines for gpu in engine.gpus}, key=int)
    service["deploy"] = _gpu_reservation(tuple(gpus))


# By role (the source's `role:`), never by a service's name.
_COMPUTED: dict[str, Callable[[CommentedMap, Source, Target, list[Engine]], None]] = {
    "downloader": _downloader,
    "proxy": _proxy,
    "front-door": _nginx,
    "registrar": _registrar,
    "metrics-exporter": _dcgm,
}

# Source configs consumed by another config rather than emitted on their own.
_DISCOVERY_CONFIG = "nginx_discovery"
_COLLECTOR_CONFIG = "otelcol_app_config"


def _configs(
    configs: Mapping[str, str],
    services: CommentedMap,
    subjects: list[Subject],
    collector_config: Any,
    extra: Mapping[str, str],
) -> CommentedMap:
    """The configs the services mount (in the order of `configs`), each with any `extra`
    text appended, and the collector's, computed from the subjects."""
    used = {
        str(entry.get("source"))
        for service in services.values()
        for entry in service.get("configs") or ()
        if hasattr(entry, "get")
    }
    out = CommentedMap()
    for name, content in configs.items():
        if name in used and name != _COLLECTOR_CONFIG:
            out[name] = _out({"content": LiteralScalarString(content + extra.get(name, ""))})
    out[_COLLECTOR_CONFIG] = _out(
        {"content": LiteralScalarString(_collector_text(collector_config, subjects))}
    )
    return out


def _collector_text(collector_config: Any, subjects: list[Subject]) -> str:
    config = _out(collector_config)
    receiver = config["receivers"]["prometheus/apps"]["config"]
    receiver["scrape_configs"] = _out([scrape_job(subject) for subject in subjects])
    stream = io.StringIO()
    roundtrip().dump(config, stream)
    return stream.getvalue()


def _out(value: Any, *, flow: bool = False) -> Any:
    """A fresh copy for output: new containers (no source comments), flow style kept."""
    if isinstance(value, Mapping):
        inner = flow or _is_flow(value)
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[str(key)] = _out(item, flow=inner)
        if inner:
            mapping.fa.set_flow_style()
        return mapping
    if isinstance(value, list | tuple):
        inner = flow or _is_flow(value)
        sequence = CommentedSeq(_out(item, flow=inner) for item in value)
        if inner:
            sequence.fa.set_flow_style()
        return sequence
    if isinstance(value, str):
        return _scalar(value, flow=flow)
    return value


def _nulls(value: Any, path: str = "") -> list[str]:
    """Paths of `~` values left in a service (a placeholder no hook filled)."""
    if value is None:
        return [path.lstrip(".")]
    if isinstance(value, Mapping):
        return [found for key, item in value.items() for found in _nulls(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _nulls(item, f"{path}[{index}]")]
    return []


def _is_flow(value: Any) -> bool:
    fa = getattr(value, "fa", None)
    return bool(fa is not None and fa.flow_style())


def _scalar(text: str, *, flow: bool = False) -> str:
    styled: str
    if isinstance(text, LiteralScalarString) or "\n" in text:
        styled = LiteralScalarString(str(text))
    elif _AMBIGUOUS.match(text) or (flow and _FLOW_UNSAFE.search(text)):
        styled = DoubleQuotedScalarString(text)
    else:
        styled = str(text)
    return styled
