"""The one place ruamel.yaml objects are configured.

Never mutate a shared instance (check-jsonschema's rule): every caller gets a fresh
one. The emitter is the pure-Python one, so the bytes of prod/ depend only on the
pinned ruamel.yaml version, not on whether its optional C extension is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from ruamel.yaml import YAML

from tierops.errors import InputError

# The version the committed prod/ files were emitted with. Emitted bytes can change
# between ruamel.yaml releases, so the generators warn when another one is imported.
PINNED_RUAMEL_VERSION = "0.19.1"

# Long argv tokens and inline configs must never be folded onto a second line.
_WIDTH = 4096


def roundtrip() -> YAML:
    """A round-trip loader/dumper: keeps order, comments, quoting and block scalars."""
    yaml = YAML(typ="rt", pure=True)
    yaml.preserve_quotes = True
    yaml.allow_duplicate_keys = False
    yaml.width = _WIDTH
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def ruamel_version() -> str:
    import ruamel.yaml

    return str(ruamel.yaml.__version__)


class Mark(NamedTuple):
    """A 1-based position in a file, printed as `path:line:col`."""

    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


def mark(path: str, container: Any, key: Any = None) -> Mark:
    """The 1-based position of `container[key]`'s key (or item), or of `container` itself.

    The only place ruamel.yaml's 0-based line/column marks become 1-based.
    """
    lc = getattr(container, "lc", None)
    if lc is None:
        return Mark(path, 1, 1)
    try:
        if key is None:
            line, col = lc.line, lc.col
        elif isinstance(key, int) and not hasattr(container, "keys"):
            line, col = lc.item(key)
        else:
            line, col = lc.key(key)
    except (KeyError, IndexError, TypeError):
        line, col = lc.line, lc.col
    return Mark(path, int(line) + 1, int(col) + 1)


def load_roundtrip(path: Path, *, display: str | None = None) -> Any:
    """Load one YAML document with positions; any problem becomes one InputError line."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    from tierops.yamlload import LoadError, load_bytes, read_regular

    shown = display or str(path)
    # The bounded loader first: a regular file only (never a FIFO or /dev/zero), and the
    # budgets on size, depth, aliases and numbers that hold for the prod files; ruamel's
    # own reader has none of them.
    raw = read_regular(path, shown)
    try:
        load_bytes(raw, shown)
    except LoadError as exc:
        raise InputError(
            f"invalid YAML: {exc.message}", where=f"{shown}:{exc.pos.line}:{exc.pos.col}"
        ) from None
    text = raw.decode("utf-8")  # the bounded loader has refused anything else
    try:
        return roundtrip().load(text)
    except MarkedYAMLError as exc:
        problem_mark = exc.problem_mark or exc.context_mark
        where = shown
        if problem_mark is not None:
            where = str(Mark(shown, problem_mark.line + 1, problem_mark.column + 1))
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise InputError(f"invalid YAML: {problem}", where=where) from None
    except YAMLError as exc:
        raise InputError(f"invalid YAML: {' '.join(str(exc).split())}", where=shown) from None
    except ValueError as exc:  # a value ruamel cannot build, such as an int of 5,000 digits
        raise InputError(f"invalid YAML: {' '.join(str(exc).split())[:200]}", where=shown) from None
