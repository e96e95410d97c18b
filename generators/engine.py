"""Assemble one engine replica: argv, env and config_variant from the skeleton and features.

The variant is computed here, once, from the same layers that produce the argv and
env, and `telemetry.py` copies it into both the engine's label and its scrape job:
the two places cannot disagree because there is only one value.
"""

from __future__ import annotations

from dataclasses import dataclass

from generators.features import (
    FEATURE_ORDER,
    FEATURES,
    FeatureArgs,
    Layer,
    Stage,
    owner_of_env,
    owner_of_flag,
)
from generators.reader import fill
from generators.source import FeatureUse, GenerationRefused, Source, Target, engine_name
from tierops.shellwords import join


@dataclass(frozen=True)
class Engine:
    replica: str
    name: str
    instance: str
    gpus: tuple[str, ...]
    port: int
    argv: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    variant: str
    features: tuple[str, ...]
    # The `images:` key the replica runs.
    image: str


def build_engines(source: Source, target: Target) -> list[Engine]:
    """Every engine of `target`, in replica order; refusals are collected, then raised."""
    problems: list[str] = []
    engines: list[Engine] = []
    for replica in target.replicas:
        try:
            engines.append(build_engine(source, target, replica))
        except GenerationRefused as refused:
            problems.extend(refused.lines)
    if problems:
        raise GenerationRefused(problems)
    return engines


def build_engine(source: Source, target: Target, replica_name: str) -> Engine:
    replica = source.replicas[replica_name]
    service = engine_name(source, replica_name)
    context = f"{service} ({target.name})"
    uses = sorted(target.replicas[replica_name], key=lambda use: FEATURE_ORDER[use.feature.name])
    problems: list[str] = []
    layers = _layers(source, target, uses, context, problems)
    values = {
        "model_path": source.model.snapshot_dir,
        "served_name": source.model.served_name,
        "port": str(source.engine.port),
        "rendezvous_port": str(replica.rendezvous_port),
    }
    argv: list[str] = []
    filled: set[str] = set()
    for item in source.engine.argv:
        if item.switch is not None:
            words = [fill(token, values) for token in item.tokens]
            argv.append(f"${{{item.switch}:+{join(words)}}}")
            continue
        if item.slot is None:
            argv.extend(fill(token, values) for token in item.tokens)
            continue
        feature = FEATURES.get(item.slot)
        if feature is None or not feature.has_slot:
            problems.append(
                f"{item.where}: refused: 'feature: {item.slot}' is not a feature with an argv slot (slots: {', '.join(n for n, f in FEATURES.items() if f.has_slot)})"
            )
            continue
        if item.slot in filled:
            problems.append(f"{item.where}: refused: the base argv has two slots for feature '{item.slot}'")
            continue
        filled.add(item.slot)
        if item.slot in layers:
            argv.extend(layers[item.slot].slot)
    for name, feature in FEATURES.items():
        listed = any(use.feature.name == name for use in uses)
        if name in source.engine.required_features and not listed:
            problems.append(
                f"{target.where}: refused: {context} lacks required feature '{name}' ({feature.summary}); add it to replica {replica_name}"
            )
        if feature.has_slot and name in layers and name not in filled:
            problems.append(
                f"{source.display}: refused: the base argv (engine.argv) has no `feature: {name}` slot, needed by {context}"
            )
    if problems:
        raise GenerationRefused(problems)
    for use in uses:
        argv.extend(layers[use.feature.name].tail)

    environment = [(str(key), str(value)) for key, value in source.engine.environment.items()]
    for use in uses:
        environment.extend(layers[use.feature.name].env)
    return Engine(
        replica=replica_name,
        name=service,
        instance=replica.instance,
        gpus=replica.gpus,
        port=source.engine.port,
        argv=tuple(argv),
        environment=tuple(environment),
        variant=config_variant(source, target, argv, uses, layers, replica.build),
        features=tuple(use.feature.name for use in uses),
        image=replica.image or str(source.engine.service.get("image")),
    )


def _layers(
    source: Source, target: Target, uses: list[FeatureUse], context: str, problems: list[str]
) -> dict[str, Layer]:
    """What each listed feature adds, its options being the stack's defaults and then the
    target's own; a feature missing an option it needs is a refusal added to `problems`."""
    layers: dict[str, Layer] = {}
    for use in uses:
        options = {**source.engine.feature_options.get(use.feature.name, {}), **use.args.options}
        missing = [option for option in use.feature.options if option not in options]
        if missing:
            problems.append(
                f"{target.where}: refused: {context}: feature '{use.feature.name}' needs {', '.join(missing)}: "
                f"give it in the targets (`{use.feature.name}: {{{missing[0]}: ...}}`) or as the stack's "
                f"default under engine.feature_options.{use.feature.name}"
            )
            continue
        layers[use.feature.name] = use.feature.apply(FeatureArgs(use.args.value, options))
    return layers


def config_variant(
    source: Source,
    target: Target,
    argv: list[str],
    uses: list[FeatureUse],
    layers: dict[str, Layer],
    build: str | None = None,
) -> str:
    """`<build>-<tier>-<quant>-<config features>-<hw>-tp<N>-ep<N>[-<ingestion features>]`."""
    config = [layers[u.feature.name].suffix for u in uses if u.feature.stage is Stage.CONFIG]
    ingestion = [layers[u.feature.name].suffix for u in uses if u.feature.stage is Stage.INGESTION]
    engine = source.engine
    tokens = [
        build or engine.build,
        target.tier,
        engine.quantization,
        *config,
        engine.hardware,
        *(f"{token}{_flag_value(argv, flag)}" for token, flag in engine.parallel.items()),
        *ingestion,
    ]
    return "-".join(token for token in tokens if token)


def _flag_value(argv: list[str], flag: str) -> str:
    for index, token in enumerate(argv[:-1]):
        if token == flag:
            return argv[index + 1]
    raise GenerationRefused(
        [f"refused: the base argv has no '{flag} N', which config_variant needs (engine.variant.parallel)"]
    )


def source_conflicts(source: Source, context: str) -> list[str]:
    """A source that already carries a feature's flag or env var would double it, or
    carry it on replicas that must not have it: refuse, naming file, service and flag."""
    problems: list[str] = []
    for item in source.engine.argv:
        for token in item.tokens:
            owner = owner_of_flag(token) if token.startswith("--") else None
            if owner is not None:
                flag = token.split("=", 1)[0]
                problems.append(
                    f"{item.where}: refused: {context}: the source already carries {flag}, "
                    f"which feature '{owner.name}' adds; remove it from engine.argv and list "
                    f"'{owner.name}' for the replicas that need it"
                )
    for key, where in source.engine.environment_marks.items():
        owner = owner_of_env(key)
        if owner is not None:
            problems.append(
                f"{where}: refused: {context}: the source already carries env {key}, which "
                f"feature '{owner.name}' adds; remove it from engine.environment and list "
                f"'{owner.name}' for the replicas that need it"
            )
    return problems
