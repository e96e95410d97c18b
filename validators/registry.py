"""Every rule family, in one plain dict: no discovery, no entry points.

Adding a family: write validators/rules/<name>.py (or a package validators/rules/<name>/ whose
`__init__.py` holds them) with ID, SUMMARY, a docstring holding a passing and a failing
example, and `check(compose, ctx)`; add it here; describe it in docs/validators.md.
tests/validators/test_registry.py fails until all three are done.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from validators import loader
from validators.context import Context
from validators.findings import Finding
from validators.model import ComposeFile
from validators.rules import (
    collector_config,
    compose_hygiene,
    dcgm_metrics,
    engine_flags,
    gpu_sharing,
    otel_labels,
    prod_config,
    style,
    wiring,
)


class Rule(Protocol):
    ID: str
    SUMMARY: str

    def check(self, compose: ComposeFile, ctx: Context) -> Iterator[Finding]: ...


RULES: dict[str, Rule] = {
    prod_config.ID: prod_config,
    engine_flags.ID: engine_flags,
    otel_labels.ID: otel_labels,
    dcgm_metrics.ID: dcgm_metrics,
    compose_hygiene.ID: compose_hygiene,
    collector_config.ID: collector_config,
    style.ID: style,
    wiring.ID: wiring,
    gpu_sharing.ID: gpu_sharing,
}

# The loader's own id: a file that cannot be read as one compose mapping. It always
# runs (nothing else can without it), so it is not selectable with --rule.
LOADER_ID = loader.ID
ALL_IDS = (LOADER_ID, *RULES)

# Every check, addressable by id: `family/check` -> the function of the family's module
# that runs it. Nothing dispatches through this table (each family's check() calls its
# functions directly); it names them so tests/validators/test_guards.py can silence
# each one in turn and require a test to fail, and so `--list-checks` can show them.
# test_guards.py also fails when a family module gains a finding-yielding function
# that is neither listed here nor one of its HELPERS.
CHECKS: dict[str, tuple[str, str]] = {
    "prod-config/service-set": (prod_config.ID, "_service_set"),
    "prod-config/profiles": (prod_config.ID, "_profiles"),
    "prod-config/engine-settings": (prod_config.ID, "_engine_settings"),
    "prod-config/argv": (prod_config.ID, "_argv"),
    "prod-config/env": (prod_config.ID, "_env"),
    "prod-config/variant": (prod_config.ID, "_variant"),
    "prod-config/gpus": (prod_config.ID, "_gpus"),
    "prod-config/gpu-devices": (prod_config.ID, "_gpu_devices"),
    "prod-config/gpu-island": (prod_config.ID, "_gpu_island"),
    "prod-config/gpu-tp": (prod_config.ID, "_gpu_tp"),
    "prod-config/gpu-overlap": (prod_config.ID, "_gpu_overlap"),
    "prod-config/rendezvous": (prod_config.ID, "_rendezvous"),
    "prod-config/pairing-chunk": (prod_config.ID, "_chunk_needs_split"),
    "prod-config/pairing-image": (prod_config.ID, "_split_image"),
    "prod-config/parity": (prod_config.ID, "_parity"),
    "prod-config/proxy": (prod_config.ID, "_proxy"),
    "prod-config/downloader": (prod_config.ID, "_downloader"),
    "prod-config/nginx": (prod_config.ID, "_nginx"),
    "prod-config/registrar": (prod_config.ID, "_registrar"),
    "engine-flags/flags": (engine_flags.ID, "_check_engine"),
    "engine-flags/values": (engine_flags.ID, "_values"),
    "engine-flags/choices": (engine_flags.ID, "_choice_findings"),
    "engine-flags/conflicts": (engine_flags.ID, "_conflicts"),
    "engine-flags/requires": (engine_flags.ID, "_requires"),
    "otel-labels/label-block": (otel_labels.ID, "_label_block"),
    "otel-labels/jobs": (otel_labels.ID, "_jobs"),
    "otel-labels/extra-label": (otel_labels.ID, "_extra_label"),
    "otel-labels/collector-env": (otel_labels.ID, "_collector_env"),
    "otel-labels/exporter": (otel_labels.ID, "_exporter"),
    "dcgm-metrics/second-exporter": (dcgm_metrics.ID, "_second_exporter"),
    "dcgm-metrics/digest": (dcgm_metrics.ID, "_digest"),
    "dcgm-metrics/gpus": (dcgm_metrics.ID, "_gpus"),
    "dcgm-metrics/csv": (dcgm_metrics.ID, "_csv"),
    "dcgm-metrics/sys-admin": (dcgm_metrics.ID, "_sys_admin"),
    "dcgm-metrics/scrape": (dcgm_metrics.ID, "_scrape"),
    "compose-hygiene/services-mapping": (compose_hygiene.ID, "_services_mapping"),
    "compose-hygiene/shape": (compose_hygiene.ID, "_shape"),
    "compose-hygiene/compose-types": (compose_hygiene.ID, "_compose_types"),
    "compose-hygiene/container-name": (compose_hygiene.ID, "_names"),
    "compose-hygiene/image-digest": (compose_hygiene.ID, "_images"),
    "compose-hygiene/no-build": (compose_hygiene.ID, "_builds"),
    "compose-hygiene/secrets-env": (compose_hygiene.ID, "_env_secrets"),
    "compose-hygiene/secrets-labels": (compose_hygiene.ID, "_label_secrets"),
    "compose-hygiene/secrets-argv": (compose_hygiene.ID, "_argv_secrets"),
    "compose-hygiene/empty-word": (compose_hygiene.ID, "_empty_words"),
    "compose-hygiene/secrets-configs": (compose_hygiene.ID, "_config_secrets"),
    "compose-hygiene/yaml-tricks": (compose_hygiene.ID, "_yaml_tricks"),
    "collector-config/scrape-shape": (collector_config.ID, "_scrape_shape"),
    "collector-config/component-shape": (collector_config.ID, "_component_shape"),
    "collector-config/pipelines": (collector_config.ID, "_pipelines"),
    "collector-config/unescaped": (collector_config.ID, "_unescaped"),
    "collector-config/env-refs": (collector_config.ID, "_env_refs"),
    "style/labels-form": (style.ID, "_labels_form"),
    "style/command-form": (style.ID, "_command_form"),
    "gpu-sharing/undeclared": (gpu_sharing.ID, "_undeclared"),
    "gpu-sharing/memory": (gpu_sharing.ID, "_memory"),
}
# Finding-yielding functions that are parts of a check above, not checks of their own.
HELPERS: dict[str, frozenset[str]] = {
    prod_config.ID: frozenset({"_check", "_settings", "_order", "_pairing"}),
    compose_hygiene.ID: frozenset({"_yaml_keys"}),
}
