"""Configs embedded in a compose file (`configs.<name>.content`), with positions in the file.

The collector config and the DCGM counters CSV are block scalars inside the compose
file. Compose interpolates them first: `$$` becomes a literal `$`. This module gives
their text as the container will see it, and maps a position inside that text back
to the line and column in the compose file, so a finding points at the bytes a
reviewer edits.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierops.yamlload import LoadError, YMap, load_bytes
from validators.findings import Finding, Pos, error
from validators.model import ComposeFile


@dataclass(frozen=True)
class Embedded:
    name: str
    text: str  # after compose's `$$` -> `$`
    key_pos: Pos  # the `content:` key
    first_line: int  # file line of the text's first line (block scalars)
    indent: int  # columns of block indentation in the file
    block: bool  # False: a quoted or plain scalar; positions fall back to the key
    raw_lines: tuple[str, ...]  # the file's lines

    def outer(self, inner: Pos) -> Pos:
        """A 1-based position in `text` as a 1-based position in the compose file."""
        if not self.block:
            return self.key_pos
        line = self.first_line + inner.line - 1
        raw = self.raw_lines[line - 1] if 0 < line <= len(self.raw_lines) else ""
        # Walk the raw line: each `$$` is one character of the unescaped text.
        index, seen = self.indent, 1
        while seen < inner.col and index < len(raw):
            index += 2 if raw.startswith("$$", index) else 1
            seen += 1
        return Pos(line, index + 1)

    def line_pos(self, number: int) -> Pos:
        """The file position of the text's line `number` (1-based), at its first column."""
        return self.outer(Pos(number, 1))

    def parse_yaml(self, path: str, rule: str) -> YMap | Finding:
        """The text as one YAML mapping; a problem is one finding positioned in the compose file."""
        try:
            loaded = load_bytes(self.text.encode("utf-8"), path)
        except LoadError as problem:
            return error(
                path, self.outer(problem.pos), rule, f"configs.{self.name}.content: {problem.message}"
            )
        if len(loaded.documents) != 1:
            return error(
                path,
                self.key_pos,
                rule,
                f"configs.{self.name}.content holds {len(loaded.documents)} YAML documents, not one",
            )
        return loaded.documents[0]


def unescape(text: str) -> str:
    return text.replace("$$", "$")


def embedded(compose: ComposeFile, name: str) -> Embedded | None:
    found = compose.config_content(name)
    if found is None:
        return None
    content, key_pos = found
    value_pos = compose.config_value_pos(name)
    lines = compose.doc.lines
    indicator = lines[value_pos.line - 1][value_pos.col - 1 :] if value_pos.line <= len(lines) else ""
    block = indicator[:1] in {"|", ">"}
    first_line = value_pos.line + 1
    indent = 0
    for raw in lines[value_pos.line :]:
        if raw.strip():
            indent = len(raw) - len(raw.lstrip(" "))
            break
    return Embedded(name, unescape(content), key_pos, first_line, indent, block, lines)
