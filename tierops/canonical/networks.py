"""How a service reaches the others: `networks` (a mapping, whatever the spelling) and
`depends_on` (a mapping with `condition` and `required` filled in).
"""

from __future__ import annotations

from typing import Any

from tierops.canonical.context import Ctx
from tierops.canonical.model import Origin
from tierops.yamlload import YList, YMap


def networks(ctx: Ctx, value: Any, origin: Origin) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if isinstance(value, YList):
        for index, item in enumerate(value):
            child = ctx.item(value, index)
            if not isinstance(item, str):
                ctx.problem(child, f"networks[{index}] must be a network name")
                continue
            if item in result:
                ctx.problem(child, f"networks lists {item!r} twice; compose refuses duplicates here")
            ctx.record(("networks", item), child)
            result[item] = None
        return result
    if isinstance(value, YMap):
        for name in value:
            child = ctx.member_value(value, name)
            ctx.record(("networks", name), Origin(value.at(name), value[name], child.span))
            entry = value[name]
            if entry is None:
                result[name] = None
            elif isinstance(entry, YMap):
                body: dict[str, Any] = {}
                for key in entry:
                    inner = ctx.member_value(entry, key)
                    if key == "priority":
                        body[key] = ctx.cast(entry[key], inner, "int")
                    else:
                        body[key] = ctx.generic(
                            entry[key], inner, ("networks", name, key), ("networks", name, key)
                        )
                result[name] = body
            else:
                ctx.problem(child, f"networks.{name} must be a mapping or empty")
        return result
    ctx.problem(origin, "networks must be a list or a mapping")
    return result


def depends_on(ctx: Ctx, value: Any, origin: Origin) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if isinstance(value, YList):
        for index, item in enumerate(value):
            child = ctx.item(value, index)
            if not isinstance(item, str):
                ctx.problem(child, f"depends_on[{index}] must be a service name")
                continue
            ctx.record(("depends_on", item), child)
            result[item] = {"condition": "service_started", "required": True}
        return result
    if isinstance(value, YMap):
        for name in value:
            entry = value[name]
            child = ctx.member_value(value, name)
            ctx.record(("depends_on", name), Origin(value.at(name), entry, child.span))
            spec: dict[str, Any] = {"condition": "service_started", "required": True}
            if isinstance(entry, YMap):
                for key in entry:
                    inner = ctx.member_value(entry, key)
                    ctx.record(("depends_on", name, key), Origin(entry.at(key), entry[key], inner.span))
                    if key in ("required", "restart"):
                        if not isinstance(entry[key], bool):  # compose's schema: a YAML boolean
                            ctx.problem(
                                inner, f"depends_on.{name}.{key} must be a boolean (true or false, unquoted)"
                            )
                        spec[key] = entry[key]
                    else:
                        spec[key] = ctx.generic(entry[key], inner, ("depends_on", name, key), None)
                if spec.get("restart") is False:
                    spec.pop("restart")
            elif entry is not None:
                ctx.problem(child, f"depends_on.{name} must be a mapping")
            result[name] = spec
        return result
    ctx.problem(origin, "depends_on must be a list or a mapping")
    return result
