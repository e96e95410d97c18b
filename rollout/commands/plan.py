"""`python -m rollout plan`: what to stage, preview, recreate and verify, in order, for what `rollout diff` reports.

Per prod file, on each of its hosts (from the fleet's data, the canary host first):
stage new images, then one service at a time, a preview (compose-manager's `up` dry
run), the real `down` and `up`, and a verification; the rollback follows the same
rules in reverse. Every call is printed as the body compose-manager reads and the
command it runs for it. The plan opens with one screen: tags, capacity per model,
and one line per service.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rollout import git
from rollout.commands.diff import add_selection_arguments, load_sides
from rollout.diff.boundary import write_masked
from rollout.diff.changes import ChangeSet, FileChange
from rollout.diff.forms import load_documents
from rollout.diff.snapshot import Snapshot
from rollout.plan.fleet import DATA_DIRECTORY, PACK_SUFFIX, TARGETS_SUFFIX, Placement, placements
from rollout.plan.model import NEW_TAG, OLD_TAG, Plan, Tags
from rollout.plan.planner import build_plan
from rollout.plan.report import RENDERERS
from rollout.release import record as release
from rollout.release import tagset
from tierops.entry import visible
from tierops.errors import InputError, RefusedError, UsageError
from tierops.exitcodes import ExitCode, epilog

NAME = "plan"
HELP = "the rollout plan (compose-manager calls and rollbacks) for the changes diff reports"
DESCRIPTION = f"""\
The ordered rollout of the changes between a base ref and the working tree (or --head),
through compose-manager's API: per prod file, on each host the fleet's data names for
it (generators/*.targets.yaml; one host at a time, the first is the canary host):

  stage    POST /compose/up with materialize_only at the new tag, for every service
           whose image or model snapshot changes: pulled while everything serves
  preview  POST /compose/up with dry_run at the new tag, one service: its `plan` event
           must name no other service (it also writes the file the down reads)
  down     POST /compose/down, one service (a down has no dry run: never previewed)
  up       POST /compose/up at the new tag, one service
  verify   what the change moved: health, the image, the variant label, each changed
           flag in the engine's startup server_args (API reading and shell command)

Services that disappear go down first (compose-manager's up removes orphans with a
short timeout); engines one at a time (r2 before r1); telemetry alone; the proxy,
registrar and front door only if they changed. The rollback follows the same rules in
reverse, services the plan added first. Each call is shown as its body and as the
command compose-manager runs for it (same project, phases and flags).

Tags: up steps name {NEW_TAG} unless --tag is given or the head commit carries a
release tag; down steps and the rollback name the deployed tag, {OLD_TAG}, unless
--base-tag is given or the base commit carries one. A tag given whose file differs from
the reviewed head (or base), or a --tag not newer than --base-tag, is refused. Release
tags are annotated v0.0.N tags with `rollout release tag`'s record (docs/releasing.md).
"""
EPILOG = epilog("not used (plan exits 0 when it can plan, 2 when a file cannot be read)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)
    parser.add_argument("--tag", metavar="TAG", help=f"the tag to deploy (default: {NEW_TAG})")
    parser.add_argument("--base-tag", metavar="TAG", help=f"the tag deployed now (default: {OLD_TAG})")


def resolve_tags(
    repo: Path,
    changeset: ChangeSet,
    tag: str | None,
    base_tag: str | None,
    sides: tuple[Snapshot, Snapshot] | None = None,
) -> Tags:
    """The tags the payloads name: --tag/--base-tag, else the release tag of the head/base
    commit, else a placeholder. Release tags are rollout/release/record.py's one definition:
    a `v0.0.9-rc` or a lightweight tag on either commit never reaches a payload. A tag
    given by hand must carry the files that were reviewed (`sides`: base and head), and
    the new one must be newer than the deployed one."""
    found = tagset.read_tags(repo)
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
    new_number, old_number = release.tag_number(new), release.tag_number(old)
    if new_number is not None and old_number is not None and new_number <= old_number:
        given = "--base-tag" if base_tag else "the base's release tag"
        raise RefusedError(
            f"--tag {new} is not newer than the deployed {old} ({given}): a plan only moves forward",
            hint="to go back to an older release use `python -m rollout release rollback`",
        )
    if sides is not None:
        base_side, head_side = sides
        notes += _check_reviewed(repo, found, changeset, "--tag", tag, head_side, old=False)
        notes += _check_reviewed(repo, found, changeset, "--base-tag", base_tag, base_side, old=True)
    return Tags(new, old, tuple(notes), _deployable(found, new))


def _deployable(found: tagset.TagSet, name: str) -> str:
    """When compose-manager accepts tag `name` (its commit's age), or "" when the tag
    does not exist yet."""
    tag = next((candidate for candidate in found.releases if candidate.name == name), None)
    if tag is None:
        return ""
    gate = tagset.age_gate(None, os.environ)
    if gate.deployable(tag, datetime.now(UTC)):
        return f"deployable now under MIN_TAG_AGE_HOURS={gate.hours}"
    return (
        f"deployable from {release.format_time(gate.deployable_from(tag))} (MIN_TAG_AGE_HOURS={gate.hours})"
    )


def _check_reviewed(
    repo: Path,
    found: tagset.TagSet,
    changeset: ChangeSet,
    option: str,
    name: str | None,
    side: Snapshot,
    *,
    old: bool,
) -> list[str]:
    """Refuse a tag whose prod files differ from the reviewed side's; a tag that does
    not exist yet cannot be compared, and the plan says so."""
    if name is None:
        return []
    tag = next((candidate for candidate in found.releases if candidate.name == name), None)
    if tag is None:
        return [
            f"{name} does not exist in this clone yet: before deploying, check that it tags the reviewed commit"
        ]
    for file in changeset.files:
        if file.error is not None:
            continue
        path = (file.old_path or file.path) if old else file.path
        reviewed = side.files.get(path)
        at_tag = git.show(repo, tag.commit, path)
        if reviewed != at_tag:
            which = "base" if old else "head"
            state = "does not exist" if at_tag is None else "differs from"
            raise RefusedError(
                f"{option} {name}: {path} at {name} {state} the reviewed {which} ({side.side.describe()})",
                hint=f"pass the tag of the reviewed commit, or plan --{which} {name} to review what it deploys",
            )
    return []


def refuse_bare_variables(plan: Plan) -> None:
    """A new `${VAR}` without a default or `?`: Compose starts the service with it empty
    on any host that lacks it, and nothing fails. Refused until the file guards it or
    the fleet's data says every host sets it."""
    for file in plan.files:
        for variable in file.variables:
            if variable.unguarded:
                readers = ", ".join(name for name in variable.services if name) or "a top-level section"
                raise RefusedError(
                    f"{file.label}: new variable ${{{variable.name}}} has no default and no `?`: "
                    f"Compose starts {readers} with it empty on a host that does not set it",
                    hint=f"write ${{{variable.name}:?set on every host}} or ${{{variable.name}:-DEFAULT}}, or list "
                    f"{variable.name} under host_variables of the file's target (generators/*.targets.yaml or *.pack.yaml) "
                    "once every host's compose-manager sets it",
                )


def fleet_placements(repo: Path, head: Snapshot) -> dict[str, Placement]:
    """Hosts and project per prod file stem, from the fleet's data on the head side."""
    commit = head.side.commit
    if commit is None:
        directory = repo / DATA_DIRECTORY
        names = [
            f"{DATA_DIRECTORY}/{path.name}"
            for suffix in (TARGETS_SUFFIX, PACK_SUFFIX)
            for path in directory.glob(f"*{suffix}")
        ]

        def read(name: str) -> bytes | None:
            try:
                return (repo / name).read_bytes()
            except OSError:
                return None

        return placements(names, read)
    listed = git.ls_tree(repo, commit, [DATA_DIRECTORY])
    return placements(listed, lambda name: git.show(repo, commit, name))


def _tag_of(found: tagset.TagSet, commit: str | None) -> str | None:
    """The release tag of `commit`, if it has one."""
    tag = found.at(commit) if commit else None
    return tag.name if tag else None


def _ignored_at(found: tagset.TagSet, commit: str | None) -> str:
    ignored = found.ignored_at(commit) if commit else ()
    return "".join(f" ({tag.name} ignored: {tag.reason})" for tag in ignored)


def _require_release_name(found: tagset.TagSet, option: str, name: str) -> None:
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
    """From the bytes the diff read (the same reading: `rollout.diff.forms.read` keeps it)."""
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
    tags = resolve_tags(repo, changeset, args.tag, args.base_tag, (base_side, head_side))

    def head(file: FileChange) -> Mapping[str, Any] | None:
        return heads.get((file.path, file.document))

    def base(file: FileChange) -> Mapping[str, Any] | None:
        return bases.get((file.old_path or file.path, file.document))

    plan = build_plan(changeset, head, tags, base, fleet_placements(repo, head_side))
    refuse_bare_variables(plan)
    sys.stdout.write(visible(RENDERERS[args.format](plan)))
    if args.markdown_to is not None:
        write_masked(args.markdown_to, RENDERERS["markdown"](plan))
    if args.format != "text":
        for file in plan.errors:
            print(f"{file.label}: {file.error}", file=sys.stderr)
    return ExitCode.USAGE if plan.errors else ExitCode.OK
