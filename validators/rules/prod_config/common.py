"""prod-config's shared pieces: the rule id, citing the contract, settings by path."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from tierops.canonical import canonical_value, normalize_image, runtime_form
from tierops.yamlload import scalar_text
from validators.findings import Finding, error
from validators.model import HOST_GPUS, Service

# The rule id the parts report under (the package declares it as ID for the registry).
RULE = "prod-config"


_VARIANT_PART = re.compile(r"\[-(?P<feature>[a-z0-9_]+)\]")


# Which key of the contract a finding's "the contract ..." reads, by the finding's words;
# a finding whose value may come from several keys names the file alone.
_CONTRACT_KEYS = (
    (re.compile(r"the contract's service"), "services"),
    (re.compile(r" program is |has no command; the contract argv"), "engines.program"),
    (
        re.compile(r"\(feature \S+\), which the contract does not give (?P<r>\S+) of (?P<f>\S+)$"),
        "files.{f}.replicas.{r}.features",
    ),
    (re.compile(r" argv (?:has|repeats) | out of contract order"), "engines.argv"),
    (re.compile(r" env \S+ is '| env has \S+, which is not"), "engines.env"),
    (re.compile(r" GPU"), "engines.replicas"),
    (re.compile(r"\(the pinned snapshot\)$"), "downloader.argv"),
    (re.compile(r"the contract for (?P<f>\S+) says"), "files.{f}"),
)


def _cite(finding: Finding, contract_file: str) -> Finding:
    """A finding that quotes the contract names the contract file (and key) it read."""
    if "contract" not in finding.message:
        return finding
    key = next(
        (
            template.format(**found.groupdict())
            for pattern, template in _CONTRACT_KEYS
            if (found := pattern.search(finding.message))
        ),
        "",
    )
    cited = f"{contract_file}: {key}" if key else contract_file
    return finding._replace(message=f"{finding.message} ({cited})")


def _same_image(service: Service, image: str) -> bool:
    """The image is `image` as Docker pulls it (`docker.io/` or not)."""
    got = service.get("image")
    return isinstance(got, str) and normalize_image(got) == normalize_image(image)


def _settings(path: str, service: Service, settings: Any) -> Iterator[Finding]:
    """Dotted paths compared by meaning: `5m` is `300s`, memlock `-1` is soft/hard `-1`."""
    runtime = service.runtime()
    for dotted, want in settings.items():
        top, *rest = dotted.split(".")
        expected = _expected_at(top, rest, want)
        got = _walk(runtime.get(top), rest) if service.has(top) else None
        if got is None:
            yield error(
                path, service.at(top, *rest), RULE, f"{service.name} lacks {dotted}: {scalar_text(want)}"
            )
        elif got != expected:
            yield error(
                path,
                service.at(top, *rest),
                RULE,
                f"{service.name} {dotted} is {service.canon.quote(top, *rest)}; the contract says {scalar_text(want)}",
            )


def _expected_at(top: str, rest: list[str], want: Any) -> Any:
    """The contract's value as compose reads it (and as it runs), at the dotted path."""
    nested: Any = want
    for key in reversed(rest):
        nested = {key: nested}
    value = runtime_form({top: canonical_value(top, nested)}, host_gpus=HOST_GPUS)[top]
    return _walk(value, rest)


def _walk(node: Any, keys: Sequence[str]) -> Any:
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node
