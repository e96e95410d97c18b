"""The parts every stack shares (`generators/parts.yaml`), merged into a stack's source."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from generators.reader import Merged, Reader, fill, fleet_relative
from tierops.yamlio import load_roundtrip

PARTS_KEYS = ("services", "configs", "collector_config")


def apply_parts(r: Reader, doc: Any, path: Path) -> None:
    """Build the source's sidecars, configs and collector config from its `parts:` file.

    Each `services.<name>: {part: P, ...}` becomes part P with the stack's other keys
    merged over it; the parts' configs come first and the source's add to or replace
    them by name; the parts' collector config applies unless the source has its own.
    """
    ref = doc.get("parts")
    if ref is None:
        return
    if not isinstance(ref, str):
        r.fail(
            r.at(doc, "parts"), "parts: names the parts file, relative to this source (`parts: parts.yaml`)"
        )
        return
    parts_path = path.parent / ref
    if not parts_path.is_file():
        r.fail(r.at(doc, "parts"), f"parts: no file {ref} beside this source")
        return
    shown = fleet_relative(parts_path)
    parts = load_roundtrip(parts_path, display=shown)
    if not hasattr(parts, "items"):
        r.fail(r.at(doc, "parts"), f"parts: {ref} must be a YAML mapping")
        return
    own = Reader(shown)  # the parts file's own mistakes, at its own lines
    own.known(parts, PARTS_KEYS, "parts")
    r.problems.extend(own.problems)
    model = doc.get("model") if hasattr(doc.get("model"), "get") else {}
    _fill_in_place(
        parts, {"project": str(doc.get("project") or ""), "served_name": str(model.get("served_name") or "")}
    )
    offered = parts.get("services") or {}
    for name, spec in list((doc.get("services") or {}).items()):
        if not hasattr(spec, "get") or "part" not in spec:
            continue
        part = spec["part"]
        if part not in offered:
            near = difflib.get_close_matches(str(part), [str(p) for p in offered], n=1, cutoff=0.6)
            hint = f"did you mean '{near[0]}'?" if near else f"parts: {', '.join(map(str, offered))}"
            r.fail(r.at(spec, "part"), f"{name}: no part '{part}' in {ref}; {hint}")
            continue
        doc["services"][name] = _merged(offered[part], spec, shown, r.display)
    own_configs = doc.get("configs") or {}
    configs = CommentedMap((key, value) for key, value in (parts.get("configs") or {}).items())
    for key, value in own_configs.items():
        configs[key] = value
    doc["configs"] = configs
    if doc.get("collector_config") is None and parts.get("collector_config") is not None:
        doc["collector_config"] = parts["collector_config"]


def _merged(base: Any, over: Any, base_display: str, over_display: str) -> Merged:
    """`base` with `over`'s keys merged over it (mappings key by key, else replaced),
    each key remembering the file and mapping that wrote it (for `Reader.at`)."""
    merged = Merged()
    origin: dict[Any, tuple[str, Any]] = {None: (over_display, over)}
    for key, value in base.items():
        merged[key] = value
        origin[key] = (base_display, base)
    for key, value in over.items():
        if key == "part":
            continue
        if key in merged and hasattr(merged[key], "items") and hasattr(value, "items"):
            merged[key] = _merged(merged[key], value, base_display, over_display)
        else:
            merged[key] = value
        origin[key] = (over_display, over)
    merged.origin = origin
    return merged


def _fill_in_place(node: Any, values: Mapping[str, str]) -> None:
    """Every string value under `node` with its {project}/{served_name} filled, in place
    (the containers keep their line marks)."""
    items = node.items() if hasattr(node, "items") else enumerate(node) if isinstance(node, list) else ()
    for key, value in list(items):
        if isinstance(value, str):
            node[key] = type(value)(fill(value, values))  # keeps ruamel's scalar style type
        else:
            _fill_in_place(value, values)
