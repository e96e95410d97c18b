"""`python -m ci.base_ref` (check.yml): the commit a run's diff, plan and lint scope compare with.

Appends `ref=<commit>` to `$GITHUB_OUTPUT` (prints it when that is unset); the workflow
hands it to later steps as TIEROPS_BASE_REF (stdlib only: it runs before nox is
installed).

- push: the commit main pointed at before the push (`github.event.before`, passed as
  $BEFORE). The default base, the merge-base with `origin/main`, is HEAD itself on a push
  to main, so every push's summary said "no changes". When `before` is all zeros (the
  branch's first push) or not in the clone (a force-push dropped it), the base is the
  pushed commit's first parent; a root commit has no base (`ref=`, the tools' default).
- anything else (pull requests): `ref=`, so the tools use their default, the merge-base
  of HEAD and `origin/main`, which is what a pull request is reviewed against.

The decision is printed as a GitHub `::notice`. When git refuses the clone itself (a
repository another user owns, without `safe.directory`), that is an `::error` and exit
2: every later step would fail the same way, and "not in this clone" would hide why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ZERO = "0" * 40


class GitRefused(Exception):
    """git failed for a reason other than a missing commit (its first line of stderr)."""


def _commit(repo: Path, rev: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip()
    # With --quiet a commit that is not there prints nothing; anything git says is a
    # refusal of the repository itself (not a repository, dubious ownership, ...).
    reason = next((line.strip() for line in proc.stderr.splitlines() if line.strip()), "")
    if reason:
        raise GitRefused(reason)
    return None


def base_for(repo: Path, event: str, before: str) -> tuple[str, str]:
    """(base commit or "", why) for a run of `event` whose push started at `before`."""
    if event != "push":
        return "", f"{event or 'no event'}: the default base (the merge-base of HEAD and origin/main)"
    before = before.strip()
    if before and before != ZERO:
        found = _commit(repo, before)
        if found:
            return found, f"push: the commit before the push ({found[:12]})"
        why = f"the commit before the push ({before[:12]}) is not in this clone (force-push?)"
    else:
        why = "the branch's first push (no commit before it)"
    parent = _commit(repo, "HEAD^1")
    if parent:
        return parent, f"push: {why}; using HEAD's first parent ({parent[:12]})"
    return "", f"push: {why}, and HEAD is a root commit; the default base"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv):
        print(__doc__)
        return 2
    env = os.environ if environ is None else environ
    try:
        base, why = base_for(Path.cwd(), env.get("EVENT_NAME", ""), env.get("BEFORE", ""))
    except GitRefused as refused:
        print(f"::error title=diff base::git refuses this clone: {refused}")
        return 2
    print(f"::notice title=diff base::{why}")
    output = env.get("GITHUB_OUTPUT")
    if output:
        with Path(output).open("a", encoding="utf-8") as handle:
            handle.write(f"ref={base}\n")
    else:
        print(f"ref={base}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
