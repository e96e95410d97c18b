"""The one Markdown rendering of a check-matrix record: the step summary and the pull-request comment.

    ### Check matrix: **fail**: validate (1 of 3 files), lint (ruff-check 1); collector not run (no Docker)
    | prod file | generated | validate | compose | collector | diff | plan | lint | typecheck |
    |---|---|---|---|---|---|---|---|---|
    | `GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml` | pass | **fail** · prod-config 2 | pass | not run | ... |
    | _repository_ | pass | pass | pass | not run | pass | pass | pass | pass |
    <details><summary>Semantic diff of prod/</summary> ...`rollout diff --format markdown`... </details>
    <details><summary>Rollout plan</summary> ...`rollout plan --format markdown`... </details>

A pure function of the record and the diff's and plan's Markdown, and stdlib only:
the comment workflow renders with it from a validated artifact, in a job that runs
nothing else. Durations are left out, so the same inputs render the same text and
an unchanged comment is not edited again.

Every result fits `limit` (measured in UTF-8 bytes, which is never fewer than the
characters GitHub counts): the table first, then the diff and the plan share what is
left, each cut at a line boundary with its open code fences and `<details>` closed,
and a note that points at the full step summary and the artifact. Text that came
from a tool (notes, refs) is reduced to a plain character set before it reaches
Markdown: an artifact is data, and must not be able to write markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tierops.checkmatrix import RECORD_NAME, digest, headline
from tierops.markdown_inert import closers_by_line

MARKER = "<!-- tierops-check-matrix -->"
COMMENT_LIMIT = 65_536  # GitHub's limit on an issue or pull-request comment body
SUMMARY_LIMIT = 1_000_000  # GitHub keeps 1 MiB of step summary per step; some room for other steps
ARTIFACT = "check-matrix"  # the artifact check.yml uploads
SECTIONS = (("diff", "Semantic diff of prod/"), ("plan", "Rollout plan"))
MAX_COUNTS = 4  # rule ids shown per cell; the rest as "+N more"
MAX_NOTES = 20
# No `@` either: a note or a ref must not be able to mention anybody.
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._,:;/~^+=()'-]")
# What GitHub reads as more than text among what `plain` keeps.
_MARKUP = re.compile(r"[_~:]|www\.|gh-[0-9]", re.IGNORECASE)


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def plain(text: object, limit: int = 120) -> str:
    """Tool-supplied text as one line of a plain character set, bounded. Still text that
    GitHub reads (`_x_`, `~~x~~`, `https://...`, `:name:`, `gh-1`): shown in Markdown
    only as `literal`."""
    flat = _UNSAFE.sub("?", " ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def literal(text: object, limit: int = 120) -> str:
    """Tool-supplied text that GitHub shows as written: `plain`, and in a code span when it
    holds what GitHub would make something of (`_` and `~` emphasis, a `:` of a URL or an
    emoji, `www.`, a `GH-1` reference); inside one GitHub makes nothing, and `plain` has
    no backtick to end it."""
    flat = plain(text, limit)
    return f"`{flat}`" if _MARKUP.search(flat) else flat


def cell_text(cell: Mapping[str, Any]) -> str:
    verdict = str(cell.get("verdict"))
    shown = {"pass": "pass", "fail": "**fail**", "error": "**error**", "not run": "_not run_"}.get(
        verdict, "_unknown_"
    )
    counts = cell.get("counts") or {}
    if not counts:
        return shown
    ranked = sorted(counts.items(), key=lambda item: (-int(item[1]), str(item[0])))
    parts = [f"{literal(rule, 64)} {int(number)}" for rule, number in ranked[:MAX_COUNTS]]
    if len(ranked) > MAX_COUNTS:
        parts.append(f"+{len(ranked) - MAX_COUNTS} more")
    return f"{shown} · {', '.join(parts)}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |\n"


def table(record: Mapping[str, Any], max_rows: int | None = None) -> tuple[str, int]:
    """The matrix table and how many file rows were left out to respect `max_rows`."""
    stages = list(record.get("stages") or ())
    files = list(record.get("files") or ())
    shown_files = files if max_rows is None else files[:max_rows]
    lines = [_row(["prod file", *(literal(stage.get("name"), 32) for stage in stages)])]
    lines.append("|" + "---|" * (len(stages) + 1) + "\n")
    for path in shown_files:
        cells = []
        for stage in stages:
            if stage.get("scope") != "file":
                cells.append("-")
                continue
            cell = (stage.get("files") or {}).get(path) or {"verdict": "not run", "counts": {}}
            cells.append(cell_text(cell))
        name = plain(str(path).removeprefix("prod/"), 200)
        lines.append(_row([f"`{name}`", *cells]))
    lines.append(_row(["_repository_", *(cell_text(stage.get("repository") or {}) for stage in stages)]))
    return "".join(lines), len(files) - len(shown_files)


def notes(record: Mapping[str, Any]) -> str:
    """Why a stage did not run or pass (its one line, once), and what a cell with no
    verdict says (a note several files share is shown once, with how many)."""
    items: list[str] = []
    # A line several stages share (the diff and the plan both refuse an unknown base
    # ref) is shown once, after the first of them, naming them all.
    errors: dict[str, list[str]] = {}
    for stage in record.get("stages") or ():
        if stage.get("verdict") in ("fail", "error") and stage.get("note"):
            errors.setdefault(literal(stage["note"]), []).append(literal(stage.get("name"), 32))
    for stage in record.get("stages") or ():
        name = literal(stage.get("name"), 32)
        verdict = stage.get("verdict")
        said = literal(stage["note"]) if stage.get("note") else ""
        if verdict == "not run" and said:
            items.append(f"- {name}: not run ({said})")
        elif verdict in ("fail", "error") and said and errors[said][0] == name:
            items.append(f"- {', '.join(errors[said])}: {said}")
        shared: dict[str, list[str]] = {}
        for path, cell in (stage.get("files") or {}).items():
            if cell.get("verdict") == "error" and cell.get("note"):
                shared.setdefault(literal(cell["note"]), []).append(str(path))
        for text, paths in shared.items():
            if text == said:
                continue  # the stage's own line already says it
            where = (
                f"`{plain(paths[0].removeprefix('prod/'), 200)}`"
                if len(paths) == 1
                else f"{len(paths)} files"
            )
            items.append(f"- {name}, {where}: {text}")
        repository = stage.get("repository") or {}
        if (
            repository.get("verdict") == "error"
            and repository.get("note")
            and literal(repository["note"]) != said
        ):
            items.append(f"- {name}: {literal(repository['note'])}")
    if len(items) > MAX_NOTES:
        items = [*items[:MAX_NOTES], f"- ... {len(items) - MAX_NOTES} more"]
    return "".join(f"{item}\n" for item in items)


def header(record: Mapping[str, Any]) -> str:
    commits = record.get("commits") or {}
    head = commits.get("head")
    parts = [f"head `{str(head)[:12]}`" if head else "head: not a git checkout"]
    if commits.get("dirty"):
        parts[0] += " (uncommitted changes)"
    base = commits.get("base")
    if isinstance(base, Mapping) and base.get("commit"):
        how = f" ({literal(base.get('how'), 80)})" if base.get("how") else ""
        parts.append(f"base `{str(base['commit'])[:12]}`{how}")
    inputs = (record.get("inputs") or {}).get("digest", "")
    parts.append(f"inputs `{str(inputs)[:19]}`")
    parts.append(f"record `{digest(record)[:19]}`")
    line = headline(record, lambda text: literal(text, 80), lambda text: literal(text, 32))
    word, sep, rest = line.partition(": ")
    shown = {"pass": "pass", "fail": "**fail**", "incomplete": "_incomplete_"}.get(word, "_unknown_")
    return f"### Check matrix: {shown}{sep}{rest}\n\n{'; '.join(parts)}\n\n"


def details(title: str, body: str) -> str:
    """A collapsed section; the blank lines make GitHub render the Markdown inside."""
    return f"<details><summary>{title}</summary>\n\n{body.rstrip()}\n\n</details>\n\n"


def cut(text: str, budget: int) -> str:
    """The longest prefix of `text` ending at a newline that fits in `budget` bytes with
    what closes every code fence and `<details>` it opened (by CommonMark's rules:
    tierops/markdown_inert.py), so nothing after it is swallowed, and says it was cut.
    One pass over the lines: each line end is tried once."""
    said = "\n_(cut here)_\n\n"
    best: tuple[int, str] | None = (0, said) if size(said) <= budget else None
    start = used = 0
    for end, fence, opened in closers_by_line(text):
        used += size(text[start:end])
        start = end
        if used > budget:
            break
        closing = fence + said + "</details>\n\n" * opened
        if used + size(closing) <= budget:
            best = (end, closing)
    return text[: best[0]] + best[1] if best else ""


def truncation_note(limit: int, run_url: str | None) -> str:
    where = f"[the run's step summary]({run_url})" if run_url else "the run's step summary"
    return (
        f"> **Truncated** to stay under {limit:,} characters. The full matrix, diff and plan are in "
        f"{where} and in the `{ARTIFACT}` artifact (`{RECORD_NAME}`, `check-matrix.md`).\n\n"
    )


def footer() -> str:
    return (
        f"<sub>Record: `build/{RECORD_NAME}` (format 1, `ci/check-matrix.schema.json`), "
        f"in the `{ARTIFACT}` artifact of the run.</sub>\n"
    )


def render(
    record: Mapping[str, Any],
    diff_markdown: str | None,
    plan_markdown: str | None,
    *,
    limit: int = COMMENT_LIMIT,
    run_url: str | None = None,
    marker: bool = False,
) -> str:
    """The Markdown of `record`, at most `limit` bytes."""
    if run_url is not None and not re.fullmatch(r"https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~/-]*)?", run_url):
        run_url = None  # a link must be a plain https URL; anything else is left out
    top = (MARKER + "\n") if marker else ""
    head = top + header(record)
    rows, left_out = table(record)
    body_notes = notes(record)
    texts = {
        "diff": diff_markdown if diff_markdown is not None else "_The diff did not run in this run._\n",
        "plan": plan_markdown if plan_markdown is not None else "_The plan did not run in this run._\n",
    }
    end = footer()
    full = head + rows + "\n" + body_notes + "\n"
    full += "".join(details(title, texts[key]) for key, title in SECTIONS) + end
    if size(full) <= limit:
        return full

    note = truncation_note(limit, run_url)
    fixed = size(head) + size(note) + size(end) + size(body_notes) + 2
    wrappers = sum(size(details(title, "")) for _, title in SECTIONS)
    if fixed + size(rows) + wrappers + 1000 > limit:
        # The table alone does not fit: as many rows as do, and no sections.
        rows_budget = limit - fixed - 200
        total = len(record.get("files") or ())
        low, high = 0, total
        while low < high:  # the most rows whose table fits
            middle = (low + high + 1) // 2
            if size(table(record, middle)[0]) <= rows_budget:
                low = middle
            else:
                high = middle - 1
        rows, left_out = table(record, low)
        more = f"_{left_out} more prod file(s): see the step summary._\n"
        shown = head + rows + "\n" + more + "\n" + note + end
        return shown if size(shown) <= limit else head + note + end  # never past the limit
    budget = limit - fixed - size(rows) - wrappers - 1
    sizes = {key: size(texts[key].rstrip()) for key, _ in SECTIONS}
    share = budget // 2
    # Fair shares; what one section leaves unused goes to the other.
    grants = {key: min(sizes[key], share) for key in sizes}
    spare = budget - sum(grants.values())
    for key, wanted in sizes.items():
        extra = min(spare, wanted - grants[key])
        grants[key] += extra
        spare -= extra
    sections = ""
    for key, title in SECTIONS:
        text = texts[key] if sizes[key] <= grants[key] else cut(texts[key], grants[key])
        sections += details(title, text)
    result = head + rows + "\n" + body_notes + "\n" + note + sections + end
    if size(result) > limit:  # not reached (the budget above is exact); never exceed the limit
        return head + rows + "\n" + note + end
    return result
