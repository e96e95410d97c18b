"""The telemetry label contract: service labels and scrape jobs, from one computation.

`labels_for()` is the only place a `tierops.otel.*` value is decided; `scrape_job()`
derives the collector's job from those labels. An engine's config_variant therefore
appears twice in a production file but is computed once.
"""

from __future__ import annotations

from dataclasses import dataclass

from generators.engine import Engine
from generators.source import Source, Target

PREFIX = "tierops.otel."
METRICS_PATH = "/metrics"
SCRAPE_INTERVAL = "15s"
SCRAPE_TIMEOUT = "10s"
HOST_MACHINE = "${CVM_HOST}"
# Label keys that steer the scrape itself; every other suffix is copied into the
# scrape job's `labels:` map with the same value.
_SCRAPE_MECHANICS = ("scrape", "job", "port", "path")


@dataclass(frozen=True)
class Subject:
    """One scraped service and its full label block."""

    service: str
    port: int
    labels: tuple[tuple[str, str], ...]

    def label(self, suffix: str) -> str:
        return dict(self.labels)[PREFIX + suffix]


def labels_for(
    source: Source, target: Target, service: str, port: int, engine: Engine | None = None
) -> Subject:
    pairs = _pairs(
        service,
        port,
        target.name,
        [
            ("model", source.model.served_name),
            ("model_path", source.model.repo),
            ("precision", source.model.precision),
        ],
    )
    if engine is not None:
        digest = source.images[engine.image].rsplit("@sha256:", 1)[1]
        pairs += [
            ("config_variant", engine.variant),
            ("engine_image", digest[:12]),
            # The replica number. Prometheus would otherwise set `instance` to the
            # target address; the collector maps it to service.instance.id, and the
            # replica number is the identity dashboards group by (docs/architecture.md).
            ("instance", engine.instance),
        ]
    return Subject(service=service, port=port, labels=tuple((PREFIX + k, v) for k, v in pairs))


def host_labels(deployment: str, service: str, port: int) -> Subject:
    """A pack's host service (it serves no one model): the labels of `labels_for` but the
    model's."""
    pairs = _pairs(service, port, deployment, [])
    return Subject(service=service, port=port, labels=tuple((PREFIX + k, v) for k, v in pairs))


def _pairs(service: str, port: int, deployment: str, model: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [
        ("scrape", "true"),
        # job = the service name: unique per file, and what service.name becomes.
        ("job", service),
        ("port", str(port)),
        ("path", METRICS_PATH),
        ("container_name", service),
        *model,
        ("deployment", deployment),
        ("host_machine", HOST_MACHINE),
    ]


def scrape_job(subject: Subject) -> dict[str, object]:
    """The collector's scrape job for one subject, as plain data (the renderer styles it)."""
    copied = {
        key.removeprefix(PREFIX): value
        for key, value in subject.labels
        if key.removeprefix(PREFIX) not in _SCRAPE_MECHANICS
    }
    return {
        "job_name": subject.label("job"),
        "scrape_interval": SCRAPE_INTERVAL,
        "scrape_timeout": SCRAPE_TIMEOUT,
        "metrics_path": subject.label("path"),
        "static_configs": [
            {
                "targets": [f"{subject.service}:{subject.label('port')}"],
                "labels": copied,
            }
        ],
    }
