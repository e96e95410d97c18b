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
from generators.source import GenerationRefused, Source, Target, engine_name
from generators.telemetry import Subject, labels_for, scrape_job
from tierops.argv import switch_of
from tierops.shellwords import quote
from tierops.yamlio import roundtrip

REGENERATE = "nox -s generate"
GENERATOR = "python -m generators"
NVIDIA_DEVICE = {"driver": "nvidia", "capabilities": ["gpu"]}

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
    subjects: list[Subject] = []
    services = CommentedMap()
    engine_deps = set(source.engine.service.get("depends_on") or ())
    pending = list(engines)
    for name, spec in source.services.items():
        services[name] = _sidecar(source, target, engines, str(name), spec)
        if name in engine_deps:
            engine_deps.discard(name)
        if not engine_deps and pending:
            for engine in pending:
                services[engine.name] = _engine_service(source, target, engine)
                subjects.append(labels_for(source, target, engine.name, engine.port, engine))
            pending = []
    if pending:
        raise GenerationRefused(
            [
                f"{source.display}: refused: engines depend on services the source does not define: {', '.join(sorted(engine_deps))}"
            ]
        )
    for name, port in source.scrape_ports.items():
        subjects.append(labels_for(source, target, name, port))
    subjects.sort(key=lambda subject: list(services).index(subject.service))
    for subject in subjects:
        services[subject.service]["labels"] = _out(dict(subject.labels))
    for engine in engines:
        uses = sorted(
            target.replicas[engine.replica], key=lambda use: engine.features.index(use.feature.name)
        )
        features = ", ".join(use.text for use in uses)
        services.yaml_set_comment_before_after_key(
            engine.name, before=f"{engine.replica}: {features}\nconfig_variant {engine.variant}", indent=2
        )

    unfilled = [f"{name}.{path}" for name, service in services.items() for path in _nulls(service)]
    if unfilled:
        raise GenerationRefused(
            [f"{source.display}: refused: placeholder(s) `~` that nothing computes: {', '.join(unfilled)}"]
        )

    document = CommentedMap()
    document["name"] = source.project
    document["services"] = services
    document["volumes"] = _out(source.volumes)
    document["networks"] = _out(source.networks)
    document["configs"] = _configs(source, target, subjects)
    return document


def _head(source: Source, target: Target, name: str, image_key: str) -> CommentedMap:
    service = CommentedMap()
    # A built sidecar's image is the tag it builds, written as is.
    service["image"] = _scalar(source.images.get(image_key, image_key))
    service["container_name"] = _scalar(name)
    if target.profile:
        service["profiles"] = _out([target.profile])
    return service


def _engine_service(source: Source, target: Target, engine: Engine) -> CommentedMap:
    skeleton = source.engine.service
    service = _head(source, target, engine.name, engine.image)
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
    service = _head(source, target, name, str(spec["image"]))
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


def _configs(source: Source, target: Target, subjects: list[Subject]) -> CommentedMap:
    configs = CommentedMap()
    for name, content in source.configs.items():
        if name == _DISCOVERY_CONFIG:
            continue
        text = content
        if name == "nginx_conf" and target.discovery_port is not None:
            text += source.configs[_DISCOVERY_CONFIG].replace("{port}", str(target.discovery_port))
        configs[name] = _out({"content": LiteralScalarString(text)})
    configs[_COLLECTOR_CONFIG] = _out({"content": LiteralScalarString(_collector_text(source, subjects))})
    return configs


def _collector_text(source: Source, subjects: list[Subject]) -> str:
    config = _out(source.collector_config)
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
