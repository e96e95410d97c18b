"""`ports` in the long syntax (one entry per port of a range, `/tcp` and `mode: ingress`
filled in, `published` a string) and `expose` as strings; the key by which Compose keeps
one entry per port when documents merge.
"""

from __future__ import annotations

import re
from typing import Any

from tierops.canonical.context import Ctx
from tierops.canonical.lists import string_list
from tierops.canonical.model import Origin, type_name
from tierops.yamlload import YList, YMap


def port_key(item: Any) -> str | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return str(item)
    if isinstance(item, str):
        return item
    if isinstance(item, YMap):
        target = item.get("target")
        published = item.get("published")
        if not isinstance(target, int) or isinstance(target, bool):
            return None
        pub = str(published) if isinstance(published, (str, int)) and not isinstance(published, bool) else ""
        host = item.get("host_ip") if isinstance(item.get("host_ip"), str) else "0.0.0.0"
        protocol = item.get("protocol") if isinstance(item.get("protocol"), str) else "tcp"
        return f"{host}:{pub}:{target}/{protocol}"
    return None


def expose_key(item: Any) -> str | None:
    if isinstance(item, bool):
        return None
    return str(item) if isinstance(item, (str, int)) else None


# ports: [[host_ip:]published:]target[/protocol], ranges `a-b`, IPv6 hosts in brackets.
_PORT_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def ports(ctx: Ctx, value: Any, origin: Origin) -> list[dict[str, Any]]:
    if not isinstance(value, YList):
        ctx.problem(origin, f"ports must be a list, not {type_name(value)}")
        return []
    result: list[dict[str, Any]] = []
    for index, item in enumerate(value):
        child = ctx.item(value, index)
        start = len(result)
        if isinstance(item, YMap):
            result.append(_long_port(ctx, item, child, index))
        elif isinstance(item, (str, int)) and not isinstance(item, bool):
            result.extend(_short_port(ctx, item, child))
        else:
            ctx.problem(child, f"ports[{index}] must be a string, a number or a mapping")
        for slot in range(start, len(result)):
            ctx.record(("ports", slot), child)
    return result


def _short_port(ctx: Ctx, item: str | int, origin: Origin) -> list[dict[str, Any]]:  # noqa: PLR0912 (one branch per part of the port syntax)
    if isinstance(item, int):
        return [{"mode": "ingress", "target": item, "protocol": "tcp"}]
    masked = ctx.masked(item, origin)
    if masked is None:
        return []
    text = masked.text
    protocol = "tcp"
    if "/" in text:
        text, protocol = text.rsplit("/", 1)
    host = ""
    if text.startswith("["):  # [::1]:8000:80
        close = text.find("]")
        host, text = text[1:close], text[close + 2 :]
    parts = text.rsplit(":", 2) if not host else text.split(":")
    if len(parts) == 3:
        host, published, target = parts
    elif len(parts) == 2:
        published, target = parts
    else:
        published, target = "", parts[0]
    if masked.refs:
        # A variable inside: compose splits after substituting; keep the pieces symbolic.
        entry: dict[str, Any] = {"mode": "ingress"}
        if host:
            entry["host_ip"] = masked.restore(host)
        entry["target"] = int(target) if target.isdigit() else masked.restore(target)
        if published:
            entry["published"] = masked.restore(published)
        entry["protocol"] = masked.restore(protocol)
        return [entry]
    targets = _PORT_RANGE.match(target)
    if targets is None:
        ctx.problem(origin, f"ports: invalid port {item!r}")
        return []
    first, last = int(targets.group(1)), int(targets.group(2) or targets.group(1))
    published_range: tuple[int, int] | None = None
    if published:
        match = _PORT_RANGE.match(published)
        if match is None:
            ctx.problem(origin, f"ports: invalid published port {published!r}")
            return []
        published_range = (int(match.group(1)), int(match.group(2) or match.group(1)))
    entries: list[dict[str, Any]] = []
    for offset, port in enumerate(range(first, last + 1)):
        entry = {"mode": "ingress"}
        if host:
            entry["host_ip"] = host
        entry["target"] = port
        if published_range is not None:
            low, high = published_range
            if high - low == last - first:
                entry["published"] = str(low + offset)
            else:
                entry["published"] = f"{low}-{high}" if high != low else str(low)
        entry["protocol"] = protocol
        entries.append(entry)
    return entries


def _long_port(ctx: Ctx, item: YMap, origin: Origin, index: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"mode": "ingress"}
    for key in item:
        child = ctx.member_value(item, key)
        ctx.record(("ports", index, key), Origin(item.at(key), item[key], child.span))
    order = ("name", "mode", "host_ip", "target", "published", "protocol", "app_protocol")
    for key in order:
        if key not in item:
            continue
        child = ctx.member_value(item, key)
        value = item[key]
        if key == "target":
            entry[key] = ctx.cast(value, child, "int")
        elif key == "published":
            entry[key] = ctx.stringified(value, child)
        else:
            entry[key] = ctx.text_value(value, child, ("ports", index, key), where=f"ports[{index}].{key}")
    entry.setdefault("protocol", "tcp")
    for key in item:
        if key not in order:
            entry[key] = ctx.generic(item[key], ctx.member_value(item, key), ("ports", index, key), None)
    return entry


def expose(ctx: Ctx, value: Any, origin: Origin) -> list[str]:
    words: list[str] = string_list(single=False, duplicates="drop")(ctx, value, origin)
    return words
