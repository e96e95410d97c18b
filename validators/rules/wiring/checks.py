"""The checks of rule `wiring` as data (what must resolve, the fix), and its findings.

Every finding of the family is made by `finding`, so a test can tell which check
produced it.
"""

from __future__ import annotations

from typing import NamedTuple

from validators.findings import Finding, Pos, error
from validators.model import ComposeFile

# The rule's id (validators/rules/wiring/__init__.py declares it for the registry).
RULE = "wiring"


class Check(NamedTuple):
    """One wiring check as data: what must resolve to what, and what to do when it doesn't."""

    name: str
    must: str
    fix: str


CHECKS: dict[str, Check] = {
    check.name: check
    for check in (
        Check(
            "listen",
            "every service others reach declares a listener on an address its peers can reach",
            "listen on 0.0.0.0 (or the service's network address) at the contract port",
        ),
        Check(
            "published-port",
            "a published port reaches a port the service listens on; a host port is published once",
            "publish a port the service listens on, once",
        ),
        Check(
            "host-port",
            "files that run on one host together publish disjoint host ports",
            "publish another host port, or give both files one compose project name",
        ),
        Check(
            "reference",
            "a reference names a service on a shared network that listens on that port",
            "point the reference at a port the service listens on, or move its listener",
        ),
        Check(
            "model-volume",
            "--model-path lies under a named volume the downloader writes the snapshot into",
            "mount the downloader's volume at the same path on every engine",
        ),
        Check(
            "snapshot",
            "the downloader fetches the repo and revision of the engines' snapshot path",
            "download the repo and --revision the engines' --model-path names",
        ),
        Check("download-token", "the downloader keeps its token env", "restore the token variable"),
        Check(
            "mount-source",
            "every config, secret and named volume a service mounts is defined at the top level",
            "define it under the top-level key, or mount one that is defined",
        ),
        Check(
            "entrypoint",
            "engines run the image's entrypoint (or the contract's)",
            "remove the entrypoint override: the argv must reach sglang as written",
        ),
        Check(
            "network-mode",
            "no service runs with network_mode host or none",
            "drop network_mode and join the project network",
        ),
        Check("privileged", "no service is privileged", "drop privileged; add only the capability it needs"),
        Check(
            "env-file",
            "engines take their env from the file only (the env contract)",
            "move the variables into environment:",
        ),
        Check(
            "healthcheck",
            "every long-running service has a healthcheck",
            "add a healthcheck, or declare why not under runtime.healthcheck_exempt in validators/contracts/wiring.yaml",
        ),
        Check(
            "start-period",
            "an engine's healthcheck start_period is at least the contract's",
            "raise start_period so loading weights does not count as failures",
        ),
    )
}


def finding(compose: ComposeFile, pos: Pos, check_name: str, message: str, fix: str | None = None) -> Finding:
    return error(compose.path, pos, RULE, f"{message}; {fix or CHECKS[check_name].fix}")
