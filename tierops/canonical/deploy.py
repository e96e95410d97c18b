"""What a service reserves and how it runs: `deploy` (resources, restart and update
policies), GPU device requests (`gpus`, `deploy.resources.*.devices`), `devices`,
`ulimits` and `logging`.
"""

from __future__ import annotations

from typing import Any

from tierops.canonical.context import Ctx
from tierops.canonical.environment import key_values
from tierops.canonical.model import Origin, PathT, dotted, flow, type_name
from tierops.yamlload import YList, YMap


def ulimits(ctx: Ctx, value: Any, origin: Origin) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if not isinstance(value, YMap):
        ctx.problem(origin, "ulimits must be a mapping")
        return result
    for name in value:
        child = ctx.member_value(value, name)
        ctx.record(("ulimits", name), Origin(value.at(name), value[name], child.span))
        entry = value[name]
        if isinstance(entry, YMap):
            limits: dict[str, Any] = {}
            for key in ("soft", "hard"):
                if key in entry:
                    inner = ctx.member_value(entry, key)
                    ctx.record(("ulimits", name, key), Origin(entry.at(key), entry[key], inner.span))
                    limits[key] = ctx.cast(entry[key], inner, "int")
            result[name] = limits
        else:
            result[name] = ctx.cast(entry, child, "int")
    return result


def gpus(ctx: Ctx, value: Any, origin: Origin) -> Any:
    if isinstance(value, str):
        text = ctx.template(value, origin)
        if text == "all":
            return [{"count": -1}]
        ctx.problem(origin, f"gpus must be 'all' or a list, not {value!r}")
        return text
    if isinstance(value, YList):
        return [
            device_request(ctx, item, ctx.item(value, index), ("gpus", index))
            for index, item in enumerate(value)
        ]
    ctx.problem(origin, "gpus must be 'all' or a list")
    return None


def device_request(ctx: Ctx, item: Any, origin: Origin, path: PathT) -> Any:
    ctx.record(path, origin)
    if not isinstance(item, YMap):
        ctx.problem(origin, f"{dotted(path)} must be a mapping")
        return ctx.generic(item, origin, path, None)
    result: dict[str, Any] = {}
    for key in item:
        child = ctx.member_value(item, key)
        ctx.record((*path, key), Origin(item.at(key), item[key], child.span))
        value = item[key]
        if key == "count":
            if isinstance(value, str) and ctx.template(value, child) == "all":
                result[key] = -1
            else:
                result[key] = ctx.cast(value, child, "int")
        elif key in ("capabilities", "device_ids") and isinstance(value, YList):
            words = []
            for index, word in enumerate(value):
                inner = ctx.item(value, index)
                ctx.record((*path, key, index), inner)
                if isinstance(word, str):
                    words.append(ctx.template(word, inner))
                else:
                    ctx.problem(
                        inner,
                        f"{dotted((*path, key, index))} must be a string, not {type_name(word)} (quote it)",
                    )
                    words.append(flow(word))
            result[key] = words
        elif key in ("capabilities", "device_ids"):
            ctx.problem(child, f"{dotted((*path, key))} must be a list of strings, not {type_name(value)}")
            result[key] = ctx.generic(value, child, (*path, key), None)
        else:
            result[key] = ctx.generic(value, child, (*path, key), None)
    return result


def deploy(ctx: Ctx, value: Any, origin: Origin) -> Any:
    if not isinstance(value, YMap):
        ctx.problem(origin, f"deploy must be a mapping, not {type_name(value)}")
        return ctx.generic(value, origin, ("deploy",), None)
    result: dict[str, Any] = {}
    for key in value:
        child = ctx.member_value(value, key)
        ctx.record(("deploy", key), Origin(value.at(key), value[key], child.span))
        item = value[key]
        if key == "resources" and isinstance(item, YMap):
            result[key] = _resources(ctx, item)
        elif key == "replicas":
            result[key] = ctx.cast(item, child, "int")
        elif key == "labels":
            ctx.prefix = ("deploy", "labels")
            result[key] = key_values(null="", what="labels")(ctx, item, child)
            ctx.prefix = ("deploy",)
        elif key in ("restart_policy", "update_config", "rollback_config") and isinstance(item, YMap):
            section: dict[str, Any] = {}
            for name in item:
                inner = ctx.member_value(item, name)
                ctx.record(("deploy", key, name), Origin(item.at(name), item[name], inner.span))
                if name in ("delay", "window", "monitor"):
                    section[name] = ctx.cast(item[name], inner, "duration")
                elif name in ("max_attempts", "parallelism"):
                    section[name] = ctx.cast(item[name], inner, "int")
                elif name == "max_failure_ratio":
                    section[name] = ctx.cast(item[name], inner, "float")
                else:
                    section[name] = ctx.generic(item[name], inner, ("deploy", key, name), None)
            result[key] = section
        else:
            result[key] = ctx.generic(item, child, ("deploy", key), ("deploy", key))
    result.setdefault("placement", {})
    return result


def _resources(ctx: Ctx, value: YMap) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for kind in value:
        child = ctx.member_value(value, kind)
        ctx.record(("deploy", "resources", kind), Origin(value.at(kind), value[kind], child.span))
        section = value[kind]
        if not isinstance(section, YMap):
            result[kind] = ctx.generic(section, child, ("deploy", "resources", kind), None)
            continue
        body: dict[str, Any] = {}
        for key in section:
            inner = ctx.member_value(section, key)
            path = ("deploy", "resources", kind, key)
            ctx.record(path, Origin(section.at(key), section[key], inner.span))
            item = section[key]
            if key == "cpus":
                body[key] = ctx.cast(item, inner, "float")
            elif key == "memory":
                if not isinstance(item, str):  # unlike shm_size, compose's schema wants a string here
                    ctx.problem(
                        inner,
                        f"deploy.resources.{kind}.memory must be a string such as '512M', not {type_name(item)}",
                    )
                body[key] = ctx.cast(item, inner, "bytes")
            elif key == "pids":
                body[key] = ctx.cast(item, inner, "int")
            elif key == "devices" and isinstance(item, YList):
                body[key] = [
                    device_request(ctx, device, ctx.item(item, index), (*path, index))
                    for index, device in enumerate(item)
                ]
            else:
                body[key] = ctx.generic(item, inner, path, None)
        result[kind] = body
    return result


def logging(ctx: Ctx, value: Any, origin: Origin) -> Any:
    if not isinstance(value, YMap):
        ctx.problem(origin, "logging must be a mapping")
        return None
    result: dict[str, Any] = {}
    for key in value:
        child = ctx.member_value(value, key)
        ctx.record(("logging", key), Origin(value.at(key), value[key], child.span))
        if key == "options" and isinstance(value[key], YMap):
            options = value[key]
            result[key] = {
                name: ctx.stringified(options[name], ctx.member_value(options, name)) for name in options
            }
        else:
            result[key] = ctx.generic(value[key], child, ("logging", key), None)
    return result


def devices(ctx: Ctx, value: Any, origin: Origin) -> list[Any]:
    """`/dev/x[:/dev/y[:perms]]` or the long syntax."""
    result: list[Any] = []
    if not isinstance(value, YList):
        ctx.problem(origin, "devices must be a list")
        return result
    for index, item in enumerate(value):
        child = ctx.item(value, index)
        ctx.record(("devices", index), child)
        if isinstance(item, str):
            text = ctx.template(item, child)
            parts = text.split(":")
            if len(parts) == 1:
                result.append({"source": parts[0], "target": parts[0], "permissions": "rwm"})
            elif len(parts) == 2:
                if parts[1].startswith("/"):
                    result.append({"source": parts[0], "target": parts[1], "permissions": "rwm"})
                else:
                    result.append({"source": parts[0], "target": parts[0], "permissions": parts[1]})
            else:
                result.append({"source": parts[0], "target": parts[1], "permissions": parts[2]})
        else:
            ctx.problem(
                child, f"devices[{index}] must be a string /dev/x[:/dev/y[:perms]], not {type_name(item)}"
            )
            result.append(ctx.generic(item, child, ("devices", index), None))
    return result
