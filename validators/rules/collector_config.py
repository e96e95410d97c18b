"""Rule `collector-config`: the embedded OpenTelemetry Collector config is structurally sound.

`configs.otelcol_app_config.content` is what the collector reads after compose has
interpolated it (`$$` becomes `$`). It must parse as one YAML mapping; every
component a pipeline of `service.pipelines` names must be defined under `receivers`,
`processors` or `exporters` (and pipelines name at least one receiver and one
exporter); every `${env:VAR}` it reads must be set in the collector service's
environment, and each such reference is written `$${env:VAR}` in the compose file
(with one `$`, compose would interpolate it itself); the scrape config's values have
the types the collector reads (`static_configs: 5` is a finding, not a crash).

This is a structural check only: the real collector (`otelcol-contrib validate`)
cannot run here. With Docker, an operator validates the rendered config with the
pinned image (docs/validators.md gives the command).

Passing example::

    receivers: {prometheus/apps: {...}}
    exporters: {otlphttp/gateway: {headers: {Authorization: Bearer $${env:MONITORING_INGEST_TOKEN}}}}
    service:
      pipelines:
        metrics: {receivers: [prometheus/apps], exporters: [otlphttp/gateway]}

Failing example::

    service:
      pipelines:
        metrics: {receivers: [prometheus/apps], exporters: [otlphttp/backup]}   # not defined
    # and $${env:GATEWAY_REGION} read, but GATEWAY_REGION not in the collector's environment
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tierops.yamlload import YList, YMap, scalar_text
from validators.context import Context
from validators.findings import Finding, Pos, error
from validators.model import ComposeFile, Service
from validators.rules.collector import Collector, collector, dig

ID = "collector-config"
# A stack\'s own policy: runs only on files a stack contract claims (validators/runner.py).
NEEDS_CONTRACT = True
# A pack's file is judged once per member contract (identical findings are said once).
JUDGES_PACK_MEMBERS = True

SUMMARY = "the embedded collector config parses; pipelines name defined components; every ${env:VAR} is set"

_ENV_REF = re.compile(r"\$\{env:(?P<var>[A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")
_UNESCAPED = re.compile(r"(?<!\$)\$\{env:")
_KINDS = {"receivers": "receivers", "processors": "processors", "exporters": "exporters"}


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    col = ctx.claimed.telemetry["collector"]
    path = compose.path
    service = compose.services.get(str(col["service"]))
    parsed = collector(compose, str(col["config"]), str(col["receiver"]))
    if parsed is None:
        if service is not None:
            yield error(
                path, service.pos, ID, f"{service.name} has no inline config configs.{col['config']}.content"
            )
        return
    if parsed.problem is not None:
        yield parsed.problem._replace(rule=ID)
        return
    yield from _scrape_shape(path, parsed, str(col["receiver"]))
    yield from _component_shape(path, parsed)
    yield from _pipelines(path, parsed)
    yield from _unescaped(compose, parsed, str(col["config"]))
    if service is not None:
        yield from _env_refs(path, parsed, service)


def _pipelines(path: str, parsed: Collector) -> Iterator[Finding]:
    """Every pipeline names a receiver and an exporter, each defined at the top level."""
    data = parsed.data
    assert data is not None  # set whenever there is no problem
    pipelines = dig(data, "service", "pipelines")
    if not isinstance(pipelines, YMap) or not pipelines:
        pos = (
            parsed.node_pos(dig(data, "service"), "pipelines")
            if isinstance(dig(data, "service"), YMap)
            else parsed.outer(data.pos)
        )
        yield error(
            path, pos, ID, "collector config has no service.pipelines; the collector would export nothing"
        )
        return
    for name, pipeline in pipelines.items():
        if not isinstance(pipeline, YMap):
            yield error(path, parsed.node_pos(pipelines, name), ID, f"pipeline {name} is not a mapping")
            continue
        for kind in ("receivers", "exporters"):
            if not isinstance(pipeline.get(kind), YList) or not pipeline[kind]:
                yield error(
                    path,
                    parsed.node_pos(pipeline, kind) if kind in pipeline else parsed.node_pos(pipelines, name),
                    ID,
                    f"pipeline {name} names no {kind}",
                )
        for kind in _KINDS:
            components = pipeline.get(kind)
            if not isinstance(components, YList):
                continue
            defined = data.get(kind)
            for index, component in enumerate(components):
                label = scalar_text(component)
                if not isinstance(defined, YMap) or label not in defined:
                    yield error(
                        path,
                        parsed.outer(components.at(index)),
                        ID,
                        f"pipeline {name} uses {kind[:-1]} {label}, which is not defined under {kind}",
                    )


def _unescaped(compose: ComposeFile, parsed: Collector, config: str) -> Iterator[Finding]:
    """Compose interpolates `${...}` itself: the collector's own references must be written
    `$${env:VAR}` so compose turns them into `${env:VAR}` and leaves them alone."""
    raw = compose.config_content(config)
    if raw is None:
        return
    for number, line in enumerate(raw[0].split("\n"), start=1):
        for match in _UNESCAPED.finditer(line):
            where = Pos(parsed.config.first_line + number - 1, parsed.config.indent + match.start() + 1)
            yield error(
                compose.path,
                where if parsed.config.block else parsed.config.key_pos,
                ID,
                "collector config writes ${env:...} with one $; compose would interpolate it: write $${env:...}",
            )


def _env_refs(path: str, parsed: Collector, service: Service) -> Iterator[Finding]:
    """Every `${env:VAR}` the collector reads is set in its service's environment."""
    for number, line in enumerate(parsed.config.text.split("\n"), start=1):
        for match in _ENV_REF.finditer(line):
            var = match.group("var")
            if var not in service.env:
                yield error(
                    path,
                    parsed.outer(Pos(number, match.start() + 1)),
                    ID,
                    f"collector config reads ${{env:{var}}}, but {service.name} has no {var} in its environment",
                )


# What each key of a scrape job holds; a value of another type is a finding
# (`static_configs: 5` was once a TypeError, exit 3).
_JOB_TYPES: dict[str, tuple[type, str]] = {
    "job_name": (str, "a string"),
    "metrics_path": (str, "a string"),
    "scrape_interval": (str, "a duration such as 15s"),
    "scrape_timeout": (str, "a duration such as 10s"),
    "static_configs": (YList, "a list of {targets, labels} mappings"),
}


def _scrape_shape(path: str, parsed: Collector, receiver: str) -> Iterator[Finding]:
    """The scrape config's containers and scalars have the types the collector reads."""
    assert parsed.data is not None
    scrape = dig(parsed.data, "receivers", receiver, "config", "scrape_configs")
    if scrape is None:
        return
    if not isinstance(scrape, YList):
        yield error(path, parsed.scrape_configs_pos, ID, f"{receiver} scrape_configs must be a list of jobs")
        return
    for index, job in enumerate(scrape):
        if not isinstance(job, YMap):
            yield error(
                path, parsed.outer(scrape.at(index)), ID, f"scrape_configs[{index}] must be a mapping"
            )
            continue
        name = scalar_text(job.get("job_name")) or f"scrape_configs[{index}]"
        for key, (kind, what) in _JOB_TYPES.items():
            if key in job and not isinstance(job[key], kind):
                yield error(path, parsed.node_pos(job, key), ID, f"scrape job {name} {key} must be {what}")
        statics = job.get("static_configs")
        if not isinstance(statics, YList):
            continue
        for number, static in enumerate(statics):
            where = f"scrape job {name} static_configs[{number}]"
            if not isinstance(static, YMap):
                yield error(path, parsed.outer(statics.at(number)), ID, f"{where} must be a mapping")
                continue
            targets = static.get("targets")
            if "targets" in static and not (
                isinstance(targets, YList) and all(isinstance(t, str) for t in targets)
            ):
                yield error(
                    path,
                    parsed.node_pos(static, "targets"),
                    ID,
                    f"{where}.targets must be a list of host:port strings",
                )
            labels = static.get("labels")
            if "labels" in static and not (
                isinstance(labels, YMap)
                and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in labels.values())
            ):
                yield error(
                    path,
                    parsed.node_pos(static, "labels"),
                    ID,
                    f"{where}.labels must map label names to strings",
                )


def _component_shape(path: str, parsed: Collector) -> Iterator[Finding]:
    """Each component is a mapping (or empty, for its defaults); attribute actions name a string key."""
    assert parsed.data is not None
    for kind in (*_KINDS, "extensions"):
        section = parsed.data.get(kind)
        if section is None:
            continue
        if not isinstance(section, YMap):
            yield error(
                path,
                parsed.node_pos(parsed.data, kind),
                ID,
                f"collector config {kind} must be a mapping of components",
            )
            continue
        for name, component in section.items():
            if component is not None and not isinstance(component, YMap):
                yield error(
                    path,
                    parsed.node_pos(section, name),
                    ID,
                    f"{kind[:-1]} {name} must be a mapping (or empty for its defaults)",
                )
                continue
            attributes = component.get("attributes") if isinstance(component, YMap) else None
            if not isinstance(attributes, YList):
                continue
            for index, action in enumerate(attributes):
                if not (isinstance(action, YMap) and isinstance(action.get("key"), str)):
                    yield error(
                        path,
                        parsed.outer(attributes.at(index)),
                        ID,
                        f"{kind[:-1]} {name} attributes[{index}] must be a mapping with a string key",
                    )
