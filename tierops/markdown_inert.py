"""Markdown that someone else wrote, shown inside ours: kept as data.

The pull-request comment (ci/comment.py) shows the diff's and plan's Markdown from an
artifact that a fork's run may have written. `inert` keeps what rollout's reports use
and makes everything else text, by the CommonMark rules GitHub renders with, so that
nothing in it reaches past its end:

- raw HTML: only the exact tags the reports write (`<details>`, `<summary>` and their
  closing tags starting a line, `<br>` after text on a line); every other `<` is `&lt;`
  (or kept escaped by its backslash), so no HTML comment, `<pre>`, `<plaintext>` or
  unclosed tag can swallow what follows, and a `</details>` that closes nothing of its
  own is text;
- fences: only at the start of a line; one behind indentation, `>` or a list marker is
  escaped (its end would be its container's, which this does not model); an open fence
  is closed at the end by the CommonMark rule (same character, at least as long); an
  info string other than the reports' (`diff`, `text`) becomes `text`, so no `mermaid`,
  `geojson`, `stl` or `math` block renders as something live;
- code spans: a run of backticks that no run of the same length closes on its line (or
  table cell) is escaped, so it cannot pair with one further down;
- `<details>` left open are closed at the end; one inside a `<summary>` is text (the
  summary's end would close it unseen);
- mentions: `@name` in every spelling GitHub links (`&#64;name`, `x.@name`, `é@name`)
  gets a zero-width space after the `@`;
- links: outside code, a `[` no backslash escapes is escaped (no link, image, footnote,
  link definition or `[!NOTE]` alert, whose `!` is escaped too), and so is a `$` (no
  math), and a zero-width space breaks what GitHub would link by itself:
  `https://`, `www.`, `mailto:`, `xmpp:`, the references `#123`, `owner/repo#123` and
  `GH-123`, and a commit as `user@SHA` or `owner/repo@SHA` (an address stays as
  written: a mail link reaches nobody; a bare commit id stays too: GitHub links it only
  to a commit of this repository's own network, as the plan names its base);
- headings: only the levels the reports write (`###`, `####`), at the start of a line;
  any other heading (behind `>` or a list marker too) and a setext underline (`===`,
  `---` under a line) are escaped to text;
- references: a character reference (`&#x23;`, `&num;`) shows as written, so none can
  spell a `#`, `@` or `-` that GitHub would link; in text and in HTML blocks alike (there
  also one without its `;`, which a browser decodes). The five that `html.escape`
  writes (`&lt;`, `&gt;`, `&amp;`, `&quot;`, `&#x27;`) stay.

Stdlib only: the comment job installs nothing.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

# The tags rollout's reports write: a collapsed section, at the start of a line...
_BLOCK_TAGS = re.compile(r"<details>|</details>|<summary>|</summary>")
# ...and a line break inside a table cell.
_INLINE_TAG = "<br>"
# CommonMark's line endings (Python's splitlines also splits on \x85, \u2028 and more,
# which Markdown reads as ordinary characters).
_LINE_END = re.compile(r"\r\n|\r|\n")
_FENCE_OPEN = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
# One container prefix of a line: indentation, `>`, a list marker.
_CONTAINER = r"(?:[ \t]|>|[-+*](?=[ \t])|[0-9]{1,9}[.)](?=[ \t]))"
# A fence behind container prefixes: escaped, so that every fence in the text is a
# top-level one, whose closing is certain.
_NESTED_FENCE = re.compile(rf"^({_CONTAINER}+)(`{{3}}|~{{3}})")
# `@` in every spelling GitHub turns into one (a character reference is decoded first),
# when no ASCII letter or digit comes before it: that is when GitHub links it. `_` does
# not protect it (`_@name_` is emphasis around a bare `@name`), nor does a character
# reference spelling the name (`@&#111;ctocat`).
_AT_REFERENCE = re.compile(r"&#0*64(?![0-9]);?|&#[xX]0*40(?![0-9A-Fa-f]);?|&commat;?")
_MENTION = re.compile(r"(?<![A-Za-z0-9])@(?=[A-Za-z0-9]|&#?[A-Za-z0-9])")
ZERO_WIDTH_SPACE = "\u200b"
# A `[` after an even number of backslashes (none included): it opens a link or image.
_OPEN_BRACKET = re.compile(r"(?<!\\)((?:\\\\)*)\[")
# Likewise a `$`: GitHub typesets `$...$` and `$$...$$` as math (colours, sizes, boxes).
_DOLLAR = re.compile(r"(?<!\\)((?:\\\\)*)\$")
# What GitHub links in text with no markup at all: a URL scheme, `www.` and an issue
# reference, also spelled with backslash escapes (`GH\-1` renders as `GH-1` before GitHub
# looks); a zero-width space goes where it breaks the match.
_SELF_LINKING = re.compile(
    r"(?<=:)(?=\\?/\\?/)|(?<=www)(?<![A-Za-z0-9]www)(?=\\?\.)|(?<=#)(?=[0-9])|(?<=GH)(?=\\?-[0-9])"
    # `mailto:` and `xmpp:` links (GitHub makes odd relative links of some), and a commit
    # named as `user@SHA` or `owner/repo@SHA`, which links into another repository.
    r"|(?<=mailto:)|(?<=xmpp:)|(?<=@)(?=[0-9a-f]{7,40}(?![0-9a-z]))",
    re.IGNORECASE,
)
# An ATX heading (its level in group 2) and a setext underline.
_HEADING = re.compile(r"( {0,3})(#{1,6})(?=[ \t]|$)")
_UNDERLINE = re.compile(r"(?:=+|-+)[ \t]*")
_HEADING_LEVELS = frozenset({3, 4})
# A block quote's markers alone (an underline behind them underlines the quoted line).
_QUOTES = re.compile(r"[ \t>]*")
# What a line's blocks open with (a heading or an underline behind them is one too).
_CONTAINERS = re.compile(f"{_CONTAINER}*")
# A character reference in text: GitHub decodes it before it looks for references and
# links (`&#x23;1` is `#1`), so its `&` is escaped and the reference shows as written;
# but for the five `html.escape` writes (and `&lt;` is what `<` becomes here), which
# spell nothing GitHub links.
_REFERENCE = re.compile(
    r"&(?!(?:lt|gt|amp|quot|#x27);)(?=#[0-9]|#[xX][0-9A-Fa-f]|[A-Za-z][A-Za-z0-9]{0,31};)"
)
# In an HTML block the browser decodes the old names without a `;` too (`&lt@x` is `<@x`).
_BLOCK_REFERENCE = re.compile(r"&(?!(?:lt|gt|amp|quot|#x27);)(?=#|[A-Za-z])")


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


# The info strings the reports write. GitHub renders some others as something live (a
# `mermaid` diagram can carry links, `geojson` and `stl` load viewers, `math` typesets).
_FENCE_INFOS = frozenset({"", "diff", "text"})


def _plain_fence(line: str) -> str:
    """An opening fence line with an info string the reports use, else `text`."""
    match = _FENCE_OPEN.fullmatch(line)
    if match is None or match.group(3).strip() in _FENCE_INFOS:
        return line
    return match.group(1) + match.group(2) + "text"


class _State:
    """What a prefix of untrusted Markdown leaves open."""

    def __init__(self) -> None:
        self.fence: _Fence | None = None
        self.html_block = False  # inside an HTML block our tags started (until a blank line)
        self.details = 0  # `<details>` opened and not closed
        self.summary = False  # inside a `<summary>`: its `</summary>` would close all opened since

    def closers(self) -> tuple[str, int]:
        """(the line that closes an open fence, or "", and how many `<details>` are open)."""
        return (f"{self.fence.closer()}\n" if self.fence else ""), self.details


def _live_block_tag(text: str, at: int, state: _State) -> str | None:
    """Our block tag at `at`, where it does what the reports use it for: never a
    `</details>` that would close nothing of the text's own, nor a `<details>` or
    `<summary>` inside a summary (a browser's `</summary>` closes everything opened in
    it, so a `<details>` there would leave the count one too high), nor a `</summary>`
    outside one."""
    tag = _BLOCK_TAGS.match(text, at)
    if tag is None:
        return None
    name = tag.group()
    live = {
        "<details>": not state.summary,
        "</details>": state.details > 0,
        "<summary>": not state.summary,
        "</summary>": state.summary,
    }[name]
    return name if live else None


def _enter(tag: str, state: _State) -> None:
    """What a live block tag opens or closes, as a browser nests it."""
    if tag == "<details>":
        state.details += 1
    elif tag == "</details>":
        state.details -= 1
        state.summary = False  # closing the details closes its summary too
    else:
        state.summary = tag == "<summary>"


def _escape_tags(text: str, state: _State, *, block: bool, at_start: bool = False) -> str:
    """`<` made text, but for our tags (block ones only in an HTML block, `<br>` only
    after something on its line); `<details>` counted. A `<` that a backslash already
    escapes is left alone outside an HTML block (and no HTML block but ours can start: a
    line's first `<` is ours or `&lt;`). Linear in the text: nothing before a `<` is
    copied or rescanned but the backslashes right before it."""
    out: list[str] = []
    index = 0
    # Where the line's content starts, after blanks, `>` and list markers: a `<br>`
    # there starts an HTML block (`> <br>`), so it is not the inline tag.
    content = _CONTAINERS.match(text).end() if at_start else -1  # type: ignore[union-attr]  # it matches the empty string too
    while True:
        found = text.find("<", index)
        if found < 0:
            out.append(text[index:])
            return "".join(out)
        out.append(text[index:found])
        tag = _live_block_tag(text, found, state) if block else None
        if tag is not None:
            _enter(tag, state)
            out.append(tag)
            index = found + len(tag)
        elif not block and text.startswith(_INLINE_TAG, found) and found > content:
            out.append(_INLINE_TAG)
            index = found + len(_INLINE_TAG)
        else:
            out.append("<" if not block and _escaped(text, found) else "&lt;")
            index = found + 1


def _text(text: str, state: _State, *, at_start: bool) -> str:
    """Text outside code: tags escaped, no link, alert or math, no self-linking text."""
    text = _escape_tags(text, state, block=False, at_start=at_start)
    if "[" in text:
        # `\[!NOTE]` still makes an alert on GitHub; `\[\!NOTE]` does not.
        text = _OPEN_BRACKET.sub(r"\1\\[", text).replace("\\[!", "\\[\\!")
    if "$" in text:
        text = _DOLLAR.sub(r"\1\\$", text)
    return _unlinked(text)


def _unlinked(text: str, *, block: bool = False) -> str:
    """Text where GitHub links nothing by itself: character references shown as written,
    a zero-width space inside each URL scheme, `www.` and issue reference."""
    if "&" in text:
        text = (_BLOCK_REFERENCE if block else _REFERENCE).sub("&amp;", text)
    return _SELF_LINKING.sub(ZERO_WIDTH_SPACE, text)


def _escaped(text: str, at: int) -> bool:
    """Whether an odd run of backslashes ends right before `at`."""
    before = at
    while before > 0 and text[before - 1] == "\\":
        before -= 1
    return (at - before) % 2 == 1


# What the inline scan stops at: a backslash escape (skipped whole) or a run of backticks.
_INLINE_STOP = re.compile(r"\\[!-/:-@\[-`{-~]|`+")
_BACKTICKS = re.compile(r"`+")


def _inline(segment: str, state: _State, *, at_start: bool) -> str:
    """One table cell or line outside any block: code spans kept as they are (a run of
    backticks closed by the next run of the same length), a run that closes nothing
    escaped (so it cannot pair with one on another line), tags escaped elsewhere.

    Every maximal run of backticks is listed once, by length, so finding an opening
    run's closer is a bisection, never a rescan of the rest of the line."""
    if "`" not in segment:
        return _text(segment, state, at_start=at_start)
    runs: dict[int, list[int]] = {}
    for match in _BACKTICKS.finditer(segment):
        runs.setdefault(match.end() - match.start(), []).append(match.start())
    out: list[str] = []
    index = text_start = 0
    while (stop := _INLINE_STOP.search(segment, index)) is not None:
        if stop.group()[0] == "\\":
            index = stop.end()
            continue
        opening, run_end = stop.start(), stop.end()
        run = run_end - opening
        starts = runs.get(run, [])
        # The closer is a whole maximal run of the same length starting at or after
        # this run's end (an opener may be the tail of a run whose head is escaped).
        at = bisect.bisect_left(starts, run_end)
        closing = starts[at] if at < len(starts) else -1
        out.append(_text(segment[text_start:opening], state, at_start=at_start and text_start == 0))
        if closing < 0:
            out.append("\\`" * run)
            index = text_start = run_end
            continue
        out.append(segment[opening : closing + run])
        index = text_start = closing + run
    out.append(_text(segment[text_start:], state, at_start=at_start and text_start == 0))
    return "".join(out)


# A table row's cells end at every pipe no backslash escapes.
_CELL_STOP = re.compile(r"\\.|\|", re.DOTALL)


def _cells(line: str) -> list[str]:
    """A line split at every pipe no backslash escapes (GFM splits a table row there
    before it looks for code spans); the pipes stay at the end of their cells."""
    cells: list[str] = []
    start = 0
    for stop in _CELL_STOP.finditer(line):
        if stop.group() == "|":
            cells.append(line[start : stop.end()])
            start = stop.end()
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
            return _plain_fence(line)
        line = _heading_as_text(line)
        nested = _NESTED_FENCE.match(line)
        if nested is not None or opened is not None:
            cut = nested.end(1) if nested is not None else len(line) - len(line.lstrip(" "))
            line = line[:cut] + "\\" + line[cut:]
        elif _live_block_tag(line, 0, state) is not None:
            state.html_block = True
    if state.html_block:
        return _unlinked(_escape_tags(line, state, block=True), block=True)
    return "".join(_inline(cell, state, at_start=number == 0) for number, cell in enumerate(_cells(line)))


def _heading_as_text(line: str) -> str:
    """A heading of a level the reports never write, any heading behind `>` or a list
    marker (the reports write theirs at the start of a line), and a setext underline
    (which makes the line above a heading): escaped to text."""
    heading = _HEADING.match(line)
    if heading is not None:
        return line if len(heading.group(2)) in _HEADING_LEVELS else _escape_at(line, heading.end(1))
    quoted = _QUOTES.match(line).end()  # type: ignore[union-attr]  # it matches the empty string too
    if _UNDERLINE.fullmatch(line[quoted:].strip(" \t")):  # `- ` too: under a line, an underline
        return _escape_at(line, quoted + len(line[quoted:]) - len(line[quoted:].lstrip(" \t")))
    cut = _CONTAINERS.match(line).end()  # type: ignore[union-attr]  # it matches the empty string too
    rest = line[cut:]
    if _UNDERLINE.fullmatch(rest) or (cut and _HEADING.match(rest) is not None):
        return _escape_at(line, cut)
    return line


def _escape_at(line: str, at: int) -> str:
    return line[:at] + "\\" + line[at:]


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


def closers_by_line(markdown: str) -> Iterator[tuple[int, str, int]]:
    """For every `\\n` of `markdown`: the index just after it, the line that closes the
    fence the text up to there leaves open (or ""), and how many `<details>` it leaves
    open; one pass, for a cut that tries every line end."""
    state = _State()
    start = 0
    for ending in _LINE_END.finditer(markdown):
        _line(markdown[start : ending.start()], state)
        start = ending.end()
        if ending.group().endswith("\n"):
            yield (start, *state.closers())
