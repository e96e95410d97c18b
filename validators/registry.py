"""Every rule family, in one plain dict: no discovery, no entry points.

Adding a family: write validators/<name>.py with ID, SUMMARY, a docstring holding a
passing and a failing example, and `check(compose, ctx)`; add it here; describe it in
docs/validators.md. tests/validators/test_registry.py fails until all three are done.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from validators import (
    collector_config,
    compose_hygiene,
    dcgm_metrics,
    engine_flags,
    loader,
    otel_labels,
    prod_config,
    style,
    wiring,
)
from validators.context import Context
from validators.findings import Finding
from validators.model import ComposeFile


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
}

# The loader's own id: a file that cannot be read as one compose mapping. It always
# runs (nothing else can without it), so it is not selectable with --rule.
LOADER_ID = loader.ID
ALL_IDS = (LOADER_ID, *RULES)
