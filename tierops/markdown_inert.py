"""Markdown that someone else wrote, shown inside ours: kept as data.

The pull-request comment (ci/comment.py) shows the diff's and plan's Markdown from an
artifact that a fork's run may have written. `inert` keeps what rollout's reports use
and makes everything else text, by the CommonMark rules GitHub renders with, so that
nothing in it reaches past its end:

- raw HTML: only the exact tags the reports write (`<details>`, `<summary>` and their
  closing tags starting a line, `<br>` inside one); every other `<` is `&lt;`, so no
  HTML comment, `<pre>`, `<plaintext>` or unclosed tag can swallow what follows, and a
  `</details>` that closes nothing of its own is text;
- fences: only at the start of a line; one behind indentation, `>` or a list marker is
  escaped (its end would be its container's, which this does not model); an open fence
  is closed at the end by the CommonMark rule (same character, at least as long);
- code spans: a run of backticks that no run of the same length closes on its line (or
  table cell) is escaped, so it cannot pair with one further down;
- `<details>` left open are closed at the end;
- mentions: `@name` in every spelling GitHub links (`&#64;name`, `x.@name`, `é@name`)
  gets a zero-width space after the `@`.

Stdlib only: the comment job installs nothing.
"""

from __future__ import annotations

import re

# The tags rollout's reports write: a collapsed section, at the start of a line...
_BLOCK_TAGS = re.compile(r"<details>|</details>|<summary>|</summary>")
# ...and a line break inside a table cell.
_INLINE_TAG = "<br>"
# CommonMark's line endings (Python's splitlines also splits on \x85, \u2028 and more,
# which Markdown reads as ordinary characters).
_LINE_END = re.compile(r"\r\n|\r|\n")
_FENCE_OPEN = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
# A fence behind container prefixes (indentation, `>`, a list marker): escaped, so that
# every fence in the text is a top-level one, whose closing is certain.
_NESTED_FENCE = re.compile(r"^((?:[ \t]|>|[-+*](?=[ \t])|[0-9]{1,9}[.)](?=[ \t]))+)(`{3}|~{3})")
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# `@` in every spelling GitHub turns into one (a character reference is decoded first),
# when no ASCII letter or digit comes before it: that is when GitHub links it. `_` does
# not protect it (`_@name_` is emphasis around a bare `@name`), nor does a character
# reference spelling the name (`@&#111;ctocat`).
_AT_REFERENCE = re.compile(r"&#0*64(?![0-9]);?|&#[xX]0*40(?![0-9A-Fa-f]);?|&commat;?")
_MENTION = re.compile(r"(?<![A-Za-z0-9])@(?=[A-Za-z0-9]|&#?[A-Za-z0-9])")
ZERO_WIDTH_SPACE = "\u200b"


def defuse_mentions(text: str) -> str:
    """`@name` (also `&#64;name`, `x.@name`, `é@name`) made unable to notify anybody."""
    if "&" in text:
        text = _AT_REFERENCE.sub("@", text)
    return _MENTION.sub("@" + ZERO_WIDTH_SPACE, text)


class _Fence:
    __slots__ = ("char", "length")

    def __init__(self, char: str, length: int) -> None:
        self.char = char
        self.length = length

    def closed_by(self, line: str) -> bool:
        match = _FENCE_CLOSE.fullmatch(line)
        return match is not None and match.group(1)[0] == self.char and len(match.group(1)) >= self.length

    def closer(self) -> str:
        return self.char * self.length


def _fence_opened_by(line: str) -> _Fence | None:
    match = _FENCE_OPEN.fullmatch(line)
    if match is None:
        return None
    marks, info = match.group(2), match.group(3)
    if marks[0] == "`" and "`" in info:  # not a fence: a backtick fence's info has none
        return None
    return _Fence(marks[0], len(marks))


class _State:
    """What a prefix of untrusted Markdown leaves open."""

    def __init__(self) -> None:
        self.fence: _Fence | None = None
        self.html_block = False  # inside an HTML block our tags started (until a blank line)
        self.details = 0  # `<details>` opened and not closed

    def closers(self) -> tuple[str, int]:
        """(the line that closes an open fence, or "", and how many `<details>` are open)."""
        return (f"{self.fence.closer()}\n" if self.fence else ""), self.details


def _live_block_tag(text: str, at: int, state: _State) -> str | None:
    """Our block tag at `at`, unless it is a `</details>` that would close nothing here."""
    tag = _BLOCK_TAGS.match(text, at)
    if tag is None or (tag.group() == "</details>" and state.details <= 0):
        return None
    return tag.group()


def _escape_tags(text: str, state: _State, *, block: bool, at_start: bool = False) -> str:
    """`<` made text, but for our tags (block ones only in an HTML block, `<br>` only
    after something on its line); `<details>` counted. A `<` that a backslash already
    escapes is left alone."""
    out: list[str] = []
    index = 0
    while True:
        found = text.find("<", index)
        if found < 0:
            out.append(text[index:])
            return "".join(out)
        out.append(text[index:found])
        tag = _live_block_tag(text, found, state) if block else None
        backslashes = len(text[:found]) - len(text[:found].rstrip("\\"))
        if tag is not None:
            state.details += {"<details>": 1, "</details>": -1}.get(tag, 0)
            out.append(tag)
            index = found + len(tag)
        elif (
            not block
            and text.startswith(_INLINE_TAG, found)
            and not (at_start and not text[:found].strip(" \t"))
        ):
            out.append(_INLINE_TAG)
            index = found + len(_INLINE_TAG)
        else:
            out.append("<" if backslashes % 2 and not block else "&lt;")
            index = found + 1


def _inline(segment: str, state: _State, *, at_start: bool) -> str:
    """One table cell or line outside any block: code spans kept as they are (a run of
    backticks closed by the next run of the same length), a run that closes nothing
    escaped (so it cannot pair with one on another line), tags escaped elsewhere."""
    out: list[str] = []
    index, end = 0, len(segment)
    text_start = 0
    while index < end:
        char = segment[index]
        if char == "\\" and index + 1 < end and segment[index + 1] in _ASCII_PUNCTUATION:
            index += 2
            continue
        if char != "`":
            index += 1
            continue
        run_end = index
        while run_end < end and segment[run_end] == "`":
            run_end += 1
        run = run_end - index
        closing = run_end
        while True:
            closing = segment.find("`" * run, closing)
            if closing < 0:
                break
            after = closing + run
            if (closing == 0 or segment[closing - 1] != "`") and (after >= end or segment[after] != "`"):
                break
            while closing < end and segment[closing] == "`":
                closing += 1
        out.append(
            _escape_tags(segment[text_start:index], state, block=False, at_start=at_start and text_start == 0)
        )
        if closing < 0:
            out.append("\\`" * run)
            index = text_start = run_end
            continue
        out.append(segment[index : closing + run])
        index = text_start = closing + run
    out.append(_escape_tags(segment[text_start:], state, block=False, at_start=at_start and text_start == 0))
    return "".join(out)


def _cells(line: str) -> list[str]:
    """A line split at every pipe no backslash escapes (GFM splits a table row there
    before it looks for code spans); the pipes stay at the end of their cells."""
    cells: list[str] = []
    start = index = 0
    while index < len(line):
        if line[index] == "\\":
            index += 2
            continue
        if line[index] == "|":
            cells.append(line[start : index + 1])
            start = index + 1
        index += 1
    cells.append(line[start:])
    return cells


def _line(line: str, state: _State) -> str:
    if state.fence is not None:
        if state.fence.closed_by(line):
            state.fence = None
        return line
    if not line.strip(" \t"):
        state.html_block = False
        return line
    if not state.html_block:
        opened = _fence_opened_by(line)
        if opened is not None and not line.startswith(" "):
            state.fence = opened
            return line
        nested = _NESTED_FENCE.match(line)
        if nested is not None or opened is not None:
            cut = nested.end(1) if nested is not None else len(line) - len(line.lstrip(" "))
            line = line[:cut] + "\\" + line[cut:]
        elif _live_block_tag(line, 0, state) is not None:
            state.html_block = True
    if state.html_block:
        return _escape_tags(line, state, block=True)
    return "".join(_inline(cell, state, at_start=number == 0) for number, cell in enumerate(_cells(line)))


def inert(markdown: str) -> str:
    """Untrusted Markdown that renders as our reports do and cannot reach past its end:
    see the comment above. Our own reports pass through unchanged."""
    state = _State()
    lines = [_line(line, state) for line in _LINE_END.split(markdown)]
    text = "\n".join(lines)
    fence, details = state.closers()
    if fence or details:
        text = text.rstrip("\n") + "\n" + fence + "\n" + "</details>\n\n" * details
    return defuse_mentions(text)


def closers(markdown: str) -> tuple[str, int]:
    """What a prefix of `inert` Markdown leaves open: the line that closes its fence
    (or ""), and how many `<details>` it leaves open."""
    state = _State()
    for line in _LINE_END.split(markdown):
        _line(line, state)
    return state.closers()
