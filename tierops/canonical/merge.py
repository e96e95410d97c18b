"""Several documents merged as Compose merges override files, then its unicity rules.

The merged document keeps every position and span, so the model built on it still
points at the author's text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tierops.canonical.model import PathT, Problem
from tierops.canonical.ports import expose_key, port_key
from tierops.canonical.volumes import mount_key, volume_key
from tierops.yamlload import YList, YMap


def merge_documents(documents: Sequence[YMap], problems: list[Problem]) -> YMap:
    """Several documents merged as Compose merges override files; then its dedup rules.

    Mappings merge key by key (later wins for scalars), sequences append, except:
    `command`, `entrypoint` and `healthcheck.test` are replaced; `environment`,
    `labels`, `sysctls`, `annotations`, `extra_hosts` and `depends_on` merge by key
    (either spelling); `ulimits.*`, `x-*` keys and a `logging` with another driver are
    replaced. A value tagged `!override` replaces the earlier one, and a key tagged
    `!reset` is removed (the loader already left its value out). Then (in one document
    too) `ports`, `expose`, `volumes`, `configs` and `secrets` keep one entry per key,
    the last definition at the first position.
    """
    merged = documents[0]
    for document in documents[1:]:
        merged = _merge(merged, document, ())
    services = merged.get("services")
    if isinstance(services, YMap):
        unique = {
            name: _unique_entries(service, problems) if isinstance(service, YMap) else service
            for name, service in services.items()
        }
        if any(unique[name] is not services[name] for name in services):
            # New maps, never the loaded ones: a loaded file may be read again (the
            # rollout tools share one reading of each file per process).
            services = _copy_map(services)
            services.update(unique)
            merged = _copy_map(merged)
            merged["services"] = services
    return merged


_REPLACED = frozenset({"command", "entrypoint"})
_KEYED = frozenset({"environment", "labels", "sysctls", "annotations", "extra_hosts", "depends_on"})


def _merge(base: Any, over: Any, path: PathT) -> Any:  # noqa: PLR0911, PLR0912 (one branch per compose merge rule)
    depth = len(path)
    in_service = depth >= 2 and path[0] == "services"
    key = path[-1] if path else None
    if in_service and depth == 3 and key in _REPLACED:
        return over
    if in_service and path[2:] == ("healthcheck", "test"):
        return over
    if in_service and depth == 4 and path[2] == "ulimits":
        return over
    if in_service and depth == 3 and key in _KEYED:
        return _merge_keyed(base, over)
    if (
        in_service
        and depth == 3
        and key == "logging"
        and isinstance(base, YMap)
        and isinstance(over, YMap)
        and "driver" in base
        and "driver" in over
        and base["driver"] != over["driver"]
    ):
        return over  # another logging driver: its options are not merged
    if isinstance(base, YMap) and isinstance(over, YMap):
        result = _copy_map(base)
        tags = over.merge_tags or {}
        for name, value in over.items():
            if name in result and not name.startswith("x-") and tags.get(name) != "!override":
                result[name] = _merge(result[name], value, (*path, name))
            else:
                result[name] = value
            result.key_pos[name] = over.key_pos.get(name, over.pos)
            result.value_pos[name] = over.value_pos.get(name, over.pos)
            if name in over.value_span:
                result.value_span[name] = over.value_span[name]
            else:
                result.value_span.pop(name, None)
        for name, tag in tags.items():
            if tag == "!reset" and name in result:
                del result[name]
        return result
    if isinstance(base, YList) and isinstance(over, YList):
        result_list = YList(base.pos)
        for source in (base, over):
            for index, item in enumerate(source):
                result_list.append(item)
                result_list.item_pos.append(source.at(index))
                result_list.item_span.append(
                    source.item_span[index] if index < len(source.item_span) else None
                )
        return result_list
    return over


def _copy_map(source: YMap) -> YMap:
    result = YMap(source.pos)
    result.update(source)
    result.key_pos.update(source.key_pos)
    result.value_pos.update(source.value_pos)
    result.value_span.update(source.value_span)
    return result


def _merge_keyed(base: Any, over: Any) -> Any:
    """Two `K=V` lists or mappings merged key by key, as a mapping (later wins)."""
    left, right = _as_mapping(base), _as_mapping(over)
    if left is None or right is None:
        return over
    result = _copy_map(left)
    for name, value in right.items():
        if isinstance(result.get(name), YMap) and isinstance(value, YMap):  # depends_on entries
            result[name] = _merge(result[name], value, ("services", "_", "depends_on", name))
        else:
            result[name] = value
        result.key_pos[name] = right.at(name)
        result.value_pos[name] = right.value_at(name)
        if name in right.value_span:
            result.value_span[name] = right.value_span[name]
        else:
            result.value_span.pop(name, None)
    return result


def _as_mapping(value: Any) -> YMap | None:
    if isinstance(value, YMap):
        return value
    if not isinstance(value, YList):
        return None
    result = YMap(value.pos)
    for index, item in enumerate(value):
        if isinstance(item, str):
            name, sep, rest = item.partition("=")
            if not sep and ":" in item:  # extra_hosts `host:ip`
                name, _, rest = item.partition(":")
                sep = "="
            entry: Any = rest if sep else None
            result[name] = entry
            result.key_pos[name] = value.at(index)
            result.value_pos[name] = value.at(index)
        else:
            return None
    return result


def _unique_entries(service: YMap, problems: list[Problem]) -> YMap:
    """Compose's unicity rule: one entry per key in these lists, last wins, first place kept."""
    result = service
    for key, indexer in _INDEXERS.items():
        items = service.get(key)
        if not isinstance(items, YList):
            continue
        keys: dict[str, int] = {}
        kept = YList(items.pos)
        for index, item in enumerate(items):
            name = indexer(item)
            if name is not None and name in keys:
                slot = keys[name]
                kept[slot] = item
                kept.item_pos[slot] = items.at(index)
                kept.item_span[slot] = items.item_span[index] if index < len(items.item_span) else None
                continue
            if name is not None:
                keys[name] = len(kept)
            kept.append(item)
            kept.item_pos.append(items.at(index))
            kept.item_span.append(items.item_span[index] if index < len(items.item_span) else None)
        if len(kept) != len(items):
            if result is service:
                result = _copy_map(service)
            result[key] = kept
    return result


_INDEXERS: dict[str, Callable[[Any], str | None]] = {
    "ports": port_key,
    "expose": expose_key,
    "volumes": volume_key,
    "secrets": mount_key("/run/secrets"),
    "configs": mount_key(""),
}
