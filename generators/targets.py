"""The targets of a stack (its files and each replica's features), and stack discovery."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.features import FEATURES, Feature, FeatureArgs
from generators.reader import Reader, fleet_relative
from generators.source import (
    SOURCE_SUFFIX,
    TARGETS_SUFFIX,
    FeatureUse,
    GenerationRefused,
    Source,
    Target,
    engine_name,
)
from tierops.errors import InputError, UsageError
from tierops.yamlio import Mark, load_roundtrip

TIERS = ("base", "canary", "long-context")
_STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
TARGET_KEYS = (
    "tier", "hosts", "project", "profile", "discovery_port", "registrar_environment", "replicas",
    "host_variables",  # read by the rollout plan, not rendered: the variables every host sets
)  # fmt: skip


def file_entries(
    path: Path, what: str, display: str | None = None
) -> tuple[Reader, list[tuple[str, Any, Mark]]]:
    """The entries of a targets or pack file (`what`): each key, a file stem under prod/,
    with its mapping and where it is; a bad key or entry is a problem on the Reader."""
    shown = display or fleet_relative(path)
    doc = load_roundtrip(path, display=shown)
    if not hasattr(doc, "items") or not doc:
        raise InputError(f"the {what} file must be a non-empty YAML mapping", where=f"{shown}:1:1")
    r = Reader(shown)
    entries: list[tuple[str, Any, Mark]] = []
    for name, spec in doc.items():
        where = r.at(doc, name)
        if not isinstance(name, str) or not _STEM.match(name):
            r.fail(where, f"{what} name {name!r} is not a valid file stem")
        elif not hasattr(spec, "items"):
            r.fail(where, f"{what} '{name}' must be a mapping")
        else:
            entries.append((name, spec, where))
    return r, entries


def load_targets(source: Source, path: Path, *, display: str | None = None) -> list[Target]:
    r, entries = file_entries(path, "target", display)
    targets: list[Target] = []
    for name, spec, where in entries:
        r.known(spec, TARGET_KEYS, f"target '{name}'")
        tier = r.scalar(spec, "tier", str)
        if tier is not None and tier not in TIERS:
            r.fail(
                r.at(spec, "tier"), f"target '{name}': tier must be one of {', '.join(TIERS)}, not '{tier}'"
            )
        if "host_variables" in spec:
            r.strings(spec, "host_variables")
        registrar_env = r.mapping(spec, "registrar_environment", required=False) or {}
        replicas = replica_features(r, name, source, r.mapping(spec, "replicas") or {})
        targets.append(
            Target(
                name=name,
                tier=tier or "",
                hosts=tuple(str(h) for h in spec.get("hosts") or ()),
                profile=r.scalar(spec, "profile", str, required=False),
                discovery_port=r.scalar(spec, "discovery_port", int, required=False),
                registrar_environment={str(k): str(v) for k, v in registrar_env.items()},
                replicas=replicas,
                where=where,
            )
        )
    if r.problems:
        raise GenerationRefused(r.problems)
    return targets


def replica_features(
    r: Reader, name: str, source: Source, replicas_map: Any
) -> dict[str, tuple[FeatureUse, ...]]:
    """Each replica a file runs (of the source's) and the features it gets."""
    replicas: dict[str, tuple[FeatureUse, ...]] = {}
    for replica, features in replicas_map.items():
        rwhere = r.at(replicas_map, replica)
        if replica not in source.replicas:
            r.fail(
                rwhere,
                f"target '{name}': unknown replica '{replica}' (the source declares {', '.join(source.replicas)})",
            )
            continue
        if not isinstance(features, list):
            r.fail(rwhere, f"target '{name}', replica {replica}: features must be a list")
            continue
        replicas[str(replica)] = tuple(
            _feature_uses(r, name, str(replica), features, source, engine_name(source, str(replica)))
        )
    return replicas


def _feature_uses(
    r: Reader, target: str, replica: str, items: list[Any], source: Source, service: str
) -> Iterator[FeatureUse]:
    seen: dict[str, Mark] = {}
    for index, item in enumerate(items):
        where = r.at(items, index)
        if isinstance(item, str):
            name, raw = item, None
        elif hasattr(item, "items") and len(item) == 1:
            name, raw = next(iter(item.items()))
        else:
            r.fail(
                where,
                f"refused: {service} ({target}): a feature is written `name` or `name: value`, not {item!r}",
            )
            continue
        feature = FEATURES.get(str(name))
        if feature is None:
            r.fail(
                where,
                f"refused: unknown feature '{name}' for {service} ({target}); known features: {', '.join(FEATURES)}",
            )
            continue
        if feature.name in seen:
            r.fail(
                where,
                f"refused: feature '{feature.name}' listed twice for {service} ({target}), first at line {seen[feature.name].line}; list each feature once",
            )
            continue
        seen[feature.name] = where
        args = _feature_args(r, where, feature, raw, service, target)
        if args is not None:
            yield FeatureUse(feature=feature, args=args, where=where)


def _feature_args(
    r: Reader, where: Mark, feature: Feature, raw: Any, service: str, target: str
) -> FeatureArgs | None:
    context = f"feature '{feature.name}' of {service} ({target})"
    if feature.value_type is not None:
        if not isinstance(raw, int) or isinstance(raw, bool) or raw <= 0:
            r.fail(where, f"refused: {context} needs a positive integer, written `{feature.name}: N`")
            return None
        return FeatureArgs(value=raw)
    if raw is None:
        return FeatureArgs()
    if feature.options and hasattr(raw, "items"):
        unknown = [str(k) for k in raw if k not in feature.options]
        if unknown:
            r.fail(
                where,
                f"refused: {context}: unknown option(s) {', '.join(unknown)} (known: {', '.join(feature.options)})",
            )
            return None
        return FeatureArgs(options={str(k): str(v) for k, v in raw.items()})
    r.fail(where, f"refused: {context} takes no value")
    return None


@dataclass(frozen=True)
class Stack:
    """One stack's data: the source every file of it shares and the targets (its files).
    A stack that lives only in packs has no targets file."""

    name: str
    source: Path
    targets: Path | None


def discover(directory: Path) -> list[Stack]:
    """Every stack in `directory`: each `<name>.source.yaml`, with its `<name>.targets.yaml`
    when it renders files of its own (a pack's member may have none: see `orphan_sources`)."""
    if not directory.is_dir():
        raise UsageError(f"no stack directory {fleet_relative(directory)}/; pass --stacks-dir")
    stacks: list[Stack] = []
    for source in sorted(directory.glob(f"*{SOURCE_SUFFIX}")):
        name = source.name.removesuffix(SOURCE_SUFFIX)
        targets = directory / f"{name}{TARGETS_SUFFIX}"
        stacks.append(Stack(name, source, targets if targets.is_file() else None))
    for targets in sorted(directory.glob(f"*{TARGETS_SUFFIX}")):
        name = targets.name.removesuffix(TARGETS_SUFFIX)
        if not (directory / f"{name}{SOURCE_SUFFIX}").is_file():
            raise InputError(
                f"stack '{name}' has targets but no {name}{SOURCE_SUFFIX}; add its source or remove the targets",
                where=f"{fleet_relative(targets)}:1:1",
            )
    if not stacks:
        raise UsageError(f"no stacks in {fleet_relative(directory)}/: no *{SOURCE_SUFFIX} there")
    return stacks


def orphan_sources(stacks: list[Stack], members: set[str]) -> None:
    """A source that renders nothing (no targets file, in no pack) is a mistake."""
    for stack in stacks:
        if stack.targets is None and stack.name not in members:
            raise InputError(
                f"stack '{stack.name}' has a source but no {stack.name}{TARGETS_SUFFIX} and no pack names it; "
                "add its targets (the files it renders), name it in a pack's members, or remove the source",
                where=f"{fleet_relative(stack.source)}:1:1",
            )
