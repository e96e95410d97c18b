"""Compose's string templates: find references, normalise their spelling, evaluate them.

Compose interpolates every string *value* of a file (mapping keys never). The forms,
as Docker Compose v2.40.3 evaluates them (pinned by tests against the real binary):

    $$              a literal `$`
    $NAME  ${NAME}  the value of NAME; unset: compose warns and substitutes ""
    ${NAME:?msg}    NAME, or fail when it is unset or empty (`?`: only when unset)
    ${NAME:-text}   NAME, or `text` when it is unset or empty (`-`: only when unset)
    ${NAME:+text}   `text` when NAME is set and non-empty (`+`: when set), else ""

The operand is itself a template, evaluated eagerly. A `$` followed by neither `$`,
`{` nor a name stays a literal `$`; a `${` without a name, a known operator and its
closing brace is an error ("invalid interpolation format").

The canonical model keeps templates symbolic, in the spelling `docker compose config`
prints: every reference braced (`$X` is `${X}`), every literal `$` written `$$`. Two
templates with the same normal form give the same value in every environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

NAME = re.compile(r"[_A-Za-z][_A-Za-z0-9]*")
# Two-character operators first, so `:-` is never read as `:` + `-`.
OPERATORS = (":-", ":?", ":+", "-", "?", "+")
REQUIRED_OPERATORS = frozenset({"", ":?", "?"})


class Found(NamedTuple):
    """One reference in a string, by character offsets."""

    name: str
    operator: str
    start: int
    end: int
    depth: int  # 0 at top level, 1 inside another reference's operand, ...


class Bad(NamedTuple):
    start: int
    end: int
    reason: str


class TemplateError(ValueError):
    """A malformed template, or a `?` reference whose variable is missing."""


def _closing_brace(text: str, start: int, end: int) -> int | None:
    """Index of the `}` closing a `${` whose body starts at `start` (braces nest)."""
    level = 1
    for index in range(start, end):
        char = text[index]
        if char == "{":
            level += 1
        elif char == "}":
            level -= 1
            if level == 0:
                return index
    return None


def _reference_at(text: str, dollar: int, end: int) -> tuple[str, str, int, int] | Bad | None:
    """At a `$`: (name, operator, operand start, end of the reference), Bad, or None (literal)."""
    following = text[dollar + 1] if dollar + 1 < end else ""
    if following == "{":
        close = _closing_brace(text, dollar + 2, end)
        if close is None:
            return Bad(dollar, end, "`${` without its closing `}`")
        name = NAME.match(text, dollar + 2, close)
        if name is None:
            return Bad(dollar, close + 1, "`${` must be followed by a variable name")
        after = name.end()
        operator = ""
        if after < close:
            matched = [op for op in OPERATORS if text.startswith(op, after, close)]
            if not matched:
                return Bad(
                    dollar,
                    close + 1,
                    f"unknown operator after {name.group()}: compose knows only :- - :? ? :+ +",
                )
            operator = matched[0]
        return name.group(), operator, after + len(operator), close + 1
    name = NAME.match(text, dollar + 1, end)
    if name is not None:
        return name.group(), "", name.end(), name.end()
    return None


def _scan(text: str, start: int, end: int, depth: int, found: list[Found], bad: list[Bad]) -> None:
    index = start
    while index < end:
        dollar = text.find("$", index, end)
        if dollar < 0:
            return
        if text.startswith("$", dollar + 1) and dollar + 1 < end:  # `$$`: a literal `$`
            index = dollar + 2
            continue
        ref = _reference_at(text, dollar, end)
        if ref is None:
            index = dollar + 1  # a lone `$` (`$1`, `a$`): compose keeps it literally
            continue
        if isinstance(ref, Bad):
            bad.append(ref)
            if ref.end >= end:
                return
            index = ref.end
            continue
        name, operator, operand, close = ref
        found.append(Found(name, operator, dollar, close, depth))
        if operator:  # the operand is evaluated eagerly, so its references count too
            _scan(text, operand, close - 1, depth + 1, found, bad)
        index = close


def scan(text: str) -> tuple[list[Found], list[Bad]]:
    """References and malformed templates in one string, by offset."""
    found: list[Found] = []
    bad: list[Bad] = []
    if "$" in text:
        _scan(text, 0, len(text), 0, found, bad)
    return found, bad


def has_references(text: str) -> bool:
    return "$" in text and bool(scan(text)[0])


def _walk(
    text: str, start: int, end: int, on_literal: Callable[[str], str], on_ref: Callable[[str, str, str], str]
) -> str:
    """Rebuild `text[start:end]`: literal runs through `on_literal`, references through `on_ref`."""
    out: list[str] = []
    literal: list[str] = []
    index = start
    while index < end:
        dollar = text.find("$", index, end)
        if dollar < 0:
            literal.append(text[index:end])
            break
        literal.append(text[index:dollar])
        if dollar + 1 < end and text[dollar + 1] == "$":
            literal.append("$")
            index = dollar + 2
            continue
        ref = _reference_at(text, dollar, end)
        if ref is None:
            literal.append("$")
            index = dollar + 1
            continue
        if isinstance(ref, Bad):
            raise TemplateError(
                f"invalid interpolation format in {text[ref.start : ref.end]!r}: {ref.reason}"
            )
        name, operator, operand, close = ref
        out.append(on_literal("".join(literal)))
        literal = []
        body = text[operand : close - 1] if operator else ""
        out.append(on_ref(name, operator, body))
        index = close
    out.append(on_literal("".join(literal)))
    return "".join(out)


def _escape(literal: str) -> str:
    return literal.replace("$", "$$")


def normalize(text: str) -> str:
    """The spelling `docker compose config` prints: `${NAME}` braced, literal `$` as `$$`.

    TemplateError for a malformed template (compose refuses the file).
    """
    if "$" not in text:
        return text

    return _walk(text, 0, len(text), _escape, _normal_ref)


def _normal_ref(name: str, operator: str, body: str) -> str:
    """One reference in normal form: the same value in every environment, one spelling."""
    operand = normalize(body) if operator else ""
    if operator in (":-", "-") and not operand:
        return "${" + name + "}"  # an empty default is what an unset variable gives anyway
    if operator in (":+", "+") and not operand:
        return ""  # an empty alternative is empty whether the variable is set or not
    if not operator:
        return "${" + name + "}"
    return "${" + name + operator + operand + "}"


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """The value compose substitutes with `env` (unset variables are absent from it).

    The result is a plain string (a literal `$` is one `$`). TemplateError for `?`
    references whose variable is missing, as compose fails the whole file.
    """
    if "$" not in text:
        return text

    def ref(name: str, operator: str, body: str) -> str:
        value = env.get(name)
        operand = interpolate(body, env) if operator else ""  # eager, as compose
        if operator == ":-":
            return value if value else operand
        if operator == "-":
            return value if value is not None else operand
        if operator == ":+":
            return operand if value else ""
        if operator == "+":
            return operand if value is not None else ""
        if operator in (":?", "?") and (value is None or (operator == ":?" and not value)):
            raise TemplateError(f"required variable {name} is missing a value: {operand}")
        return value or ""

    return _walk(text, 0, len(text), lambda literal: literal, ref)


# Placeholders: references hidden as single private-use characters, so a parser that
# works on the *interpolated* string (shell splitting, `host:port` splitting) can run on
# a template and give the references back afterwards.
_PLACEHOLDER_BASE = 0xF0000


class Masked(NamedTuple):
    text: str  # the value with `$$` as `$` and each reference as one placeholder character
    refs: tuple[str, ...]  # the normalised reference of each placeholder

    def restore(self, part: str) -> str:
        """A piece of `text` back in template spelling."""
        if not self.refs:
            return part.replace("$", "$$") if "$" in part else part
        table: dict[int, str] = {ord("$"): "$$"}
        table.update({_PLACEHOLDER_BASE + index: ref for index, ref in enumerate(self.refs)})
        return part.translate(table)

    def has_refs(self, part: str) -> bool:
        return any(_PLACEHOLDER_BASE <= ord(char) < _PLACEHOLDER_BASE + len(self.refs) for char in part)


def mask(text: str) -> Masked:
    """The template as compose's parsers will see it, references kept opaque."""
    refs: list[str] = []
    if "$" not in text:
        return Masked(text, ())

    def ref(name: str, operator: str, body: str) -> str:
        normal = _normal_ref(name, operator, body)
        if not normal:
            return ""
        refs.append(normal)
        return chr(_PLACEHOLDER_BASE + len(refs) - 1)

    masked = _walk(text, 0, len(text), lambda literal: literal, ref)
    return Masked(masked, tuple(refs))
