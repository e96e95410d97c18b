"""Rule `dcgm-metrics`: the DCGM exporter and its counters CSV.

Exactly one dcgm service (by its dcgm-exporter image); its image digest pinned; it
sees every GPU any engine reserves; its command is `["-f", <csv path>]` and that path
is a config mounted in long syntax, read-only (mode 0444); the CSV's active lines
(non-blank, not `#`) have three comma-separated fields `FIELD, type, help`, type in
{gauge, counter, label}, field `^DCGM_(FI|EXP)_[A-Z0-9_]+$` and a field of the pinned
exporter release's catalogue (validators/rules/dcgm_fields.py), no duplicates, and include
the required fields of the contract; `SYS_ADMIN` is in `cap_add` whenever a
`DCGM_FI_PROF_*` field is active (the profiling fields need it); one scrape job
`<dcgm>:9400` at 15 s / 10 s.

Passing example::

    dcgm-glm53:
      cap_add: [SYS_ADMIN]
      command: [-f, /etc/dcgm-exporter/glm53-counters.csv]
      configs:
        - source: dcgm_counters
          target: /etc/dcgm-exporter/glm53-counters.csv
          mode: "0444"
    # dcgm_counters: DCGM_FI_PROF_DRAM_ACTIVE, gauge, Ratio of cycles ...

Failing example::

    dcgm-glm53:
      command: [-f, /etc/dcgm-exporter/glm53-counters.csv]
      configs: [dcgm_counters]                         # short syntax: no mode 0444
    # dcgm_counters: DCGM_FI_PROF_DRAM_ACTIVE, gauge, ...  with no SYS_ADMIN
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator, Sequence

from tierops.yamlload import scalar_text
from validators.context import Context
from validators.findings import Finding, Pos, error, warning
from validators.model import ComposeFile, Service
from validators.rules import dcgm_fields
from validators.rules.collector import collector
from validators.rules.embedded import embedded

ID = "dcgm-metrics"
# A stack\'s own policy: runs only on files a stack contract claims (validators/runner.py).
NEEDS_CONTRACT = True
# In a pack's file, each member's contract asks the host's exporter to see its GPUs.
JUDGES_PACK_MEMBERS = True

SUMMARY = "one DCGM exporter seeing every engine GPU; its counters CSV well-formed and complete; SYS_ADMIN for profiling"

FIELD = re.compile(r"^DCGM_(FI|EXP)_[A-Z0-9_]+$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _is_dcgm(service: Service, image_name: str) -> bool:
    return image_name in scalar_text(service.get("image"))


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    if not ctx.claimed.dcgm:
        return  # a stack without DCGM policy (a pack member whose contract states none)
    found = [service for service in compose if _is_dcgm(service, str(ctx.claimed.dcgm["image_name"]))]
    if not found:
        yield error(
            compose.path,
            compose.services_pos(),
            ID,
            "no DCGM exporter service (image dcgm-exporter); GPU metrics are part of the contract",
        )
        return
    yield from _second_exporter(compose.path, found)
    dcgm = found[0]
    yield from _digest(compose.path, dcgm)
    yield from _gpus(compose.path, dcgm, compose, ctx)
    fields = yield from _csv(compose, dcgm, ctx)
    yield from _sys_admin(compose.path, dcgm, fields)
    yield from _scrape(compose, dcgm, ctx)


def _second_exporter(path: str, found: list[Service]) -> Iterator[Finding]:
    for extra in found[1:]:
        yield error(
            path,
            extra.pos,
            ID,
            f"{extra.name} is a second DCGM exporter; exactly one per host (it sees all GPUs)",
        )


def _digest(path: str, dcgm: Service) -> Iterator[Finding]:
    if not DIGEST.search(scalar_text(dcgm.get("image"))):
        yield error(path, dcgm.at("image"), ID, f"{dcgm.name} image is not pinned by digest")


def _sys_admin(path: str, dcgm: Service, fields: Sequence[str]) -> Iterator[Finding]:
    # As Docker grants capabilities: CAP_SYS_ADMIN is SYS_ADMIN.
    profiling = any(field.startswith("DCGM_FI_PROF_") for field in fields)
    if profiling and "SYS_ADMIN" not in (dcgm.runtime().get("cap_add") or []):
        yield error(
            path,
            dcgm.at("cap_add"),
            ID,
            f"{dcgm.name} lacks cap_add SYS_ADMIN, which the active DCGM_FI_PROF_* fields need (they would read as zero)",
        )


def _gpus(path: str, dcgm: Service, compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    seen = {token.text for token in dcgm.gpu_ids() or ()}
    for replica in ctx.claimed.replicas.values():
        engine = compose.services.get(replica.service)
        if engine is None:
            continue
        missing = [token.text for token in engine.gpu_ids() or () if token.text not in seen]
        if missing:
            yield error(
                path,
                dcgm.gpu_ids_pos(),
                ID,
                f"{dcgm.name} does not see GPUs {missing} that {engine.name} uses",
            )


def _csv(  # noqa: PLR0912 (one branch per check)
    compose: ComposeFile, dcgm: Service, ctx: Context
) -> Generator[Finding, None, list[str]]:
    """Yields findings about the CSV; returns the active field names."""
    spec = ctx.claimed.dcgm
    path = compose.path
    tokens = [token.text for token in dcgm.tokens or ()]
    if len(tokens) != 2 or tokens[0] != "-f":
        yield error(
            path,
            dcgm.at("command"),
            ID,
            f"{dcgm.name} command must be [-f, <counters csv path>], not {tokens}",
        )
        return []
    csv_path = tokens[1]
    mount = _mount(dcgm, csv_path)
    if mount is None:
        yield error(
            path, dcgm.at("configs"), ID, f"{dcgm.name} reads {csv_path} but no config is mounted there"
        )
        return []
    entry, pos = mount
    mode = entry.get("mode")
    if mode is None:
        yield error(
            path,
            pos,
            ID,
            f"{dcgm.name} mounts the counters CSV without a mode; set mode: {spec['mode']} (read-only)",
        )
    elif not isinstance(mode, str) or not mode.isdigit() or int(mode, 8) != int(str(spec["mode"]), 8):
        yield error(
            path,
            dcgm.at("configs", mount_index(dcgm, entry), "mode"),
            ID,
            f"{dcgm.name} counters CSV mode is {mode}; it must be {spec['mode']} (read-only)",
        )
    source = scalar_text(entry.get("source"))
    content = embedded(compose, source)
    if content is None:
        yield error(path, pos, ID, f"{dcgm.name} mounts config {source}, which has no inline content")
        return []
    catalogue = dcgm_fields.catalogue_for(scalar_text(dcgm.get("image")))
    if catalogue is None:
        yield warning(
            path,
            dcgm.at("image"),
            ID,
            f"{dcgm.name} image has no DCGM field catalogue for its release tag "
            "(validators/contracts/dcgm-fields-<tag>.txt); counter names are checked for shape only",
        )
    fields: dict[str, int] = {}
    for number, line in enumerate(content.text.split("\n"), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        where = content.line_pos(number)
        where = Pos(where.line, where.col + (len(line) - len(line.lstrip())))
        parts = [part.strip() for part in text.split(",")]
        if len(parts) != 3:
            yield error(
                path,
                where,
                ID,
                f"DCGM counters line has {len(parts)} fields; expected 'FIELD, type, help' (no commas in help)",
            )
            continue
        field, kind, _help = parts
        if not FIELD.match(field):
            yield error(path, where, ID, f"DCGM field '{field}' does not match ^DCGM_(FI|EXP)_[A-Z0-9_]+$")
        elif catalogue is not None and (unknown := dcgm_fields.unknown_field(field, catalogue)):
            yield error(path, where, ID, f"{dcgm.name} config {source} line {number}: {unknown}")
        if kind not in spec["types"]:
            yield error(
                path, where, ID, f"DCGM field {field} type '{kind}' is not one of {', '.join(spec['types'])}"
            )
        if field in fields:
            yield error(
                path, where, ID, f"DCGM field {field} is listed twice (first on line {fields[field]})"
            )
        else:
            fields[field] = where.line
    for required in spec["required_fields"]:
        if required not in fields:
            yield error(path, content.key_pos, ID, f"DCGM counters lack the required field {required}")
    return list(fields)


def _mount(dcgm: Service, target: str) -> tuple[dict[str, object], Pos] | None:
    """The config mounted at `target` (a short `- name` mounts at /<name>), and where it is written."""
    configs = dcgm.get("configs")
    for index, entry in enumerate(configs if isinstance(configs, list) else ()):
        if isinstance(entry, dict) and (entry.get("target") or f"/{entry.get('source')}") == target:
            return entry, dcgm.at("configs", index)
    return None


def mount_index(dcgm: Service, entry: object) -> int:
    configs = dcgm.get("configs") or []
    return next(index for index, item in enumerate(configs) if item is entry)


def _scrape(compose: ComposeFile, dcgm: Service, ctx: Context) -> Iterator[Finding]:
    col = ctx.claimed.telemetry["collector"]
    parsed = collector(compose, str(col["config"]), str(col["receiver"]))
    if parsed is None or parsed.problem is not None:
        return
    want = f"{dcgm.name}:{ctx.claimed.dcgm['port']}"
    jobs = [job for job in parsed.jobs if any(target == want for target, _pos in job.targets)]
    if len(jobs) != 1:
        yield error(
            compose.path,
            parsed.scrape_configs_pos,
            ID,
            f"expected exactly one scrape job for {want}, found {len(jobs)}",
        )
        return
    job = jobs[0]
    for key in ("scrape_interval", "scrape_timeout"):
        if job.value(key) != str(col[key]):
            yield error(
                compose.path,
                job.at(parsed.config, key),
                ID,
                f"DCGM scrape job {key} is {job.value(key)}; expected {col[key]}",
            )
