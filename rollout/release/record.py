"""Release tags as rollback points: what a release tag is, and the record it carries.

Reading the tags back (and the age gate) is rollout/release/tagset.py, the history of
one definition rollout/release/history.py.

**What a release tag is** (one definition, shared by `release tag|history|rollback`
and `plan`): a tag named exactly `v0.0.N`, annotated, whose message carries
the record `rollout release tag` writes, for the very commit the tag points at, and
that commit is on the first-parent history of main. Every other `v0.0.*` tag (a
lightweight one, one without a record or with another commit's record, one off
main's first-parent history such as a stray `v0.0.50` on a side branch, `v0.0.9-rc`)
is *ignored*, with the reason: it never counts for numbering, never makes a commit
"already tagged" and never reaches a compose-manager payload. rollout/release/tags.py
makes tags; the record is a small line-oriented text, written once:

    release v0.0.7 of 0123456789ab

    tierops-release: 1
    commit: <40 hex: the tagged commit>
    verify: passed: nox -s tests, nox -s check   (or: skipped (--no-verify), skipped (override): ...)
    check-matrix: sha256:<64 hex>         (only when the check at the commit wrote a record)
    service: prod/<file>.yaml <service> <12 hex>
    ...

`check-matrix:` is the evidence: the digest (tierops.checkmatrix.digest, durations
left out) of the build/check-matrix.json that the check at this commit wrote, so the
tag says which verdicts, inputs and tool versions it was made on, and anybody can
run the check at the commit and compare (`python -m ci.record --digest`). It is an
added line of format 1: older tools skip it (unknown lines are skipped), and records
without it (older tags, --no-verify, a check from before the record) read as None.

One `service:` line per prod file and service: a short content hash of the service's
compared form (rollout/diff/forms.py: the canonical model, argv as flags), plus the top-level `configs:`
entries the service mounts (an nginx.conf change redeploys nginx even though its
`services:` entry is unchanged). `history` and `rollback` read only these records, so
they never re-parse old files and give the same answer whatever the generators or the
parser look like today.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rollout import git
from rollout.diff.forms import Document, from_data, read, services_of
from tierops.errors import InputError, RefusedError

# Exactly `v0.0.<N>` without leading zeros: `v0.0.07` next to `v0.0.7` would make two
# names for one number, and a suffix (`-rc`) is somebody else's tag.
RELEASE_TAG = re.compile(r"^v0\.0\.(0|[1-9][0-9]*)$")
RECORD_FORMAT = "1"
CHECK_MATRIX = re.compile(r"^sha256:[0-9a-f]{64}$")
PROD_DIR = "prod"
DIGEST_LENGTH = 12
DEFAULT_MIN_TAG_AGE_HOURS = 48
MIN_TAG_AGE_ENV = "MIN_TAG_AGE_HOURS"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
DEFAULT_BRANCH = "main"
TAG_REFS = "refs/tags/v0.0.*"
# What `verify:` says. Only the project's own test suite and check, run at the commit
# in one nox run (so the check-matrix record has the tests stage too), are `passed`; a
# substituted command is recorded as what it is (tags.VerifyCommand.recorded).
DEFAULT_VERIFY = "nox -s tests check"
VERIFY_STAGES = ("nox -s tests", "nox -s check")
VERIFY_PASSED = f"passed: {', '.join(VERIFY_STAGES)}"
# What tags said before the tests were part of the verify: the check passed, the
# tests were never run there. Still a verified tag (its check did pass), and `history`
# says which half it covers.
VERIFY_PASSED_CHECK_ONLY = "passed: nox -s check"
VERIFY_SKIPPED = "skipped (--no-verify)"
VERIFY_OVERRIDE = "skipped (override)"
SHALLOW_HINT = "fetch the rest first: `git fetch --unshallow --tags`, then rerun"
NO_TAGS_HINT = (
    "create them with `python -m rollout release tag --remote origin --push` "
    "(the release workflow does it on every push to main; see docs/releasing.md)"
)


def utcnow() -> datetime:
    """The clock. The only thing tests replace: every other input is real git."""
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def tag_number(name: str) -> int | None:
    """N of `v0.0.N`, or None for any other name (`v0.0.7-rc`, `v0.0.07`)."""
    match = RELEASE_TAG.match(name)
    return int(match.group(1)) if match else None


def tag_name(number: int) -> str:
    return f"v0.0.{number}"


@dataclass(frozen=True)
class Record:
    """What a release tag says about its commit."""

    commit: str
    verify: str  # VERIFY_PASSED, VERIFY_SKIPPED or "skipped (override): ..."
    digests: Mapping[str, Mapping[str, str]]  # prod file -> service -> digest
    check_matrix: str | None = None  # "sha256:<64 hex>" of the check's record; None: none was written

    @property
    def verified(self) -> bool:
        # Exactly the project's check: a record an older version wrote after running an
        # environment-supplied command (`passed: true`) is not taken at its word.
        return self.verify in (VERIFY_PASSED, VERIFY_PASSED_CHECK_ONLY)

    @property
    def tests_unverified(self) -> str | None:
        """For a verified tag whose verify did not run the tests, what `history` says."""
        if self.verify == VERIFY_PASSED_CHECK_ONLY:
            return "verified by the check only: the tests were not run at this commit"
        return None

    @property
    def unverified(self) -> str | None:
        """None when the check passed, else how the tag was made, e.g. "tagged with --no-verify"."""
        if self.verified:
            return None
        if self.verify == VERIFY_SKIPPED:
            return "tagged with --no-verify"
        if self.verify.startswith(VERIFY_OVERRIDE):
            return f"tagged with the check {VERIFY_OVERRIDE}"
        return f"tagged with verify: {self.verify}"

    def definition(self, file: str, services: Sequence[str]) -> tuple[str | None, ...] | None:
        """The digests of `services` in `file` (None for an absent service), or None when
        the file does not exist at this tag. Without services: every service of the file."""
        if file not in self.digests:
            return None
        per_service = self.digests[file]
        if not services:
            return tuple(f"{name}={digest}" for name, digest in sorted(per_service.items()))
        return tuple(per_service.get(name) for name in services)


def format_message(name: str, record: Record) -> str:
    lines = [
        f"release {name} of {record.commit[:12]}",
        "",
        f"tierops-release: {RECORD_FORMAT}",
        f"commit: {record.commit}",
        f"verify: {record.verify}",
    ]
    if record.check_matrix is not None:
        lines.append(f"check-matrix: {record.check_matrix}")
    for file in sorted(record.digests):
        for service, digest in sorted(record.digests[file].items()):
            lines.append(f"service: {file} {service} {digest}")
    return "\n".join(lines) + "\n"


class RecordError(ValueError):
    """A tag message that claims to be a release record but is not a valid one."""


def parse_message(text: str) -> Record | None:
    """The record in a tag message; None when the message is not a release record."""
    fields: dict[str, str] = {}
    digests: dict[str, dict[str, str]] = {}
    for raw in text.splitlines():
        # Unknown lines are skipped, not refused: a signature block or a field added by
        # a later format version must not make older tools lose every release.
        key, sep, value = raw.partition(": ")
        if not sep or key not in ("tierops-release", "commit", "verify", "check-matrix", "service"):
            continue
        if key == "service":
            parts = value.rsplit(" ", 2)  # the path may not contain spaces, but never assume
            if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{12}", parts[2]):
                raise RecordError(f"malformed service line {raw!r}")
            digests.setdefault(parts[0], {})[parts[1]] = parts[2]
        elif key in fields:
            raise RecordError(f"duplicate {key!r} line")
        else:
            fields[key] = value.strip()
    if "tierops-release" not in fields:
        return None
    if fields["tierops-release"] != RECORD_FORMAT:
        raise RecordError(f"record format {fields['tierops-release']!r} is not {RECORD_FORMAT!r}")
    commit = fields.get("commit", "")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise RecordError("no valid 'commit:' line")
    check_matrix = fields.get("check-matrix")
    if check_matrix is not None and not CHECK_MATRIX.fullmatch(check_matrix):
        raise RecordError(f"malformed check-matrix line {check_matrix!r} (want sha256:<64 hex>)")
    if not digests:
        # `release tag` never writes one (record_for_commit refuses): a hand-made record
        # of no services would make every file "absent" at that tag.
        raise RecordError("no 'service:' line")
    return Record(commit, fields.get("verify", "unknown"), digests, check_matrix)


# Tag messages already read, by their text: a backfill judges every tag again for each
# commit it tags, and parsing each message again made that quadratic in the tags. A tag
# message never changes meaning, so its parse is kept for the process (bounded).
_PARSED: dict[str, Record | RecordError | None] = {}
_PARSED_LIMIT = 100_000


def parsed_message(message: str) -> Record | RecordError | None:
    if message not in _PARSED:
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        try:
            _PARSED[message] = parse_message(message)
        except RecordError as exc:
            _PARSED[message] = exc
    return _PARSED[message]


def definition_digests(document: Document | Mapping[str, Any]) -> dict[str, str]:
    """service -> digest of its compared form (the canonical model, argv as flags).

    A plain mapping is read like a file (InputError if compose would refuse it), so two
    spellings Compose renders alike get one digest.
    """
    form = document.form if isinstance(document, Document) else from_data(document).form
    services = services_of(form)
    configs = form.get("configs") or {}
    result: dict[str, str] = {}
    for name, service in services.items():
        definition = dict(service)
        mounted = sorted(_config_sources(service.get("configs")))
        if mounted:
            # Not a compose key, so the digest also covers the inline content of every
            # config the service mounts (Compose does not recreate for it; the plan does).
            definition["x-tierops-configs"] = {ref: configs.get(ref) for ref in mounted}
        text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
        result[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]
    return result


def _config_sources(value: Any) -> list[str]:
    refs: list[str] = []
    for item in value or ():
        if isinstance(item, str):
            refs.append(item)
        elif isinstance(item, Mapping) and "source" in item:
            refs.append(str(item["source"]))
    return refs


def prod_files(repo: Path, commit: str) -> list[str]:
    """The prod YAML files at `commit`; InputError (exit 2) for a name a record cannot
    hold: it goes into the tag's `service:` lines, where a line break would forge one."""
    paths = [path for path in git.ls_files(repo, commit, PROD_DIR) if path.endswith((".yaml", ".yml"))]
    for path in paths:
        if not path.isprintable():
            raise InputError(
                "a prod file name with a control or invisible character cannot be recorded",
                where=f"{path} at {commit[:12]}",
                hint="rename it; no prod file name needs one",
            )
    return paths


def record_for_commit(repo: Path, commit: str, verify: str, check_matrix: str | None = None) -> Record:
    """Hash every prod file at `commit` (read from git objects, not the working tree)."""
    digests: dict[str, dict[str, str]] = {}
    for path in prod_files(repo, commit):
        where = f"{path} at {commit[:12]}"
        data = git.show(repo, commit, path)
        if data is None:
            raise InputError("cannot read the file from git", where=where)
        # Read from git objects, not the working tree: a backfill hashes commits that are
        # not checked out. The same reader as the diff, so both agree on what a file says.
        try:
            digests[path] = definition_digests(read(data, where=where))
        except InputError as exc:
            raise InputError(
                f"cannot hash its services: {exc}",
                hint="a commit whose prod files do not parse cannot be a rollback point; fix main first",
            ) from None
    if not any(digests.values()):
        # A record of no services would make every rollback to this tag "absent": prod/
        # as a submodule, a symlink or an empty directory is no release.
        kind = _prod_kind(repo, commit)
        raise RefusedError(
            f"{PROD_DIR}/ at {commit[:12]} holds no services"
            + (f" ({PROD_DIR} is {kind} there)" if kind else ""),
            hint="a release tag records the services of prod/*.yaml; tag a commit whose prod files define them",
        )
    return Record(commit, verify, digests, check_matrix)


def _prod_kind(repo: Path, commit: str) -> str | None:
    """What prod/ is at `commit` when it is not a directory: a submodule, a symlink."""
    proc = git.run(repo, ["ls-tree", "-z", commit, "--", PROD_DIR], check=False)
    mode = proc.stdout.split(" ", 1)[0] if proc.returncode == 0 else ""
    return {"160000": "a submodule", "120000": "a symbolic link"}.get(mode)
