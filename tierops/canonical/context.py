"""What every field normaliser works with: the context of one service's reading.

`Ctx` records where each canonical value was written and the problems found, turns
templates into compose's symbolic spelling, and casts strings as compose casts them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tierops import interp, units
from tierops.canonical.model import Origin, PathT, Problem, dotted, flow, new_origin, type_name
from tierops.yamlload import YList, YMap


class Ctx:
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
        origin: Origin = new_origin((container.at(index), container[index], span))
        return origin

    @staticmethod
    def member(container: YMap, key: str) -> Origin:
        origin: Origin = new_origin((container.at(key), container[key], container.value_span.get(key)))
        return origin

    @staticmethod
    def member_value(container: YMap, key: str) -> Origin:
        origin: Origin = new_origin((container.value_at(key), container[key], container.value_span.get(key)))
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
        self.problem(origin, f"{where or path[-1]} must be a string, not {type_name(value)}")
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
        self.problem(origin, f"expected a string, number or boolean, not {type_name(value)}")
        return flow(value)

    def cast(self, value: Any, origin: Origin, kind: str, label: str | None = None) -> Any:  # noqa: PLR0911, PLR0912 (one branch per kind of value)
        """A typed key: YAML values as they are, strings cast as compose casts them."""
        what = label or dotted(self.prefix)
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
                self.problem(origin, f"{what} must be a number, not {type_name(value)}")
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
        self.problem(origin, f"{what} must be a {_KIND_NAMES[kind]}, not {type_name(value)}")
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


TRUE_WORDS = frozenset({"y", "yes", "true", "on"})
_FALSE_WORDS = frozenset({"n", "no", "false", "off"})


def _to_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in TRUE_WORDS:
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


class Skip(Exception):
    """The key is absent from compose's rendering (e.g. `healthcheck.disable: false`)."""


Handler = Callable[[Ctx, Any, Origin], Any]
