"""The diff's three formats, pure functions of a (masked) ChangeSet.

- text: for a terminal and `nox -s check`; one line per folded change;
- markdown: for `$GITHUB_STEP_SUMMARY`: a table per file, configs in their own tables,
  text diffs of inline configs collapsed when long, cut to the 1 MiB budget;
- json: the change model itself (`ChangeSet.to_json()`), complete (see changes.py).
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rollout.diff.changes import Aspect, Change, ChangeSet, FileChange, Status
from rollout.diff.describe import describe
from rollout.diff.folding import Folded, fold
from rollout.markdown import DIFF_BUDGET, code, escape, fence, fit

# Text diffs of inline configs longer than this are collapsed in Markdown.
COLLAPSE_LINES = 12
# ...and cut after this many lines (the JSON has them all).
MAX_DIFF_LINES = 400


@dataclass(frozen=True)
class ConfigSection:
    section: str  # "configs" or "secrets"
    name: str
    users: tuple[str, ...]
    rows: tuple[Folded, ...]
    texts: tuple[tuple[str, tuple[str, ...]], ...]  # (line, unified diff) per text change

    @property
    def title(self) -> str:
        noun = "secret" if self.section == "secrets" else "config"
        used = f" (used by {', '.join(self.users)})" if self.users else ""
        return f"{noun} {self.name}{used}"


@dataclass(frozen=True)
class FileSections:
    summary: str
    services: tuple[Folded, ...]
    configs: tuple[ConfigSection, ...]
    top_level: tuple[str, ...]


def sections(file: FileChange) -> FileSections:
    items = [(service.name, describe(change)) for service in file.services for change in service.changes]
    services = fold(items, file.roles, list(file.roles))
    configs: dict[tuple[str, str], list[Change]] = {}
    top_level: list[str] = []
    for change in file.others:
        if change.aspect is Aspect.CONFIG:
            configs.setdefault((str(change.path[0]), str(change.path[1])), []).append(change)
        else:
            top_level.append(describe(change))
    config_sections = [
        _config_section(section, name, changes, file.users.get(f"{section}/{name}", ()))
        for (section, name), changes in configs.items()
    ]
    return FileSections(_summary(file), tuple(services), tuple(config_sections), tuple(top_level))


def _config_section(section: str, name: str, changes: list[Change], users: tuple[str, ...]) -> ConfigSection:
    items: list[tuple[str, str]] = []
    texts: list[tuple[str, tuple[str, ...]]] = []
    for change in changes:
        line = describe(change)
        if change.unified:
            texts.append((line, change.unified))
            continue
        job = _job(change)
        prefix = f"scrape job {job}: "
        if job is not None and line.startswith(prefix):
            items.append((job, line[len(prefix) :]))
        else:
            items.append(("", line))
    return ConfigSection(section, name, users, tuple(fold(items)), tuple(texts))


def _job(change: Change) -> str | None:
    path = list(change.path)
    if "scrape_configs" in path:
        at = path.index("scrape_configs")
        if len(path) > at + 1:
            return str(path[at + 1])
    return None


def _summary(file: FileChange) -> str:
    if file.status is Status.ERROR:
        return f"cannot compare: {file.error}"
    if file.status is Status.UNCHANGED:
        return "no semantic change (formatting, comments, key order or spelling only)"
    counts = Counter(service.status for service in file.services)
    parts = [f"{count} service(s) {status.value}" for status, count in sorted(counts.items())]
    configs = {(change.path[0], change.path[1]) for change in file.others if change.aspect is Aspect.CONFIG}
    if configs:
        parts.append(f"{len(configs)} config(s) changed")
    top = {change.path[0] for change in file.others if change.aspect is Aspect.TOP_LEVEL}
    if top:
        parts.append(f"top-level {', '.join(sorted(str(key) for key in top))} changed")
    what = "; ".join(parts) or "no semantic change"
    if file.status is Status.RENAMED:
        return f"renamed from {file.old_path}: {what}"
    if file.status in (Status.ADDED, Status.REMOVED):
        return f"file {file.status.value}: {what}"
    return what


def _subjects(folded: Folded) -> str:
    return ", ".join(folded.subjects)


# Past this many, the peers without a change are named up to NOT_ON_NAMED and counted:
# a flag on 7 of 200 engines is about the 7, not a line of 193 names.
NOT_ON_LISTED = 8
NOT_ON_NAMED = 5


def not_on(names: Sequence[str], shown: Callable[[str], str] = str) -> str:
    """` (not on a, b)`: the same-role peers a folded change missed (empty for none)."""
    if not names:
        return ""
    if len(names) <= NOT_ON_LISTED:
        return f" (not on {', '.join(shown(name) for name in names)})"
    first = ", ".join(shown(name) for name in names[:NOT_ON_NAMED])
    return f" (not on {first} and {len(names) - NOT_ON_NAMED} more of the same role)"


def _not_on(folded: Folded) -> str:
    return not_on(folded.missing)


def _header(changeset: ChangeSet) -> tuple[str, str]:
    paths = " ".join(changeset.paths)
    return paths, f"base {changeset.base.describe()} -> head {changeset.head.describe()}"


def no_change_line(changeset: ChangeSet) -> str | None:
    """The one line for "nothing changed", or None when there is something to report."""
    if changeset.has_changes() or changeset.errors:
        return None
    paths = " ".join(changeset.paths)
    line = f"no changes in {paths} between {changeset.base.describe()} and {changeset.head.describe()}"
    same = [file.label for file in changeset.files]
    if same:
        line += f" (formatting, comments or spelling only in {', '.join(same)})"
    return line


def render_text(changeset: ChangeSet) -> str:
    quiet = no_change_line(changeset)
    if quiet is not None:
        return quiet + "\n"
    paths, header = _header(changeset)
    changed = [file for file in changeset.files if file.status is not Status.ERROR]
    lines = [f"diff of {paths}: {header}: {len(changed)} file(s) changed, {len(changeset.errors)} unreadable"]
    for file in changeset.files:
        parts = sections(file)
        lines.append(f"{file.label}: {parts.summary}")
        lines += [f"  {_subjects(row)}: {row.text}{_not_on(row)}" for row in parts.services]
        for config in parts.configs:
            lines.append(f"  {config.title}:")
            for row in config.rows:
                if row.subjects == ("",):
                    lines.append(f"    {row.text}")
                else:
                    noun = "scrape jobs" if len(row.subjects) > 1 else "scrape job"
                    lines.append(f"    {noun} {_subjects(row)}: {row.text}")
            for line, diff in config.texts:
                lines.append(f"    {line}")
                lines += [f"      {text}" for text in diff]
        lines += [f"  top-level {line}" for line in parts.top_level]
    return "\n".join(lines) + "\n"


def render_json(changeset: ChangeSet) -> str:
    return json.dumps(changeset.to_json(), indent=2, ensure_ascii=False) + "\n"


def render_markdown(changeset: ChangeSet, limit: int = DIFF_BUDGET) -> str:
    quiet = no_change_line(changeset)
    if quiet is not None:
        return f"### Semantic diff\n\n{escape(quiet)}\n"
    paths, header = _header(changeset)
    blocks = [f"### Semantic diff of {code(paths)}\n\n{escape(header)}\n"]
    for file in changeset.files:
        parts = sections(file)
        blocks.append(f"#### {code(file.label)}\n\n{escape(parts.summary)}\n")
        if parts.services:
            blocks.append("| service | role | change |\n|---|---|---|")
            for row in parts.services:
                roles = ", ".join(dict.fromkeys(file.roles.get(name, "") for name in row.subjects))
                names = "<br>".join(code(name) for name in row.subjects)
                missing = not_on(row.missing, code)
                blocks.append(f"| {names} | {escape(roles)} | {code(row.text)}{missing} |")
            blocks.append("")
        for config in parts.configs:
            blocks += _markdown_config(config)
        if parts.top_level:
            blocks.append("| top-level | change |\n|---|---|")
            blocks += [f"| | {code(line)} |" for line in parts.top_level]
            blocks.append("")
    return fit(blocks, limit, "diff")


def _markdown_config(config: ConfigSection) -> list[str]:
    blocks: list[str] = []
    if config.rows:
        blocks.append(f"| {escape(config.title)} | change |\n|---|---|")
        for row in config.rows:
            where = (
                ""
                if row.subjects == ("",)
                else "scrape job " + "<br>".join(code(job) for job in row.subjects)
            )
            blocks.append(f"| {where} | {code(row.text)} |")
        blocks.append("")
    for line, diff in config.texts:
        shown = list(diff[:MAX_DIFF_LINES])
        if len(diff) > MAX_DIFF_LINES:
            shown.append(f"... {len(diff) - MAX_DIFF_LINES} more lines (see --format json)")
        if len(diff) > COLLAPSE_LINES:
            # Inside HTML, Markdown escapes are not processed: escape as HTML instead.
            title = html.escape(f"{config.title}: {line}")
            blocks.append(f"<details><summary>{title}</summary>\n\n{fence(shown, 'diff')}\n\n</details>\n")
        else:
            blocks.append(f"{escape(config.title)}: {escape(line)}\n\n{fence(shown, 'diff')}\n")
    return blocks


RENDERERS: dict[str, Callable[[ChangeSet], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
}
