"""Key-value fields: environment, labels, sysctls, annotations (a mapping whatever the
spelling), extra_hosts (`host=ip`), and env_file (paths resolved, `required` filled in).
"""

from __future__ import annotations

from typing import Any

from tierops.canonical.context import Ctx, Handler
from tierops.canonical.model import Origin, dotted, flow, new_origin, type_name
from tierops.canonical.volumes import resolve
from tierops.yamlload import YList, YMap


def key_values(*, null: str | None, what: str) -> Handler:
    """environment/labels/sysctls/annotations: a mapping whatever the spelling."""

    def handler(ctx: Ctx, value: Any, origin: Origin) -> dict[str, Any]:  # noqa: PLR0912 (one branch per spelling)
        prefix = ctx.prefix
        key = dotted(prefix)
        result: dict[str, Any] = {}
        if value is None:
            return result
        if isinstance(value, YMap):
            origins = ctx.origins
            spans, key_positions, value_positions = value.value_span, value.key_pos, value.value_pos
            for name, item in value.items():
                # ctx.member_value and ctx.record, inline (one of each per variable)
                span = spans.get(name)
                key_at = key_positions.get(name, value.pos)
                child = new_origin((value_positions.get(name, key_at), item, span))
                origins[(*prefix, name)] = new_origin((key_at, item, span))
                if type(item) is str and "$" not in item:
                    result[name] = item  # ctx.stringified's first case, inline
                elif item is None:
                    result[name] = null
                elif isinstance(item, (YMap, YList)):
                    ctx.problem(
                        child, f"{key}.{name} must be a string, number or boolean, not {type_name(item)}"
                    )
                    result[name] = flow(item)
                else:
                    result[name] = ctx.stringified(item, child)
            return result
        if isinstance(value, YList):
            for index, item in enumerate(value):
                child = ctx.item(value, index)
                text = item
                if not isinstance(text, str):
                    if isinstance(text, (int, float)) and not isinstance(text, bool):
                        text = ctx.stringified(text, child) or ""
                    else:
                        ctx.problem(
                            child, f"{key}[{index}] must be a string KEY=VALUE, not {type_name(text)}"
                        )
                        continue
                name, sep, rest = text.partition("=")
                name = ctx.template(name, child) if "$" in name else name
                ctx.record((*prefix, name), child)
                if sep:
                    result[name] = ctx.template(rest, child)
                elif null is None and ctx.env is not None:
                    result[name] = ctx.env.get(name)  # `K` alone: taken from compose's environment
                else:
                    result[name] = null
            return result
        ctx.problem(origin, f"{key} must be a mapping or a list of KEY=VALUE, not {type_name(value)}")
        return result

    handler.__name__ = what
    return handler


def extra_hosts(ctx: Ctx, value: Any, origin: Origin) -> list[str]:
    """`host:ip`, `host=ip` or a mapping: compose prints `host=ip`."""
    result: list[str] = []
    if isinstance(value, YMap):
        for name in value:
            child = ctx.member_value(value, name)
            ctx.record(("extra_hosts", name), Origin(value.at(name), value[name], child.span))
            ips = value[name] if isinstance(value[name], YList) else [value[name]]
            result.extend(f"{name}={ctx.stringified(ip, child)}" for ip in ips)
        return result
    if isinstance(value, YList):
        for index, item in enumerate(value):
            child = ctx.item(value, index)
            ctx.record(("extra_hosts", index), child)
            if not isinstance(item, str):
                ctx.problem(child, f"extra_hosts[{index}] must be a string host:ip")
                continue
            text = ctx.template(item, child)
            if "=" in text:
                result.append(text)
            else:
                host, sep, address = text.partition(":")
                result.append(f"{host}={address}" if sep else text)
        return result
    ctx.problem(origin, "extra_hosts must be a list or a mapping")
    return result


def env_file(ctx: Ctx, value: Any, origin: Origin) -> list[Any]:
    items = [value] if isinstance(value, str) else value
    result: list[Any] = []
    if not isinstance(items, YList | list):
        ctx.problem(origin, "env_file must be a path or a list")
        return result
    for index, item in enumerate(items):
        child = ctx.item(items, index) if isinstance(items, YList) else origin
        ctx.record(("env_file", index), child)
        if isinstance(item, str):
            result.append({"path": resolve(ctx.directory, ctx.template(item, child)), "required": True})
        elif isinstance(item, YMap):
            entry = ctx.generic(item, child, ("env_file", index), None)
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                entry["path"] = resolve(ctx.directory, entry["path"])
                entry.setdefault("required", True)
            result.append(entry)
    return result
