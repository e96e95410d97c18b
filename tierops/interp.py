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

import bisect
import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

# Compose's names: `(?i)[_a-z][_a-z0-9]*` in Go, whose case folding also matches the
# long s (U+017F, folds to s) and the Kelvin sign (U+212A, folds to k); Python's
# IGNORECASE would add the dotted and dotless i, which Compose refuses, so the two are
# listed. Pinned against the binary in tests/validators/test_interpolation.py.
NAME = re.compile("[_A-Za-z\u017f\u212a][_A-Za-z0-9\u017f\u212a]*")
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


# Compose's count, token by token: a `{` opens and hides the character after it (even a
# brace: `{}` opens once and closes nothing), a `}` closes.
# How deep references may nest in one value. Compose's own work grows faster than the
# cube of the depth (minutes at a few thousand) and every reader here keeps each level's
# text, so a deeper value is refused with a finding instead of ending in a timeout or
# out of memory; a real file nests two or three deep.
MAX_NESTING = 1000
TOO_DEEP = (
    f"references nested more than {MAX_NESTING} deep: compose would spend minutes expanding it; "
    "flatten the value"
)

_OPEN_OR_CLOSE = re.compile(r"\{.?|\}", re.DOTALL)


class _Braces:
    """Where each `${` of a text ends, as Compose v2.40.3 decides it.

    Compose's pattern takes a braced reference up to the last `}` on its line (its `.*`
    is greedy and never crosses a line break); inside that match, a count that opens at
    every `{` (a bare one too: `${A:-x{y}z}` is `x{y}z`) and skips the character after
    it (`${A:+{}x}` is `{}x`), closes at every other `}` and returns to zero marks the
    end; without one the whole match is the reference (`${A:-{x}` is `{x`, `${A:-$${x}`
    is `${x`). One stack over the whole text gives every opener the count started at it
    (a reference's `{` follows its `$`, so is never skipped), so the work is linear
    however deep the nesting; the line's last `}` is found by bisection.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.closes: dict[int, int] = {}
        open_at: list[int] = []
        # Keyed by the `{`: a reference's count starts at the brace after its `$`.
        for match in _OPEN_OR_CLOSE.finditer(text):
            if match.group()[0] == "{":
                open_at.append(match.start())
            elif open_at:
                self.closes[open_at.pop()] = match.start()
        self.newlines = [match.start() for match in re.finditer("\n", text)]
        self._all: list[int] | None = None

    def close(self, dollar: int, end: int) -> int | None:
        """The index of the `}` ending the `${` at `dollar` within `text[:end]`, or None."""
        line_end = end
        after = bisect.bisect_left(self.newlines, dollar)
        if after < len(self.newlines):
            line_end = min(end, self.newlines[after])
        counted = self.closes.get(dollar + 1)
        if counted is not None and counted < line_end:
            return counted
        if self._all is None:
            self._all = [match.start() for match in re.finditer("}", self.text)]
        last = bisect.bisect_left(self._all, line_end) - 1
        return self._all[last] if last >= 0 and self._all[last] > dollar + 1 else None


def _reference_at(
    text: str, dollar: int, end: int, braces: _Braces
) -> tuple[str, str, int, int] | Bad | None:
    """At a `$`: (name, operator, operand start, end of the reference), Bad, or None (literal)."""
    following = text[dollar + 1] if dollar + 1 < end else ""
    if following == "{":
        close = braces.close(dollar, end)
        if close is None:
            return Bad(dollar, end, "`${` without its closing `}` on the same line")
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


def scan(text: str) -> tuple[list[Found], list[Bad]]:
    """References and malformed templates in one string, by offset (outer before inner).

    An operand is scanned too (compose evaluates it eagerly). The nesting is kept on an
    explicit stack, never the interpreter's: a template nested thousands deep is as
    valid to compose as a flat one.
    """
    found: list[Found] = []
    bad: list[Bad] = []
    if "$" not in text:
        return found, bad
    braces = _Braces(text)
    # (where to go on, where this level's text ends, its depth)
    pending: list[tuple[int, int, int]] = [(0, len(text), 0)]
    while pending:
        index, end, depth = pending.pop()
        while index < end:
            dollar = text.find("$", index, end)
            if dollar < 0:
                break
            if text.startswith("$", dollar + 1) and dollar + 1 < end:  # `$$`: a literal `$`
                index = dollar + 2
                continue
            ref = _reference_at(text, dollar, end, braces)
            if ref is None:
                index = dollar + 1  # a lone `$` (`$1`, `a$`): compose keeps it literally
                continue
            if isinstance(ref, Bad):
                bad.append(ref)
                if ref.end >= end:
                    break
                index = ref.end
                continue
            name, operator, operand, close = ref
            found.append(Found(name, operator, dollar, close, depth))
            if operator and depth >= MAX_NESTING:
                bad.append(Bad(dollar, close, TOO_DEEP))
                index = close
                continue
            if operator:  # the operand is evaluated eagerly, so its references count too
                pending.append((close, end, depth))
                index, end, depth = operand, close - 1, depth + 1
                continue
            index = close
    return found, bad


def has_references(text: str) -> bool:
    return "$" in text and bool(scan(text)[0])


OnLiteral = Callable[[str], str]
OnRef = Callable[[str, str, str], str]


class _Level:
    """One reference's operand being rebuilt (or the whole text, at depth 0)."""

    __slots__ = ("depth", "end", "literal", "name", "operator", "out")

    def __init__(self, end: int, depth: int, name: str = "", operator: str = "") -> None:
        self.end = end
        self.depth = depth
        self.name = name
        self.operator = operator
        self.out: list[str] = []
        self.literal: list[str] = []


def _walk(text: str, at_depth: Callable[[int], tuple[OnLiteral, OnRef]]) -> str:
    """Rebuild `text`: literal runs and references through the callbacks of their depth.

    A reference's `on_ref` gets its operand already rebuilt by the callbacks one level
    deeper. The levels are an explicit stack, so no nesting depth reaches Python's
    recursion limit, and every character is visited once.
    """
    braces = _Braces(text)
    levels = [_Level(len(text), 0)]
    index = 0
    while True:
        level = levels[-1]
        on_literal, on_ref = at_depth(level.depth)
        if index >= level.end:
            level.out.append(on_literal("".join(level.literal)))
            rebuilt = "".join(level.out)
            if len(levels) == 1:
                return rebuilt
            levels.pop()
            parent = levels[-1]
            parent.out.append(at_depth(parent.depth)[1](level.name, level.operator, rebuilt))
            index = level.end + 1  # past the operand's closing `}`
            continue
        dollar = text.find("$", index, level.end)
        if dollar < 0:
            level.literal.append(text[index : level.end])
            index = level.end
            continue
        level.literal.append(text[index:dollar])
        if dollar + 1 < level.end and text[dollar + 1] == "$":
            level.literal.append("$")
            index = dollar + 2
            continue
        ref = _reference_at(text, dollar, level.end, braces)
        if ref is None:
            level.literal.append("$")
            index = dollar + 1
            continue
        if isinstance(ref, Bad):
            raise TemplateError(
                f"invalid interpolation format in {text[ref.start : ref.end]!r}: {ref.reason}"
            )
        name, operator, operand, close = ref
        level.out.append(on_literal("".join(level.literal)))
        level.literal = []
        if operator:
            if level.depth >= MAX_NESTING:
                raise TemplateError(f"invalid interpolation format: {TOO_DEEP}")
            levels.append(_Level(close - 1, level.depth + 1, name, operator))
            index = operand
        else:
            level.out.append(on_ref(name, "", ""))
            index = close


def _escape(literal: str) -> str:
    return literal.replace("$", "$$")


def normalize(text: str) -> str:
    """The spelling `docker compose config` prints: `${NAME}` braced, literal `$` as `$$`.

    TemplateError for a malformed template (compose refuses the file).
    """
    if "$" not in text:
        return text

    return _walk(text, _normalizing)


def _normalizing(_depth: int) -> tuple[OnLiteral, OnRef]:
    return _escape, _normal_ref


def _normal_ref(name: str, operator: str, operand: str) -> str:
    """One reference in normal form (`operand` already normal): the same value in every
    environment, one spelling."""
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

    def ref(name: str, operator: str, operand: str) -> str:
        # `operand` is already interpolated: eagerly, as compose does.
        value = env.get(name)
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

    callbacks: tuple[OnLiteral, OnRef] = (_same, ref)
    return _walk(text, lambda _depth: callbacks)


def _same(literal: str) -> str:
    return literal


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

    def ref(name: str, operator: str, operand: str) -> str:
        normal = _normal_ref(name, operator, operand)
        if not normal:
            return ""
        refs.append(normal)
        return chr(_PLACEHOLDER_BASE + len(refs) - 1)

    # The top level becomes placeholders; operands inside them are kept in normal form.
    top: tuple[OnLiteral, OnRef] = (_same, ref)
    masked = _walk(text, lambda depth: top if depth == 0 else _normalizing(depth))
    return Masked(masked, tuple(refs))
