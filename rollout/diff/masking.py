"""Secrets never reach a report: masked by value, at the output boundary.

This module collects the secret values of every document read and masks them (the
`Masker`); which values are secret by key or by shape, and the fingerprint, are
rollout/diff/secret_values.py; the boundary and the model pass rollout/diff/boundary.py.

**The rule.** A value is secret when it sits under a secret-like key anywhere in the
base or the head document (tierops.secrets.secret_key: `HF_TOKEN`, `PGPASSWORD`,
`apiToken`, `DB_PASS`, `TOKEN2`, `--api-key`, ...; case- and separator-insensitive).
Such a value is then masked *everywhere* it appears in the output, whatever key,
format or place shows it: renamed to an innocent key, copied into a label, an argv word,
an inline config, an `x-` block. Keys are looked for in every mapping of the document
(also inside inline configs that parse as YAML), as `KEY=value` items (environment and
label lists, shell lines, argv), as `--secret-flag value` / `--secret-flag=value` argv
pairs, as `key: value` / `key = value` / `set $key value;` lines of inline text (nginx,
scripts). On top of that, text is masked by shape wherever it is printed: the
credential of an Authorization header or a Bearer/Basic scheme, known token shapes
(tierops.secrets.TOKEN_SHAPES) and long random-looking runs (mixed case with digits, or
32+ hex digits that are not a 40-hex commit id or a 64-hex digest).

Not secrets, and shown: references (`${VAR}`, `${VAR:?message}`, `$${env:VAR}`, after an
optional `Bearer `), because they name where the secret comes from; numbers and the
YAML switch words (`--max-prefill-tokens 32768` has a secret-like key by the shared
definition, but a count is not a credential). A soft default (`${VAR:-changeme}`) is
literal text: the default is masked, the reference around it is shown.

**Where.** `boundary()` wraps stdout and stderr for the whole run of a `python -m
rollout` command (rollout/cli.py); the commands hand it the bytes of every document
they read (`protect_source`), before printing anything. Every line written, by any
code path (reports, compose-manager payloads, commands, error lines), passes through
`Masker.mask`. The model-level `mask_changeset` is only a first pass that keeps the
JSON model's `masked` flag and shows a masked value bare in the diff lines; the
boundary is the guarantee.

**The fingerprint.** `<secret sha256:1a2b3c4d>`: the first 8 hex digits of an
HMAC-SHA256 of the value with a salt drawn at random once per run (per process), or
`$TIEROPS_MASK_SALT` when the operator holds a secret for it (a CI secret). Equal
values show equal fingerprints within one run, so "changed" and "unchanged" stay
visible; a short hash of a guessable password cannot be brute-forced from a published
CI summary, because the salt is never printed or stored. A per-repository salt would
have to live in the repository (public) or in CI secrets (which CI here has none of),
so without one a per-run salt is the only one that protects. The price: two runs (the
diff and the plan steps of one CI job) fingerprint a value differently.
"""

from __future__ import annotations

import bisect
import html
import itertools
import json
import operator
import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

from rollout.diff.secret_values import (
    WHOLE_WORD_BELOW,
    fingerprint,
    lines_apart,
    mask_text,
    meaningful,
    merged,
    names_a_secret,
    secret_fragments,
    secret_key,
    shape_spans,
)
from tierops.secrets import SHAPES as _SHAPES
from tierops.secrets import secret_key as shared_secret_key
from tierops.yamlload import LoadError, load_shared

# `key: value`, `key = value`, `KEY=value`, `"key": "value"` in a line of inline text;
# never the name inside a reference (`${TOKEN:?message}` is no `TOKEN: ?message`).
_ASSIGNMENT = re.compile(
    r"(?<![\w${.-])(?P<key>[A-Za-z_$][\w.$-]*)[\"']?\s*[:=]\s*(?:(?:Bearer|Basic|Token)\s+)?"
    r"(?P<value>\"[^\"]*\"|'[^']*'|(?:\$\$?\{[^}\s]*\}|\$(?!\{)|[^\s,;}\]\"'$])+)"
)


# What every finding of `Masker._add_line` needs somewhere in its line: a word a secret
# key is made of (each of tierops.secrets.SECRET_WORDS and _SECRET_ENDINGS contains one
# of these, so do the header names of HEADER), a Basic/Bearer scheme, a token shape, or
# a run of 24 letters and digits (random runs and hex tokens). A line without any of
# them holds nothing to collect, and most lines of a compose file are such lines: three
# searches instead of the full reading. A superset by construction, never a
# judgement of what is secret; tests/rollout/test_diff_masking.py pins both facts.
# The words are looked for in the lower-cased line, which matches what the
# case-insensitive patterns match only in ASCII text (Unicode case folding pairs U+017F
# with `s` and U+212A with `k`): a line with any other character is read in full.
SECRET_WORD_PARTS = (
    "token",
    "secret",
    "pass",
    "pwd",
    "key",
    "cred",
    "auth",
    "bearer",
    "cookie",
    "pat",
    "basic",
)
_WORD_PART = re.compile("|".join(SECRET_WORD_PARTS))
# A run of 24, looked for only where a run starts (each retry inside a run is wasted).
_RUN_24 = re.compile("(?<![A-Za-z0-9+=_])[A-Za-z0-9+=_]{24}")


def holds_a_word_part(text: str) -> bool:
    """Whether `text` could hold a secret-like key (False: surely not)."""
    return not text.isascii() or _WORD_PART.search(text.lower()) is not None


def worth_reading(lines: list[str]) -> list[str]:
    """The lines in which `Masker._add_line` could find anything (in the others, surely
    nothing), in their order.

    The lines are searched as one text, by C-speed scans rather than a search a line (a
    200-service file has tens of thousands of scalars): each word part with
    `str.find`, runs of 24 as 24 marks in a translated copy (`_RUN_MARKS`), token shapes
    with one `finditer`. That finds the same lines as searching each line on its own: no
    word part and no run holds a line break, and `_SHAPES` has no anchor and no class
    that holds one (a match running into the next line marks that line too). Text with
    a line break inside one of `lines`, or not in ASCII, is searched line by line.
    """
    if not lines:
        return []
    joined = "\n".join(lines)
    if not joined.isascii() or joined.count("\n") != len(lines) - 1:
        word, run, shape = _WORD_PART.search, _RUN_24.search, _SHAPES.search
        return [
            line for line in lines if not line.isascii() or word(line.lower()) or run(line) or shape(line)
        ]
    # where each line starts: the lengths before it, plus a line break each (all C calls)
    starts = list(map(operator.add, itertools.accumulate(map(len, lines[:-1]), initial=0), itertools.count()))
    found: list[int] = []  # where something worth reading starts (a line's is enough)
    lowered = joined.lower()
    for part in SECRET_WORD_PARTS:
        index = lowered.find(part)
        while index >= 0:
            found.append(index)
            index = lowered.find(part, lowered.find("\n", index) + 1 or len(lowered))
    marks = joined.encode("ascii").translate(_RUN_MARKS)
    index = marks.find(_RUN_NEEDLE)
    while index >= 0:
        found.append(index)
        index = marks.find(_RUN_NEEDLE, marks.find(b"\n", index) + 1 or len(marks))
    for match in _SHAPES.finditer(joined):
        found.append(match.start())
        found.append(max(match.end() - 1, match.start()))
    marked = {bisect.bisect_right(starts, offset) - 1 for offset in found}
    return [lines[index] for index in sorted(marked)]


# ASCII bytes to `a` for the characters of `_RUN_24`'s runs, a line break kept, a space
# for anything else: a run of 24 is then 24 `a`s in a row, found by `bytes.find`.
_RUN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+=_")
_RUN_MARKS = bytes(
    ord("a") if byte in _RUN_CHARS else byte if byte == ord("\n") else ord(" ") for byte in range(256)
)
_RUN_NEEDLE = b"a" * 24


def _may_be_yaml(text: str) -> bool:
    """Whether `Masker.add_text` parses `text` as YAML too (a config, a JSON value), not
    only reads it line by line."""
    return "\n" in text or text.lstrip().startswith(("{", "["))


def _unquote(text: str) -> str:
    text = text.strip().rstrip(";,")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


class Masker:
    """The secret values of one run, and the one function that masks printed text."""

    def __init__(self) -> None:
        self._shown: dict[str, str] = {}  # a spelling in the output -> the fingerprint shown
        self._pattern: re.Pattern[str] | None = None
        # Base and head share most of their text: each text and line is read once.
        self._seen: set[str] = set()
        # A report repeats its lines (a plan's payloads, file after file): each distinct
        # line is masked once, for as long as no secret is added (see `mask`).
        self._masked_lines: dict[str, str] = {}
        self._multiline = False  # a known spelling holds a line break
        # What each entry of a top-level mapping (a service, a volume) held when a document
        # was walked, by (top-level key, entry key, secret-ness): see `add_document`.
        self._walked: dict[tuple[Any, Any, bool], Any] = {}

    # -- adding

    def add_value(self, value: str) -> None:
        """A value found under a secret-like key: mask its literal parts everywhere."""
        for fragment in secret_fragments(value):
            self._add_literal(fragment)

    def _add_literal(self, literal: str) -> None:
        shown = fingerprint(literal)
        for spelling in _spellings(literal):
            if spelling not in self._shown:
                self._shown[spelling] = shown
                self._pattern = None
                self._masked_lines.clear()
                self._multiline = self._multiline or "\n" in spelling
        lines = [line.strip() for line in literal.splitlines()]
        if len(lines) > 1:  # a PEM block or a multi-line password: each line on its own too
            for line in lines:
                if meaningful(line):
                    self._add_literal(line)

    def add_source(self, data: bytes | str) -> None:
        """Every secret of a file's text: parsed as YAML where it parses, and line by line
        (which also sees duplicate keys and files that do not parse)."""
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        self.add_text(text)

    def add_document(self, node: Any, secret: bool = False) -> None:
        """Walk parsed YAML: values under secret-like keys, argv pairs, inline text.

        Without recursion (a document nests as deep as the loader allows), and the texts
        met are read together at the end (`_add_texts`): a file is tens of thousands of
        scalars, most of them one word."""
        texts: list[str] = []
        seen = self._seen
        walked: dict[tuple[Any, Any, bool], Any] = {}
        if isinstance(node, (dict, Mapping)):
            node = self._unwalked(node, secret, walked)
        # A stack of the children still to visit, each collection's last child first (the
        # order of a stack of nodes, without a push and a pop for every scalar).
        stack: list[Iterator[tuple[Any, bool]]] = [iter(((node, secret),))]
        while stack:
            for value, under_secret in stack[-1]:
                if isinstance(value, str):  # most nodes: tested first, before the ABC checks
                    if under_secret:
                        self.add_value(value)
                    if value not in seen:
                        texts.append(value)
                elif isinstance(value, list):
                    self._add_argv([item for item in value if isinstance(item, str)])
                    stack.append(zip(reversed(value), itertools.repeat(under_secret)))
                    break
                elif isinstance(value, (dict, Mapping)):
                    stack.append(reversed(self._children(value, under_secret)))
                    break
            else:
                stack.pop()
        self._add_texts(texts)
        self._walked.update(walked)

    def _unwalked(
        self, document: Mapping[Any, Any], secret: bool, walked: dict[tuple[Any, Any, bool], Any]
    ) -> Mapping[Any, Any]:
        """`document` without the entries of its top-level mappings equal to ones a walk
        of an earlier document met at the same place, under the same secret-ness: such an
        entry holds no secret and no text not already known (base and head share most of
        their services). The entries kept are noted in `walked`, for the walks
        after this one (not for those inside it: its texts are read when it ends)."""
        kept: dict[Any, Any] = {}
        for key, value in document.items():
            name = key if type(key) is str else str(key)
            if name != "secrets" and isinstance(value, (dict, Mapping)):
                flag = secret or secret_key(name)
                entries: dict[Any, Any] = {}
                for entry, item in value.items():
                    place = (name, entry, flag)
                    if place in self._walked and self._walked[place] == item:
                        continue
                    walked[place] = item
                    entries[entry] = item
                value = entries  # noqa: PLW2901
            kept[key] = value
        return kept

    def _children(self, node: Mapping[Any, Any], secret: bool) -> list[tuple[Any, bool]]:
        """A mapping's values to walk, each with whether it is secret."""
        children: list[tuple[Any, bool]] = []
        for key, value in node.items():
            name = key if type(key) is str else str(key)
            if name == "secrets" and isinstance(value, (Mapping, list)):
                # Compose's `secrets:` names files and variables, not secrets; only
                # an inline `content` is one.
                entries = value.values() if isinstance(value, Mapping) else value
                for entry in entries:
                    if isinstance(entry, Mapping) and isinstance(entry.get("content"), str):
                        self.add_value(entry["content"])
                    children.append((entry, secret))
                continue
            children.append((value, secret or secret_key(name)))
        return children

    def _add_texts(self, texts: list[str]) -> None:
        """`add_text` of each of `texts`; the one-line ones filtered together."""
        one_line: list[str] = []
        for text in dict.fromkeys(texts):
            if text in self._seen:
                continue
            if _may_be_yaml(text):
                self.add_text(text)
            else:
                one_line.append(text)
        if len("\n".join(one_line).splitlines()) != len(one_line):  # a `\r`, `\x0c`, an empty text
            for text in one_line:
                self.add_text(text)
            return
        self._seen.update(one_line)
        for line in worth_reading(one_line):
            self._add_line(line)

    def add_text(self, text: str) -> None:
        """Inline text (a config, a script, a shell command, one argv word)."""
        if text in self._seen:
            return
        self._seen.add(text)
        if _may_be_yaml(text):
            self._add_yaml(text)
        lines = text.splitlines()
        if len(lines) == 1 and lines[0] == text:
            # One line (most texts: a word, a value), read too: a scalar is not its line in
            # the file when the file escapes it (`"DB_PASSWORD=s3cr\x65t"` prints `s3cret`).
            for line in worth_reading(lines):
                self._add_line(line)
            return
        # every line once (base and head share most of theirs), and only those worth it
        fresh = [line for line in dict.fromkeys(lines) if line not in self._seen]
        self._seen.update(fresh)
        for line in worth_reading(fresh):
            self._add_line(line)

    def _add_yaml(self, text: str) -> None:
        """Parsed by the one loader (tierops/yamlload/), within its depth, size and alias
        budgets: hostile text is left to the line-by-line reading, never a hang or a crash."""
        try:  # (text over the loader's size budget is refused by it: LoadError)
            documents = load_shared(text.encode("utf-8", "surrogatepass"), "<inline>").documents
        except (LoadError, UnicodeError, RecursionError):
            return
        for document in documents:
            if isinstance(document, (Mapping, list)):
                self.add_document(document)

    def _add_line(self, line: str) -> None:
        self._add_assignments(line)
        if ("-" in line or "=" in line) and names_a_secret(line):
            try:
                words = shlex.split(line) if "'" in line or '"' in line else line.split()
            except ValueError:
                words = line.split()
            self._add_argv(words)
        stripped = line.strip()
        if stripped.endswith(";"):  # an nginx directive: `proxy_set_header X-Api-Key value;`
            self._add_directive(stripped.rstrip(";").split())
        for start, end in shape_spans(line):
            self._add_literal(line[start:end])

    def _add_assignments(self, text: str) -> None:
        """Every `KEY=value` / `KEY: value` with a secret-like key, and those inside an
        innocent key's value (`NOTE=DB_PASS=s3cret`; each level strictly shorter: it ends)."""
        for match in _ASSIGNMENT.finditer(text):
            value = match.group("value")
            if secret_key(match.group("key").lstrip("$")):
                self.add_value(_unquote(value))
            elif ("=" in value or ":" in value) and len(value) < len(text):
                self._add_assignments(_unquote(value))

    def _add_directive(self, words: list[str]) -> None:
        for index, word in enumerate(words[:-1]):
            if secret_key(word.lstrip("$")):
                self.add_value(_unquote(words[index + 1]))

    def _add_argv(self, words: list[str]) -> None:
        # A secret flag or `KEY=` holds a secret-word part (see worth_reading): a list
        # with none in any word (most argv, every list of ports or GPUs) has no pair.
        if not holds_a_word_part("\n".join(words)):
            return
        for index, word in enumerate(words):
            if word.startswith("-"):
                flag, eq, value = word.partition("=")
                # the bare-`key` exemption is for mapping keys (`- key: host.name`); a
                # `--key` flag carries a key
                if not shared_secret_key(flag.lstrip("-")):
                    continue
                if eq:
                    self.add_value(value)
                elif index + 1 < len(words) and not words[index + 1].startswith("--"):
                    self.add_value(words[index + 1])
            elif "=" in word:
                key, _, value = word.partition("=")
                if re.fullmatch(r"[A-Za-z_][\w.-]*", key) and secret_key(key):
                    self.add_value(value)

    # -- masking

    def mask(self, text: str) -> str:
        """`text` with every known secret value, then every credential shape, masked.

        Line by line (each distinct line once) when nothing can match across a line
        break: no known spelling holds one, and no header or scheme word is in the text
        (`HEADER`'s spaces may span lines; no other shape has a line break). Otherwise
        the text is masked whole. Both give the same text (a 100-stack plan is
        7 MB of JSON, most of it repeated lines).
        """
        if "\n" not in text or self._multiline or not lines_apart(text):
            return self._mask_whole(text)
        masked = self._masked_lines
        out = []
        for line in text.split("\n"):
            shown = masked.get(line)
            if shown is None:
                shown = masked[line] = self._mask_whole(line)
            out.append(shown)
        return "\n".join(out)

    def _mask_whole(self, text: str) -> str:
        if self._shown:
            # Every place a known spelling starts (overlapping ones too: with secrets
            # `abcdefgh` and `efghijkl`, `abcdefghijkl` must not show its tail), merged.
            spans = [
                (match.start(), match.start() + len(match.group(1)))
                for match in self._compiled().finditer(text)
            ]
            out: list[str] = []
            last = 0
            for start, end in merged(spans):
                piece = text[start:end]
                out += [text[last:start], self._shown.get(piece) or fingerprint(piece)]
                last = end
            out.append(text[last:])
            text = "".join(out)
        return mask_text(text)

    def _compiled(self) -> re.Pattern[str]:
        if self._pattern is None:
            parts = []
            for spelling in sorted(self._shown, key=len, reverse=True):
                escaped = re.escape(spelling)
                if len(spelling) < WHOLE_WORD_BELOW:
                    escaped = f"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])"
                parts.append(escaped)
            self._pattern = re.compile("(?=(" + "|".join(parts) + "))")
        return self._pattern


def _spellings(literal: str) -> list[str]:
    """How a value can look once a format has escaped it: raw, in JSON (with and
    without ensure_ascii), in a Python repr, in Markdown text and code cells, in HTML."""
    inner = (  # how a value is written into a line
        literal,
        json.dumps(literal, ensure_ascii=False)[1:-1],
        json.dumps(literal)[1:-1],
        repr(literal)[1:-1],
        literal.replace("'", "''"),  # YAML single-quoted
    )
    # ... and how a format escapes that line again (a JSON-quoted value in a Markdown
    # table cell has its `|` escaped on top of JSON's `\"`)
    forms = [outer(form) for form in inner for outer in _OUTER_ESCAPES]
    return [form for form in dict.fromkeys(forms) if form]


def _markdown_text(text: str) -> str:
    for char in "\\|<>*_[]`":
        text = text.replace(char, f"\\{char}")
    return text


_OUTER_ESCAPES = (
    lambda text: text,
    _markdown_text,
    lambda text: text.replace("|", "\\|"),  # a Markdown code cell
    html.escape,
    lambda text: html.escape(text, quote=False),
)
