"""Markdown for `$GITHUB_STEP_SUMMARY`: safe table cells and the 1 MiB budget.

GitHub keeps at most 1 MiB of summary per step, and CI appends the diff and the plan
to the same step; so each report gets its share (together well under the limit), is
built as a list of blocks and cut at a block boundary, with a note saying what was
left out and how to see everything.
"""

from __future__ import annotations

from collections.abc import Sequence

# GitHub's limit for the step summary, per step, and each report's share of it.
STEP_SUMMARY_LIMIT = 1024 * 1024
DIFF_BUDGET = 600 * 1024
PLAN_BUDGET = 300 * 1024


def code(text: str) -> str:
    """Inline code that survives a table cell: pipes escaped, backticks fenced."""
    text = text.replace("|", "\\|").replace("\n", " ")
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def escape(text: str) -> str:
    """Plain text in a cell or a heading: no accidental tables, tags or emphasis."""
    for char in "\\|<>*_[]`":
        text = text.replace(char, f"\\{char}")
    return text


def fence(lines: Sequence[str], language: str = "") -> str:
    """A fenced code block; tildes when the content itself contains a backtick fence."""
    ticks = "~~~~" if any("```" in line or "~~~~" in line for line in lines) else "```"
    if ticks == "~~~~" and any("~~~~" in line for line in lines):
        ticks = "~~~~~~~~"
    return "\n".join([f"{ticks}{language}", *lines, ticks])


def fit(blocks: Sequence[str], limit: int, what: str) -> str:
    """Join blocks, cutting before the first one that would pass `limit` bytes."""
    out: list[str] = []
    used = 0
    for index, block in enumerate(blocks):
        size = len(block.encode("utf-8")) + 1
        note = (
            f"\n> **Truncated:** {len(blocks) - index} more block(s) of the {what} left out "
            f"(its {limit // 1024} KiB share of GitHub's {STEP_SUMMARY_LIMIT // 1024} KiB step summary). "
            f"The full report: `python -m rollout {what} --format text`.\n"
        )
        if used + size + len(note.encode("utf-8")) > limit:
            out.append(note)
            break
        out.append(block)
        used += size
    return "\n".join(out) + "\n"
