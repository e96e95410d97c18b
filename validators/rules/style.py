"""Rule `style`: how a file is spelled, where Compose reads every spelling the same.

No finding here changes what runs: each says so, and is a warning (`--strict` makes
warnings fail). The contracts (prod-config, otel-labels, ...) judge meaning only, so a
hand-written spelling that Compose renders identically never gets a contract error;
this family keeps generated files in the one spelling reviewers diff:

- labels in mapping form, not `K=V` lists;
- an engine `command` as a YAML list, one word per item, not a string (unless it holds a
  `${VAR:+--flag}` switch, which only a string can drop when VAR is unset).

Passing example::

    labels:
      tierops.otel.scrape: "true"

Failing example::

    labels: [tierops.otel.scrape=true]   # -> warning: style only: labels as a mapping (style)
"""

from __future__ import annotations

from collections.abc import Iterator

from tierops.yamlload import YList
from validators.context import Context, engine_services
from validators.findings import Finding, warning
from validators.model import ComposeFile

ID = "style"
# The house spelling of generated files: only for files a stack contract claims.
NEEDS_CONTRACT = True
# A pack's file is judged once per member contract (identical findings are said once).
JUDGES_PACK_MEMBERS = True

SUMMARY = (
    "the one spelling of generated files (mapping labels, list commands); warnings, never a change in meaning"
)


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    yield from _labels_form(compose)
    yield from _command_form(compose, ctx)


def _labels_form(compose: ComposeFile) -> Iterator[Finding]:
    for service in compose:
        if service.labels_form == "list":
            yield warning(
                compose.path,
                service.at("labels"),
                ID,
                f"style only: {service.name} labels are a list; write them as a mapping, as the telemetry contract does. Compose reads both the same",
            )


def _command_form(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    engines = engine_services(compose, ctx)
    for service in compose:
        if (
            service.name in engines
            and service.has("command")
            and not isinstance(service.data["command"], YList)
            and not any(token.switch for token in service.argv_tokens)
        ):
            yield warning(
                compose.path,
                service.at("command"),
                ID,
                f"style only: {service.name} command is a string; write it as a list, one word per item, so a diff shows each flag",
            )
