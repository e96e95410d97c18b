"""The runtime settings that decide whether the stack runs: entrypoint, network mode,
privileges, env file, healthchecks (by role, with a reason, where a probe cannot run)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tierops import units
from validators.findings import Finding, Level
from validators.model import ComposeFile, Service
from validators.rules.wiring import checks
from validators.rules.wiring.contract import Wiring
from validators.rules.wiring.graph import Graph, of_role, value_at


def _exempt_image(service: Service, exempt_images: Mapping[str, Any]) -> bool:
    image = service.get("image")
    return isinstance(image, str) and any(fragment in image for fragment in exempt_images)


def exempt_services(graph: Graph, exceptions: Mapping[str, Any]) -> set[str]:
    """Services that need no healthcheck in a claimed file: those of a role the wiring
    contract exempts, and those the stack contract's `wiring.healthcheck_exempt` names."""
    if not graph.claimed:
        return set()
    names = set(of_role(graph, graph.wiring.healthcheck_exempt))
    return names | {str(name) for name in exceptions.get("healthcheck_exempt") or {}}


def check_runtime(
    compose: ComposeFile, wiring: Wiring, engines: Sequence[str], exempt: set[str], *, claimed: bool = True
) -> Iterator[Finding]:
    runtime = wiring.runtime
    exempt_images = runtime.get("healthcheck_exempt_images") or {}
    forbidden = set(runtime.get("forbidden_network_modes") or ())
    for service in compose:
        engine = service.name in engines
        mode = service.get("network_mode")
        one_shot = service.get("restart") in (None, "no") and not engine
        # A one-shot job cut off from every network (a preflight, a cleanup) is isolation,
        # not a broken edge: no peer waits for it.
        if isinstance(mode, str) and mode in forbidden and not (mode == "none" and one_shot):
            yield checks.finding(
                compose,
                value_at(compose, service, "network_mode"),
                "network-mode",
                f"{service.name} has network_mode: {mode}"
                + (
                    ": it binds the host's ports and leaves the project network"
                    if mode == "host"
                    else ": no peer can reach it"
                ),
            )
        if service.get("privileged") is True:
            yield checks.finding(
                compose,
                value_at(compose, service, "privileged"),
                "privileged",
                f"{service.name} is privileged: it sees every device of the host",
            )
        if engine and claimed:  # the engine's entrypoint, env file and start period are stack policy
            yield from _engine_runtime(compose, service, runtime)
        if one_shot:
            continue  # a one-shot service (the downloader) needs no healthcheck
        healthcheck = service.get("healthcheck")
        test = healthcheck.get("test") if isinstance(healthcheck, dict) else None
        disabled = isinstance(healthcheck, dict) and (healthcheck.get("disable") is True or test == ["NONE"])
        if (
            (healthcheck is None or disabled or not test)
            and service.name not in exempt
            and not _exempt_image(service, exempt_images)
        ):
            found = checks.finding(
                compose,
                service.at("healthcheck") if service.has("healthcheck") else service.pos,
                "healthcheck",
                f"{service.name} runs without a healthcheck: nothing notices it hang",
            )
            # A stack requires one; in a file no stack claims it is advice, since the
            # stack still runs.
            yield found if claimed else found._replace(level=Level.WARNING)


def _engine_runtime(compose: ComposeFile, service: Service, runtime: Mapping[str, Any]) -> Iterator[Finding]:
    want = runtime.get("engine_entrypoint")
    got = service.get("entrypoint")
    if got != (list(want) if isinstance(want, list) else want):
        yield checks.finding(
            compose,
            value_at(compose, service, "entrypoint"),
            "entrypoint",
            f"{service.name} overrides the image's entrypoint with {service.canon.quote('entrypoint')}",
            None if want is None else f"set entrypoint: {want}",
        )
    if service.get("env_file") and not runtime.get("engine_env_file"):
        yield checks.finding(
            compose,
            value_at(compose, service, "env_file"),
            "env-file",
            f"{service.name} has env_file: it bypasses the engine env contract",
        )
    minimum = str(runtime.get("engine_start_period") or "0s")
    period = service.value("healthcheck", "start_period")
    if not isinstance(service.get("healthcheck"), dict):
        return  # the healthcheck check reports it
    try:
        too_short = period is None or units.parse_duration(str(period)) < units.parse_duration(minimum)
    except units.UnitError:
        return  # compose-hygiene reports an unreadable duration
    if too_short:
        yield checks.finding(
            compose,
            value_at(compose, service, "healthcheck", "start_period"),
            "start-period",
            f"{service.name} healthcheck start_period is {service.canon.quote('healthcheck', 'start_period') if period else 'unset'}; the contract says at least {minimum}",
            f"set start_period: {minimum} or more",
        )
