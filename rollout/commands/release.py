"""`python -m rollout release tag|history|rollback`: release tags as rollback points.

    tag       the next annotated v0.0.N on each untagged first-parent commit of main,
              oldest first, after the check passed at that commit
    history   the tags at which a prod file's (or some services') definition changed
    rollback  the ordered, dry-run-first steps back to the previous definition

The library code is in rollout/release/: tags.py (write side), record.py (the
records), tagset.py (reading tags, the age gate), history.py and rollback.py; this
module only parses, prints and picks the exit code. docs/releasing.md describes the scheme.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from rollout import git
from rollout.diff.boundary import protect_source
from rollout.release import changelog, history, rollback, tags, tagset, verify
from rollout.release import record as release
from tierops.atomic import write_bytes_atomic
from tierops.entry import visible
from tierops.errors import InputError, UsageError
from tierops.exitcodes import ExitCode, epilog
from tierops.yamlload import read_regular

NAME = "release"
HELP = "tag releases (v0.0.N), show a definition's history, print a rollback"
DESCRIPTION = """\
Release tags are the rollback points of this repository: every first-parent commit of
main gets the next annotated tag v0.0.N, whose message records a content hash of every
service of every prod file. See docs/releasing.md.

  tag       tag the untagged first-parent commits of main up to --commit (default HEAD)
  history   the tags at which a file's (or some services') definition changed
  rollback  the steps that roll services back to their previous definition
"""
EPILOG = epilog("the check failed at a commit to be tagged (release tag)")

TAG_DESCRIPTION = f"""\
Create the next annotated tag v0.0.N (numeric order) on each first-parent commit of
--branch that has no release tag yet, oldest first, up to --commit: a missed run is
backfilled. In a repository without release tags only --commit is tagged.

A release tag is an annotated v0.0.N whose message carries this tool's record of the
commit it points at, on the first-parent history of --branch. Any other v0.0.* tag
(lightweight, no record, another commit's record, off that history, v0.0.9-rc) is
ignored and named: it never counts for numbering or as "already tagged"; a name it
holds is skipped.

Before each tag the check runs at that commit in a temporary worktree, in a process
group of its own (SIGTERM or SIGINT ends that group and removes the worktree): the
command is --verify-command, else ${verify.VERIFY_ENV}, else `{release.DEFAULT_VERIFY}` (CI's
main job, from that commit's own noxfile). Only `{release.DEFAULT_VERIFY}` is recorded as
`verify: passed`; any other command is an override, recorded as
`verify: {release.VERIFY_OVERRIDE}` with the command. A failing commit is not tagged
(exit 1) unless --no-verify, which the tag message then records.

Refused with one line and exit 2, creating nothing: a shallow clone, a dirty working
tree, a commit not on the first-parent history of --branch, a commit not yet on the
remote's --branch (with --remote), a remote that cannot be reached, a tag name on two
commits. A commit that already has a release tag is reported and exits 0. Tags are
never moved, deleted or force-pushed.

--push (implies --remote origin) pushes each new tag as a single ref; when another run
took the number first, the remote's tags are read again and the next number is tried
(at most {tags.MAX_ATTEMPTS} times).
"""

HISTORY_DESCRIPTION = f"""\
A changelog of FILE's services (all of them, or the ones named): the release tags at
which their definition changed, newest first. Per tag: its commit, commit date and
subject, the author, the tag date; whether it is deployable yet and from when
(compose-manager refuses a tag whose commit is younger than MIN_TAG_AGE_HOURS:
--min-tag-age-hours, else ${release.MIN_TAG_AGE_ENV}, else {release.DEFAULT_MIN_TAG_AGE_HOURS});
the definition digest and the evidence (the first 12 hex of the check-matrix digest the
tag records; `-` for none); then one line per service of what changed since the
previous tag listed, in the semantic diff's words (at most {changelog.MAX_CHANGES} changes
a service, then "and N more"). v0.0.* tags that are not release tags are listed as
ignored, with the reason. Reads the tags of this clone: `git fetch --tags` first; a
shallow clone is refused (`git fetch --unshallow --tags`).
"""

ROLLBACK_DESCRIPTION = """\
Find the newest release tag older than the deployed one (--from, default the newest
tag) whose definition of the named services differs, check that it is past the age
gate, render FILE at that tag with the real `docker compose config` and the dummy
environment, and print the rollback by the rollout plan's rules, per service, one at a
time: stage the old image when it differs (compose/up with materialize_only), preview
(compose/up with dry_run at the old tag), compose/down (it has no dry run: it is never
previewed), compose/up from the old tag, verify; each call as the body compose-manager
reads and the command it runs. Prints only: it never deploys.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="release_command", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--repo",
        default=".",
        metavar="PATH",
        help="a path inside the repository (default: the current directory)",
    )
    gate = argparse.ArgumentParser(add_help=False)
    gate.add_argument(
        "--min-tag-age-hours",
        metavar="H",
        help=f"the age gate compose-manager runs with (default ${release.MIN_TAG_AGE_ENV}, else "
        f"{release.DEFAULT_MIN_TAG_AGE_HOURS}); changing it here never makes a tag deployable",
    )

    tag = sub.add_parser(
        "tag",
        parents=[common],
        help="tag untagged first-parent commits of main",
        description=TAG_DESCRIPTION,
        epilog=epilog("the check failed at a commit to be tagged (nothing tagged from there on)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tag.add_argument("--commit", default="HEAD", metavar="REV", help="tag up to this commit (default HEAD)")
    tag.add_argument("--branch", default="main", help="the release branch (default main)")
    tag.add_argument(
        "--remote", metavar="NAME", help="number and check against this remote's tags and branch"
    )
    tag.add_argument("--push", action="store_true", help="push each new tag to --remote (default origin)")
    tag.add_argument(
        "--no-verify", action="store_true", help="tag without running the check (recorded in the tag)"
    )
    tag.add_argument(
        "--records",
        type=Path,
        metavar="DIR",
        help="also write each tagged commit's check-matrix record to DIR/TAG.check-matrix.json "
        "(what the release workflow attests); DIR is created when missing, and checked before "
        "anything is tagged",
    )
    tag.add_argument(
        "--verify-command",
        metavar="CMD",
        help=f"the check to run in the worktree, split with shell rules, run without a shell "
        f"(default ${verify.VERIFY_ENV}, else `{release.DEFAULT_VERIFY}`); anything but "
        f"`{release.DEFAULT_VERIFY}` is recorded as {release.VERIFY_OVERRIDE}",
    )

    history_parser = sub.add_parser(
        "history",
        parents=[common, gate],
        help="the tags at which a definition changed",
        description=HISTORY_DESCRIPTION,
        epilog=epilog("not used by this command"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    history_parser.add_argument("file", help="a prod file, e.g. prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml")
    history_parser.add_argument(
        "services", nargs="*", metavar="service", help="only these services (default: all)"
    )
    history_parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )

    back = sub.add_parser(
        "rollback",
        parents=[common, gate],
        help="print the steps back to the previous definition",
        description=ROLLBACK_DESCRIPTION,
        epilog=epilog("not used by this command"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    back.add_argument("file", help="a prod file, e.g. prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml")
    back.add_argument(
        "services", nargs="+", metavar="service", help="the services to roll back, in this order"
    )
    back.add_argument(
        "--from",
        dest="from_tag",
        metavar="TAG",
        help="the tag deployed now (default: the newest release tag)",
    )
    back.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )


def run(args: argparse.Namespace) -> int:
    repo = git.toplevel(Path(args.repo))
    if args.release_command == "tag":
        return _tag(repo, args)
    if args.release_command == "history":
        return _history(repo, args)
    return _rollback(repo, args)


# --------------------------------------------------------------------------- tag


def _records_dir(directory: Path | None) -> None:
    """`--records DIR` checked before anything is tagged: a tag is pushed before its record
    is written, so a DIR that cannot take the record must stop the run first. DIR is a
    directory (created when missing), and no record name in it is held by anything but a
    regular file."""
    if directory is None:
        return
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise UsageError(
            "--records names something that is not a directory; nothing was tagged",
            where=str(directory),
            hint="name a directory, or a new path to create",
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(
            f"--records: cannot create it: {error.strerror or error}", where=str(directory)
        ) from None
    for held in sorted(directory.glob("*.check-matrix.json")):
        if held.is_symlink() or not held.is_file():
            raise UsageError(
                "a record's name there is held by something other than a regular file; nothing was tagged",
                where=str(held),
                hint="remove it",
            )


def _keep_record(directory: Path | None, tag: str, record: bytes | None) -> str:
    """`--records DIR`: the tag's check-matrix record, as its check wrote it, for the
    release workflow to attest; the report's words for it."""
    if directory is None or record is None:
        return ""
    target = directory / f"{tag}.check-matrix.json"
    write_bytes_atomic(target, record)
    return f"; record {target}"


def _tag(repo: Path, args: argparse.Namespace) -> int:
    remote: str | None = args.remote or ("origin" if args.push else None)
    command = None if args.no_verify else verify.verify_command(args.verify_command, os.environ)
    plan = tags.plan(repo, args.commit, branch=args.branch, remote=remote, push=args.push)
    _records_dir(args.records)  # after the plan's refusals (a dirty tree), before any tag
    for ignored in plan.ignored:
        print(f"note: {ignored.shown} on {(ignored.commit or '')[:12]} ignored: {ignored.reason}")
    if plan.already:
        print(f"{plan.target[:12]} is already tagged {', '.join(plan.already)}; nothing to do")
        return ExitCode.OK
    if command is not None and command.override:
        print(
            f"verify: `{command.text}` from {command.source} replaces `{release.DEFAULT_VERIFY}`: "
            f"tags record it as {release.VERIFY_OVERRIDE}, never as passed"
        )
    if plan.after is None:
        print(
            f"no release tag on {plan.branch} yet: tagging only {plan.target[:12]}; older commits stay untagged"
        )
    elif len(plan.commits) > 1:
        print(
            f"backfilling {len(plan.commits)} untagged first-parent commits of {plan.branch} "
            f"after {plan.after}, oldest first"
        )
    for index, commit in enumerate(plan.commits, start=1):
        check_matrix: str | None = None
        record_bytes: bytes | None = None
        if command is None:
            verified = release.VERIFY_SKIPPED
        else:
            # Progress on stderr, one line a commit: each check takes minutes, and
            # stdout stays one line per tag.
            print(
                f"checking {commit[:12]} ({index} of {len(plan.commits)}): `{command.text}` in its worktree",
                file=sys.stderr,
                flush=True,
            )
            started = time.monotonic()
            outcome = verify.verify(repo, commit, command.tokens)
            print(
                f"  {commit[:12]}: {'passed' if outcome.ok else 'failed'} in {time.monotonic() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            if not outcome.ok:
                # The check's own output goes to stderr: stdout stays one line per tag.
                output = (
                    outcome.output
                    if outcome.output.endswith("\n") or not outcome.output
                    else outcome.output + "\n"
                )
                sys.stderr.write(output)
                print(
                    f"{commit[:12]}: `{outcome.command_text}` failed (exit {outcome.returncode}) in its worktree; "
                    f"not tagged, and no newer commit is; {tags.NO_VERIFY_HINT}",
                    file=sys.stderr,
                )
                return ExitCode.FINDINGS
            verified = command.recorded()
            check_matrix = outcome.check_matrix
            record_bytes = outcome.record_bytes
        record = release.record_for_commit(repo, commit, verified, check_matrix)
        created = tags.create(repo, plan, commit, functools.partial(_message, record=record))
        for skipped in created.skipped:
            print(
                f"{skipped.name} is held by a tag that is not a release ({skipped.reason}); skipped the name"
            )
        if created.adopted:
            print(
                f"{commit[:12]} was tagged {created.name} on {remote} by another run meanwhile; not tagged again"
            )
            continue
        for name in created.lost:
            print(f"{remote} got {name} first (another run, another commit); took the next number")
        pushed = f", pushed to {created.pushed_to}" if created.pushed_to else ""
        # The override's command line is in the line above and in the record.
        how = (
            f"check {record.verify}"
            if record.verified
            else f"NOT verified: {record.verify.partition(':')[0]}"
        )
        evidence = f"; check matrix {record.check_matrix[:19]}" if record.check_matrix else ""
        evidence += _keep_record(args.records, created.name, record_bytes)
        print(f"created {created.name} on {commit[:12]} ({how}{evidence}){pushed}")
    return ExitCode.OK


def _message(name: str, *, record: release.Record) -> str:
    return release.format_message(name, record)


# --------------------------------------------------------------------------- masking


def protect_file_at_tags(repo: Path, file: str, found: tagset.TagSet) -> None:
    """Hand the masking boundary `file` as every tag (and the working tree) has it.

    history and rollback print digests, not values; but compose's error line about the
    file at a tag, or a tag's message, may quote one, and the boundary can only mask a
    value it knows. One `git cat-file --batch` for all the tags."""
    protect_source(_read(repo / file))
    commits = [tag.commit for tag in found.releases]
    commits += [tag.commit for tag in found.ignored if tag.commit]
    if not commits:
        return
    specs = "".join(f"{commit}:{file}\n" for commit in dict.fromkeys(commits))
    proc = subprocess.run(
        ["git", "cat-file", "--batch"],
        input=specs.encode(),
        cwd=repo,
        capture_output=True,
        check=False,
        env=git.environment(),
    )
    out, at = proc.stdout, 0
    while at < len(out):
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob" and header[2].isdigit():
            size = int(header[2])
            protect_source(out[at : at + size])
            at += size + 1


def _read(path: Path) -> bytes | None:
    """The working tree's file, a regular file within the size budget (a FIFO never hangs)."""
    try:
        return read_regular(path, str(path))
    except (InputError, OSError):
        return None


# --------------------------------------------------------------------------- history


def _history(repo: Path, args: argparse.Namespace) -> int:
    gate = tagset.age_gate(args.min_tag_age_hours, os.environ)
    tagset.refuse_shallow(repo)
    file = history.repo_path(repo, args.file)
    all_tags = tagset.read_tags(repo)
    protect_file_at_tags(repo, file, all_tags)
    found = history.history(all_tags, file, args.services)
    now = release.utcnow()
    entries = changelog.changelog(repo, found)
    if args.format == "json":
        print(json.dumps(_history_json(found, entries, gate, now), indent=2))
        return ExitCode.OK
    what = f"{file} {' '.join(found.services)}" if found.services else f"{file} (all services)"
    print(f"{what}: {len(found.changes)} definitions in {found.tags_read} release tags, newest first")
    print(f"age gate: MIN_TAG_AGE_HOURS={gate.hours} on the commit date; now {release.format_time(now)}")
    for entry in entries:
        print("")
        for line in _history_entry(entry, gate, now):
            print(visible(line))  # a service's values, as the diff shows them
    if found.ignored:
        print("")
    for ignored in found.ignored:
        print(f"note: {ignored.shown} ignored: {ignored.reason}")
    return ExitCode.OK


def _deployable(tag: tagset.ReleaseTag, gate: tagset.AgeGate, now: datetime) -> str:
    since = release.format_time(gate.deployable_from(tag))
    return f"yes (since {since})" if gate.deployable(tag, now) else f"no, from {since}"


def _how_tagged(tag: tagset.ReleaseTag) -> list[str]:
    """What the tag's verify covered, when that is less than the tests and the check."""
    return [note for note in (tag.record.unverified, tag.record.tests_unverified) if note]


def _history_entry(entry: changelog.Entry, gate: tagset.AgeGate, now: datetime) -> list[str]:
    """One tag as a changelog entry: the tag, its commit and subject; when it is
    deployable and what it records; then one line per service of what changed."""
    tag, change = entry.change.tag, entry.change
    evidence = tag.record.check_matrix.removeprefix("sha256:")[:12] if tag.record.check_matrix else "-"
    tagged = release.format_time(tag.tag_time) if tag.tag_time else "-"
    facts = [
        f"deployable: {_deployable(tag, gate, now)}",
        change.note,
        f"definition {change.digest}",
        f"check matrix {evidence}",
    ]
    lines = [
        f"{tag.name}  {tag.short}  {release.format_time(tag.commit_time)}  {entry.commit.subject}",
        f"  by {entry.commit.author}; tagged {tagged}",
        "  " + "; ".join(facts),
        *(f"  note: {note}" for note in _how_tagged(tag)),
    ]
    lines += [f"  - {line}" for line in entry.lines]
    if entry.error:
        lines.append(f"  - (what changed is not shown: {entry.error})")
    return lines


def _history_json(
    found: history.History, entries: list[changelog.Entry], gate: tagset.AgeGate, now: datetime
) -> dict[str, Any]:
    return {
        "file": found.file,
        "services": list(found.services),
        "tags_read": found.tags_read,
        "min_tag_age_hours": gate.hours,
        "now": release.format_time(now),
        "tags": [
            {
                "tag": entry.change.tag.name,
                "commit": entry.change.tag.commit,
                "subject": entry.commit.subject,
                "author": entry.commit.author,
                "committed": release.format_time(entry.change.tag.commit_time),
                "tagged": release.format_time(entry.change.tag.tag_time)
                if entry.change.tag.tag_time
                else None,
                "deployable": gate.deployable(entry.change.tag, now),
                "deployable_from": release.format_time(gate.deployable_from(entry.change.tag)),
                "change": entry.change.note,
                "definition": entry.change.digest,
                "verify": entry.change.tag.record.verify,
                "verified": entry.change.tag.record.verified,
                "check_matrix": entry.change.tag.record.check_matrix,
                "changes": list(entry.lines),
                "changes_error": entry.error,
            }
            for entry in entries
        ],
        "ignored": [{"tag": tag.name, "reason": tag.reason} for tag in found.ignored],
    }


# --------------------------------------------------------------------------- rollback


def _rollback(repo: Path, args: argparse.Namespace) -> int:
    from tierops.composebin import find_compose

    gate = tagset.age_gate(args.min_tag_age_hours, os.environ)
    file = history.repo_path(repo, args.file)
    tagset.refuse_shallow(repo)
    all_tags = tagset.read_tags(repo)
    all_tags.require()  # "no tags" before "no compose binary"
    protect_file_at_tags(repo, file, all_tags)
    plan = rollback.plan_rollback(
        repo,
        all_tags,
        file,
        args.services,
        from_tag=args.from_tag,
        gate=gate,
        now=release.utcnow(),
        compose=find_compose(),
    )
    if args.format == "json":
        print(json.dumps(_rollback_json(plan, gate), indent=2))
    else:
        for line in _rollback_text(plan, gate, explicit_from=args.from_tag is not None):
            print(visible(line))
    return ExitCode.OK


def _rollback_text(plan: rollback.Rollback, gate: tagset.AgeGate, *, explicit_from: bool) -> list[str]:
    deployed, target = plan.deployed, plan.target
    source = (
        "--from"
        if explicit_from
        else "the newest release tag in this clone; --from TAG if the host runs another"
    )
    lines = [
        f"rollback of {', '.join(plan.changed)} in {plan.file}",
        f"  deployed:     {deployed.name} (commit {deployed.short}; {source})",
        f"  roll back to: {target.name} (commit {target.short}, committed "
        f"{release.format_time(target.commit_time)}, deployable since "
        f"{release.format_time(gate.deployable_from(target))} under MIN_TAG_AGE_HOURS={gate.hours})",
    ]
    if plan.passed_over:
        names = ", ".join(tag.name for tag in plan.passed_over)
        lines.append(f"  passed over:  {names} (same definition as {deployed.name})")
    for name in plan.changed:
        before = deployed.record.digests[plan.file][name]
        after = target.record.digests[plan.file][name]
        lines.append(f"  {name}: definition {before} -> {after}")
    for name in plan.unchanged:
        lines.append(f"  {name}: same definition at {target.name}; not touched")
    for name in plan.followers:
        lines.append(
            f"  {name}: telemetry that differs at {target.name} too (it carries the labels of what is rolled "
            "back): rolled back with it, last"
        )
    lines += [f"  warning: {warning}" for warning in plan.warnings]
    lines.append(f"  rendered {plan.file} at {target.name}: docker compose config ok ({plan.rendered_with})")
    if target.record.unverified:
        lines.append(f"  warning: {target.name} was {target.record.unverified}: its check never passed")
    for ignored in plan.ignored:
        lines.append(f"  note: {ignored.shown} ignored: {ignored.reason}")
    if plan.applies:
        lines.append(f"  it applies ({deployed.name} -> {target.name}, the diff's words):")
        lines += [f"    {line}" for line in plan.applies]
    lines += [
        "",
        "steps, in order, one service at a time (compose-manager's down has no dry run: the preview before "
        "it is the last read-only look):",
    ]
    for number, step in enumerate(plan.steps, start=1):
        lines.append(f"{number:>2}. {step.action} {step.service}: {step.why}")
        if step.call is not None:
            lines += [
                f"    {step.call.endpoint} {json.dumps(step.call.payload())}",
                f"    $ {step.call.command()}",
            ]
        for check in step.checks:
            lines.append(f"    - {check.what}: expect {check.expect}")
            if check.api:
                lines.append(f"      api: {check.api}")
            lines.append(f"      $ {check.command}")
    return lines


def _rollback_json(plan: rollback.Rollback, gate: tagset.AgeGate) -> dict[str, Any]:
    def tag_json(tag: tagset.ReleaseTag) -> dict[str, Any]:
        return {
            "tag": tag.name,
            "commit": tag.commit,
            "committed": release.format_time(tag.commit_time),
            "deployable_from": release.format_time(gate.deployable_from(tag)),
            "verified": tag.record.verified,
            "verify": tag.record.verify,
            "check_matrix": tag.record.check_matrix,
            "digests": {name: tag.record.digests[plan.file].get(name) for name in plan.services},
        }

    return {
        "file": plan.file,
        "services": list(plan.services),
        "changed": list(plan.changed),
        "followers": list(plan.followers),
        "applies": list(plan.applies),
        "warnings": list(plan.warnings),
        "unchanged": list(plan.unchanged),
        "deployed": tag_json(plan.deployed),
        "target": tag_json(plan.target),
        "passed_over": [tag.name for tag in plan.passed_over],
        "ignored": [{"tag": tag.name, "reason": tag.reason} for tag in plan.ignored],
        "rendered_with": plan.rendered_with,
        "steps": [
            {
                "service": step.service,
                "action": step.action,
                "why": step.why,
                **(step.call.to_json() if step.call is not None else {}),
                **({"checks": [check.to_json() for check in step.checks]} if step.checks else {}),
            }
            for step in plan.steps
        ],
    }
