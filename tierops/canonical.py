"""One canonical compose project: what Compose means by each service, whatever the spelling.

Compose's own rendering is the definition. `docker compose config --format json`
(v2.40.3) loads a file, merges its documents as override files, interpolates, turns
every short syntax into the long one, casts strings to the types the spec says, and
prints the result. This module does the same, with one difference: variables are kept
*symbolic*, in the spelling compose prints (`${NAME}`, `${NAME:-default}`, a literal
`$` as `$$`), so the model is the same whatever the host's environment will be.

    canonical(service) == canonical(other)
        exactly when compose renders them equal, with an environment that gives every
        referenced variable its own distinct value (and with every variable empty, and
        every variable unset: so `${X:-a}` and `${X}` differ, as they do on a host).

tests/tierops/test_equivalence.py proves it against the real binary: on every prod
file, on a corpus of hand-written files, and on generated spelling variants; a
deliberately broken normaliser is shown to fail there.

What each service key becomes (the same as compose prints it):

- `command`/`entrypoint`: a string is split into words by Compose's shell rules
  (`tierops/shellwords.py`, not POSIX); `""` is `[]`; absent is `null`;
- `environment`, `labels`, `sysctls`, `annotations`: a mapping whatever the spelling
  (`K=V` list or mapping); YAML numbers and booleans as Go prints them (`1.50` is
  "1.5"); `K` alone / `K:` is `null` in environment and "" in labels;
- `ports`: the long syntax, one entry per port of a range, `/tcp` and `mode: ingress`
  filled in, `published` a string; `expose`: strings;
- `volumes`: the long syntax (`type`, `source`, `target`, `read_only`, `bind`/`volume`
  options), relative bind sources resolved against the project directory;
- durations as Go prints them (`300s` is `5m0s`), byte sizes as a count of bytes
  (`shm_size: "64"` and `64` are both "64", `1gb` is "1073741824");
- `healthcheck.test` as a list (a string is `[CMD-SHELL, string]`); `depends_on` as a
  mapping with `condition: service_started` and `required: true` filled in;
- quoted numbers and booleans where compose casts them (`init: "true"` is `true`);
- `networks` as a mapping (`default` when none is named and no `network_mode`);
- service-level `x-*` keys dropped (compose drops them; the raw node keeps them).

Keys outside this list are compared as written (after template normalisation): never
equal by accident, at worst reported although compose would not see a change.

Runtime equivalence is a second, coarser reading (`runtime_form`): some spellings that
compose renders differently, and therefore recreates a container for, run the same
(`docker.io/` or not, `CAP_SYS_ADMIN` for `SYS_ADMIN`, memlock `-1` or soft/hard `-1`,
`count: all` where the ids are every GPU of the host). The validators judge by that
reading; the diff reports the rendering change and says nothing changes at runtime.

Every canonical value keeps where it was written: `Service.origin(path)` gives the
position and the raw node (the exact text of a scalar, quotes included), so findings
and diff lines point at and quote the author's text.
"""

from __future__ import annotations

import functools
import itertools
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tierops import interp, shellwords, units
from tierops.yamlload import START, Loaded, Pos, Span, YList, YMap, key_text, load_path

Key = str | int
PathT = tuple[Key, ...]


class Origin(NamedTuple):
    """Where a canonical value was written: its position, the raw node, a scalar's span."""

    pos: Pos
    raw: Any
    span: Span | None = None


# Origin((pos, raw, span)) without a NamedTuple's Python-level __new__ (one per value).
_new_origin: Any = functools.partial(tuple.__new__, Origin)


class Problem(NamedTuple):
    """A value compose would refuse (or that cannot be read in any compose spelling)."""

    pos: Pos
    message: str


@dataclass
class Service:
    name: str
    pos: Pos  # the service's key under `services:`
    raw: YMap  # the definition as written (documents merged, merge keys applied)
    fields: dict[str, Any]  # the canonical values, as compose renders them
    origins: dict[PathT, Origin] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    text: str = field(default="", repr=False)  # the file's text, for quoting

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def value(self, *path: Key) -> Any:
        """The canonical value at `path` (None when absent)."""
        node: Any = self.fields
        for key in path:
            if isinstance(node, dict):
                if key not in node:
                    return None
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
                node = node[key]
            else:
                return None
        return node

    def written(self, *path: Key) -> bool:
        """Whether the author wrote `path` (not a default compose fills in)."""
        return tuple(path) in self.origins

    def origin(self, *path: Key) -> Origin:
        """Where the value at `path` was written: the deepest written prefix."""
        probe: PathT = tuple(path)
        while probe:
            found = self.origins.get(probe)
            if found is not None:
                return found
            probe = probe[:-1]
        return Origin(self.pos, self.raw)

    def at(self, *path: Key) -> Pos:
        return self.origin(*path).pos

    def quote(self, *path: Key) -> str:
        """The author's text of the value at `path`: a scalar exactly, a collection compactly."""
        found = self.origin(*path)
        if found.span is not None and self.text:
            return self.text[found.span[0] : found.span[1]]
        return flow(found.raw)


@dataclass
class Project:
    path: str
    loaded: Loaded | None
    name: str | None  # the `name:` key, canonical (None when absent)
    services: dict[str, Service]
    sections: dict[str, Any]  # canonical top-level keys other than services (networks, configs, x-*, ...)
    raw: YMap  # the merged document as written
    problems: list[Problem] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    def __iter__(self) -> Iterator[Service]:
        return iter(self.services.values())


# --------------------------------------------------------------------------- entry points


def load(path: Path, display: str | None = None, *, project_dir: str | None = None) -> Project:
    """Read a file and build its project (InputError if unreadable, LoadError if not YAML)."""
    loaded = load_path(path, display)
    return build(loaded, project_dir=project_dir if project_dir is not None else str(path.parent))


def build(loaded: Loaded, *, project_dir: str | None = None, env: Mapping[str, str] | None = None) -> Project:
    """The canonical project of a loaded file.

    `project_dir` resolves relative bind mounts (default: the directory of
    `loaded.path`). With `env`, variables are substituted as compose would with that
    environment (the equivalence tests compare this with the real binary); without it
    (the normal case) they stay symbolic.
    """
    directory = project_dir if project_dir is not None else posixpath.dirname(loaded.path) or "."
    problems: list[Problem] = []
    raw = merge_documents(list(loaded.documents), problems)
    return _project(raw, loaded.path, loaded, directory, env, problems, loaded.text)


def build_raw(
    document: YMap, *, path: str = "<data>", project_dir: str = ".", env: Mapping[str, str] | None = None
) -> Project:
    """The canonical project of one already-loaded document (tests, contracts)."""
    problems: list[Problem] = []
    enforced = merge_documents([document], problems)
    return _project(enforced, path, None, project_dir, env, problems, "")


def canonical_value(key: str, value: Any, *, project_dir: str = ".") -> Any:
    """What compose makes of one service key's value: for contracts that state a value."""
    raw = _plain_to_ymap({"services": {"_": {key: value}}})
    service = build_raw(raw, project_dir=project_dir).services["_"]
    return service.fields.get(key)


def _project(  # noqa: PLR0912 (one branch per top-level key)
    raw: YMap,
    path: str,
    loaded: Loaded | None,
    directory: str,
    env: Mapping[str, str] | None,
    problems: list[Problem],
    text: str,
) -> Project:
    ctx = _Ctx(env, directory, problems)
    services: dict[str, Service] = {}
    raw_services = raw.get("services")
    if raw_services is not None and not isinstance(raw_services, YMap):
        problems.append(
            Problem(raw.at("services"), "`services` must be a mapping of service names to definitions")
        )
        raw_services = None
    for name, body in (raw_services or {}).items():
        pos = raw_services.at(name) if isinstance(raw_services, YMap) else START
        if not isinstance(body, YMap):
            service = Service(name, pos, YMap(pos), {}, text=text)
            if body is None:
                # compose reads `name:` with nothing as an empty service (and then
                # refuses it for having no image or build): keep it, say so.
                service.problems.append(Problem(pos, f"service {name} is empty (no image, no build)"))
            else:
                service.problems.append(Problem(pos, f"service {name} must be a mapping, not {_type(body)}"))
            services[name] = service
            continue
        services[name] = _service(ctx, name, pos, body, text)
    sections: dict[str, Any] = {}
    project_name: str | None = None
    for key, value in raw.items():
        if key == "services":
            continue
        at = Origin(raw.value_at(key), value, raw.value_span.get(key))
        if key == "name":
            project_name = ctx.text_value(value, at, ("name",), where=None) if value is not None else None
            sections["name"] = project_name
        elif key in ("networks", "volumes", "configs", "secrets"):
            sections[key] = ctx.section(key, value, at)
        elif key == "version":
            continue  # obsolete: compose ignores it (and warns)
        else:
            sections[key] = ctx.generic(value, at, (key,), None)
    uses_default = any("default" in (service.fields.get("networks") or {}) for service in services.values())
    if uses_default:
        networks = sections.setdefault("networks", {})
        if isinstance(networks, dict) and "default" not in networks:
            networks["default"] = {"name": "{project}_default", "ipam": {}}
    return Project(path, loaded, project_name, services, sections, raw, problems)


# --------------------------------------------------------------------------- merging documents


def merge_documents(documents: Sequence[YMap], problems: list[Problem]) -> YMap:
    """Several documents merged as Compose merges override files; then its dedup rules.

    Mappings merge key by key (later wins for scalars), sequences append, except:
    `command`, `entrypoint` and `healthcheck.test` are replaced; `environment`,
    `labels`, `sysctls`, `annotations`, `extra_hosts` and `depends_on` merge by key
    (either spelling); `ulimits.*`, `x-*` keys and a `logging` with another driver are
    replaced. Then (in one document too) `ports`, `expose`, `volumes`, `configs` and
    `secrets` keep one entry per key, the last definition at the first position.
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
        for name, value in over.items():
            if name in result and not name.startswith("x-"):
                result[name] = _merge(result[name], value, (*path, name))
            else:
                result[name] = value
            result.key_pos[name] = over.key_pos.get(name, over.pos)
            result.value_pos[name] = over.value_pos.get(name, over.pos)
            if name in over.value_span:
                result.value_span[name] = over.value_span[name]
            else:
                result.value_span.pop(name, None)
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


def _port_key(item: Any) -> str | None:
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


def _volume_key(item: Any) -> str | None:
    if isinstance(item, YMap):
        target = item.get("target")
        return target if isinstance(target, str) else None
    if isinstance(item, str):
        try:
            target = _parse_volume(item)["target"]
        except ValueError:
            return None
        return target if isinstance(target, str) else None
    return None


def _expose_key(item: Any) -> str | None:
    if isinstance(item, bool):
        return None
    return str(item) if isinstance(item, (str, int)) else None


def _mount_key(default: str) -> Callable[[Any], str | None]:
    def key(item: Any) -> str | None:
        if isinstance(item, str):
            return f"{default}/{item}"
        if isinstance(item, YMap):
            if isinstance(item.get("target"), str):
                return str(item["target"])
            return f"{default}/{item.get('source')}"
        return None

    return key


_INDEXERS: dict[str, Callable[[Any], str | None]] = {
    "ports": _port_key,
    "expose": _expose_key,
    "volumes": _volume_key,
    "secrets": _mount_key("/run/secrets"),
    "configs": _mount_key(""),
}


# --------------------------------------------------------------------------- the context


class _Ctx:
    """What every field normaliser needs: the environment mode, paths, and where to record."""

    def __init__(self, env: Mapping[str, str] | None, directory: str, problems: list[Problem]) -> None:
        self.env = env
        self.directory = directory
        self.file_problems = problems
        self.origins: dict[PathT, Origin] = {}
        self.problems: list[Problem] = []
        self.service = ""
        self.prefix: PathT = ()

    # -- recording

    def record(self, path: PathT, origin: Origin) -> None:
        self.origins[path] = origin

    def origin_of(self, path: PathT, default: Origin) -> Origin:
        return self.origins.get(path, default)

    def problem(self, origin: Origin, message: str) -> None:
        where = f"{self.service} " if self.service else ""
        self.problems.append(Problem(origin.pos, f"{where}{message}"))

    # -- children of a raw node, positioned

    @staticmethod
    def item(container: YList, index: int) -> Origin:
        span = container.item_span[index] if index < len(container.item_span) else None
        origin: Origin = _new_origin((container.at(index), container[index], span))
        return origin

    @staticmethod
    def member(container: YMap, key: str) -> Origin:
        origin: Origin = _new_origin((container.at(key), container[key], container.value_span.get(key)))
        return origin

    @staticmethod
    def member_value(container: YMap, key: str) -> Origin:
        origin: Origin = _new_origin((container.value_at(key), container[key], container.value_span.get(key)))
        return origin

    # -- strings and templates

    def masked(self, text: str, origin: Origin) -> interp.Masked | None:
        """The string as compose's parsers see it (after interpolation), or None if malformed."""
        try:
            if self.env is None:
                return interp.mask(text)
            return interp.Masked(interp.interpolate(text, self.env), ())
        except interp.TemplateError as exc:
            self.problem(origin, str(exc))
            return None

    def template(self, text: str, origin: Origin) -> str:
        if "$" not in text:
            return text  # nothing to interpolate, nothing to escape
        masked = self.masked(text, origin)
        if masked is None:
            return text
        return masked.restore(masked.text)

    def text_value(self, value: Any, origin: Origin, path: PathT, *, where: str | None) -> str | None:
        """A string-typed key: a template; anything else is a problem (compose's schema)."""
        if isinstance(value, str):
            return self.template(value, origin)
        if value is None:
            return None
        self.problem(origin, f"{where or path[-1]} must be a string, not {_type(value)}")
        return flow(value)

    def stringified(self, value: Any, origin: Origin) -> str | None:
        """A YAML scalar that ends up in a string (env/label values): as Go prints it."""
        if isinstance(value, str):
            return self.template(value, origin)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return units.go_float(value)
        if value is None:
            return None
        self.problem(origin, f"expected a string, number or boolean, not {_type(value)}")
        return flow(value)

    def cast(self, value: Any, origin: Origin, kind: str, label: str | None = None) -> Any:  # noqa: PLR0911, PLR0912 (one branch per kind of value)
        """A typed key: YAML values as they are, strings cast as compose casts them."""
        what = label or _dotted(self.prefix)
        if isinstance(value, str):
            masked = self.masked(value, origin)
            if masked is None:
                return value
            if masked.refs:
                return masked.restore(masked.text)  # symbolic: only a host knows the value
            text = masked.text
            try:
                return _CASTS[kind](text)
            except (ValueError, units.UnitError):
                self.problem(origin, f"{what} is {value!r}, not a {_KIND_NAMES[kind]} compose can read")
                return masked.restore(text)
        if kind == "bool":
            if isinstance(value, bool):
                return value
        elif kind in ("int", "float"):
            if isinstance(value, bool):
                self.problem(origin, f"{what} must be a number, not {_type(value)}")
                return value
            if isinstance(value, int):
                return float(value) if kind == "float" else value
            if isinstance(value, float):
                if kind == "float":
                    return value
                if value.is_integer():
                    return int(value)
        elif kind == "bytes":
            if isinstance(value, int) and not isinstance(value, bool):
                return str(value)
            if isinstance(value, float) and value.is_integer():
                return str(int(value))
        elif kind == "duration" and isinstance(value, int) and not isinstance(value, bool):
            return units.format_duration(value)  # compose reads a YAML integer as nanoseconds
        self.problem(origin, f"{what} must be a {_KIND_NAMES[kind]}, not {_type(value)}")
        return value

    # -- generic data (keys with no special meaning)

    def generic(self, value: Any, origin: Origin, path: PathT, record: PathT | None) -> Any:
        """Plain data with templates normalised; records positions under `record`."""
        if record is not None:
            self.record(record, origin)
        if isinstance(value, YMap):
            result: dict[str, Any] = {}
            for key in value:
                child = self.member_value(value, key)
                result[key] = self.generic(
                    value[key], child, (*path, key), None if record is None else (*record, key)
                )
            return result
        if isinstance(value, YList):
            return [
                self.generic(
                    item,
                    self.item(value, index),
                    (*path, index),
                    None if record is None else (*record, index),
                )
                for index, item in enumerate(value)
            ]
        if isinstance(value, str):
            return self.template(value, origin)
        return value

    # -- top-level sections

    def section(self, key: str, value: Any, origin: Origin) -> Any:
        if value is None:
            return {}
        if not isinstance(value, YMap):
            self.file_problems.append(Problem(origin.pos, f"`{key}` must be a mapping"))
            return self.generic(value, origin, (key,), None)
        result: dict[str, Any] = {}
        for name in value:
            entry = value[name]
            child = self.member_value(value, name)
            body = self.generic(entry, child, (key, name), None) if entry is not None else {}
            if not isinstance(body, dict):
                self.file_problems.append(Problem(child.pos, f"{key}.{name} must be a mapping"))
                result[name] = body
                continue
            external = body.get("external")
            if isinstance(external, str):
                external = external.lower() in _TRUE_WORDS
                body["external"] = external
            if external is True:
                body.setdefault("name", name)
            else:
                body.pop("external", None)
                body.setdefault("name", "{project}_" + name)
                if key == "networks":
                    body.setdefault("ipam", {})
            if key in ("configs", "secrets") and isinstance(body.get("file"), str):
                body["file"] = _resolve(self.directory, body["file"])
            if key == "volumes" and "driver_opts" in body and isinstance(body["driver_opts"], dict):
                body["driver_opts"] = {k: _str(v) for k, v in body["driver_opts"].items()}
            result[name] = body
        return result


_TRUE_WORDS = frozenset({"y", "yes", "true", "on"})
_FALSE_WORDS = frozenset({"n", "no", "false", "off"})


def _to_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in _TRUE_WORDS:
        return True
    if lowered in _FALSE_WORDS:
        return False
    raise ValueError(f"invalid boolean: {text}")


def _to_int(text: str) -> int:
    return int(text, 10)


_CASTS: dict[str, Callable[[str], Any]] = {
    "bool": _to_bool,
    "int": _to_int,
    "float": float,
    "bytes": lambda text: str(units.parse_bytes(text)),
    "duration": lambda text: units.format_duration(units.parse_duration(text)),
}
_KIND_NAMES = {
    "bool": "boolean",
    "int": "integer",
    "float": "number",
    "bytes": "byte size (64, 512m, 32g)",
    "duration": "duration (30s, 5m, 1h30m)",
}


# --------------------------------------------------------------------------- services


def _service(ctx: _Ctx, name: str, pos: Pos, body: YMap, text: str) -> Service:
    ctx.origins = {}
    ctx.problems = []
    ctx.service = name
    fields: dict[str, Any] = {}
    for key in body:
        if key.startswith("x-"):
            continue  # compose drops service-level extensions from the model
        origin = ctx.member_value(body, key)
        member: Origin = _new_origin((body.at(key), body[key], body.value_span.get(key)))
        ctx.record((key,), member)
        handler = _HANDLERS.get(key)
        ctx.prefix = (key,)
        try:
            if handler is None:
                fields[key] = ctx.generic(body[key], origin, (key,), (key,))
                ctx.record((key,), member)
            else:
                fields[key] = handler(ctx, body[key], origin)
        except _Skip:
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


def _distinct_limits(ctx: _Ctx, fields: Mapping[str, Any]) -> None:
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


class _Skip(Exception):
    """The key is absent from compose's rendering (e.g. `healthcheck.disable: false`)."""


Handler = Callable[[_Ctx, Any, Origin], Any]


def _string(ctx: _Ctx, value: Any, origin: Origin) -> Any:
    return ctx.text_value(value, origin, ctx.prefix, where=_dotted(ctx.prefix))


def _typed(kind: str) -> Handler:
    def handler(ctx: _Ctx, value: Any, origin: Origin) -> Any:
        return ctx.cast(value, origin, kind)

    return handler


def _argv(ctx: _Ctx, value: Any, origin: Origin) -> list[str] | None:
    """command/entrypoint: exec-form words; a string split with compose's shell rules."""
    key = str(ctx.prefix[-1])
    if value is None:
        return None
    if isinstance(value, str):
        masked = ctx.masked(value, origin)
        if masked is None:
            return [value]
        try:
            parsed = shellwords.split(masked.text)
        except shellwords.ShellError as exc:
            ctx.problem(origin, f"{key} {exc} (compose refuses it)")
            return [masked.restore(masked.text)]
        if parsed.dropped is not None:
            ctx.problem(
                origin,
                f"{key} is cut at {parsed.dropped[:1]!r}: compose runs only the words before it and drops "
                f"{parsed.dropped!r}; write the list form, or [sh, -c, '...'] for a shell",
            )
        words = [masked.restore(word) for word in parsed.words]
        for index in range(len(words)):
            ctx.record((key, index), origin)
        return words
    if isinstance(value, YList):
        words = []
        origins = ctx.origins
        # The loader keeps a position and a span per item: `ctx.item`, inline (an argv
        # of 80 words in 200 services made it a tenth of the model's time).
        if len(value.item_pos) == len(value.item_span) == len(value):
            children = map(_new_origin, zip(value.item_pos, value, value.item_span, strict=True))
        else:
            children = map(ctx.item, itertools.repeat(value), range(len(value)))
        for index, child in enumerate(children):
            origins[(key, index)] = child
            item = child.raw
            if isinstance(item, str):
                words.append(item if "$" not in item else ctx.template(item, child))
            else:
                ctx.problem(child, f"{key}[{index}] must be a string, not {_type(item)} (quote it)")
                words.append(flow(item))
        return words
    ctx.problem(origin, f"{key} must be a string or a list of strings, not {_type(value)}")
    return None


def _key_values(*, null: str | None, what: str) -> Handler:
    """environment/labels/sysctls/annotations: a mapping whatever the spelling."""

    def handler(ctx: _Ctx, value: Any, origin: Origin) -> dict[str, Any]:  # noqa: PLR0912 (one branch per spelling)
        prefix = ctx.prefix
        key = _dotted(prefix)
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
                child = _new_origin((value_positions.get(name, key_at), item, span))
                origins[(*prefix, name)] = _new_origin((key_at, item, span))
                if type(item) is str and "$" not in item:
                    result[name] = item  # ctx.stringified's first case, inline
                elif item is None:
                    result[name] = null
                elif isinstance(item, (YMap, YList)):
                    ctx.problem(child, f"{key}.{name} must be a string, number or boolean, not {_type(item)}")
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
                        ctx.problem(child, f"{key}[{index}] must be a string KEY=VALUE, not {_type(text)}")
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
        ctx.problem(origin, f"{key} must be a mapping or a list of KEY=VALUE, not {_type(value)}")
        return result

    handler.__name__ = what
    return handler


def _string_list(*, single: bool, duplicates: str = "keep") -> Handler:
    """A list of strings (or, where compose allows it, one string for a one-item list).

    `duplicates`: "keep", "drop" (compose keeps the first of equal items: cap_add, dns,
    tmpfs, profiles, ...) or "refuse" (compose's schema refuses the file: group_add,
    security_opt, volumes_from, ...).
    """

    def handler(ctx: _Ctx, value: Any, origin: Origin) -> list[str]:
        result = _strings(ctx, value, origin)
        if duplicates == "keep" or len(set(result)) == len(result):
            return result
        if duplicates == "refuse":
            seen: set[str] = set()
            for index, item in enumerate(result):
                if item in seen:
                    ctx.problem(
                        ctx.origin_of((*ctx.prefix, index), origin),
                        f"{_dotted(ctx.prefix)} lists {item!r} twice; compose refuses duplicates here",
                    )
                seen.add(item)
            return result
        return list(dict.fromkeys(result))

    def _strings(ctx: _Ctx, value: Any, origin: Origin) -> list[str]:
        prefix = ctx.prefix
        key = _dotted(prefix)
        if isinstance(value, str) and single:
            ctx.record((*prefix, 0), origin)
            return [ctx.template(value, origin)]
        if not isinstance(value, YList):
            if value is None:
                return []
            ctx.problem(origin, f"{key} must be a list of strings, not {_type(value)}")
            return []
        result = []
        for index, item in enumerate(value):
            child = ctx.item(value, index)
            ctx.record((*prefix, index), child)
            if isinstance(item, str):
                result.append(ctx.template(item, child))
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                result.append(ctx.stringified(item, child) or "")
            else:
                ctx.problem(child, f"{key}[{index}] must be a string, not {_type(item)}")
        return result

    return handler


def _extra_hosts(ctx: _Ctx, value: Any, origin: Origin) -> list[str]:
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


def _healthcheck(ctx: _Ctx, value: Any, origin: Origin) -> Any:  # noqa: PLR0912 (one branch per healthcheck key)
    if not isinstance(value, YMap):
        ctx.problem(origin, f"healthcheck must be a mapping, not {_type(value)}")
        return None
    result: dict[str, Any] = {}
    for key in value:
        child = ctx.member_value(value, key)
        ctx.record(("healthcheck", key), Origin(value.at(key), value[key], child.span))
        item = value[key]
        if key == "test":
            if isinstance(item, str):
                result["test"] = ["CMD-SHELL", ctx.template(item, child)]
            elif isinstance(item, YList):
                words = []
                for index, word in enumerate(item):
                    inner = ctx.item(item, index)
                    ctx.record(("healthcheck", "test", index), inner)
                    if isinstance(word, str):
                        words.append(ctx.template(word, inner))
                    else:
                        ctx.problem(inner, f"healthcheck.test[{index}] must be a string, not {_type(word)}")
                        words.append(flow(word))
                result["test"] = words
            else:
                ctx.problem(child, "healthcheck.test must be a string or a list")
        elif key in ("interval", "timeout", "start_period", "start_interval"):
            result[key] = ctx.cast(item, child, "duration", f"healthcheck.{key}")
        elif key == "retries":
            result[key] = ctx.cast(item, child, "int", "healthcheck.retries")
        elif key == "disable":
            disable = ctx.cast(item, child, "bool", "healthcheck.disable")
            if disable is True:
                result["disable"] = True
        else:
            result[key] = ctx.generic(item, child, ("healthcheck", key), ("healthcheck", key))
    return result


def _depends_on(ctx: _Ctx, value: Any, origin: Origin) -> dict[str, Any]:
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


# ports: [[host_ip:]published:]target[/protocol], ranges `a-b`, IPv6 hosts in brackets.
_PORT_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _ports(ctx: _Ctx, value: Any, origin: Origin) -> list[dict[str, Any]]:
    if not isinstance(value, YList):
        ctx.problem(origin, f"ports must be a list, not {_type(value)}")
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


def _short_port(ctx: _Ctx, item: str | int, origin: Origin) -> list[dict[str, Any]]:  # noqa: PLR0912 (one branch per part of the port syntax)
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


def _long_port(ctx: _Ctx, item: YMap, origin: Origin, index: int) -> dict[str, Any]:
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


def _expose(ctx: _Ctx, value: Any, origin: Origin) -> list[str]:
    words: list[str] = _string_list(single=False, duplicates="drop")(ctx, value, origin)
    return words


_VOLUME_OPTIONS = frozenset({"ro", "rw", "z", "Z", "nocopy"})
_PROPAGATION = frozenset({"shared", "rshared", "slave", "rslave", "private", "rprivate"})
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def _parse_volume(text: str) -> dict[str, Any]:
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


def _volumes(ctx: _Ctx, value: Any, origin: Origin) -> list[dict[str, Any]]:
    if not isinstance(value, YList):
        ctx.problem(origin, f"volumes must be a list, not {_type(value)}")
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


def _short_volume(ctx: _Ctx, item: str, origin: Origin) -> dict[str, Any] | None:  # noqa: PLR0912 (one branch per volume option)
    masked = ctx.masked(item, origin)
    if masked is None:
        return None
    try:
        parsed = _parse_volume(masked.text)
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
            "source": _resolve(ctx.directory, masked.restore(source)),
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


def _long_volume(ctx: _Ctx, item: YMap, origin: Origin, slot: int) -> dict[str, Any]:
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
        mount["source"] = _resolve(ctx.directory, mount["source"])
    if mount.get("read_only") is False:
        mount.pop("read_only")
    return mount


def _resolve(directory: str, source: str) -> str:
    """A bind source as compose prints it: absolute ones as written, relative ones joined and cleaned."""
    if source.startswith(("/", "~")) or _WINDOWS_DRIVE.match(source) or source.startswith("${"):
        return source
    return posixpath.normpath(posixpath.join(directory, source))


def _file_mounts(kind: str) -> Handler:
    """Service-level configs/secrets: a name, or {source, target, uid, gid, mode}."""

    def handler(ctx: _Ctx, value: Any, origin: Origin) -> list[dict[str, Any]]:
        if not isinstance(value, YList):
            ctx.problem(origin, f"{kind} must be a list, not {_type(value)}")
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


def _file_mode(ctx: _Ctx, value: Any, origin: Origin) -> Any:
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


def _networks(ctx: _Ctx, value: Any, origin: Origin) -> dict[str, Any]:
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


def _ulimits(ctx: _Ctx, value: Any, origin: Origin) -> dict[str, Any]:
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


def _gpus(ctx: _Ctx, value: Any, origin: Origin) -> Any:
    if isinstance(value, str):
        text = ctx.template(value, origin)
        if text == "all":
            return [{"count": -1}]
        ctx.problem(origin, f"gpus must be 'all' or a list, not {value!r}")
        return text
    if isinstance(value, YList):
        return [
            _device_request(ctx, item, ctx.item(value, index), ("gpus", index))
            for index, item in enumerate(value)
        ]
    ctx.problem(origin, "gpus must be 'all' or a list")
    return None


def _device_request(ctx: _Ctx, item: Any, origin: Origin, path: PathT) -> Any:
    ctx.record(path, origin)
    if not isinstance(item, YMap):
        ctx.problem(origin, f"{_dotted(path)} must be a mapping")
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
                        f"{_dotted((*path, key, index))} must be a string, not {_type(word)} (quote it)",
                    )
                    words.append(flow(word))
            result[key] = words
        elif key in ("capabilities", "device_ids"):
            ctx.problem(child, f"{_dotted((*path, key))} must be a list of strings, not {_type(value)}")
            result[key] = ctx.generic(value, child, (*path, key), None)
        else:
            result[key] = ctx.generic(value, child, (*path, key), None)
    return result


def _deploy(ctx: _Ctx, value: Any, origin: Origin) -> Any:
    if not isinstance(value, YMap):
        ctx.problem(origin, f"deploy must be a mapping, not {_type(value)}")
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
            result[key] = _key_values(null="", what="labels")(ctx, item, child)
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


def _resources(ctx: _Ctx, value: YMap) -> dict[str, Any]:
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
                        f"deploy.resources.{kind}.memory must be a string such as '512M', not {_type(item)}",
                    )
                body[key] = ctx.cast(item, inner, "bytes")
            elif key == "pids":
                body[key] = ctx.cast(item, inner, "int")
            elif key == "devices" and isinstance(item, YList):
                body[key] = [
                    _device_request(ctx, device, ctx.item(item, index), (*path, index))
                    for index, device in enumerate(item)
                ]
            else:
                body[key] = ctx.generic(item, inner, path, None)
        result[kind] = body
    return result


def _logging(ctx: _Ctx, value: Any, origin: Origin) -> Any:
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


def _devices(ctx: _Ctx, value: Any, origin: Origin) -> list[Any]:
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
                child, f"devices[{index}] must be a string /dev/x[:/dev/y[:perms]], not {_type(item)}"
            )
            result.append(ctx.generic(item, child, ("devices", index), None))
    return result


def _env_file(ctx: _Ctx, value: Any, origin: Origin) -> list[Any]:
    items = [value] if isinstance(value, str) else value
    result: list[Any] = []
    if not isinstance(items, YList | list):
        ctx.problem(origin, "env_file must be a path or a list")
        return result
    for index, item in enumerate(items):
        child = ctx.item(items, index) if isinstance(items, YList) else origin
        ctx.record(("env_file", index), child)
        if isinstance(item, str):
            result.append({"path": _resolve(ctx.directory, ctx.template(item, child)), "required": True})
        elif isinstance(item, YMap):
            entry = ctx.generic(item, child, ("env_file", index), None)
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                entry["path"] = _resolve(ctx.directory, entry["path"])
                entry.setdefault("required", True)
            result.append(entry)
    return result


_HANDLERS: dict[str, Handler] = {
    "command": _argv,
    "entrypoint": _argv,
    "environment": _key_values(null=None, what="environment"),
    "labels": _key_values(null="", what="labels"),
    "annotations": _key_values(null="", what="annotations"),
    "sysctls": _key_values(null="", what="sysctls"),
    "extra_hosts": _extra_hosts,
    "ports": _ports,
    "expose": _expose,
    "volumes": _volumes,
    "configs": _file_mounts("configs"),
    "secrets": _file_mounts("secrets"),
    "networks": _networks,
    "healthcheck": _healthcheck,
    "depends_on": _depends_on,
    "ulimits": _ulimits,
    "deploy": _deploy,
    "gpus": _gpus,
    "logging": _logging,
    "devices": _devices,
    "env_file": _env_file,
    "dns": _string_list(single=True, duplicates="drop"),
    "dns_search": _string_list(single=True, duplicates="drop"),
    "dns_opt": _string_list(single=False, duplicates="drop"),
    "tmpfs": _string_list(single=True, duplicates="drop"),
    "cap_add": _string_list(single=False, duplicates="drop"),
    "cap_drop": _string_list(single=False, duplicates="drop"),
    "profiles": _string_list(single=False, duplicates="drop"),
    "links": _string_list(single=False, duplicates="drop"),
    "security_opt": _string_list(single=False, duplicates="refuse"),
    "group_add": _string_list(single=False, duplicates="refuse"),
    "external_links": _string_list(single=False, duplicates="refuse"),
    "volumes_from": _string_list(single=False, duplicates="refuse"),
    "device_cgroup_rules": _string_list(single=False, duplicates="refuse"),
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


# --------------------------------------------------------------------------- runtime reading


def runtime_form(fields: Mapping[str, Any], *, host_gpus: int | None = None) -> dict[str, Any]:
    """The canonical fields with the differences that do not change what runs removed.

    `docker.io/` (and `library/`) on images, `CAP_` on capabilities and their order,
    a ulimit as one value or as equal soft/hard values, and GPU reservations by
    `count: all` or by every id of a host with `host_gpus` GPUs.
    """
    result = dict(fields)
    image = result.get("image")
    if isinstance(image, str):
        result["image"] = normalize_image(image)
    for key in ("cap_add", "cap_drop"):
        caps = result.get(key)
        if isinstance(caps, list):
            result[key] = sorted({_capability(cap) for cap in caps if isinstance(cap, str)})
    limits = result.get("ulimits")
    if isinstance(limits, dict):
        result["ulimits"] = {
            name: (
                value["soft"]
                if isinstance(value, dict) and value.get("soft") == value.get("hard") and "soft" in value
                else value
            )
            for name, value in limits.items()
        }
    if host_gpus is not None:
        deploy = result.get("deploy")
        if isinstance(deploy, dict):
            result["deploy"] = _all_gpus(deploy, host_gpus)
    return result


def normalize_image(image: str) -> str:
    """An image reference in full: `nginx` is `docker.io/library/nginx`, `a/b` is `docker.io/a/b`."""
    name, at, digest = image.partition("@")
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + name
    return name + at + digest


def _capability(cap: str) -> str:
    upper = cap.upper()
    return upper[4:] if upper.startswith("CAP_") else upper


def _all_gpus(deploy: dict[str, Any], host_gpus: int) -> dict[str, Any]:
    every = [str(index) for index in range(host_gpus)]
    resources = deploy.get("resources")
    if not isinstance(resources, dict):
        return deploy
    changed: dict[str, Any] = {}
    for kind, section in resources.items():
        if isinstance(section, dict) and isinstance(section.get("devices"), list):
            devices = []
            for device in section["devices"]:
                ids = device.get("device_ids") if isinstance(device, dict) else None
                # A non-list device_ids is already a problem of the model (wrong type): never a crash.
                if isinstance(device, dict) and (
                    device.get("count") == -1 or (isinstance(ids, list) and sorted(ids, key=str) == every)
                ):
                    whole = {k: v for k, v in device.items() if k not in ("count", "device_ids")}
                    whole["gpus"] = "all"
                    devices.append(whole)
                else:
                    devices.append(device)
            changed[kind] = {**section, "devices": devices}
    if not changed:
        return deploy
    return {**deploy, "resources": {**resources, **changed}}


# --------------------------------------------------------------------------- helpers


def _type(value: Any) -> str:  # noqa: PLR0911 (one return per YAML type)
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, (YMap, dict)):
        return "a mapping"
    if isinstance(value, (YList, list)):
        return "a list"
    if value is None:
        return "empty"
    return "a string"


def _str(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return units.go_float(value) if isinstance(value, float) else str(value)
    return value


def _dotted(path: PathT) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def flow(value: Any) -> str:  # noqa: PLR0911 (one return per YAML type)
    """A compact one-line rendering of raw YAML data, for quoting collections."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return units.go_float(value)
    if isinstance(value, str):
        if value == "" or any(char in value for char in ":#{}[],&*!|>'\"%@`\n") or value != value.strip():
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        return value
    return str(value)


def _plain_to_ymap(value: Any) -> Any:
    if isinstance(value, Mapping):
        result = YMap(START)
        for key, item in value.items():
            result[key_text(key)] = _plain_to_ymap(item)
        return result
    if isinstance(value, (list, tuple)):
        items = YList(START)
        for item in value:
            items.append(_plain_to_ymap(item))
            items.item_pos.append(START)
            items.item_span.append(None)
        return items
    return value
