"""Mounts: `volumes` in the long syntax (compose-go's ParseVolume for the short one,
relative bind sources resolved against the project directory), and service-level
`configs`/`secrets` with their file mode as an octal string; the keys by which Compose
keeps one entry per target when documents merge.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import Any

from tierops.canonical.context import Ctx, Handler
from tierops.canonical.model import Origin, type_name
from tierops.yamlload import YList, YMap


def volume_key(item: Any) -> str | None:
    if isinstance(item, YMap):
        target = item.get("target")
        return target if isinstance(target, str) else None
    if isinstance(item, str):
        try:
            target = parse_volume(item)["target"]
        except ValueError:
            return None
        return target if isinstance(target, str) else None
    return None


def mount_key(default: str) -> Callable[[Any], str | None]:
    def key(item: Any) -> str | None:
        if isinstance(item, str):
            return f"{default}/{item}"
        if isinstance(item, YMap):
            if isinstance(item.get("target"), str):
                return str(item["target"])
            return f"{default}/{item.get('source')}"
        return None

    return key


_VOLUME_OPTIONS = frozenset({"ro", "rw", "z", "Z", "nocopy"})
_PROPAGATION = frozenset({"shared", "rshared", "slave", "rslave", "private", "rprivate"})
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def parse_volume(text: str) -> dict[str, Any]:
    """compose-go's ParseVolume: `[source:]target[:options]` (a one-letter source is a drive)."""
    parts: list[str] = []
    buf = ""
    index = 0
    while index < len(text):
        char = text[index]
        if char == ":":
            if len(buf) == 1 and buf.isalpha() and index + 1 < len(text) and text[index + 1] in "/\\":
                buf += char  # `c:/path` (and, as compose reads it, `v:/data`)
            else:
                parts.append(buf)
                buf = ""
        else:
            buf += char
        index += 1
    parts.append(buf)
    if len(parts) > 3 or not parts[-1 if len(parts) < 3 else 1]:
        raise ValueError(f"invalid volume specification: {text!r}")
    volume: dict[str, Any] = {}
    options: list[str] = []
    if len(parts) == 1:
        volume["target"] = parts[0]
    elif len(parts) == 2:
        # Two parts are always source and target, as compose-go fills them in order:
        # `/data:ro` mounts /data at a target named `ro` (the binary agrees; a test asks it).
        volume["source"], volume["target"] = parts
    else:
        volume["source"], volume["target"] = parts[0], parts[1]
        options = parts[2].split(",")
    if not volume.get("target"):
        raise ValueError(f"invalid volume specification: {text!r}")
    volume["options"] = options
    return volume


def _is_path(source: str) -> bool:
    return source.startswith((".", "/", "~")) or bool(_WINDOWS_DRIVE.match(source))


def volumes(ctx: Ctx, value: Any, origin: Origin) -> list[dict[str, Any]]:
    if not isinstance(value, YList):
        ctx.problem(origin, f"volumes must be a list, not {type_name(value)}")
        return []
    result: list[dict[str, Any]] = []
    for index, item in enumerate(value):
        child = ctx.item(value, index)
        ctx.record(("volumes", len(result)), child)
        if isinstance(item, str):
            mount = _short_volume(ctx, item, child)
        elif isinstance(item, YMap):
            mount = _long_volume(ctx, item, child, len(result))
        else:
            ctx.problem(child, f"volumes[{index}] must be a string or a mapping")
            continue
        if mount is not None:
            result.append(mount)
    return result


def _short_volume(ctx: Ctx, item: str, origin: Origin) -> dict[str, Any] | None:  # noqa: PLR0912 (one branch per volume option)
    masked = ctx.masked(item, origin)
    if masked is None:
        return None
    try:
        parsed = parse_volume(masked.text)
    except ValueError as exc:
        ctx.problem(origin, str(exc))
        return None
    source = parsed.get("source")
    mount: dict[str, Any] = {}
    if source is None:
        mount = {"type": "volume", "target": masked.restore(parsed["target"]), "volume": {}}
    elif _is_path(source):
        mount = {
            "type": "bind",
            "source": resolve(ctx.directory, masked.restore(source)),
            "target": masked.restore(parsed["target"]),
        }
    else:
        mount = {
            "type": "volume",
            "source": masked.restore(source),
            "target": masked.restore(parsed["target"]),
        }
    bind: dict[str, Any] = {}
    volume: dict[str, Any] = {}
    for option in parsed["options"]:
        if option == "ro":
            mount["read_only"] = True
        elif option in ("z", "Z"):
            bind["selinux"] = option
        elif option in _PROPAGATION:
            bind["propagation"] = option
        elif option == "nocopy":
            volume["nocopy"] = True
        elif option not in ("rw", ""):
            ctx.problem(origin, f"volumes: unknown option {option!r}")
    if mount["type"] == "bind":
        bind["create_host_path"] = True
        mount["bind"] = bind
    else:
        mount["volume"] = volume
    return mount


def _long_volume(ctx: Ctx, item: YMap, origin: Origin, slot: int) -> dict[str, Any]:
    mount: dict[str, Any] = {}
    for key in item:
        child = ctx.member_value(item, key)
        ctx.record(("volumes", slot, key), Origin(item.at(key), item[key], child.span))
        value = item[key]
        if key == "read_only":
            mount[key] = ctx.cast(value, child, "bool")
        elif key in ("bind", "volume", "tmpfs", "image") and isinstance(value, YMap):
            section: dict[str, Any] = {}
            for name in value:
                inner = ctx.member_value(value, name)
                if name in ("create_host_path", "nocopy"):
                    if ctx.cast(value[name], inner, "bool") is True:
                        section[name] = True
                elif name == "size":
                    section[name] = ctx.cast(value[name], inner, "bytes")
                else:
                    section[name] = ctx.generic(value[name], inner, ("volumes", slot, key, name), None)
            mount[key] = section
        else:
            mount[key] = ctx.generic(value, child, ("volumes", slot, key), None)
    if mount.get("type") == "bind" and isinstance(mount.get("source"), str):
        mount["source"] = resolve(ctx.directory, mount["source"])
    if mount.get("read_only") is False:
        mount.pop("read_only")
    return mount


def resolve(directory: str, source: str) -> str:
    """A bind source as compose prints it: absolute ones as written, relative ones joined and cleaned."""
    if source.startswith(("/", "~")) or _WINDOWS_DRIVE.match(source) or source.startswith("${"):
        return source
    return posixpath.normpath(posixpath.join(directory, source))


def file_mounts(kind: str) -> Handler:
    """Service-level configs/secrets: a name, or {source, target, uid, gid, mode}."""

    def handler(ctx: Ctx, value: Any, origin: Origin) -> list[dict[str, Any]]:
        if not isinstance(value, YList):
            ctx.problem(origin, f"{kind} must be a list, not {type_name(value)}")
            return []
        result: list[dict[str, Any]] = []
        for index, item in enumerate(value):
            child = ctx.item(value, index)
            ctx.record((kind, index), child)
            if isinstance(item, str):
                result.append({"source": ctx.template(item, child)})
            elif isinstance(item, YMap):
                entry: dict[str, Any] = {}
                for key in item:
                    inner = ctx.member_value(item, key)
                    ctx.record((kind, index, key), Origin(item.at(key), item[key], inner.span))
                    if key == "mode":
                        entry[key] = _file_mode(ctx, item[key], inner)
                    else:
                        entry[key] = ctx.generic(item[key], inner, (kind, index, key), None)
                result.append(entry)
            else:
                ctx.problem(child, f"{kind}[{index}] must be a name or a mapping")
        return result

    return handler


def _file_mode(ctx: Ctx, value: Any, origin: Origin) -> Any:
    """A file mode: compose prints it as a four-digit octal string ("0444")."""
    if isinstance(value, bool):
        ctx.problem(origin, "mode must be a number")
        return value
    if isinstance(value, int):
        return f"0{value:o}"
    if isinstance(value, str):
        masked = ctx.masked(value, origin)
        if masked is None or masked.refs:
            return value if masked is None else masked.restore(masked.text)
        try:
            return f"0{int(masked.text, 8):o}"
        except ValueError:
            ctx.problem(origin, f"mode {value!r} is not an octal number")
            return value
    ctx.problem(origin, "mode must be a number")
    return value
