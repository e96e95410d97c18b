"""Load a stack's source (`<stack>.source.yaml`) into typed, position-carrying data.

Everything a user can get wrong in a stack's source, its targets (`targets.py`) or the
shared parts (`parts.py`) is caught there or in `engine.py` and reported as one line
with `file:line:col`; the renderer only ever sees data that makes sense.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generators.features import FEATURES, Feature, FeatureArgs
from generators.parts import apply_parts
from generators.reader import Reader, fleet_relative, placeholders
from tierops.errors import InputError, RefusedError
from tierops.yamlio import Mark, load_roundtrip

SOURCE_SUFFIX = ".source.yaml"
TARGETS_SUFFIX = ".targets.yaml"

# What a sidecar is to the generator (`role:` in the source, never emitted): the role,
# not the service's name, says which values are computed for it.
# Beside `build:`: why the service is built on the host (Compose ignores `x-` keys;
# the validators accept the build when the reason is there).
BUILD_REASON = "x-build-reason"
ROLES = ("downloader", "proxy", "front-door", "registrar", "metrics-exporter", "collector")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# The placeholders a base argv item may use; anything else in braces is a typo.
ARGV_PLACEHOLDERS = frozenset({"model_path", "served_name", "port", "rendezvous_port"})


class GenerationRefused(RefusedError):
    """One or more refusals, each already a full `file:line:col: message` line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ArgvItem:
    """One item of the base argv: fixed tokens, or the slot of a feature."""

    tokens: tuple[str, ...]
    slot: str | None
    where: Mark
    # `when_set: VAR`: the tokens are passed only when the host sets VAR (`${VAR:+...}`).
    switch: str | None = None


@dataclass(frozen=True)
class Replica:
    name: str
    instance: str
    gpus: tuple[str, ...]
    rendezvous_port: int
    # A replica on another engine build (a canary of a new image): its `images:` key and
    # the build token its config_variant carries. None: the engine's own.
    image: str | None = None
    build: str | None = None


@dataclass(frozen=True)
class Model:
    served_name: str
    repo: str
    revision: str
    precision: str
    cache_dir: str

    @property
    def snapshot_dir(self) -> str:
        repo_dir = "models--" + self.repo.replace("/", "--")
        return f"{self.cache_dir}/hub/{repo_dir}/snapshots/{self.revision}"


@dataclass(frozen=True)
class EngineSkeleton:
    name_template: str
    port: int
    build: str
    quantization: str
    hardware: str
    argv: tuple[ArgvItem, ...]
    environment: Mapping[str, Any]
    environment_marks: Mapping[str, Mark]
    service: Mapping[str, Any]
    # config_variant's parallelism tokens, in order: token -> the flag whose value it
    # carries (`tp: --tp-size` makes `tp4`); the engine program decides the spelling.
    parallel: Mapping[str, str] = field(default_factory=dict)
    # Features every replica of the stack must list (their slot must be filled).
    required_features: tuple[str, ...] = ()
    # Defaults of features' options for the stack: feature -> option -> value.
    feature_options: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    where: Mark | None = None


@dataclass(frozen=True)
class Source:
    path: Path
    display: str
    images: Mapping[str, str]
    project: str
    model: Model
    engine: EngineSkeleton
    replicas: Mapping[str, Replica]
    services: Mapping[str, Any]
    scrape_ports: Mapping[str, int]
    volumes: Any
    networks: Any
    configs: Mapping[str, str]
    collector_config: Any


@dataclass(frozen=True)
class FeatureUse:
    feature: Feature
    args: FeatureArgs
    where: Mark

    @property
    def text(self) -> str:
        """As a reviewer reads it: `chunk 8192`, `hicache(ram_budget=...)`, `dyntok`."""
        if self.args.value is not None:
            return f"{self.feature.name} {self.args.value}"
        if self.args.options:
            options = ", ".join(f"{k}={v}" for k, v in self.args.options.items())
            return f"{self.feature.name}({options})"
        return self.feature.name


@dataclass(frozen=True)
class Target:
    name: str
    tier: str
    hosts: tuple[str, ...]
    profile: str | None
    discovery_port: int | None
    registrar_environment: Mapping[str, str]
    replicas: Mapping[str, tuple[FeatureUse, ...]]
    where: Mark

    @property
    def filename(self) -> str:
        return f"{self.name}.yaml"


def _roles(r: Reader, services: Mapping[str, Any]) -> None:
    """Each sidecar's `role:` is a known one, and no two sidecars share one."""
    seen: dict[str, str] = {}
    for name, spec in services.items():
        role = spec.get("role") if hasattr(spec, "get") else None
        if role is None:
            continue
        if role not in ROLES:
            r.fail(r.at(spec, "role"), f"{name}: unknown role '{role}' (roles: {', '.join(ROLES)})")
        elif role in seen:
            r.fail(
                r.at(spec, "role"), f"{name}: role '{role}' is already {seen[role]}'s; one service per role"
            )
        else:
            seen[str(role)] = str(name)


def _service_images(r: Reader, specs: list[tuple[Any, Any]], images: Mapping[str, str]) -> None:
    """Each service names an entry of `images:`, or is a declared build."""
    for name, spec in specs:
        if hasattr(spec, "get") and "part" in spec:
            continue  # a part that does not exist: said once, at its `part:`
        if hasattr(spec, "get") and "build" in spec:
            _built(r, str(name), spec)
        elif not hasattr(spec, "get") or spec.get("image") not in images:
            r.fail(r.at(spec, "image"), f"{name}: image must name an entry of images: ({', '.join(images)})")


def _built(r: Reader, name: str, spec: Any) -> None:
    """A sidecar built on the host: allowed when it says why, with the tag it builds."""
    if name == "engine.service":
        # config_variant and the engine_image label name the engine's build by its digest.
        r.fail(
            r.at(spec, "build"),
            "engine.service: an engine runs a pinned image; push its build and pin the digest in images:",
        )
        return
    reason = spec.get(BUILD_REASON)
    if not isinstance(reason, str) or not reason.strip():
        r.fail(
            r.at(spec, "build"),
            f"{name}: `build:` needs `{BUILD_REASON}: <why it is built on the host>` beside it",
        )
    if not isinstance(spec.get("image"), str):
        r.fail(r.at(spec), f"{name}: a built service names the tag it builds, `image: <name:tag>`")


# The keys each part of a stack's data may hold.
SOURCE_KEYS = (
    "images", "project", "model", "engine", "replicas", "parts", "services", "scrape", "volumes",
    "networks", "configs", "collector_config",
)  # fmt: skip
MODEL_KEYS = ("served_name", "repo", "revision", "precision", "cache_dir")
ENGINE_KEYS = (
    "name", "port", "variant", "required_features", "feature_options", "argv", "environment", "service",
)  # fmt: skip
VARIANT_KEYS = ("build", "quantization", "hardware", "parallel")
REPLICA_KEYS = ("instance", "gpus", "rendezvous_port", "image", "build")


def load_source(path: Path, *, display: str | None = None) -> Source:
    shown = display or fleet_relative(path)
    doc = load_roundtrip(path, display=shown)
    if not hasattr(doc, "items"):
        raise InputError("the source must be a YAML mapping", where=f"{shown}:1:1")
    r = Reader(shown)
    r.known(doc, SOURCE_KEYS, "source")
    apply_parts(r, doc, path)
    images = read_images(r, doc)
    model_map = r.mapping(doc, "model") or {}
    r.known(model_map, MODEL_KEYS, "model")
    model = Model(
        served_name=r.scalar(model_map, "served_name", str) or "",
        repo=r.scalar(model_map, "repo", str) or "",
        revision=r.scalar(model_map, "revision", str) or "",
        precision=r.scalar(model_map, "precision", str) or "",
        cache_dir=r.scalar(model_map, "cache_dir", str) or "",
    )
    engine = _engine(r, doc)
    services = r.mapping(doc, "services") or {}
    _service_images(r, [("engine.service", engine.service), *services.items()], images)
    _roles(r, services)
    scrape_ports: dict[str, int] = {}
    for name, port in (r.mapping(doc, "scrape") or {}).items():
        if name not in services:
            r.fail(r.at(doc["scrape"], name), f"scrape: '{name}' is not a service of the source")
        elif not isinstance(port, int) or isinstance(port, bool):
            r.fail(r.at(doc["scrape"], name), f"scrape: port of '{name}' must be an int")
        else:
            scrape_ports[str(name)] = port
    configs: dict[str, str] = {}
    for name, content in (r.mapping(doc, "configs") or {}).items():
        if isinstance(content, str):
            configs[str(name)] = str(content)
        else:
            r.fail(r.at(doc["configs"], name), f"config '{name}' must be a block of text")
    collector = r.mapping(doc, "collector_config")
    project = r.scalar(doc, "project", str) or ""
    replicas = _replicas(r, doc, images, engine)
    if engine.name_template and "{replica}" not in engine.name_template and len(replicas) > 1:
        r.fail(
            r.at(doc["engine"], "name"),
            "engine.name must contain {replica} when the stack has two or more replicas",
        )
    if r.problems:
        raise GenerationRefused(r.problems)
    return Source(
        path=path,
        display=shown,
        images=images,
        project=project,
        model=model,
        engine=engine,
        replicas=replicas,
        services=services,
        scrape_ports=scrape_ports,
        volumes=doc.get("volumes"),
        networks=doc.get("networks"),
        configs=configs,
        collector_config=collector,
    )


def read_images(r: Reader, doc: Any) -> dict[str, str]:
    """The `images:` catalogue, every entry pinned by digest."""
    images: dict[str, str] = {}
    for name, ref in (r.mapping(doc, "images") or {}).items():
        if not isinstance(ref, str) or not _DIGEST.search(ref):
            r.fail(r.at(doc["images"], name), f"image '{name}' must be pinned as name@sha256:<64 hex>")
        else:
            images[str(name)] = ref
    return images


def _engine(r: Reader, doc: Any) -> EngineSkeleton:
    engine_map = r.mapping(doc, "engine") or {}
    r.known(engine_map, ENGINE_KEYS, "engine")
    variant_map = r.mapping(engine_map, "variant") or {}
    r.known(variant_map, VARIANT_KEYS, "engine.variant")
    env_map = r.mapping(engine_map, "environment") or {}
    parallel = r.mapping(variant_map, "parallel", required=False) or {}
    for token, flag in parallel.items():
        if not isinstance(flag, str) or not flag.startswith("-"):
            r.fail(r.at(parallel, token), f"engine.variant.parallel.{token} names a flag (`{token}: --flag`)")
    required = (r.strings(engine_map, "required_features") if "required_features" in engine_map else ()) or ()
    for name in required:
        if name not in FEATURES:
            r.fail(
                r.at(engine_map, "required_features"),
                f"engine.required_features: unknown feature '{name}' (features: {', '.join(FEATURES)})",
            )
    options = r.mapping(engine_map, "feature_options", required=False) or {}
    for name, given in options.items():
        feature = FEATURES.get(str(name))
        if feature is None or not hasattr(given, "items") or any(key not in feature.options for key in given):
            takes = "; ".join(f"{n}: {', '.join(f.options)}" for n, f in FEATURES.items() if f.options)
            r.fail(r.at(options, name), f"engine.feature_options.{name}: not options of a feature ({takes})")
    engine = EngineSkeleton(
        name_template=r.scalar(engine_map, "name", str) or "",
        port=r.scalar(engine_map, "port", int) or 0,
        build=r.scalar(variant_map, "build", str) or "",
        quantization=r.scalar(variant_map, "quantization", str) or "",
        hardware=r.scalar(variant_map, "hardware", str) or "",
        argv=_argv(r, engine_map),
        environment=env_map,
        environment_marks={str(k): r.at(env_map, k) for k in env_map},
        service=r.mapping(engine_map, "service") or {},
        parallel={str(token): str(flag) for token, flag in parallel.items()},
        required_features=tuple(str(name) for name in required),
        feature_options={
            str(name): {str(k): str(v) for k, v in given.items()}
            for name, given in options.items()
            if hasattr(given, "items")
        },
        where=r.at(engine_map, "name"),
    )
    return engine


def _argv(r: Reader, engine_map: Any) -> tuple[ArgvItem, ...]:
    raw = engine_map.get("argv")
    if not isinstance(raw, list) or not raw:
        r.fail(r.at(engine_map), "engine.argv must be a non-empty list")
        return ()
    items: list[ArgvItem] = []
    for index, item in enumerate(raw):
        where = r.at(raw, index)
        if hasattr(item, "items") and "when_set" in item:
            switched = _switch_item(r, where, item)
            if switched is not None:
                items.append(switched)
        elif hasattr(item, "items"):
            slot = item.get("feature")
            if set(item) != {"feature"} or not isinstance(slot, str):
                r.fail(
                    where, "an argv slot is written `feature: <name>`, a switch `{when_set: VAR, argv: ...}`"
                )
            else:
                items.append(ArgvItem(tokens=(), slot=slot, where=where))
        elif (isinstance(item, str) and item.strip()) or (
            isinstance(item, list) and item and all(isinstance(word, str) for word in item)
        ):
            # A string is split on spaces; a list is its words as written, so a value
            # may hold spaces (`[--override-generation-config, '{"temperature": 0.6}']`).
            words = tuple(item.split()) if isinstance(item, str) else tuple(str(word) for word in item)
            for name in (name for word in words for name in placeholders(word)):
                if name not in ARGV_PLACEHOLDERS:
                    known = ", ".join(sorted(ARGV_PLACEHOLDERS))
                    r.fail(where, f"unknown placeholder {{{name}}} in argv item '{item}' (known: {known})")
            items.append(ArgvItem(tokens=words, slot=None, where=where))
        else:
            r.fail(
                where,
                f"an argv item is a string '--flag value', a list of words, or `feature: <name>`, not {item!r}",
            )
    return tuple(items)


_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Braces a switch's words may hold: `${NAME}` references. Any other brace would end or
# unbalance the `${VAR:+...}` reference before Compose splits its words.
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _switch_item(r: Reader, where: Mark, item: Any) -> ArgvItem | None:
    """`{when_set: VAR, argv: "--flag value"}`: flags the engine gets only when VAR is set."""
    var, words = item.get("when_set"), item.get("argv")
    if set(item) != {"when_set", "argv"} or not isinstance(var, str) or not _VAR.match(var):
        r.fail(where, "a switch is written `{when_set: VAR, argv: '--flag value'}` (VAR a variable name)")
        return None
    if isinstance(words, str) and words.strip():
        tokens = tuple(words.split())
    elif isinstance(words, list) and words and all(isinstance(word, str) for word in words):
        tokens = tuple(words)
    else:
        r.fail(where, f"switch on {var}: argv is a string '--flag value' or a list of words")
        return None
    if any(ch in _REFERENCE.sub("", token) for token in tokens for ch in "{}"):
        r.fail(
            where,
            f"switch on {var}: a brace other than a ${{NAME}} reference would end ${{{var}:+...}} early",
        )
        return None
    return ArgvItem(tokens=tokens, slot=None, where=where, switch=var)


def _replicas(r: Reader, doc: Any, images: Mapping[str, str], engine: EngineSkeleton) -> dict[str, Replica]:
    replicas: dict[str, Replica] = {}
    for name, spec in (r.mapping(doc, "replicas") or {}).items():
        if not hasattr(spec, "items"):
            r.fail(r.at(doc["replicas"], name), f"replica '{name}' must be a mapping")
            continue
        r.known(spec, REPLICA_KEYS, f"replica '{name}'")
        image = r.scalar(spec, "image", str, required=False)
        build = r.scalar(spec, "build", str, required=False)
        if image is not None and image not in images:
            r.fail(
                r.at(spec, "image"),
                f"replica '{name}': image must name an entry of images: ({', '.join(images)})",
            )
        elif (
            image is not None
            and build is None
            and images[image] != images.get(str(engine.service.get("image")))
        ):
            # Two builds under one config_variant could not be told apart on a dashboard.
            r.fail(
                r.at(spec, "image"),
                f"replica '{name}' runs another image than the engine's: give the build token its config_variant carries (`build: <token>`)",
            )
        if build is not None and image is None:
            r.fail(
                r.at(spec, "build"),
                f"replica '{name}': `build:` goes with the `image:` it names the build of",
            )
        replicas[str(name)] = Replica(
            name=str(name),
            instance=r.scalar(spec, "instance", str) or "",
            gpus=r.strings(spec, "gpus") or (),
            rendezvous_port=r.scalar(spec, "rendezvous_port", int) or 0,
            image=image,
            build=build,
        )
    return replicas


def engine_name(source: Source, replica: str) -> str:
    return source.engine.name_template.replace("{replica}", replica)
