"""The declarative contracts under validators/contracts/, read into typed values.

A stack's contract (`<stack>.yaml`) says what every prod file it claims must contain;
engine-build.yaml says which engine flags exist (the manifest plus declared patch flags)
and which combinations break at startup. Rules read these values; they never import generators/.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tierops import layout
from tierops.errors import InputError
from tierops.roles import Role
from tierops.yamlload import LoadError, load_path

CONTRACTS = layout.contracts_dir()
DEFAULT_BUILD = CONTRACTS / "engine-build.yaml"


@dataclass(frozen=True)
class Replica:
    name: str  # r1, r2
    service: str
    instance: str
    gpus: tuple[str, ...]
    rendezvous: str
    # A replica on another engine build: its image and the build token of its variant.
    image: str | None = None
    build: str | None = None


@dataclass(frozen=True)
class Feature:
    name: str
    argv: tuple[tuple[str, ...], ...]  # one tuple of tokens per flag
    env: Mapping[str, str]
    marker_flag: str | None
    marker_env: tuple[str, str] | None


@dataclass(frozen=True)
class ReplicaPlan:
    chunk: str | None  # only for a contract whose argv or variant reads {chunk}
    pdi: str | None
    features: tuple[str, ...]  # in feature order
    env: Mapping[str, str]  # overrides of feature env values


@dataclass(frozen=True)
class FileContract:
    stem: str
    tier: str
    profile: str | None
    nginx_ports: tuple[str, ...]
    registrar_env: Mapping[str, str]
    delta: tuple[str, ...]
    replicas: Mapping[str, ReplicaPlan]


@dataclass(frozen=True)
class Contract:
    path: Path
    model: Mapping[str, str]
    images: Mapping[str, str]
    qsplit_images: tuple[str, ...]
    services: tuple[str, ...]
    downloader: Mapping[str, Any]
    replicas: Mapping[str, Replica]
    islands: tuple[tuple[str, ...], ...]
    engine_image: str
    # `{build}` in the variant: a replica's own build, else this one.
    engine_build: str
    engine_settings: Mapping[str, Any]
    engine_forbidden_keys: tuple[str, ...]
    program: tuple[str, ...]
    argv: tuple[tuple[str, ...], ...]
    env: Mapping[str, str]
    features: Mapping[str, Feature]  # in feature order
    variant: str
    # The variant's fields read from the engine's own flags: field -> flag.
    variant_fields: Mapping[str, str]
    parity_keys: tuple[str, ...]
    parity_paths: tuple[tuple[str, ...], ...]  # per-replica deltas inside a key (`*`: any item)
    parity_labels: tuple[str, ...]  # the replica's own label suffixes
    parity_flags: tuple[str, ...]
    parity_env: tuple[str, ...]
    chunk_requires_qsplit: tuple[str, ...]
    proxy: Mapping[str, Any]
    nginx: Mapping[str, Any]
    registrar: Mapping[str, Any]
    files: Mapping[str, FileContract]
    telemetry: Mapping[str, Any]
    dcgm: Mapping[str, Any]
    # Per-service exceptions of the wiring rule for this stack's files, keyed by service
    # name (`roles`, `healthcheck_exempt`): the shared wiring contract names no service.
    wiring: Mapping[str, Any] = field(default_factory=dict)

    def replica_of(self, service: str) -> Replica | None:
        for replica in self.replicas.values():
            if replica.service == service:
                return replica
        return None

    def values(self, file: FileContract, replica: Replica) -> dict[str, str]:
        plan = file.replicas[replica.name]
        values = {
            "snapshot_dir": self.model["snapshot_dir"],
            "served_name": self.model["served_name"],
            "chunk": plan.chunk,
            "pdi": plan.pdi,
            "rendezvous": replica.rendezvous,
        }
        return {key: value for key, value in values.items() if value is not None}

    def expected_flags(self, file: FileContract, replica: Replica) -> list[tuple[str, ...]]:
        """The contract argv after the program, one tuple of tokens per flag."""
        values = self.values(file, replica)
        flags = [tuple(_fill(token, values) for token in item) for item in self.argv]
        for name in file.replicas[replica.name].features:
            flags.extend(self.features[name].argv)
        return flags

    def expected_env(self, file: FileContract, replica: Replica) -> dict[str, str]:
        env = dict(self.env)
        plan = file.replicas[replica.name]
        for name in plan.features:
            env.update(self.features[name].env)
        env.update(plan.env)
        return env


@dataclass(frozen=True)
class PatchFlag:
    flag: str
    action: str
    type: str
    reason: str


@dataclass(frozen=True)
class Conflict:
    flags: tuple[str, ...]
    level: str
    message: str


@dataclass(frozen=True)
class Requirement:
    """A flag the engine refuses to start with unless one of `needs` is set too."""

    flag: str
    needs: tuple[str, ...]
    level: str
    message: str


ENGINE_KINDS = ("sglang", "vllm")


@dataclass(frozen=True)
class BuildContract:
    """One engine build: the flags it accepts (a manifest plus declared patch flags),
    the startup rules that bite, and the images that run it."""

    path: Path
    name: str
    manifest: str  # a file of validators/manifest/ (an absolute path as written)
    patch_flags: Mapping[str, PatchFlag]
    conflicts: tuple[Conflict, ...]
    requires: tuple[Requirement, ...] = ()
    # The images that run this build: only their engines are judged by its manifest.
    images: tuple[str, ...] = ()
    engine: str = "sglang"  # sglang | vllm: the program whose argv the manifest describes
    # How the build's version was established (read from the image, or stated by the team).
    basis: str = ""


def _read(path: Path) -> dict[str, Any]:
    """A contract file through the same loader as prod files: a duplicate key is an error here too."""
    try:
        loaded = load_path(path)
    except InputError as exc:
        raise InputError(f"cannot read contract: {exc.message}", where=str(path)) from None
    except LoadError as exc:
        raise InputError(f"contract: {exc.message}", where=f"{path}:{exc.pos}") from None
    if len(loaded.documents) != 1:
        raise InputError("contract: one YAML document expected", where=str(path))
    return loaded.documents[0]


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _fill(token: str, values: Mapping[str, str]) -> str:
    """`token` with each `{name}` of `values` replaced; other braces (JSON) stay as written."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), token)


def _strs(values: Any) -> tuple[str, ...]:
    return tuple(str(value) for value in values or ())


def _str_map(values: Any) -> dict[str, str]:
    return {str(key): str(value) for key, value in (values or {}).items()}


@dataclass(frozen=True)
class PackClaim:
    """A file of several stacks (a pack) and the house policy it opts into."""

    stem: str
    members: tuple[str, ...]
    # The collector service and the env keys it may default softly (it must start
    # without its token), as a stack contract's telemetry.collector says.
    collector: str
    soft_default_env: tuple[str, ...]


PACKS_FILE = "packs.yaml"


def load_pack_claims(path: Path) -> dict[str, PackClaim]:
    """The packs of `packs.yaml` by file stem; no file: no packs."""
    if not path.is_file():
        return {}
    raw = _read(path)
    try:
        return {
            str(stem): PackClaim(
                stem=str(stem),
                members=_strs(body["members"]),
                collector=str((body.get("collector") or {}).get("service") or ""),
                soft_default_env=_strs((body.get("collector") or {}).get("soft_default_env")),
            )
            for stem, body in (raw or {}).items()
        }
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"packs file is malformed near {exc}", where=str(path)) from None


@functools.lru_cache(maxsize=8)
def load_contract(path: Path) -> Contract:
    raw = _read(path)
    try:
        return _contract(path, raw)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InputError(f"contract is malformed near {exc}", where=str(path)) from None


def _contract(path: Path, raw: dict[str, Any]) -> Contract:
    engines = raw["engines"]
    features: dict[str, Feature] = {}
    for name, declared in engines["features"].items():
        body = declared or {}
        marker = body.get("marker") or {}
        features[name] = Feature(
            name=name,
            argv=tuple(tuple(str(item).split()) for item in body.get("argv") or ()),
            env=_str_map(body.get("env")),
            marker_flag=marker.get("flag"),
            marker_env=(str(marker["env"]), str(marker["value"])) if "env" in marker else None,
        )
    order = list(features)
    files: dict[str, FileContract] = {}
    for stem, body in raw["files"].items():
        replicas = {}
        for replica, plan in body["replicas"].items():
            unknown = [name for name in plan.get("features") or () if name not in features]
            if unknown:
                raise ValueError(f"files.{stem}.replicas.{replica}: unknown feature {unknown[0]}")
            replicas[replica] = ReplicaPlan(
                chunk=str(plan["chunk"]) if "chunk" in plan else None,
                pdi=str(plan["pdi"]) if "pdi" in plan else None,
                features=tuple(sorted(plan.get("features") or (), key=order.index)),
                env=_str_map(plan.get("env")),
            )
        files[stem] = FileContract(
            stem=stem,
            tier=str(body["tier"]),
            profile=body.get("profile"),
            nginx_ports=_strs(body.get("nginx_ports")),
            registrar_env=_str_map(body.get("registrar_env")),
            delta=_strs(body.get("delta")),
            replicas=replicas,
        )
    wiring = dict(raw.get("wiring") or {})
    for service, role in (wiring.get("roles") or {}).items():
        if Role.from_key(str(role)) is None:
            known = ", ".join(item.key for item in Role)
            raise ValueError(f"wiring.roles.{service}: '{role}' is no role (roles: {known})")
    parity = engines["parity"]
    return Contract(
        path=path,
        model=_str_map(raw["model"]),
        images=_str_map(raw["images"]),
        qsplit_images=_strs(raw.get("qsplit_images")),
        services=_strs(raw["services"]),
        downloader=raw["downloader"],
        replicas={
            name: Replica(
                name,
                str(r["service"]),
                str(r["instance"]),
                _strs(r["gpus"]),
                str(r["rendezvous"]),
                image=str(raw["images"][r["image"]]) if r.get("image") is not None else None,
                build=str(r["build"]) if r.get("build") is not None else None,
            )
            for name, r in engines["replicas"].items()
        },
        engine_build=str(engines.get("build") or ""),
        islands=tuple(_strs(island) for island in engines["nvlink_islands"]),
        engine_image=str(raw["images"][engines["image"]]),
        engine_settings=dict(engines["settings"]),
        engine_forbidden_keys=_strs(engines.get("forbidden_keys")),
        program=_strs(engines["program"]),
        # A string is split on spaces; a list is its words as written (a value with spaces).
        argv=tuple(
            tuple(str(word) for word in item) if isinstance(item, list) else tuple(str(item).split())
            for item in engines["argv"]
        ),
        env=_str_map(engines["env"]),
        features=features,
        variant=str(engines["variant"]),
        variant_fields=_str_map(engines.get("variant_fields")),
        parity_keys=_strs(parity.get("keys")),
        parity_paths=tuple(tuple(str(path).split(".")) for path in parity.get("paths") or ()),
        parity_labels=_strs(parity.get("labels")),
        parity_flags=_strs(parity.get("flags")),
        parity_env=_strs(parity.get("env")),
        chunk_requires_qsplit=_strs((raw.get("pairing") or {}).get("chunk_requires_qsplit")),
        proxy=raw["proxy"],
        # A stack that lives only in packs has no front door or registrar of its own.
        nginx=raw.get("nginx") or {},
        registrar=raw.get("registrar") or {},
        files=files,
        telemetry=raw["telemetry"],
        dcgm=raw.get("dcgm") or {},
        wiring=wiring,
    )


@functools.lru_cache(maxsize=8)
def load_builds(path: Path = DEFAULT_BUILD) -> tuple[BuildContract, ...]:
    """Every build engine-build.yaml lists under `builds:`, in file order."""
    raw = _read(path)
    if not isinstance(raw.get("builds"), list) or not raw["builds"]:
        raise InputError(
            "engine build contract has no `builds:` list",
            where=str(path),
            hint="list each build under `builds:` with name, engine, manifest, images, patch_flags, conflicts, requires",
        )
    builds: list[BuildContract] = []
    owner: dict[str, str] = {}
    for index, body in enumerate(raw["builds"]):
        build = _build(path, index, body)
        if any(build.name == other.name for other in builds):
            raise InputError(f"builds[{index}]: a second build named {build.name}", where=str(path))
        for image in build.images:
            if image in owner:
                raise InputError(
                    f"builds[{index}] ({build.name}): image {image} is already the image of {owner[image]}",
                    where=str(path),
                    hint="an image runs one build: list it under one build only",
                )
            owner[image] = build.name
        builds.append(build)
    return tuple(builds)


def _build(path: Path, index: int, body: Any) -> BuildContract:
    try:
        engine = str(body.get("engine", ""))
        if engine not in ENGINE_KINDS:
            raise InputError(
                f"builds[{index}]: engine {engine or '(missing)'!r} is not one of {', '.join(ENGINE_KINDS)}",
                where=str(path),
                hint="say which program the build's manifest describes: `engine: sglang` or `engine: vllm`",
            )
        return BuildContract(
            path=path,
            name=str(body["name"]),
            manifest=str(body["manifest"]),
            patch_flags={
                str(flag): PatchFlag(
                    str(flag), str(item["action"]), str(item.get("type", "str")), str(item["reason"])
                )
                for flag, item in (body.get("patch_flags") or {}).items()
            },
            conflicts=tuple(
                Conflict(_strs(item["flags"]), str(item["level"]), str(item["message"]))
                for item in body.get("conflicts") or ()
            ),
            requires=tuple(
                Requirement(str(item["flag"]), _strs(item["needs"]), str(item["level"]), str(item["message"]))
                for item in body.get("requires") or ()
            ),
            images=_strs(body.get("images")),
            engine=engine,
            basis=str(body.get("basis") or ""),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"engine build contract is malformed near builds[{index}] {exc}", where=str(path)
        ) from None
