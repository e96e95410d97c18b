"""Rule `otel-labels`: the telemetry label contract, sentence by sentence.

Service side: the engines, the proxy and dcgm carry a label block in mapping form
with `tierops.otel.` keys scrape "true", job, port, path (/metrics), container_name
(the service's own), model, model_path, precision, deployment (the file stem),
host_machine (${CVM_HOST}); engines also config_variant, engine_image (the first 12
hex of their image digest) and instance (the replica number). No other service asks
to be scraped.

Collector side (`receivers.prometheus/apps.config.scrape_configs`): exactly one job
per scraped service; job_name = its job label; one target `<service>:<port>`;
metrics_path = its path label; scrape_interval 15s and scrape_timeout 10s; a
`labels:` map whose keys are the label suffixes (without scrape, job, port, path)
with equal values. No target without a scraped service; label names match
`^[a-zA-Z_][a-zA-Z0-9_]*$`, never start with `__`, never set `job`, and set
`instance` only on engines, to the replica number (the collector maps job and
instance to service.name / service.instance.id; here instance *is* the replica
number, docs/validators.md says why). The collector's own env gives
`${VAR:-default}` soft defaults for MONITORING_INGEST_TOKEN, CVM_NAME, CVM_HOST, ENV,
HOST_IP; the gateway exporter keeps `sending_queue.num_consumers: 1` (cumulative
metrics must arrive in order).

Passing example::

    labels:                                   # on proxy-glm53
      tierops.otel.scrape: "true"
      tierops.otel.job: proxy-glm53
      tierops.otel.port: "8000"
      ...
    # and in the collector config:
    - job_name: proxy-glm53
      static_configs: [{targets: [proxy-glm53:8000], labels: {container_name: proxy-glm53, ...}}]

Failing example::

    - job_name: proxy-glm53
      static_configs:
        - targets: [proxy-glm53:8000]
          labels: {__meta_x: y, ...}          # label names never start with __
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tierops.yamlload import YMap, scalar_text
from validators.context import Context
from validators.findings import Finding, error
from validators.model import ComposeFile, Service, engine_image_prefix
from validators.rules.collector import Collector, collector, dig

ID = "otel-labels"
# A stack\'s own policy: runs only on files a stack contract claims (validators/runner.py).
NEEDS_CONTRACT = True
# In a pack's file, each member's contract judges its own services' labels and jobs.
JUDGES_PACK_MEMBERS = True

SUMMARY = "the telemetry label contract: label blocks on scraped services and one matching scrape job each in the collector config"

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_SOFT_DEFAULT = re.compile(r"^\$\{(?P<var>[A-Za-z_][A-Za-z0-9_]*):-[^}]*\}$")


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    telemetry = ctx.claimed.telemetry
    prefix = str(telemetry["label_prefix"])
    col = telemetry["collector"]
    scraped = [name for name in telemetry["scraped"] if name in compose.services]
    # In a pack's file the contract is one member's: the other services are not its to judge.
    own = set(ctx.claimed.services) if ctx.pack is not None else {service.name for service in compose}
    for service in compose:
        if service.name in scraped:
            yield from _label_block(compose, service, ctx)
        elif service.name in own and service.labels.get(prefix + "scrape") == "true":
            yield error(
                compose.path,
                service.label_pos[prefix + "scrape"],
                ID,
                f"{service.name} asks to be scraped but is not a scraped service of the contract (engines, proxy, dcgm)",
            )
    parsed = collector(compose, str(col["config"]), str(col["receiver"]))
    if parsed is None:
        yield error(
            compose.path,
            compose.data.at("configs"),
            ID,
            f"no collector config configs.{col['config']}.content",
        )
        return
    if parsed.problem is not None:
        return  # collector-config reports a config that does not parse
    yield from _jobs(compose, parsed, [compose.services[name] for name in scraped], ctx)
    yield from _collector_env(compose, ctx)
    yield from _exporter(compose, parsed, ctx)


def _label_block(compose: ComposeFile, service: Service, ctx: Context) -> Iterator[Finding]:
    telemetry = ctx.claimed.telemetry
    prefix = str(telemetry["label_prefix"])
    path = compose.path
    if service.labels_form is None:
        yield error(
            path,
            service.pos,
            ID,
            f"{service.name} has no labels; a scraped service carries the {prefix}* block",
        )
        return
    want = expected_labels(compose, service, ctx)
    for suffix, value in want.items():
        key = prefix + suffix
        got = service.labels.get(key)
        if got is None:
            yield error(path, service.at("labels"), ID, f"{service.name} lacks the label {key}={value}")
        elif value is not None and got != value:
            yield error(
                path, service.label_pos[key], ID, f"{service.name} label {key} is '{got}'; expected '{value}'"
            )
    for key in service.labels:
        if key.startswith(prefix) and key[len(prefix) :] not in want:
            yield error(
                path,
                service.label_pos[key],
                ID,
                f"{service.name} label {key} is not part of the label contract",
            )


def expected_labels(compose: ComposeFile, service: Service, ctx: Context) -> dict[str, str | None]:
    """Suffix -> required value (None: required, value checked elsewhere or free)."""
    telemetry = ctx.claimed.telemetry
    want: dict[str, str | None] = {"scrape": None, "job": None, "port": None}
    want.update({str(key): scalar_text(value) for key, value in telemetry["labels"].items()})
    want["container_name"] = service.name
    want["deployment"] = compose.stem
    want["job"] = None
    replica = ctx.claimed.replica_of(service.name)
    if replica is not None:
        port = next((flag.value for flag in service.flags() if flag.flag == "--port"), None)
        want["port"] = port
        want["config_variant"] = None  # recomputed by prod-config
        want["engine_image"] = engine_image_prefix(scalar_text(service.get("image")))
        want["instance"] = replica.instance
    else:
        want["port"] = (
            scalar_text(telemetry["ports"].get(service.name)) if service.name in telemetry["ports"] else None
        )
    want["scrape"] = "true"
    return want


def _jobs(  # noqa: PLR0912 (one branch per check)
    compose: ComposeFile, parsed: Collector, scraped: list[Service], ctx: Context
) -> Iterator[Finding]:
    telemetry = ctx.claimed.telemetry
    prefix = str(telemetry["label_prefix"])
    col = telemetry["collector"]
    scrape_only = set(telemetry["scrape_only"])
    path = compose.path
    by_name: dict[str, list[Any]] = {}
    for job in parsed.jobs:
        by_name.setdefault(job.name, []).append(job)
    services_by_job = {service.labels.get(prefix + "job") or service.name: service for service in scraped}
    for service in scraped:
        job_name = service.labels.get(prefix + "job") or service.name
        jobs = by_name.get(job_name, [])
        if not jobs:
            yield error(
                path,
                parsed.scrape_configs_pos,
                ID,
                f"scraped service {service.name} has no scrape job '{job_name}' in the collector config",
            )
            continue
        for extra in jobs[1:]:
            yield error(
                path,
                extra.pos,
                ID,
                f"scrape job {job_name} appears more than once; one job per scraped service",
            )
        job = jobs[0]
        port = service.labels.get(prefix + "port")
        want_target = f"{service.name}:{port}"
        targets = [target for target, _pos in job.targets]
        if targets != [want_target]:
            pos = job.targets[0][1] if job.targets else job.pos
            yield error(
                path, pos, ID, f"scrape job {job_name} targets {targets}; expected exactly [{want_target}]"
            )
        checks = {
            "metrics_path": service.labels.get(prefix + "path"),
            "scrape_interval": str(col["scrape_interval"]),
            "scrape_timeout": str(col["scrape_timeout"]),
        }
        for key, value in checks.items():
            if value is not None and job.value(key) != value:
                yield error(
                    path,
                    job.at(parsed.config, key),
                    ID,
                    f"scrape job {job_name} {key} is {job.value(key)}; expected {value}",
                )
        want_labels = {
            key[len(prefix) :]: value
            for key, value in service.labels.items()
            if key.startswith(prefix) and key[len(prefix) :] not in scrape_only
        }
        for key, value in want_labels.items():
            if key not in job.labels:
                yield error(
                    path,
                    job.labels_pos or job.pos,
                    ID,
                    f"scrape job {job_name} lacks the label {key}={value}",
                )
            elif job.labels[key] != value and key != "config_variant":
                # config_variant is recomputed and compared by prod-config.
                yield error(
                    path,
                    job.label_pos[key],
                    ID,
                    f"scrape job {job_name} label {key} is '{job.labels[key]}'; {service.name} says '{value}'",
                )
        for key in job.labels:
            if key not in want_labels:
                yield from _extra_label(path, job, key, service, ctx)
    # In a pack's file the other members' (and the host's) labelled services own theirs.
    others = (
        {
            str(service.labels.get(prefix + "job"))
            for service in compose
            if service.name not in services_by_job
        }
        if ctx.pack is not None
        else set()
    )
    for job in parsed.jobs:
        if job.name not in services_by_job and job.name not in others:
            yield error(
                path,
                job.pos,
                ID,
                f"scrape job {job.name} scrapes no labelled service of this file (no service with {prefix}job={job.name}); remove it or label the service",
            )
    for job in parsed.jobs:
        for key in job.labels:
            if not LABEL_NAME.match(key):
                yield error(
                    path,
                    job.label_pos[key],
                    ID,
                    f"scrape job {job.name} label name '{key}' is not a valid Prometheus label name",
                )
            elif key.startswith("__"):
                yield error(
                    path,
                    job.label_pos[key],
                    ID,
                    f"scrape job {job.name} label '{key}' starts with __ (reserved for Prometheus internals)",
                )


def _extra_label(path: str, job: Any, key: str, service: Service, ctx: Context) -> Iterator[Finding]:
    reserved = set(ctx.claimed.telemetry["collector"]["reserved_labels"])
    if key in reserved:
        yield error(
            path,
            job.label_pos[key],
            ID,
            f"scrape job {job.name} sets '{key}', which the collector maps to service.name/service.instance.id; only engines carry instance (their replica number)",
        )
    elif not key.startswith("__") and LABEL_NAME.match(key):
        yield error(
            path,
            job.label_pos[key],
            ID,
            f"scrape job {job.name} label '{key}' has no {service.name} label behind it",
        )


def _collector_env(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    col = ctx.claimed.telemetry["collector"]
    service = compose.services.get(str(col["service"]))
    if service is None:
        yield error(compose.path, compose.services_pos(), ID, f"no collector service {col['service']}")
        return
    for var in col["soft_default_env"]:
        value = service.env.get(var)
        match = _SOFT_DEFAULT.match(value or "")
        if match is None or match.group("var") != var:
            yield error(
                compose.path,
                service.env_pos.get(var, service.at("environment")),
                ID,
                f"{service.name} env {var} must be a soft default ${{{var}:-default}}, not {value!r}; the collector must start without it",
            )


def _exporter(compose: ComposeFile, parsed: Collector, ctx: Context) -> Iterator[Finding]:
    col = ctx.claimed.telemetry["collector"]
    name = str(col["gateway_exporter"])
    exporters = dig(parsed.data, "exporters")
    exporter = dig(exporters, name)
    if not isinstance(exporter, YMap):
        pos = parsed.node_pos(exporters) if isinstance(exporters, YMap) else parsed.config.key_pos
        yield error(compose.path, pos, ID, f"collector config has no gateway exporter {name}")
        return
    queue = dig(exporter, "sending_queue")
    consumers = dig(queue, "num_consumers")
    want = int(col["num_consumers"])
    if consumers != want:
        pos = (
            parsed.node_pos(queue, "num_consumers")
            if isinstance(queue, YMap)
            else parsed.node_pos(exporter, "sending_queue")
        )
        yield error(
            compose.path,
            pos,
            ID,
            f"exporter {name} sending_queue.num_consumers is {consumers}; it must be {want} (cumulative metrics must arrive in order)",
        )
