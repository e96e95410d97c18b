"""The feature layers a target applies to the engine skeleton.

A feature is a named, reviewable change to one engine: flags (at a slot of the base
argv, or appended after it), environment variables, and the token it adds to the
engine's `config_variant`. Targets list features per replica in
`glm53.targets.yaml`; this module says what each one means. Features are applied in
the order of `FEATURES`, whatever order a target lists them in, so argv and variant
order never depend on how a reviewer happened to write the list.

Adding a feature: add a builder and an entry to `FEATURES`; list every flag and env
var it may add in `flags`/`env_keys`, so the generator can refuse a source that
already carries one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

# The seed change (dyntok PR): the tokenizer manager encodes single-string prompts on
# a background thread instead of the asyncio loop that also answers /health. Appended
# after every other flag, so the contract's tail stays recognisable.
INGESTION_FLAGS: Final[tuple[str, ...]] = ("--enable-dynamic-batch-tokenizer",)

HICACHE_FLAGS: Final[tuple[str, ...]] = (
    "--enable-hierarchical-cache",
    "--hicache-write-policy",
    "write_through",
    "--hicache-io-backend",
    "direct",
    "--hicache-mem-layout",
    "page_first_direct",
)


class Stage(Enum):
    """Where a feature's token goes in config_variant."""

    CONFIG = "config"  # before the hardware tokens: c8192-qsplit-hicache-pdi2
    INGESTION = "ingestion"  # after them: ...-h200-tp4-ep4-dyntok


@dataclass(frozen=True)
class FeatureArgs:
    """The parameters one target gives one feature: a scalar value and/or options."""

    value: int | None = None
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Layer:
    """What one applied feature contributes to one engine."""

    slot: tuple[str, ...] = ()  # tokens at the feature's slot in the base argv
    tail: tuple[str, ...] = ()  # tokens appended after the base argv
    env: tuple[tuple[str, str], ...] = ()
    suffix: str = ""


@dataclass(frozen=True)
class Feature:
    name: str
    summary: str
    stage: Stage
    build: Callable[[FeatureArgs], Layer]
    # Every flag and env var this feature may add: a source carrying one is refused.
    flags: tuple[str, ...] = ()
    env_keys: tuple[str, ...] = ()
    # A scalar parameter (`chunk: 8192`): its type, or None when the feature takes none.
    value_type: type[int] | None = None
    # Named options (`hicache: {ram_budget: ...}`) and what each means. A stack's source
    # gives their defaults (engine.feature_options); a target may override them.
    options: Mapping[str, str] = field(default_factory=dict)
    # The feature fills a `feature: <name>` slot of the base argv.
    has_slot: bool = False

    def apply(self, args: FeatureArgs) -> Layer:
        return self.build(args)


def _chunk(args: FeatureArgs) -> Layer:
    return Layer(slot=("--chunked-prefill-size", str(args.value)), suffix=f"c{args.value}")


def _qsplit(_: FeatureArgs) -> Layer:
    return Layer(env=(("SGLANG_DSA_INDEXER_QSPLIT", "1"),), suffix="qsplit")


def _hicache(args: FeatureArgs) -> Layer:
    budget = args.options["ram_budget"]
    return Layer(
        tail=HICACHE_FLAGS,
        env=(("SGLANG_HICACHE_RAM_BUDGET", budget), ("SGLANG_HICACHE_CUDA_HOST_MEMORY", "1")),
        suffix="hicache",
    )


def _pdi(args: FeatureArgs) -> Layer:
    return Layer(slot=("--prefill-decode-interval", str(args.value)), suffix=f"pdi{args.value}")


def _dyntok(_: FeatureArgs) -> Layer:
    return Layer(tail=INGESTION_FLAGS, suffix="dyntok")


FEATURES: Final[dict[str, Feature]] = {
    feature.name: feature
    for feature in (
        Feature(
            name="chunk",
            summary="--chunked-prefill-size N at its slot; variant c<N>",
            stage=Stage.CONFIG,
            build=_chunk,
            flags=("--chunked-prefill-size",),
            value_type=int,
            has_slot=True,
        ),
        Feature(
            name="qsplit",
            summary="DSA indexer query split (build patch): SGLANG_DSA_INDEXER_QSPLIT=1",
            stage=Stage.CONFIG,
            build=_qsplit,
            env_keys=("SGLANG_DSA_INDEXER_QSPLIT",),
        ),
        Feature(
            name="hicache",
            summary="hierarchical KV cache in host RAM (write-through, direct IO)",
            stage=Stage.CONFIG,
            build=_hicache,
            flags=tuple(token for token in HICACHE_FLAGS if token.startswith("--")),
            env_keys=("SGLANG_HICACHE_RAM_BUDGET", "SGLANG_HICACHE_CUDA_HOST_MEMORY"),
            options={"ram_budget": "SGLANG_HICACHE_RAM_BUDGET, the host RAM the cache may use"},
        ),
        Feature(
            name="pdi",
            summary="--prefill-decode-interval N at its slot (build patch); variant pdi<N>",
            stage=Stage.CONFIG,
            build=_pdi,
            flags=("--prefill-decode-interval",),
            value_type=int,
            has_slot=True,
        ),
        Feature(
            name="dyntok",
            summary="ingestion flags (dynamic batch tokenizer) after every other flag",
            stage=Stage.INGESTION,
            build=_dyntok,
            flags=INGESTION_FLAGS,
        ),
    )
}

FEATURE_ORDER: Final[dict[str, int]] = {name: index for index, name in enumerate(FEATURES)}


def owner_of_flag(flag: str) -> Feature | None:
    """The feature that adds `flag` (`--flag` or `--flag=value`), if any."""
    name = flag.split("=", 1)[0]
    for feature in FEATURES.values():
        if name in feature.flags:
            return feature
    return None


def owner_of_env(key: str) -> Feature | None:
    for feature in FEATURES.values():
        if key in feature.env_keys:
            return feature
    return None
