"""`python -m rollout apply PLAN`: send a plan's calls to each host's compose-manager, in order."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rollout.plan.deploy import TOKEN_ENV, Applier, Journal, load_endpoints, load_plan, plan_digest
from tierops.errors import UsageError
from tierops.exitcodes import ExitCode, epilog

NAME = "apply"
HELP = "send a rollout plan's calls to each host's compose-manager, verify, roll back on failure"
DESCRIPTION = f"""\
Read PLAN (written by `python -m rollout plan --format json`) and, per file, host by
host in the plan's order (the canary host first), send each step's call to that host's
compose-manager (--endpoints: a YAML file of HOST: URL), stream its NDJSON progress and
check what the step promised: a `staged` event; a preview whose `plan` event names only
its service under the expected verdict and removes nothing; a successful down and up;
a verification through the API (running, healthy, the image, a label, the startup
server_args), polled until it holds or --wait runs out. Checks only a shell or the
metrics can answer are listed for the operator.

It refuses to start while a host reports an operation in flight (GET /status: a second
call would get 409). It stops at the first failure and undoes what was already past its
down, in the plan's rollback order: with --rollback-on-failure it sends those calls,
else it prints them. A journal (--journal, default PLAN.journal) records each step done:
run the same command again to resume where an interruption stopped it (after a failure,
the failed file starts over on that host); a journal of another plan, or one another
apply is using, is refused, never read against this one. The bearer token is read from
${TOKEN_ENV} and never printed.
"""
EPILOG = epilog("a step failed (what ran was rolled back, or the rollback was printed)").replace(
    "  3  internal error", "  3  a host does not answer, or an internal error"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", type=Path, metavar="PLAN", help="the plan, from `rollout plan --format json`")
    parser.add_argument("--endpoints", type=Path, required=True, metavar="FILE", help="YAML: HOST: URL")
    parser.add_argument("--journal", type=Path, metavar="FILE", help="default: PLAN.journal")
    parser.add_argument(
        "--rollback-on-failure", action="store_true", help="send the rollback's calls when a step fails"
    )
    parser.add_argument(
        "--wait", type=float, default=2700.0, metavar="SECONDS", help="how long a verification waits (45 min)"
    )
    parser.add_argument(
        "--poll",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often a waiting verification reads the container again (default 2; engines load in minutes)",
    )


def run(args: argparse.Namespace) -> int:
    # NaN too (it compares false): a wait that never ends or never reads; and no more than
    # a day, which `time.sleep` can take.
    if not (0 < args.poll <= 86400 and 0 < args.wait <= 86400):
        raise UsageError(
            f"--poll and --wait must be numbers of seconds from 0 (excluded) to 86400 (got {args.poll}, {args.wait})"
        )
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        raise UsageError(
            f"{TOKEN_ENV} is not set", hint="export the bearer token of the hosts' compose-manager"
        )
    plan = load_plan(args.plan)
    hosts = load_endpoints(args.endpoints, token)

    def report(line: str) -> None:
        print(line, flush=True)

    path = args.journal or args.plan.with_name(args.plan.name + ".journal")
    with Journal.open(path, plan_digest(args.plan)) as journal:
        applier = Applier(plan, hosts, journal, report, args.rollback_on_failure, args.wait, args.poll)
        return ExitCode.OK if applier.run() else ExitCode.FINDINGS


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run it as: python -m rollout apply")
