"""One service's canonical fields: each key read by its field family's handler.

The table `_HANDLERS` says which family reads which key; keys outside it are compared
as written (templates normalised). Then what compose does across keys: `links` become
dependencies, a limit and its deploy twin must agree, false and zero values are left
out (Go's omitempty), and a service without `networks` is on `default`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tierops.canonical import deploy, environment, healthcheck, lists, networks, ports, volumes
from tierops.canonical.context import Ctx, Handler, Skip
from tierops.canonical.model import Origin, Service, dotted, new_origin
from tierops.yamlload import START, Pos, YMap


def read_service(ctx: Ctx, name: str, pos: Pos, body: YMap, text: str) -> Service:
    ctx.origins = {}
    ctx.problems = []
    ctx.service = name
    fields: dict[str, Any] = {}
    for key in body:
        if key.startswith("x-"):
            continue  # compose drops service-level extensions from the model
        origin = ctx.member_value(body, key)
        member: Origin = new_origin((body.at(key), body[key], body.value_span.get(key)))
        ctx.record((key,), member)
        handler = _HANDLERS.get(key)
        ctx.prefix = (key,)
        try:
            if handler is None:
                fields[key] = ctx.generic(body[key], origin, (key,), (key,))
                ctx.record((key,), member)
            else:
                fields[key] = handler(ctx, body[key], origin)
        except Skip:
            continue
    for link in fields.get("links") or ():
        # compose turns every link into a dependency that restarts with its target
        target = link.split(":", 1)[0]
        depends = fields.setdefault("depends_on", {})
        if isinstance(depends, dict) and target not in depends:
            depends[target] = {"condition": "service_started", "restart": True, "required": True}
    _distinct_limits(ctx, fields)
    for key in _OMIT_ZERO:
        if key in fields and fields[key] in (False, 0, "0") and fields[key] is not True:
            del fields[key]  # Go's omitempty: compose does not print a false or zero value
    fields.setdefault("command", None)
    fields.setdefault("entrypoint", None)
    if "networks" not in fields and "network_mode" not in fields:
        fields["networks"] = {"default": None}
    return Service(name, pos, body, fields, dict(ctx.origins), list(ctx.problems), text)


# Keys compose does not print when false or zero (Go's `omitempty` on non-pointer fields).
_OMIT_ZERO = (
    "tty",
    "stdin_open",
    "read_only",
    "oom_kill_disable",
    "privileged",
    "cpus",
    "cpu_percent",
    "cpu_count",
    "cpu_shares",
    "cpu_period",
    "cpu_quota",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "shm_size",
    "mem_limit",
    "mem_reservation",
    "memswap_limit",
    "oom_score_adj",
    "pids_limit",
)


# A service-level limit and its deploy twin: compose refuses two different values.
_TWINS = (
    ("cpus", ("deploy", "resources", "limits", "cpus")),
    ("mem_limit", ("deploy", "resources", "limits", "memory")),
    ("mem_reservation", ("deploy", "resources", "reservations", "memory")),
    ("pids_limit", ("deploy", "resources", "limits", "pids")),
)


def _distinct_limits(ctx: Ctx, fields: Mapping[str, Any]) -> None:
    for key, path in _TWINS:
        if fields.get(key) in (None, 0, "0", 0.0):
            continue
        section: Any = fields
        for part in path[:-1]:
            section = section.get(part) if isinstance(section, dict) else None
        # Once the deploy section exists, an absent value there counts as zero.
        if isinstance(section, dict) and section.get(path[-1]) != fields[key]:
            ctx.problem(
                ctx.origin_of((key,), Origin(START, None)),
                f"{key} and {'.'.join(path)} differ; compose refuses distinct values (keep one of them)",
            )


def _string(ctx: Ctx, value: Any, origin: Origin) -> Any:
    return ctx.text_value(value, origin, ctx.prefix, where=dotted(ctx.prefix))


def _typed(kind: str) -> Handler:
    def handler(ctx: Ctx, value: Any, origin: Origin) -> Any:
        return ctx.cast(value, origin, kind)

    return handler


_HANDLERS: dict[str, Handler] = {
    "command": lists.argv,
    "entrypoint": lists.argv,
    "environment": environment.key_values(null=None, what="environment"),
    "labels": environment.key_values(null="", what="labels"),
    "annotations": environment.key_values(null="", what="annotations"),
    "sysctls": environment.key_values(null="", what="sysctls"),
    "extra_hosts": environment.extra_hosts,
    "ports": ports.ports,
    "expose": ports.expose,
    "volumes": volumes.volumes,
    "configs": volumes.file_mounts("configs"),
    "secrets": volumes.file_mounts("secrets"),
    "networks": networks.networks,
    "healthcheck": healthcheck.healthcheck,
    "depends_on": networks.depends_on,
    "ulimits": deploy.ulimits,
    "deploy": deploy.deploy,
    "gpus": deploy.gpus,
    "logging": deploy.logging,
    "devices": deploy.devices,
    "env_file": environment.env_file,
    "dns": lists.string_list(single=True, duplicates="drop"),
    "dns_search": lists.string_list(single=True, duplicates="drop"),
    "dns_opt": lists.string_list(single=False, duplicates="drop"),
    "tmpfs": lists.string_list(single=True, duplicates="drop"),
    "cap_add": lists.string_list(single=False, duplicates="drop"),
    "cap_drop": lists.string_list(single=False, duplicates="drop"),
    "profiles": lists.string_list(single=False, duplicates="drop"),
    "links": lists.string_list(single=False, duplicates="drop"),
    "security_opt": lists.string_list(single=False, duplicates="refuse"),
    "group_add": lists.string_list(single=False, duplicates="refuse"),
    "external_links": lists.string_list(single=False, duplicates="refuse"),
    "volumes_from": lists.string_list(single=False, duplicates="refuse"),
    "device_cgroup_rules": lists.string_list(single=False, duplicates="refuse"),
    "init": _typed("bool"),
    "privileged": _typed("bool"),
    "read_only": _typed("bool"),
    "tty": _typed("bool"),
    "stdin_open": _typed("bool"),
    "oom_kill_disable": _typed("bool"),
    "cpus": _typed("float"),
    "cpu_percent": _typed("float"),
    "cpu_count": _typed("int"),
    "cpu_shares": _typed("int"),
    "cpu_period": _typed("int"),
    "cpu_quota": _typed("int"),
    "cpu_rt_period": _typed("int"),
    "cpu_rt_runtime": _typed("int"),
    "oom_score_adj": _typed("int"),
    "pids_limit": _typed("int"),
    "scale": _typed("int"),
    "mem_swappiness": _typed("int"),
    "shm_size": _typed("bytes"),
    "mem_limit": _typed("bytes"),
    "mem_reservation": _typed("bytes"),
    "memswap_limit": _typed("bytes"),
    "stop_grace_period": _typed("duration"),
    "image": _string,
    "container_name": _string,
    "hostname": _string,
    "domainname": _string,
    "user": _string,
    "working_dir": _string,
    "ipc": _string,
    "pid": _string,
    "uts": _string,
    "network_mode": _string,
    "restart": _string,
    "platform": _string,
    "pull_policy": _string,
    "stop_signal": _string,
    "runtime": _string,
    "cgroup": _string,
    "cgroup_parent": _string,
    "isolation": _string,
    "mac_address": _string,
    "userns_mode": _string,
}
# The service keys this model reads: what a misspelt key is compared with for a hint.
SERVICE_KEYS = tuple(sorted(_HANDLERS))

# Service keys whose spellings are modelled (the equivalence tests cover them); the
# rest are compared as written.
MODELLED_KEYS = frozenset(_HANDLERS)
