"""`python -m rollout status`: does each host run what git says it should?"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from rollout import git
from rollout.commands.plan import fleet_placements
from rollout.diff.snapshot import read_snapshot, resolve_head
from rollout.plan.deploy import TOKEN_ENV, load_endpoints
from rollout.release import tagset
from rollout.release.status import render_json, render_text, status
from tierops.entry import visible
from tierops.errors import UsageError
from tierops.exitcodes import ExitCode, epilog

NAME = "status"
HELP = "compare what each host's compose-manager runs with the release tags (drift)"
DESCRIPTION = f"""\
For every host of the endpoints file (YAML: HOST: URL) and every prod file the fleet's
data (generators/*.targets.yaml) places on it, read compose-manager's GET /version (the
tag and file the file's project last deployed, and its sha256) and GET /docker/ps, and
report what differs from git: a deployed tag older than the newest release tag that has
the file, a deployed file whose sha256 is not the file's at that tag, a service that is
not running or a container no longer defined (an orphan), a container whose image is
not its definition's. Run `git fetch --tags` first. The bearer token is read from
${TOKEN_ENV} and never printed.
"""
EPILOG = epilog("drift: some host does not run what git says").replace(
    "  3  internal error", "  3  a host does not answer (named), or an internal error"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--endpoints", type=Path, required=True, metavar="FILE", help="YAML: HOST: URL")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _masked(value: Any, token: str) -> Any:
    """`value` (the report's few levels of lists and mappings) with the token masked in
    every string."""
    if isinstance(value, str):
        return value.replace(token, "<token>")
    if isinstance(value, list):
        return [_masked(item, token) for item in value]
    if isinstance(value, dict):
        return {_masked(key, token): _masked(item, token) for key, item in value.items()}
    return value


def run(args: argparse.Namespace) -> int:
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        raise UsageError(
            f"{TOKEN_ENV} is not set", hint="export the bearer token of the hosts' compose-manager"
        )
    repo = git.toplevel(Path.cwd())
    hosts = load_endpoints(args.endpoints, token)
    placements = fleet_placements(repo, read_snapshot(repo, resolve_head(repo, None), ()))
    seen = status(repo, hosts, placements, tagset.read_tags(repo))
    # What the hosts said (a tag, a file name) is theirs: the token masked first (JSON and
    # `visible` would escape a token's quote or accent past the mask), then escaped.
    if args.format == "json":
        print(json.dumps(_masked(render_json(seen), token), indent=2))
    else:
        print(visible(render_text(seen).replace(token, "<token>")), end="")
    return ExitCode.FINDINGS if any(entry.drift for entry in seen) else ExitCode.OK
