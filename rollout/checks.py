"""How an operator verifies a recreated service, derived from its definition.

Engines: healthy, one real completion through that replica alone, and its
`config_variant` live (container label at once; the scrape label and the metrics after
the collector step). Telemetry: running, and its series present. Everything else:
healthy (or running when it has no healthcheck). Commands run on the host, from the
checkout of the new tag, like the steps they verify.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rollout.roles import Role, SpellingError, command_tokens, gpu_device_ids, image_name, key_values
from tierops.argv import split_argv

VARIANT_LABEL = "tierops.otel.config_variant"


@dataclass(frozen=True)
class Check:
    what: str
    command: str
    expect: str

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "command": self.command, "expect": self.expect}


def checks_for(file: str, name: str, role: str, service: Mapping[str, Any], stem: str) -> tuple[Check, ...]:
    """The verification of one service after its `up`, from the head definition."""
    compose = f"docker compose -f {shlex.quote(file)}"
    checks = [_health(compose, name, service)]
    labels = _labels(service)
    if role == Role.ENGINE:
        checks += _engine(compose, name, service, labels)
    elif role == Role.COLLECTOR:
        checks.append(
            Check(
                "the collector starts cleanly",
                f"{compose} logs --since 5m {shlex.quote(name)} 2>&1 | grep -iE 'error|invalid' || true",
                "no error lines",
            )
        )
        deployment = labels.get("tierops.otel.deployment") or stem
        checks.append(
            Check(
                "every scrape job reports, with its labels (PromQL)",
                f'count by (job, config_variant) (up{{deployment="{deployment}"}} == 1)',
                "one series per scrape job; engines with their new config_variant",
            )
        )
    elif role == Role.DCGM:
        try:
            gpus = gpu_device_ids(service) or []
        except TypeError:  # a malformed reservation: no count to promise
            gpus = []
        deployment = labels.get("tierops.otel.deployment") or stem
        checks.append(
            Check(
                "GPU metrics arrive (PromQL)",
                f'count(DCGM_FI_DEV_GPU_UTIL{{deployment="{deployment}"}})',
                f"{len(gpus)} (one series per GPU)" if gpus else "one series per GPU",
            )
        )
    elif role == Role.ONE_SHOT:
        checks[0] = Check(
            "the job ran to completion",
            f"{compose} ps -a --format '{{{{.Service}}}} {{{{.State}}}} {{{{.ExitCode}}}}' {shlex.quote(name)}",
            f"{name} exited 0",
        )
    elif role == Role.PROXY:
        checks.append(
            Check(
                "the proxy sees its backends healthy",
                f"{compose} logs --since 5m {shlex.quote(name)} 2>&1 | grep -iE 'unhealthy|error' || true",
                "no unhealthy backend after the start",
            )
        )
    return tuple(checks)


def _health(compose: str, name: str, service: Mapping[str, Any]) -> Check:
    healthcheck = service.get("healthcheck")
    state = "{{.Service}} {{.State}} {{.Health}}"
    command = f"{compose} ps --format '{state}' {shlex.quote(name)}"
    if isinstance(healthcheck, Mapping) and not healthcheck.get("disable"):
        wait = healthcheck.get("start_period")
        within = f" (allow its start_period, {wait})" if wait else ""
        return Check(f"healthy{within}", command, f"{name} running healthy")
    return Check("running", command, f"{name} running")


def _labels(service: Mapping[str, Any]) -> dict[str, str]:
    try:
        return {key: value or "" for key, value in key_values(service.get("labels"), what="labels").items()}
    except SpellingError:
        return {}


def _engine(compose: str, name: str, service: Mapping[str, Any], labels: Mapping[str, str]) -> list[Check]:
    options = _options(service)
    port = options.get("--port") or "8000"
    model = options.get("--served-model-name") or options.get("--model-path") or options.get("--model") or ""
    body = json.dumps(
        {"model": model, "messages": [{"role": "user", "content": "Reply with OK."}], "max_tokens": 8},
        separators=(",", ":"),
    )
    url = f"http://localhost:{port}/v1/chat/completions"
    checks = [
        Check(
            "one real completion through this replica alone",
            f"{compose} exec -T {shlex.quote(name)} curl -fsS --max-time 300 {url} "
            f"-H 'Content-Type: application/json' -d {shlex.quote(body)}",
            "HTTP 200 with one choice",
        )
    ]
    variant = labels.get(VARIANT_LABEL)
    if variant:
        label = "{{index .Config.Labels " + json.dumps(VARIANT_LABEL) + "}}"
        checks.append(
            Check(
                "the new config_variant is live on the container",
                f"docker inspect -f {shlex.quote(label)} $({compose} ps -q {shlex.quote(name)})",
                variant,
            )
        )
        metric = "vllm:num_requests_running" if "vllm" in _engine_kind(service) else "sglang_num_running_reqs"
        checks.append(
            Check(
                "its config_variant is seen in metrics (PromQL; the scrape label follows the collector step)",
                f'count by (container_name, config_variant) ({metric}{{container_name="{name}"}})',
                f'config_variant="{variant}"',
            )
        )
    return checks


def _options(service: Mapping[str, Any]) -> dict[str, str]:
    try:
        tokens = command_tokens(service.get("command")) or []
    except SpellingError:
        return {}
    return {option.flag: option.value for option in split_argv(tokens).options if option.value is not None}


def _engine_kind(service: Mapping[str, Any]) -> str:
    try:
        tokens = command_tokens(service.get("entrypoint")) or []
        tokens += command_tokens(service.get("command")) or []
    except SpellingError:
        tokens = []
    return " ".join([image_name(service), *tokens[:3]]).lower()


def replica_number(name: str, service: Mapping[str, Any]) -> int | None:
    """The replica's number: the `instance` label, else a trailing `r<N>`/`-<N>` in its name."""
    labels = _labels(service)
    for key in ("tierops.otel.instance", "instance"):
        if labels.get(key, "").isdigit():
            return int(labels[key])
    match = re.search(r"(\d+)$", name)
    return int(match.group(1)) if match else None


def rollout_order(service: Mapping[str, Any]) -> int | None:
    """An explicit `tierops.rollout.order` label (lower goes first), when the file says so."""
    value = _labels(service).get("tierops.rollout.order", "")
    return int(value) if value.lstrip("-").isdigit() else None
