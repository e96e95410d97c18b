"""A small JSON Schema validator for ci/check-matrix.schema.json: stdlib only.

The comment workflow (ci/comment.py) validates an artifact that untrusted code may
have written, in a job that holds a write token. Installing packages there would
widen what that job runs, so it validates with this module instead: the subset of
JSON Schema 2020-12 the record's schema uses, and nothing else. A keyword it does
not implement is an error (`SchemaError`), never silently ignored, so the schema
cannot grow a constraint this validator would skip. tests/ci/test_record_schema.py
checks that it agrees with the `jsonschema` package (the authority) on valid and
broken records.

    validate({"format": 2, ...}, schema) -> ["$.format: 2 is not the constant 1", ...]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Keywords that only describe: they never change a verdict.
ANNOTATIONS = frozenset({"$schema", "$id", "title", "description"})
KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "propertyNames",
        "maxProperties",
        "items",
        "maxItems",
        "pattern",
        "maxLength",
        "minimum",
        "maximum",
        "oneOf",
        "$ref",
        "$defs",
    }
)
MAX_ERRORS = 20


class SchemaError(ValueError):
    """The schema uses something this validator does not implement."""


_TYPES: dict[str, Any] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    # JSON has no booleans among its numbers; Python's bool is an int. JSON Schema's
    # integer is any number with no fractional part: `1.0` is one.
    "integer": lambda value: (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer())
    ),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
}


def _is_type(value: Any, name: str) -> bool:
    if name not in _TYPES:
        raise SchemaError(f"unknown type {name!r}")
    return bool(_TYPES[name](value))


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


class _Validator:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.errors: list[str] = []

    def resolve(self, ref: str) -> Mapping[str, Any]:
        if not ref.startswith("#/"):
            raise SchemaError(f"only local references are supported, not {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            if not isinstance(node, Mapping) or part not in node:
                raise SchemaError(f"unresolvable reference {ref!r}")
            node = node[part]
        if not isinstance(node, Mapping):
            raise SchemaError(f"reference {ref!r} is not a schema")
        return node

    def check(self, value: Any, schema: Mapping[str, Any], where: str) -> None:
        unknown = set(schema) - KEYWORDS - ANNOTATIONS
        if unknown:
            raise SchemaError(f"unsupported keyword(s) {sorted(unknown)} at {where}")
        if "$ref" in schema:
            self.check(value, self.resolve(schema["$ref"]), where)
        if "type" in schema:
            names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_is_type(value, name) for name in names):
                self.fail(where, f"{_short(value)} is not of type {' or '.join(names)}")
                return
        if "const" in schema and not _same(value, schema["const"]):
            self.fail(where, f"{_short(value)} is not the constant {schema['const']!r}")
        if "enum" in schema and not any(_same(value, item) for item in schema["enum"]):
            self.fail(where, f"{_short(value)} is not one of {schema['enum']!r}")
        if "oneOf" in schema:
            matched = sum(1 for option in schema["oneOf"] if self.quiet(value, option, where))
            if matched != 1:
                self.fail(where, f"{_short(value)} matches {matched} of the oneOf options, not exactly one")
        self.check_kind(value, schema, where)

    def check_kind(self, value: Any, schema: Mapping[str, Any], where: str) -> None:
        """The keywords that apply to one JSON type."""
        if isinstance(value, str):
            self.check_string(value, schema, where)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if "minimum" in schema and value < schema["minimum"]:
                self.fail(where, f"{value} is less than {schema['minimum']}")
            if "maximum" in schema and value > schema["maximum"]:
                self.fail(where, f"{value} is more than {schema['maximum']}")
        elif isinstance(value, list):
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                self.fail(where, f"{len(value)} items, more than {schema['maxItems']}")
            if "items" in schema:
                for index, item in enumerate(value):
                    self.check(item, schema["items"], f"{where}[{index}]")
        elif isinstance(value, dict):
            self.check_object(value, schema, where)

    def check_string(self, value: str, schema: Mapping[str, Any], where: str) -> None:
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            self.fail(where, f"a string of {len(value)} characters, more than {schema['maxLength']}")
        # re.search, as the jsonschema package does (patterns here are anchored), with `$`
        # as ECMA-262 reads it: the end of the string, not before a final newline.
        if "pattern" in schema and not matches(schema["pattern"], value):
            self.fail(where, f"{_short(value)} does not match {schema['pattern']!r}")

    def check_object(self, value: dict[str, Any], schema: Mapping[str, Any], where: str) -> None:
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            self.fail(where, f"{len(value)} properties, more than {schema['maxProperties']}")
        for name in schema.get("required", ()):
            if name not in value:
                self.fail(where, f"{name!r} is required")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if "propertyNames" in schema:
                self.check(key, schema["propertyNames"], f"{where} key {_short(key)}")
            if key in properties:
                self.check(item, properties[key], f"{where}.{key}")
            elif extra is False:
                self.fail(where, f"unexpected property {_short(key)}")
            elif isinstance(extra, Mapping):
                self.check(item, extra, f"{where}.{key}")

    def quiet(self, value: Any, schema: Mapping[str, Any], where: str) -> bool:
        """Whether `value` matches `schema`, without reporting (for oneOf)."""
        saved, self.errors = self.errors, []
        try:
            self.check(value, schema, where)
            return not self.errors
        finally:
            self.errors = saved

    def fail(self, where: str, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(f"{where}: {message}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    """The problems of `instance` under `schema` (at most MAX_ERRORS); [] when valid."""
    validator = _Validator(schema)
    validator.check(instance, schema, "$")
    return validator.errors


def matches(pattern: str, value: str) -> bool:
    """A schema `pattern` on a string, as the validation reads it."""
    return re.search(_ecma_end(pattern), value) is not None


def _ecma_end(pattern: str) -> str:
    """`$` at the end of a pattern as `\\Z`: Python's `$` also matches before a final `\\n`."""
    return pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith(r"\$") else pattern
