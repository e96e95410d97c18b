"""Which pre-commit hooks `nox -s lint` leaves out, and why (stdlib only; the noxfile imports it).

The git hook (`pre-commit install`) keeps running every hook. `nox -s check` runs
`lint` next to sessions that already do some hooks' work, so inside it:

- `generated` and `validators` are skipped: the `generated` and `validate` sessions
  run the same commands on every prod file, in the same `nox -s check`;
- `compose-schema` is skipped: the `compose` session renders every prod file with the
  real Compose binary, which validates it against its compose-spec schema (the
  Compose release that deploys it) before it renders;
- the meta hooks (`check-hooks-apply`, `check-useless-excludes`) judge the hook
  configuration against the set of tracked files, so they run only when one of those
  changed against the base commit: `.pre-commit-config.yaml` differs, or a file was
  added or deleted (renames count as both). Without a base commit they run.

The base is the diff's: `$TIEROPS_BASE_REF`, else the merge-base of HEAD and
`origin/main`, else of HEAD and `main`. `TIEROPS_LINT_ALL=1` runs every hook; a SKIP
the caller set is kept.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

CONFIG = ".pre-commit-config.yaml"
BASE_ENV = "TIEROPS_BASE_REF"
ALL_ENV = "TIEROPS_LINT_ALL"
# hook id -> (the session of `nox -s check` that does the same check, how)
DUPLICATED = {
    "generated": ("generated", "runs the same check"),
    "validators": ("validate", "runs the same check"),
    # compose-go validates the file against its compose-spec schema before anything else
    # (`validating FILE: services.x.restart must be a string`), with the Compose release
    # that deploys it: tests/validators/test_compose_check.py pins that it does.
    "compose-schema": (
        "compose",
        "renders every prod file with the real Compose, which validates it against its compose-spec schema",
    ),
}
META = ("check-hooks-apply", "check-useless-excludes")


class Scope(NamedTuple):
    skip: tuple[str, ...]  # hook ids, for pre-commit's SKIP
    reasons: tuple[str, ...]  # one line per decision, for the session log


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False, timeout=30)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no")


def base_commit(repo: Path, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The commit to compare with, and how it was chosen."""
    explicit = environ.get(BASE_ENV, "").strip()
    if explicit:
        proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{explicit}^{{commit}}")
        if proc.returncode == 0:
            return proc.stdout.strip(), f"${BASE_ENV}={explicit}"
        return None, f"${BASE_ENV}={explicit} does not name a commit"
    for ref in ("origin/main", "main"):
        proc = _git(repo, "merge-base", "HEAD", ref)
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip(), f"the merge-base of HEAD and {ref}"
    return None, "no origin/main or main to compare with"


def meta_inputs_changed(repo: Path, base: str) -> str | None:
    """Why the meta hooks must run against `base` (None: their inputs are unchanged)."""
    config = _git(repo, "diff", "--quiet", base, "--", CONFIG)
    if config.returncode != 0:
        return f"{CONFIG} differs" if config.returncode == 1 else f"git diff failed: {config.stderr.strip()}"
    files = _git(repo, "diff", "--name-only", "--no-renames", "--diff-filter=AD", base)
    if files.returncode != 0:
        return f"git diff failed: {files.stderr.strip()}"
    changed = files.stdout.split()
    if changed:
        return f"{len(changed)} file(s) added or deleted"
    return None


def scope(repo: Path, environ: Mapping[str, str] | None = None) -> Scope:
    env = os.environ if environ is None else environ
    caller = tuple(item.strip() for item in env.get("SKIP", "").split(",") if item.strip())
    if _truthy(env.get(ALL_ENV)):
        return Scope(caller, (f"{ALL_ENV} is set: every hook runs",))
    skip = list(caller)
    reasons = [f"skips {hook}: `nox -s {session}` {how}" for hook, (session, how) in DUPLICATED.items()]
    skip += DUPLICATED
    base, how = base_commit(repo, env)
    why = "no base commit" if base is None else meta_inputs_changed(repo, base)
    if why is None:
        skip += META
        reasons.append(f"skips {', '.join(META)}: no config change and no added or deleted file since {how}")
    else:
        reasons.append(f"runs {', '.join(META)}: {why} ({how})")
    return Scope(tuple(dict.fromkeys(skip)), tuple(reasons))


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    result = scope(Path.cwd())
    for line in result.reasons:
        print(line)
    print(f"SKIP={','.join(result.skip)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
