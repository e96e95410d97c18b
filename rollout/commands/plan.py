"""`python -m rollout plan`: the ordered rollout of what `rollout diff` reports.

One service at a time: services that disappear are taken down first (the orphan
rule); then changed one-shot jobs; engines (added ones first, then the highest replica
first, r2 before r1, unless `tierops.rollout.order` labels say otherwise); telemetry
alone; the proxy, registrar and front door only if they changed, flagged as
interrupting traffic. Unchanged services are never touched. For each service both dry
runs come before any real call. Every step is printed as a compose-manager call and as
a plain `docker compose` command (with the service's compose profiles), with its
rollback; the rollback of the whole plan is its exact reverse, services the plan added
taken down first (the orphan rule). A capacity warning counts the engines serving.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rollout import release
from rollout.changes import ChangeSet, FileChange
from rollout.commands.diff import add_selection_arguments, load_sides
from rollout.forms import load_documents
from rollout.masking import write_masked
from rollout.plan import NEW_TAG, OLD_TAG, Tags, build_plan
from rollout.report_plan import RENDERERS
from rollout.snapshot import Snapshot
from tierops.errors import InputError, UsageError
from tierops.exitcodes import ExitCode, epilog

NAME = "plan"
HELP = "the rollout plan (compose-manager calls and rollbacks) for the changes diff reports"
DESCRIPTION = f"""\
The ordered rollout of the changes between a base ref and the working tree (or --head):
which services to take down and bring up, one at a time (both dry runs of a service
before its real down and up), as compose-manager payloads and plain `docker compose`
commands, each with its rollback and its verification; then the rollback of the whole
plan, its exact reverse (services the plan added go down first: the orphan rule).

Tags: the head is normally not tagged yet (the v0.0.N tag is created on the merge
commit), so up steps name {NEW_TAG} unless --tag is given or the head commit already
carries a release tag; down and rollback steps name the tag deployed now, {OLD_TAG},
unless --base-tag is given or the base commit carries a release tag. A release tag is
an annotated v0.0.N with `rollout release tag`'s record, on main's first-parent
history (docs/releasing.md); other v0.0.* tags (v0.0.9-rc, lightweight) are named in
the notes and never used.
"""
EPILOG = epilog("not used (plan exits 0 when it can plan, 2 when a file cannot be read)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)
    parser.add_argument("--tag", metavar="TAG", help=f"the tag to deploy (default: {NEW_TAG})")
    parser.add_argument("--base-tag", metavar="TAG", help=f"the tag deployed now (default: {OLD_TAG})")


def resolve_tags(repo: Path, changeset: ChangeSet, tag: str | None, base_tag: str | None) -> Tags:
    """The tags the payloads name: --tag/--base-tag, else the release tag of the head/base
    commit, else a placeholder. Release tags are rollout/release.py's one definition:
    a `v0.0.9-rc` or a lightweight tag on either commit never reaches a payload."""
    found = release.read_tags(repo)
    for option, value in (("--tag", tag), ("--base-tag", base_tag)):
        if value is not None:
            _require_release_name(found, option, value)
    notes: list[str] = []
    new = tag or _tag_of(found, changeset.head.commit)
    if new is None:
        new = NEW_TAG
        notes.append(
            f"{NEW_TAG}: the v0.0.N tag of the merge commit; the head ({changeset.head.describe()}) "
            f"is not tagged yet{_ignored_at(found, changeset.head.commit)}. "
            "Substitute it, or pass --tag, once it exists and is old enough to deploy"
        )
    old = base_tag or _tag_of(found, changeset.base.commit)
    if old is None:
        old = OLD_TAG
        notes.append(
            f"{OLD_TAG}: the tag deployed now; the base ({changeset.base.describe()}) carries no release tag"
            f"{_ignored_at(found, changeset.base.commit)}. Substitute it, or pass --base-tag"
        )
    return Tags(new, old, tuple(notes))


def _tag_of(found: release.TagSet, commit: str | None) -> str | None:
    """The release tag of `commit`, if it has one."""
    tag = found.at(commit) if commit else None
    return tag.name if tag else None


def _ignored_at(found: release.TagSet, commit: str | None) -> str:
    ignored = found.ignored_at(commit) if commit else ()
    return "".join(f" ({tag.name} ignored: {tag.reason})" for tag in ignored)


def _require_release_name(found: release.TagSet, option: str, name: str) -> None:
    """A tag given by hand must be able to be a release: `v0.0.N`, and not a tag that
    exists here but is not a release (the head's tag may not exist yet)."""
    if release.tag_number(name) is None:
        raise UsageError(f"{option} {name}: not a release tag name (releases are exactly v0.0.N)")
    for ignored in found.ignored:
        if ignored.name == name:
            raise UsageError(f"{option} {name}: not a release tag: {ignored.reason}")


Documents = dict[tuple[str, int | None], Mapping[str, Any]]


def head_documents(head: Snapshot, changeset: ChangeSet) -> Documents:
    """The head's compared forms of every changed file (roles and checks read them)."""
    paths = [file.path for file in changeset.files if file.error is None]
    return _documents(head, paths)


def base_documents(base: Snapshot, changeset: ChangeSet) -> Documents:
    """The base's compared forms, keyed by the base path (a renamed file's old path):
    the down steps' profiles and the engines serving before the plan come from them."""
    paths = [file.old_path or file.path for file in changeset.files if file.error is None]
    return _documents(base, paths)


def _documents(snapshot: Snapshot, paths: list[str]) -> Documents:
    """From the bytes the diff read (the same reading: `rollout.forms.read` keeps it)."""
    documents: Documents = {}
    for path in dict.fromkeys(paths):
        data = snapshot.files.get(path)
        if data is None:
            continue
        try:
            loaded = load_documents(data, where=path)
        except InputError:
            continue  # the diff already reported this file as unreadable
        for index, document in enumerate(loaded, start=1):
            documents[(path, index if len(loaded) > 1 else None)] = document
    return documents


def run(args: argparse.Namespace) -> int:
    repo, base_side, head_side, changeset = load_sides(args)
    heads = head_documents(head_side, changeset)
    bases = base_documents(base_side, changeset)
    tags = resolve_tags(repo, changeset, args.tag, args.base_tag)

    def head(file: FileChange) -> Mapping[str, Any] | None:
        return heads.get((file.path, file.document))

    def base(file: FileChange) -> Mapping[str, Any] | None:
        return bases.get((file.old_path or file.path, file.document))

    plan = build_plan(changeset, head, tags, base)
    sys.stdout.write(RENDERERS[args.format](plan))
    if args.markdown_to is not None:
        write_masked(args.markdown_to, RENDERERS["markdown"](plan))
    if args.format != "text":
        for file in plan.errors:
            print(f"{file.label}: {file.error}", file=sys.stderr)
    return ExitCode.USAGE if plan.errors else ExitCode.OK
