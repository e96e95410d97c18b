"""The OpenTelemetry Collector config embedded in a compose file, parsed once per file.

otel-labels, dcgm-metrics, prod-config and collector-config all read the scrape jobs;
this module parses `configs.<collector config>.content` once (after compose's `$$`
unescaping) and gives each job with its positions in the compose file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tierops.yamlload import YList, YMap, scalar_text
from validators.findings import Finding, Pos
from validators.model import ComposeFile
from validators.rules.embedded import Embedded, embedded


@dataclass
class ScrapeJob:
    name: str
    data: YMap
    pos: Pos  # the job's `job_name` key in the compose file
    targets: list[tuple[str, Pos]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    label_pos: dict[str, Pos] = field(default_factory=dict)
    labels_pos: Pos | None = None

    def at(self, embedded_config: Embedded, key: str) -> Pos:
        if key in self.data.key_pos:
            return embedded_config.outer(self.data.key_pos[key])
        return self.pos

    def value(self, key: str) -> str | None:
        return scalar_text(self.data[key]) if key in self.data else None


@dataclass
class Collector:
    config: Embedded
    data: YMap | None  # None when the content is not a YAML mapping
    problem: Finding | None
    jobs: list[ScrapeJob]
    scrape_configs_pos: Pos

    def outer(self, pos: Pos) -> Pos:
        return self.config.outer(pos)

    def node_pos(self, node: Any, key: str | None = None) -> Pos:
        if isinstance(node, YMap):
            return self.outer(node.at(key) if key is not None else node.pos)
        if isinstance(node, YList):
            return self.outer(node.pos)
        return self.config.key_pos


def dig(node: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(node, YMap) or key not in node:
            return None
        node = node[key]
    return node


def collector(compose: ComposeFile, config_name: str, receiver: str) -> Collector | None:
    """The parsed collector config, or None when the file has no such config."""
    cache_key = f"collector:{config_name}:{receiver}"
    if cache_key in compose.cache:
        cached: Collector | None = compose.cache[cache_key]
        return cached
    config = embedded(compose, config_name)
    result: Collector | None = None
    if config is not None:
        parsed = config.parse_yaml(compose.path, "collector-config")
        if isinstance(parsed, Finding):
            result = Collector(config, None, parsed, [], config.key_pos)
        else:
            result = _jobs(config, parsed, receiver)
    compose.cache[cache_key] = result
    return result


def _jobs(config: Embedded, data: YMap, receiver: str) -> Collector:
    jobs: list[ScrapeJob] = []
    receiver_node = dig(data, "receivers", receiver, "config")
    scrape = dig(receiver_node, "scrape_configs")
    scrape_pos = (
        config.outer(receiver_node.at("scrape_configs"))
        if isinstance(receiver_node, YMap)
        else config.key_pos
    )
    if isinstance(scrape, YList):
        for index, item in enumerate(scrape):
            if not isinstance(item, YMap):
                continue
            job = ScrapeJob(
                name=scalar_text(item.get("job_name")),
                data=item,
                pos=config.outer(item.at("job_name") if "job_name" in item else scrape.at(index)),
            )
            statics = item.get("static_configs")
            # A wrong type here is collector-config's finding, not a crash.
            for static in statics if isinstance(statics, YList) else ():
                if not isinstance(static, YMap):
                    continue
                targets = static.get("targets")
                if isinstance(targets, YList):
                    job.targets.extend(
                        (scalar_text(t), config.outer(targets.at(i))) for i, t in enumerate(targets)
                    )
                labels = static.get("labels")
                if isinstance(labels, YMap):
                    job.labels_pos = config.outer(static.at("labels"))
                    for key, value in labels.items():
                        job.labels[key] = scalar_text(value)
                        job.label_pos[key] = config.outer(labels.at(key))
            jobs.append(job)
    return Collector(config, data, None, jobs, scrape_pos)
