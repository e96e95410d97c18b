"""`python -m rollout diff`: what changed in the compose files, in a reviewer's words.

Compares every compose file under PATHS (default: prod/) between a base ref and the
working tree (or --head), per file and per service: image, argv flags, env, labels,
GPUs, ports, volumes, depends_on, healthcheck, every other key, and inline configs
(the collector config as YAML, scrape jobs by name). Identical changes on several
services are one line; secret values are masked in every format (rollout/diff/masking.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rollout import git
from rollout.diff import colour
from rollout.diff.boundary import mask_changeset, protect_source, write_masked
from rollout.diff.changes import ChangeSet
from rollout.diff.compare import compare
from rollout.diff.report import RENDERERS
from rollout.diff.snapshot import (
    BASE_ENV,
    PRE_COMMIT_ENV,
    Snapshot,
    check_paths_exist,
    read_snapshot,
    repo_paths,
    resolve_base,
    resolve_head,
)
from tierops.entry import visible
from tierops.exitcodes import ExitCode, epilog
from tierops.yamlload import COMPOSE_ONLY_HELP, compose_files

NAME = "diff"
HELP = "semantic diff of the compose files between a base ref and the working tree"
DESCRIPTION = f"""\
Semantic diff of the compose files under PATHS (default: prod/) between a base ref and
the working tree (or --head REF): per file, per service, per flag. Files are compared
as Compose reads them (its documents merged, every spelling in its canonical form): a
change `docker compose config` would not show is no change. Where a line reads
otherwise than the file, it ends with the author's text on each side, as written:
`stop_grace_period: 5m -> 6m (written: 300s -> 6m)`.

The base is --base, else ${BASE_ENV}, else ${PRE_COMMIT_ENV} (pre-commit's --from-ref),
else the merge-base of HEAD and origin/main, else of HEAD and main, else HEAD. (nox
passes its positional arguments to every session of a chain, so `nox -s diff` reads the
base from ${BASE_ENV}, never from posargs.)

Formats: text (terminal), markdown (GitHub step summary, <= 1 MiB), json (the change
model: applying it to the base yields the head). A value under a secret-like key on
either side (and any token-shaped or Authorization/Bearer credential) is masked wherever
it appears, in every format, as <secret sha256:XXXXXXXX>: a salted hash, equal for
equal values within one run (and across runs when $TIEROPS_MASK_SALT holds a secret
of yours, e.g. a CI secret).
"""
EPILOG = epilog("changes found (only with --exit-code)")


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """The options `diff` and `plan` share: which refs, which files, which format."""
    parser.add_argument("--base", metavar="REF", help=f"base ref (default: ${BASE_ENV}, else the merge-base)")
    parser.add_argument("--head", metavar="REF", help="head ref (default: the working tree)")
    parser.add_argument(
        "--format", choices=("text", "markdown", "json"), default="text", help="output format"
    )
    parser.add_argument(
        "--markdown-to",
        metavar="FILE",
        type=Path,
        help="also write the Markdown report of the same result to FILE (masked, written atomically; "
        "its directory must exist, and a FIFO, link or device there is refused): "
        "one run gives CI both --format json and the Markdown it shows",
    )
    parser.add_argument("paths", nargs="*", metavar="PATHS", help="files or directories (default: prod)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)
    parser.add_argument("--compose-only", action="store_true", help=COMPOSE_ONLY_HELP)
    parser.add_argument(
        "--exit-code", action="store_true", help="exit 1 when there are changes (2 on errors)"
    )


def load_changeset(args: argparse.Namespace) -> tuple[Path, ChangeSet]:
    """Resolve the refs and paths of `args`, read both sides, compare, mask."""
    repo, _base, _head, changeset = load_sides(args)
    return repo, changeset


def load_sides(args: argparse.Namespace) -> tuple[Path, Snapshot, Snapshot, ChangeSet]:
    """`load_changeset` with the bytes it read of each side (the plan reads those, never
    the files a second time)."""
    repo = git.toplevel(Path.cwd())
    paths = repo_paths(repo, args.paths)
    base = read_snapshot(repo, resolve_base(repo, args.base), paths)
    head = read_snapshot(repo, resolve_head(repo, args.head), paths)
    check_paths_exist(repo, base, head, paths)
    # Both sides' secrets are known to the output boundary before anything is printed:
    # a value secret on either side is masked wherever the report shows it.
    for snapshot in (base, head):
        for data in snapshot.files.values():
            protect_source(data)
    return repo, base, head, mask_changeset(compare(base, head, paths))


def run(args: argparse.Namespace) -> int:
    if args.compose_only and args.paths:
        # Named files only (a hook's); a directory is read for its YAML files as always.
        named = [Path(path) for path in args.paths]
        kept = {str(path) for path in compose_files([path for path in named if not path.is_dir()])}
        args.paths = [str(path) for path in named if path.is_dir() or str(path) in kept]
        if not args.paths:
            print(f"no compose files among the {len(named)} named")
            return ExitCode.OK
    _, changeset = load_changeset(args)
    report = visible(RENDERERS[args.format](changeset))  # before colour: its escapes are ours
    if args.format == "text" and colour.wanted(sys.stdout, os.environ):
        report = colour.colour(report)
    sys.stdout.write(report)
    if args.markdown_to is not None:
        write_masked(args.markdown_to, RENDERERS["markdown"](changeset))
    if args.format != "text":  # the text report already carries these lines
        for file in changeset.errors:
            print(f"{file.label}: {file.error}", file=sys.stderr)
    if changeset.errors:
        return ExitCode.USAGE
    if args.exit_code and changeset.has_changes():
        return ExitCode.FINDINGS
    return ExitCode.OK
