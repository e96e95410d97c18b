"""One Change as the line a reviewer would write by hand.

`+ --enable-dynamic-batch-tokenizer`, `--chunked-prefill-size: 4096 -> 8192`,
`env HF_HUB_OFFLINE: 1 -> 0`, `label tierops.otel.config_variant: a -> b`,
`GPUs: 0,1,2,3 -> 4,5,6,7`, `scrape job X: label config_variant: a -> b`.
The line never names the service or the config (folding adds those), so identical
changes on several services produce identical lines and fold into one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from rollout.diff.changes import ABSENT, Aspect, Change, Op

_BARE = re.compile(r"^[^\s\"'`]+$")
_FINGERPRINT = re.compile(r"^<secret sha256:[0-9a-f]{8}>$")  # masking.fingerprint(): shown bare


def show(value: Any, key: Any = None) -> str:  # noqa: PLR0911 (one return per type)
    """A value as text: plain strings bare, anything ambiguous quoted, data as compact JSON."""
    if value is ABSENT:
        return "(absent)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and key == "mode":
        return oct(value)  # file modes read as 0o444, not 292
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        if _BARE.match(value) or _FINGERPRINT.match(value):
            return value
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def argv_item(item: Any) -> str:
    """`{"flag": "--tp-size", "value": "4"}` -> `--tp-size 4`; `{"arg": "x"}` -> `x`."""
    if isinstance(item, Mapping):
        if "flag" in item:
            value = item.get("value")
            return str(item["flag"]) if value is None else f"{item['flag']} {show(value)}"
        if "arg" in item:
            return show(item["arg"])
    return show(item)


def argv_text(form: Any) -> str:
    if not isinstance(form, Mapping):
        return show(form)
    words = [show(token) for token in form.get("program", [])]
    words += [argv_item(item) for item in form.get("args", [])]
    return " ".join(words) if words else "(empty)"


def _pairs(mapping: Any) -> str:
    if not isinstance(mapping, Mapping):
        return show(mapping)
    return ", ".join(_pair(key, value) for key, value in mapping.items()) or "(empty)"


def _pair(key: Any, value: Any) -> str:
    return f"{key} (from the host)" if value is None else f"{key}={show(value, key)}"


def describe(change: Change) -> str:
    """The one-line reading of a change (values already masked by the caller): what
    Compose reads, then what the author wrote where that reads otherwise."""
    if change.op is Op.NOTE:
        return f"note: {change.subject}"
    handler: Callable[[Change], str] = _HANDLERS.get(change.aspect, _generic)
    line = handler(change)
    return line + as_written(change, line)


_TOKEN_EDGE = r"[\w.-]"


def as_written(change: Change, line: str) -> str:
    """` (written: OLD -> NEW)`: the author's text on each side, when a side's text does
    not read in `line` as a whole word (`stop_grace_period: 5m -> 6m (written: 300s ->
    6m)`, `--tp-size: 4 -> 8 (written: --tp 4 -> --tp 8)`); empty when every word the
    author wrote is in the line already. A side without a text of its own is `...`."""
    old, new = change.written
    if old is None and new is None:
        return ""
    if isinstance(change.old, str) and isinstance(change.new, str) and json_edits(change.old, change.new):
        return ""  # a JSON-valued env or label: the line lists its edits, item by item
    if all(text is None or _reads_in(text, line) for text in (old, new)):
        return ""
    if change.op is Op.ADDED:
        return f" (written: {new})"
    if change.op is Op.REMOVED:
        return f" (written: {old})"
    return f" (written: {old if old is not None else '...'} -> {new if new is not None else '...'})"


# The words of a text as written: quoted scalars whole, else runs between blanks and
# flow punctuation (`[0, 1]` is the words 0 and 1; `{target: 8000}` is target and 8000).
_WORDS = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^\s\[\]{},]+')


def _reads_in(text: str, line: str) -> bool:
    """Whether every word of `text` is a whole word of `line` (quotes aside)."""
    for found in _WORDS.findall(text):
        word = unquoted(found[:-1] if found.endswith(":") else found)  # a flow mapping's key: its name
        if word and not re.search(f"(?<!{_TOKEN_EDGE}){re.escape(word)}(?!{_TOKEN_EDGE})", line):
            return False
    return True


def unquoted(text: str) -> str:
    """A scalar's text without the quotes around it (`"8000"` -> `8000`)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _service(change: Change) -> str:
    if change.op is Op.ADDED:
        return f"+ service: {summary(change.new)}"
    return f"- service: {summary(change.old)}"


def summary(form: Any) -> str:
    """A service form in a few words: image, program, flag count, GPUs."""
    if not isinstance(form, Mapping):
        return show(form)
    parts = [f"image {show(form.get('image'))}"] if form.get("image") else []
    command = form.get("command")
    if isinstance(command, Mapping):
        program = " ".join(str(token) for token in command.get("program", [])) or "(no program)"
        parts.append(f"command {program} with {len(command.get('args', []))} arguments")
    return "; ".join(parts) or "(empty definition)"


def _image(change: Change) -> str:
    return _generic(change, "image")


def _argv(change: Change) -> str:  # noqa: PLR0911 (one return per kind of argv edit)
    prefix = "entrypoint " if change.aspect is Aspect.ENTRYPOINT else ""
    tail = change.path[-1]
    if len(change.path) == 3:  # the whole command/entrypoint key
        noun = "entrypoint" if prefix else "command"
        # Compose renders an unset command as null: null -> words is an added command.
        if change.op is Op.ADDED or (change.op is Op.CHANGED and change.old is None):
            return f"+ {noun}: {argv_text(change.new)}"
        if change.op is Op.REMOVED or (change.op is Op.CHANGED and change.new is None):
            return f"- {noun}: {argv_text(change.old)}"
        return f"{noun}: {argv_text(change.old)} -> {argv_text(change.new)}"
    if tail == "program":
        return (
            f"{prefix}program: {argv_text({'program': change.old})} -> {argv_text({'program': change.new})}"
        )
    if change.op is Op.ADDED:
        return f"{prefix}+ {argv_item(change.new)}"
    if change.op is Op.REMOVED:
        return f"{prefix}- {argv_item(change.old)}"
    old, new = change.old, change.new
    if old == new:
        return f"{prefix}{argv_item(new)}: moved (argument {int(tail) + 1} -> {(change.head_index or 0) + 1})"
    return f"{prefix}{change.subject}: {_flag_value(old)} -> {_flag_value(new)}"


def _flag_value(item: Any) -> str:
    if isinstance(item, Mapping) and "flag" in item:
        value = item.get("value")
        return "(no value)" if value is None else show(value)
    return argv_item(item)


def _keyed(noun: str) -> Any:
    def render(change: Change) -> str:  # noqa: PLR0911 (one return per kind of edit)
        if len(change.path) == 3:  # the whole mapping added or removed
            if change.op is Op.ADDED:
                return f"+ {noun}: {_pairs(change.new)}"
            if change.op is Op.REMOVED:
                return f"- {noun}: {_pairs(change.old)}"
            return f"{noun}: {show(change.old)} -> {show(change.new)}"
        key = change.path[-1]
        if change.op is Op.ADDED:
            return f"+ {noun} {_pair(key, change.new)}"
        if change.op is Op.REMOVED:
            return f"- {noun} {_pair(key, change.old)}"
        edits = json_edits(change.old, change.new)
        if edits is not None:
            return f"{noun} {key} (JSON): {'; '.join(edits) or 'same data, other spelling'}"
        return f"{noun} {key}: {_env_value(change.old)} -> {_env_value(change.new)}"

    return render


def _json(value: Any) -> Any:
    """A JSON array or object written as text (Datadog's `com.datadoghq.ad.*` labels), else None."""
    if not isinstance(value, str) or not value.lstrip().startswith(("[", "{")):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (list, dict)) else None


def json_edits(old: Any, new: Any) -> list[str] | None:
    """Per key or list item, what changed between two JSON texts (None: not both JSON)."""
    before, after = _json(old), _json(new)
    if before is None or after is None:
        return None
    edits: list[str] = []
    _json_walk(before, after, "", edits)
    return edits


def _json_walk(before: Any, after: Any, where: str, edits: list[str]) -> None:
    label = f"{where}: " if where else ""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*after, *(key for key in before if key not in after)]:
            path = f"{where}.{key}" if where else str(key)
            if key not in before:
                edits.append(f"+ {path}: {_compact(after[key])}")
            elif key not in after:
                edits.append(f"- {path}: {_compact(before[key])}")
            elif before[key] != after[key]:
                _json_walk(before[key], after[key], path, edits)
        return
    if isinstance(before, list) and isinstance(after, list):
        texts = [_compact(item) for item in before]
        remaining = list(texts)
        added: list[str] = []
        for item in after:
            text = _compact(item)
            if text in remaining:
                remaining.remove(text)
            else:
                added.append(text)
        edits += [f"{label}- {text}" for text in remaining]
        edits += [f"{label}+ {text}" for text in added]
        if not remaining and not added and texts != [_compact(item) for item in after]:
            edits.append(f"{label}same items, another order")
        return
    edits.append(f"{label}{_compact(before)} -> {_compact(after)}")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _env_value(value: Any) -> str:
    return "(from the host)" if value is None else show(value)


def _gpus(change: Change) -> str:
    if change.subject == "GPUs":
        return f"GPUs: {_ids(change.old)} -> {_ids(change.new)}"
    return _generic(change)


def _ids(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(item) for item in value) or "(none)"
    return show(value)


def _items(noun: str) -> Any:
    def render(change: Change) -> str:
        if len(change.path) == 3:
            return _generic(change, f"{noun}s")
        if change.op is Op.ADDED:
            return f"+ {noun} {_item(change.new)}"
        if change.op is Op.REMOVED:
            return f"- {noun} {_item(change.old)}"
        return f"{noun} {_item(change.old)} -> {_item(change.new)}"

    return render


_PORT_KEYS = frozenset({"target", "published", "protocol", "mode", "host_ip"})
_VOLUME_KEYS = frozenset({"type", "source", "target", "read_only", "bind", "volume"})


def _item(value: Any) -> str:
    """A port or volume in the short syntax people write, when it has one (else its data)."""
    if isinstance(value, Mapping) and "target" in value and set(value) <= _PORT_KEYS and "type" not in value:
        text = str(value["target"])
        if value.get("published"):
            text = f"{value['published']}:{text}"
        if value.get("host_ip"):
            text = f"{value['host_ip']}:{text}"
        if value.get("protocol", "tcp") != "tcp":
            text += f"/{value['protocol']}"
        if value.get("mode", "ingress") != "ingress":
            text += f" (mode {value['mode']})"
        return show(text)
    if (
        isinstance(value, Mapping)
        and value.get("type") in ("bind", "volume")
        and set(value) <= _VOLUME_KEYS
        and value.get("bind", {}) in ({}, {"create_host_path": True})
        and value.get("volume", {}) == {}
    ):
        text = f"{value['source']}:{value['target']}" if value.get("source") else str(value["target"])
        return show(text + (":ro" if value.get("read_only") else ""))
    return show(value)


def _depends(change: Change) -> str:
    if len(change.path) == 3:
        return _generic(change, "depends_on")
    name = change.path[-1]
    if change.op is Op.ADDED:
        return f"+ depends_on {name} {_condition(change.new)}"
    if change.op is Op.REMOVED:
        return f"- depends_on {name} {_condition(change.old)}"
    return f"depends_on {name}: {_condition(change.old)} -> {_condition(change.new)}"


def _condition(spec: Any) -> str:
    # Compose fills in `required: true`; only what differs from its defaults is shown.
    if isinstance(spec, Mapping) and "condition" in spec:
        extras = {key: value for key, value in spec.items() if key != "condition"}
        if extras.get("required", True) is True:
            extras.pop("required", None)
        if not extras.get("restart", False):
            extras.pop("restart", None)
        if not extras:
            return f"({spec['condition']})"
    return show(spec)


def _healthcheck(change: Change) -> str:
    if change.path[-1] == "test" and change.op is Op.CHANGED:
        return f"healthcheck.test: {_test(change.old)} -> {_test(change.new)}"
    return _generic(change)


def _test(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(show(item) for item in value)
    return show(value)


def _config(change: Change) -> str:
    name = change.path[1]
    if len(change.path) == 2:
        noun = str(change.path[0]).removesuffix("s")
        return f"+ {noun} {name}" if change.op is Op.ADDED else f"- {noun} {name}"
    if len(change.path) > 2 and change.path[-2] == "scrape_configs":  # a whole scrape job
        job = change.path[-1]
        if change.op is Op.ADDED:
            return f"scrape job {job}: + job {show(change.new)}"
        if change.op is Op.REMOVED:
            return f"scrape job {job}: - job {show(change.old)}"
    if change.unified:
        added = sum(1 for line in change.unified if line.startswith("+"))
        removed = sum(1 for line in change.unified if line.startswith("-"))
        return f"text changed (+{added} -{removed} lines)"
    return _generic(change)


def _generic(change: Change, subject: str | None = None) -> str:
    name = subject or change.subject
    key = change.path[-1] if change.path else None
    if change.op is Op.ADDED:
        return f"+ {name}: {show(change.new, key)}"
    if change.op is Op.REMOVED:
        return f"- {name}: {show(change.old, key)}"
    if change.head_index is not None:
        return f"{name}: {show(change.old, key)} -> {show(change.new, key)} (moved to [{change.head_index}])"
    return f"{name}: {show(change.old, key)} -> {show(change.new, key)}"


_HANDLERS = {
    Aspect.SERVICE: _service,
    Aspect.IMAGE: _image,
    Aspect.ARGV: _argv,
    Aspect.ENTRYPOINT: _argv,
    Aspect.ENVIRONMENT: _keyed("env"),
    Aspect.LABELS: _keyed("label"),
    Aspect.GPUS: _gpus,
    Aspect.PORTS: _items("port"),
    Aspect.VOLUMES: _items("volume"),
    Aspect.DEPENDS_ON: _depends,
    Aspect.HEALTHCHECK: _healthcheck,
    Aspect.CONFIG: _config,
}
