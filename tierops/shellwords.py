"""How Compose splits a string `command`/`entrypoint` into words (not POSIX shlex).

Docker Compose v2.40.3 uses mattn/go-shellwords with environment and backtick parsing
off, and its rules differ from Python's `shlex` in ways that change what a container
runs (each pinned by tests/tierops/test_shellwords.py against the real binary):

- space, tab, CR and LF separate words; quotes group; `\\` escapes the next character
  outside single quotes, *also inside double quotes* (`"a\\b"` is `ab`);
- an unquoted `;`, `&`, `|`, `<` or `>` ends the command: everything after it is
  silently dropped (`echo a; rm -rf /x` runs `echo a`), and a run of digits right
  before `>` goes too (`2>&1`);
- an unquoted `(` is an error unless it follows a `$` (`$(...)` is kept as text), an
  unquoted `)` is an error unless it closes that; a trailing `\\` or an open quote is an
  error ("invalid command line string").
"""

from __future__ import annotations

import re
from typing import NamedTuple


class ShellError(ValueError):
    """Compose refuses the string: "invalid command line string"."""


class Split(NamedTuple):
    words: list[str]
    dropped: str | None  # the text after an unquoted ; & | < > that compose ignores


def split(line: str) -> Split:  # noqa: PLR0912, PLR0915 (one branch per go-shellwords state)
    words: list[str] = []
    buf: list[str] = []
    escaped = double = single = backquote = dollar = False
    got = False  # a word (possibly empty, from quotes) is open
    stop: int | None = None
    for index, char in enumerate(line):
        if escaped:
            escaped = False
            if backquote or dollar:
                buf.append("\\" + char)
            else:
                buf.append(char)
            got = True
            continue
        if char == "\\":
            if single:
                buf.append(char)
            else:
                escaped = True
            continue
        if char in " \t\r\n":
            if single or double or backquote or dollar:
                buf.append(char)
            elif got:
                words.append("".join(buf))
                buf = []
                got = False
            continue
        if char == "`" and not single and not double and not dollar:
            backquote = not backquote
        elif char == ")" and not single and not double and not backquote:
            if not dollar:
                raise ShellError("invalid command line string: ')' without '$('")
            buf.append(char)
            dollar = False
            got = True
            continue
        elif char == "(" and not single and not double and not backquote:
            text = "".join(buf)
            if not dollar and text.endswith("$") and not text.endswith("\\$"):
                dollar = True
                buf.append(char)
                continue
            raise ShellError("invalid command line string: '(' outside '$('")
        elif char == '"' and not single and not dollar and not backquote:
            if double:
                got = True
            double = not double
            continue
        elif char == "'" and not double and not dollar and not backquote:
            if single:
                got = True
            single = not single
            continue
        elif char in ";&|<>" and not (single or double or backquote or dollar):
            if char == ">" and buf and all("0" <= c <= "9" for c in "".join(buf)):
                buf = []
                got = False
            stop = index
            break
        got = True
        buf.append(char)
    if got:
        words.append("".join(buf))
    if escaped or single or double or backquote or dollar:
        raise ShellError("invalid command line string: an open quote or a trailing backslash")
    return Split(words, line[stop:] if stop is not None else None)


_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./{}$-]+$")


def join(words: list[str]) -> str:
    """One string that `split` (Compose) reads back as exactly `words`."""
    return " ".join(quote(word) for word in words)


def quote(word: str) -> str:
    if _PLAIN.match(word) and "$(" not in word:
        return word
    if "'" not in word:
        return f"'{word}'"  # nothing is special inside single quotes, `\` included
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    return f'"{escaped}"'
