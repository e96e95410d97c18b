"""What a compose file reads from the environment, and the dummy environment CI feeds it.

Compose interpolates every string *value* of a file (mapping keys are left alone, and
YAML comments never reach it). The forms, as Docker Compose v2.40.3 evaluates them
(each fact is pinned by tests/validators/test_interpolation.py against the real binary):

    $$              a literal `$`
    $NAME  ${NAME}  the value of NAME; unset: compose warns and substitutes ""
    ${NAME:?msg}    NAME, or fail when it is unset or empty (`?`: only when unset)
    ${NAME:-text}   NAME, or `text` when it is unset or empty (`-`: only when unset)
    ${NAME:+text}   `text` when NAME is set and non-empty (`+`: when set), else ""

The operand (`text`, `msg`) is itself interpolated, and eagerly: `${A:-${B:?x}}`
fails when B is unset *even if A is set*. So a nested reference needs a value exactly
as much as a top-level one, and the checks below treat every reference on its own.
A `$` followed by neither `$`, `{` nor a name stays a literal `$`; a `${` without a
name, a known operator and its closing brace is an error ("invalid interpolation
format"), reported here with its line instead of compose's dotted path.

A variable is *required* when its reference has no fallback: `$NAME`, `${NAME}`,
`${NAME:?msg}`, `${NAME?msg}`. Every required variable needs a value in the dummy
environment (ci/dummy.env), and every dummy value must be read by some file, so the
dummy file can neither lag behind a new variable nor hide a renamed one.

Dummy values must be obviously fake (see `fake_value_problem`): CI has no secrets,
and a real token pasted into ci/dummy.env would end up in every clone.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tierops import interp, secrets
from tierops.errors import InputError
from tierops.yamlload import Loaded, LoadError, Pos, Span, YList, YMap, load_bytes, read_regular

NAME = interp.NAME
OPERATORS = interp.OPERATORS
REQUIRED_OPERATORS = interp.REQUIRED_OPERATORS

# Rule ids of the problems this module reports.
RULE_INTERPOLATION = "interpolation"
RULE_YAML = "yaml"
RULE_MISSING = "dummy-missing"
RULE_UNUSED = "dummy-unused"
RULE_FAKE = "dummy-fake"
RULE_SYNTAX = "dummy-syntax"


class Problem(NamedTuple):
    """One finding, printed as `path:line:col: [error] message (rule)`."""

    path: str
    line: int
    col: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: [error] {self.message} ({self.rule})"


class Reference(NamedTuple):
    """One `$NAME` / `${NAME...}` in a file, at its 1-based position."""

    name: str
    operator: str  # "" for $NAME and ${NAME}; else one of OPERATORS
    text: str  # the template as written, e.g. "${A:-x}" (nested ones included), at most TEXT_LIMIT
    line: int
    col: int
    depth: int  # 0 at top level, 1 inside another reference's operand, ...

    @property
    def required(self) -> bool:
        return self.operator in REQUIRED_OPERATORS


# --- files ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FileScan:
    """What one compose file interpolates, and the profiles its services declare."""

    path: Path
    shown: str  # the path as printed
    references: tuple[Reference, ...]
    problems: tuple[Problem, ...]
    profiles: tuple[str, ...]

    def required(self) -> dict[str, list[Reference]]:
        names: dict[str, list[Reference]] = {}
        for ref in self.references:
            if ref.required:
                names.setdefault(ref.name, []).append(ref)
        return names


class _Lines:
    """Offsets to 1-based (line, col)."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        row = bisect.bisect_right(self._starts, offset) - 1
        return row + 1, offset - self._starts[row] + 1


def _children(node: Any) -> Iterator[tuple[Any, Span | None, Pos]]:
    """A mapping's values or a list's items, each with its span (None when reached
    through an alias) and position; nothing for a scalar."""
    if isinstance(node, YMap):
        for key, value in node.items():
            yield value, node.value_span.get(key), node.value_at(key)
    elif isinstance(node, YList):
        for index, value in enumerate(node):
            yield value, node.item_span[index], node.at(index)


def _scalars(documents: Sequence[YMap]) -> Iterator[tuple[str, Span | None, Pos]]:
    """Every string compose interpolates: values, never mapping keys; shared (aliased) nodes once.

    A scalar reached through an alias has no span of its own: it is scanned at its anchor
    when the anchor is a value, and at the alias when the anchor is a mapping key (which
    Compose does not interpolate there, but does as the value the alias repeats it as)."""
    stack: list[Any] = list(documents)
    seen: set[int] = set()
    spanned: set[int] = set()
    aliased: dict[int, tuple[str, Pos]] = {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for value, span, pos in _children(node):
            if not isinstance(value, str):
                stack.append(value)
            elif "$" in value and span is not None:
                spanned.add(id(value))
                yield value, span, pos
            elif "$" in value:
                aliased.setdefault(id(value), (value, pos))
    for identity, (value, pos) in aliased.items():
        if identity not in spanned:
            yield value, None, pos


def _profiles(documents: Sequence[YMap]) -> tuple[str, ...]:
    profiles: set[str] = set()
    for document in documents:
        services = document.get("services")
        for service in services.values() if isinstance(services, YMap) else ():
            listed = service.get("profiles") if isinstance(service, YMap) else None
            if isinstance(listed, YList):
                profiles.update(item for item in listed if isinstance(item, str))
    return tuple(sorted(profiles))


def scan_loaded(loaded: Loaded, path: Path | None = None) -> FileScan:
    """What a loaded compose file interpolates, every reference at its position."""
    text = loaded.text
    shown = loaded.path
    lines = _Lines(text)
    references: list[Reference] = []
    problems: list[Problem] = []
    for value, span, pos in _scalars(loaded.documents):
        refs, bad = _locate(text, value, span)
        for found in refs:
            line, col = lines.position(found.start) if found.start >= 0 else pos
            references.append(Reference(found.name, found.operator, found.text, line, col, found.depth))
        for offset, snippet, reason in bad:
            line, col = lines.position(offset) if offset >= 0 else pos
            problems.append(
                Problem(
                    shown,
                    line,
                    col,
                    RULE_INTERPOLATION,
                    f"invalid interpolation {snippet!r}: {reason}; write `$$` for a literal `$`",
                )
            )
    references.sort(key=lambda ref: (ref.line, ref.col, ref.depth))
    problems.sort(key=lambda problem: (problem.line, problem.col))
    return FileScan(
        path or Path(shown), shown, tuple(references), tuple(problems), _profiles(loaded.documents)
    )


def scan_text(text: str, shown: str, path: Path | None = None) -> FileScan:
    """Scan a compose file's text; a file that is not compose YAML is one problem, not an exception."""
    try:
        loaded = load_bytes(text.encode("utf-8"), shown)
    except LoadError as error:
        problem = Problem(
            shown, error.pos.line, error.pos.col, RULE_YAML, f"not valid compose YAML: {error.message}"
        )
        return FileScan(path or Path(shown), shown, (), (problem,), ())
    return scan_loaded(loaded, path)


# How much of a template a reference or problem keeps: each level of a deeply nested
# value would otherwise keep the whole rest of it (memory that grows with the square of
# the depth); a real template is a few dozen characters.
TEXT_LIMIT = 200


def _clip(value: str, start: int, end: int) -> str:
    return value[start:end] if end - start <= TEXT_LIMIT else value[start : start + TEXT_LIMIT - 3] + "..."


class _Located(NamedTuple):
    name: str
    operator: str
    start: int  # offset in the file's text (-1: at the scalar's position)
    text: str
    depth: int


def _locate(text: str, value: str, span: Span | None) -> tuple[list[_Located], list[tuple[int, str, str]]]:
    """Scan a scalar and place its references in the file.

    The scalar's source text is scanned so positions are exact. Quoting and folding can
    make the source differ from the value compose sees (an escape sequence, a folded
    line break inside a template), so the value is scanned too and is authoritative:
    when the two disagree, the value's references are reported at the scalar's start.
    """
    value_found, value_bad = interp.scan(value)
    if span is None:
        located = [
            _Located(f.name, f.operator, -1, _clip(value, f.start, f.end), f.depth) for f in value_found
        ]
        return located, [(-1, _clip(value, b.start, b.end), b.reason) for b in value_bad]
    start = span[0]
    raw_found, raw_bad = interp.scan(text[start : span[1]])

    def key(items: Iterable[interp.Found]) -> list[tuple[str, str, int]]:
        return [(item.name, item.operator, item.depth) for item in items]

    if key(raw_found) == key(value_found) and len(raw_bad) == len(value_bad):
        located = [
            _Located(v.name, v.operator, start + r.start, _clip(value, v.start, v.end), v.depth)
            for r, v in zip(raw_found, value_found, strict=True)
        ]
        bad = [
            (start + r.start, _clip(value, v.start, v.end), v.reason)
            for r, v in zip(raw_bad, value_bad, strict=True)
        ]
        return located, bad
    located = [
        _Located(f.name, f.operator, start, _clip(value, f.start, f.end), f.depth) for f in value_found
    ]
    return located, [(start, _clip(value, b.start, b.end), b.reason) for b in value_bad]


def scan_file(path: Path, shown: str) -> FileScan:
    """Read a file through the one loader (regular files only) and scan it."""
    raw = read_regular(path, shown)
    try:
        loaded = load_bytes(raw, shown)
    except LoadError as error:
        problem = Problem(
            shown, error.pos.line, error.pos.col, RULE_YAML, f"not valid compose YAML: {error.message}"
        )
        return FileScan(path, shown, (), (problem,), ())
    return scan_loaded(loaded, path)


# --- the dummy environment -----------------------------------------------------------


class DummyValue(NamedTuple):
    name: str
    value: str
    line: int


@dataclass(frozen=True)
class DummyEnv:
    """ci/dummy.env, parsed strictly so compose and these checks read it the same way."""

    path: Path
    shown: str
    values: tuple[DummyValue, ...]
    problems: tuple[Problem, ...]

    def names(self) -> set[str]:
        return {value.name for value in self.values}


# Anything that would make compose's env-file parser quote, strip, interpolate or cut
# a value: refused, so the value compose uses is the one this check inspected.
_UNSAFE_VALUE = re.compile(r"[\s\"'`$#\\]")
FAKE_MARKER = "dummy"
# RFC 5737: IPv4 ranges reserved for documentation, never routed.
DOCUMENTATION_NETWORKS = tuple(
    ipaddress.ip_network(net) for net in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
)

# Shapes of real credentials: tierops.secrets's, one definition for every tool. Each is
# also refused anywhere in the repository by the `token-shapes` pre-commit hook, whose
# regex must equal `token_regex()` (a test pins it).
TOKEN_SHAPES = secrets.TOKEN_SHAPES
token_regex = secrets.token_regex
token_shape = secrets.token_shape
# Only for dummy values (prod/ is full of sha256 digests): a long unbroken run of
# letters and digits mixing both is what a generated secret looks like.
_RANDOM_LOOKING = re.compile(r"[A-Za-z0-9+/_=]{24,}")
# The password of `scheme://user:password@host`, and a UUID (many services issue API keys
# in that shape, and its groups are too short for the random-run test).
_URL_PASSWORD = re.compile(r"://[^/@:]*:([^/@]*)@")
_UUID = re.compile(r"\b[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\b")


def fake_value_problem(value: str) -> str | None:
    """Why `value` is not an obviously fake dummy, or None when it is.

    The rule: a dummy value is non-empty, has no characters compose's env-file parser
    treats specially, contains no credential shape, no URL password other than a dummy
    one, no UUID other than a run of one digit, and no long random-looking run, and
    either contains the word `dummy` or is an RFC 5737 documentation IPv4 address.
    """
    refusal = _refusal(value)
    if refusal:
        return refusal
    if FAKE_MARKER in value.lower() or _documentation_address(value):
        return None
    return "is not obviously fake: use a value containing `dummy` (e.g. dummy-proxy-token, https://dummy-gateway.invalid) or an RFC 5737 address (192.0.2.x)"


def _refusal(value: str) -> str | None:
    """What disqualifies a value whatever else it contains (`dummy-` + a real token too)."""
    if not value:
        return "is empty; compose would render an empty string where production has a value"
    if _UNSAFE_VALUE.search(value):
        return "contains whitespace, a quote, `$`, `#` or a backslash, which compose's env-file parser would reinterpret"
    shape = token_shape(value)
    if shape:
        return f"looks like {shape}"
    return _generated_looking(value)


def _generated_looking(value: str) -> str | None:
    for password in _URL_PASSWORD.findall(value):
        if FAKE_MARKER not in password.lower():
            return "contains a URL with a password that is not obviously fake (write it as `dummy`)"
    for uuid in _UUID.findall(value):
        if len(set(uuid.replace("-", "").lower())) > 2:
            return "contains a UUID, the shape of a generated API key (use one of zeros instead)"
    for run in _RANDOM_LOOKING.findall(value):
        if re.search(r"[0-9]", run) and re.search(r"[A-Za-z]", run):
            return "contains a long random-looking run of letters and digits, the shape of a generated secret"
    return None


def _documentation_address(value: str) -> bool:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return False
    return any(address in net for net in DOCUMENTATION_NETWORKS)


# Compose splits an env file on `\n` only (a `\r` elsewhere, U+0085, U+2028, a form feed
# are part of the line: `A=a\rB=b` sets A, never B), reads a `\r\n` line end as the
# end of the line, and skips one byte-order mark at the very start of the file.
_BOM = "\ufeff"


def dummy_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of an env file as Compose v2.40.3 splits them, numbered from 1."""
    for number, raw in enumerate(text.removeprefix(_BOM).split("\n"), start=1):
        yield number, raw.removesuffix("\r")


# The blanks Compose skips around a line (Go's unicode.IsSpace): Python's own set but for
# the four separators \x1c-\x1f, which Go reads as text. A line they start is no comment
# to Compose, so it must be none here either, or its value would be checked by neither.
_GO_BLANKS = "".join(
    char for char in map(chr, range(0x3001)) if char.isspace() and char not in "\x1c\x1d\x1e\x1f"
)


def parse_dummy_env(text: str, path: Path, shown: str) -> DummyEnv:
    values: list[DummyValue] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for number, raw in dummy_lines(text):
        line = raw.strip(_GO_BLANKS)
        if not line or line.startswith("#"):
            continue
        name, sep, value = raw.partition("=")
        if not sep or not NAME.fullmatch(name):
            reason = "expected NAME=value (no spaces, no `export`, no quotes)"
            if _BOM in name:
                reason = (
                    "a byte-order mark (U+FEFF) in the name; compose skips one only at the start of the file"
                )
            problems.append(Problem(shown, number, 1, RULE_SYNTAX, reason))
            continue
        if name in seen:
            problems.append(
                Problem(shown, number, 1, RULE_SYNTAX, f"{name} is set twice (first on line {seen[name]})")
            )
            continue
        seen[name] = number
        fake = fake_value_problem(value)
        if fake:
            # Never echo the value: it may be the real secret this rule exists to catch.
            problems.append(
                Problem(shown, number, len(name) + 2, RULE_FAKE, f"the dummy value of {name} {fake}")
            )
        values.append(DummyValue(name, value, number))
    return DummyEnv(path, shown, tuple(values), tuple(problems))


DUMMY_ENV_MAX_BYTES = 1 << 20  # a dummy environment is a few lines


def load_dummy_env(path: Path, shown: str) -> DummyEnv:
    try:
        # A regular file of bounded size (a FIFO or /dev/zero would hang or exhaust
        # memory); bytes, then UTF-8: a text-mode read would turn a lone `\r` into a
        # line break, which compose does not.
        raw = read_regular(path, shown, limit=DUMMY_ENV_MAX_BYTES)
        if len(raw) > DUMMY_ENV_MAX_BYTES:
            raise OSError(f"larger than {DUMMY_ENV_MAX_BYTES} bytes")
        text = raw.decode("utf-8")
    except InputError as error:
        raise InputError(
            f"cannot read the dummy environment: {error.message}",
            where=shown,
            hint="it is committed as ci/dummy.env; pass another with --env-file",
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(
            f"cannot read the dummy environment: {error}",
            where=shown,
            hint="it is committed as ci/dummy.env; pass another with --env-file",
        ) from error
    return parse_dummy_env(text, path, shown)


# --- the check -----------------------------------------------------------------------


def check_variables(scans: Sequence[FileScan], env: DummyEnv, *, report_unused: bool) -> list[Problem]:
    """Required variables without a dummy, and (over the whole set) dummies nobody reads."""
    problems: list[Problem] = []
    have = env.names()
    for scan in scans:
        for name, refs in scan.required().items():
            if name in have:
                continue
            first = refs[0]
            also = sorted({ref.line for ref in refs[1:]} - {first.line})
            more = f" (also line{'s' if len(also) > 1 else ''} {', '.join(map(str, also))})" if also else ""
            problems.append(
                Problem(
                    scan.shown,
                    first.line,
                    first.col,
                    RULE_MISSING,
                    f"required variable {name} ({_short(first.text)}) has no value in {env.shown}{more}; add an obviously fake `{name}=dummy-...` line",
                )
            )
    if report_unused:
        read = {ref.name for scan in scans for ref in scan.references}
        for value in env.values:
            if value.name not in read:
                problems.append(
                    Problem(
                        env.shown,
                        value.line,
                        1,
                        RULE_UNUSED,
                        f"dummy {value.name} is read by none of the {len(scans)} file(s) checked; delete the line (a stale dummy hides a renamed variable)",
                    )
                )
    return problems


def _short(template: str) -> str:
    """A template for a message: `${NAME:?...}` instead of a long error text."""
    if len(template) <= 40:
        return template
    for operator in OPERATORS:
        head = template.split(operator, 1)[0]
        if head != template and NAME.fullmatch(head.removeprefix("${")):
            return f"{head}{operator}...}}"
    return template[:37] + "..."
