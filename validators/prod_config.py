"""Rule `prod-config`: each prod file says what validators/contracts/glm53.yaml says.

Per file (found by its stem under `files:` in the contract): the service set
(missing and unexpected reported separately); each engine's argv is the base
contract with that file's and replica's values plus its features' flags, exactly
once each, in feature order, and nothing else (unknown, missing, duplicated,
reordered and changed tokens are each named); the engine env has exactly the
contract's variables and values; `config_variant` recomputed from the engine's own
argv and env equals its label and its scrape job's label; replicas are identical
except what the contract lets differ; GPU ids exactly as specified, disjoint, inside
one NVLink island, as many as `--tp-size`; `--dist-init-addr` unique; the proxy pool
lists the engines in replica order at their `--port` and the proxy does not
`depends_on` an engine; pairing rules (chunk 16384 only with the DSA indexer split;
the split only on an allow-listed image); profiles (the canary's every service, no
other file's); downloader, nginx ports and registrar env.

Passing example (long-context r2, abridged)::

    command: [sglang, serve, ..., --chunked-prefill-size, "8192", ...,
              --prefill-decode-interval, "2", ..., --enable-dynamic-batch-tokenizer]
    labels:
      tierops.otel.config_variant: fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2-h200-tp4-ep4-dyntok

Failing example (the ingestion flag dropped on r2)::

    command: [sglang, serve, ..., --hicache-mem-layout, page_first_direct]
    # -> model-sg-glm53-w4afp8-tp4-r2 argv lacks --enable-dynamic-batch-tokenizer,
    #    which model-sg-glm53-w4afp8-tp4-r1 carries (prod-config)
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from typing import Any

from tierops import layout
from tierops.argv import split_argv, switch_of
from tierops.canonical import canonical_value, flow, normalize_image, runtime_form
from tierops.shellwords import ShellError
from tierops.shellwords import split as split_words
from tierops.yamlload import scalar_text
from validators.collector import collector
from validators.context import Context
from validators.contract import Contract, FileContract, Replica
from validators.findings import Finding, Pos, error, flag_cause
from validators.model import HOST_GPUS, ComposeFile, Flag, Service, Token

ID = "prod-config"
# A stack\'s own policy: runs only on files a stack contract claims (validators/runner.py).
NEEDS_CONTRACT = True

SUMMARY = "the argv/env/variant/GPU/parity/pool/pairing contract of the stack that claims the file (validators/contracts/)"

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


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    contract_file = layout.shown(ctx.claimed.path)
    for finding in _check(compose, ctx):
        yield _cite(finding, contract_file)


def _check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    contract = ctx.claimed
    path = compose.path
    file = contract.files[compose.stem]
    yield from _service_set(compose, contract)
    yield from _profiles(compose, file)
    engines: list[tuple[Replica, Service]] = [
        (replica, compose.services[replica.service])
        for replica in contract.replicas.values()
        if replica.service in compose.services
    ]
    contract_findings: dict[str, int] = {}
    for replica, service in engines:
        findings = [
            *_engine_settings(path, service, replica, contract),
            *_argv(path, service, replica, file, contract, engines),
            *_env(path, service, replica, file, contract),
        ]
        contract_findings[replica.name] = len(findings)
        yield from findings
        yield from _variant(compose, service, replica, file, contract)
        yield from _gpus(path, service, replica, contract)
        yield from _pairing(path, service, contract)
    yield from _gpu_overlap(path, engines)
    yield from _rendezvous(path, engines)
    yield from _parity(path, engines, file, contract, contract_findings)
    yield from _proxy(compose, contract, engines)
    yield from _downloader(compose, contract)
    yield from _nginx(compose, contract, file)
    yield from _registrar(compose, contract, file)


# -- service set and profiles ---------------------------------------------------------


def _service_set(compose: ComposeFile, contract: Contract) -> Iterator[Finding]:
    for name in contract.services:
        if name not in compose.services:
            yield error(
                compose.path,
                compose.services_pos(),
                ID,
                f"service {name} is missing (the contract's service set)",
            )
    for service in compose:
        if service.name not in contract.services:
            yield error(
                compose.path,
                service.pos,
                ID,
                f"unexpected service {service.name}; the contract's services are {', '.join(contract.services)}",
            )


def _profiles(compose: ComposeFile, file: FileContract) -> Iterator[Finding]:
    for service in compose:
        profiles = service.get("profiles")
        names = list(profiles) if isinstance(profiles, list) else []
        if file.profile is not None:
            if names != [file.profile]:
                yield error(
                    compose.path,
                    service.at("profiles"),
                    ID,
                    f"{service.name} must be behind exactly the profile {file.profile} (so an unscoped `up` starts nothing), not {names or 'none'}",
                )
        elif profiles is not None:
            yield error(
                compose.path,
                service.at("profiles"),
                ID,
                f"{service.name} has profiles {names}; in {compose.stem} every service starts with a plain `up`",
            )


# -- engine argv ----------------------------------------------------------------------


def _unswitched(items: list[tuple[str, ...]]) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """The contract's flags with each `${VAR:+--flag value}` item as its flags, and which
    variable each switched flag waits for."""
    flags: list[tuple[str, ...]] = []
    switched: dict[str, str] = {}
    for item in items:
        switch = switch_of(item[0]) if len(item) == 1 else None
        try:
            words = split_words(switch[1]).words if switch is not None else None
        except ShellError:
            words = None  # compared as written: the file cannot match it either
        if switch is None or words is None:
            flags.append(item)
            continue
        for option in split_argv(words).options:
            flags.append((option.flag,) if option.value is None else (option.flag, option.value))
            switched[option.flag] = switch[0]
    return flags, switched


def _when(switch: str | None) -> str:
    return f"only when {switch} is set" if switch else "always"


def _argv(  # noqa: PLR0912 (one branch per kind of argv drift)
    path: str,
    service: Service,
    replica: Replica,
    file: FileContract,
    contract: Contract,
    engines: Sequence[tuple[Replica, Service]],
) -> Iterator[Finding]:
    name = service.name
    if service.tokens is None:
        yield error(
            path,
            service.at("command"),
            ID,
            f"{name} has no command; the contract argv starts `{' '.join(contract.program)}`",
        )
        return
    program = service.program()
    if tuple(program) != contract.program:
        pos = service.tokens[0].pos if service.tokens else service.at("command")
        yield error(
            path,
            pos,
            ID,
            f"{name} program is '{' '.join(program)}'; the contract says '{' '.join(contract.program)}'",
        )
    for token in service.positionals():
        yield error(
            path, token.pos, ID, f"{name} argv has a stray token '{token.text}' that belongs to no flag"
        )
    expected, switched = _unswitched(contract.expected_flags(file, replica))
    want: dict[str, str | None] = {item[0]: (item[1] if len(item) > 1 else None) for item in expected}
    order = [item[0] for item in expected]
    actual = service.flags()
    first: dict[str, Flag] = {}
    for flag in actual:
        if flag.flag in first:
            yield error(path, flag.pos, ID, f"{name} argv repeats {flag.flag}; the contract has it once")
            continue
        first[flag.flag] = flag
    feature_of = {item[0]: feature.name for feature in contract.features.values() for item in feature.argv}
    typo_of = _typos(
        [flag_name for flag_name in order if flag_name not in first],
        [flag.flag for flag in first.values() if flag.flag not in want and flag.flag not in feature_of],
    )
    meant = {written: flag_name for flag_name, written in typo_of.items()}
    for flag in first.values():
        if flag.flag not in want:
            if flag.flag in feature_of:
                yield error(
                    path,
                    flag.pos,
                    ID,
                    f"{name} argv has {flag.flag} (feature {feature_of[flag.flag]}), which the contract does not give {replica.name} of {file.stem}",
                )
            else:
                hint = f"; did you mean {meant[flag.flag]}, which it lacks?" if flag.flag in meant else ""
                yield error(
                    path, flag.pos, ID, f"{name} argv has {flag.flag}, which is not in the contract{hint}"
                )._replace(cause=flag_cause(name, flag.flag))
    others = [other for r, other in engines if r.name != replica.name]
    for index, flag_name in enumerate(order):
        if flag_name in first:
            continue
        carriers = [other.name for other in others if any(f.flag == flag_name for f in other.flags())]
        carried = f", which {' and '.join(carriers)} carries" if carriers else ""
        if flag_name in typo_of:
            continue  # said with the near miss: "did you mean FLAG, which it lacks?"
        pos = _insertion_pos(service, first, order[:index])
        yield error(path, pos, ID, f"{name} argv lacks {flag_name}{carried}")
    for flag in first.values():
        if flag.flag in want and flag.switch != switched.get(flag.flag):
            yield error(
                path,
                flag.pos,
                ID,
                f"{name} argv has {flag.flag} {_when(flag.switch)}; the contract has it {_when(switched.get(flag.flag))}",
            )
    for flag_name, value in want.items():
        present = first.get(flag_name)
        if present is None or present.value == value:
            continue
        flag = present
        if value is None:
            yield error(
                path, flag.value_pos, ID, f"{name} {flag_name} takes no value here, got '{flag.value}'"
            )
        elif flag.value is None:
            yield error(path, flag.pos, ID, f"{name} {flag_name} has no value; the contract says {value}")
        else:
            yield error(
                path, flag.value_pos, ID, f"{name} {flag_name} is {flag.value}; the contract says {value}"
            )
    yield from _order(path, name, [f for f in first.values() if f.flag in want], order)


def _typos(missing: Sequence[str], unexpected: Sequence[str]) -> dict[str, str]:
    """Each contract flag `missing` here whose near miss is written instead (one typo,
    said once): the missing flag -> what was written."""
    typos: dict[str, str] = {}
    for flag_name in missing:
        near = difflib.get_close_matches(flag_name, unexpected, n=1, cutoff=0.85)
        if near:
            typos[flag_name] = near[0]
    return typos


def _insertion_pos(service: Service, present: dict[str, Flag], before: Sequence[str]) -> Pos:
    """Where a missing flag belongs: after the last contract flag before it that is present."""
    for flag_name in reversed(before):
        flag = present.get(flag_name)
        if flag is not None:
            return flag.value_pos
    return service.at("command")


def _order(path: str, name: str, flags: Sequence[Flag], order: Sequence[str]) -> Iterator[Finding]:
    rank = {flag: index for index, flag in enumerate(order)}
    ranks = [rank[flag.flag] for flag in flags]
    keep = _longest_increasing(ranks)
    for index, flag in enumerate(flags):
        if index in keep:
            continue
        previous = order[rank[flag.flag] - 1] if rank[flag.flag] > 0 else "the program"
        yield error(
            path,
            flag.pos,
            ID,
            f"{name} argv has {flag.flag} out of contract order; it belongs right after {previous}",
        )


def _longest_increasing(values: Sequence[int]) -> set[int]:
    """Indices of one longest strictly increasing subsequence (the flags in order)."""
    best: list[int] = [1] * len(values)
    back: list[int] = [-1] * len(values)
    for i in range(len(values)):
        for j in range(i):
            if values[j] < values[i] and best[j] + 1 > best[i]:
                best[i], back[i] = best[j] + 1, j
    if not values:
        return set()
    index = max(range(len(values)), key=lambda k: (best[k], -k))
    keep: set[int] = set()
    while index != -1:
        keep.add(index)
        index = back[index]
    return keep


# -- engine env and settings --------------------------------------------------------------


def _env(
    path: str, service: Service, replica: Replica, file: FileContract, contract: Contract
) -> Iterator[Finding]:
    expected = contract.expected_env(file, replica)
    env_key = service.at("environment")
    for key, value in expected.items():
        if key not in service.env:
            yield error(path, env_key, ID, f"{service.name} env lacks {key}={value}")
        elif service.env[key] != value:
            yield error(
                path,
                service.env_pos.get(key, env_key),
                ID,
                f"{service.name} env {key} is '{service.env[key]}'; the contract says '{value}'",
            )
    feature_of = {key: feature.name for feature in contract.features.values() for key in feature.env}
    for key in service.env:
        if key in expected:
            continue
        pos = service.env_pos.get(key, env_key)
        if key in feature_of:
            yield error(
                path,
                pos,
                ID,
                f"{service.name} env has {key} (feature {feature_of[key]}), which the contract does not give {replica.name} of {file.stem}",
            )
        else:
            yield error(path, pos, ID, f"{service.name} env has {key}, which is not in the contract")


def _same_image(service: Service, image: str) -> bool:
    """The image is `image` as Docker pulls it (`docker.io/` or not)."""
    got = service.get("image")
    return isinstance(got, str) and normalize_image(got) == normalize_image(image)


def _engine_settings(path: str, service: Service, replica: Replica, contract: Contract) -> Iterator[Finding]:
    image = replica.image or contract.engine_image
    if service.get("image") is not None and not _same_image(service, image):
        whose = f"{replica.name}'s own build" if replica.image else "the tier's engine build"
        yield error(path, service.at("image"), ID, f"{service.name} image is not {whose} {image}")
    yield from _settings(path, service, contract.engine_settings)
    for key in contract.engine_forbidden_keys:
        if service.has(key):
            yield error(
                path,
                service.at(key),
                ID,
                f"{service.name} must not have `{key}` (engines listen on :8000 inside the project network only)",
            )


def _settings(path: str, service: Service, settings: Any) -> Iterator[Finding]:
    """Dotted paths compared by meaning: `5m` is `300s`, memlock `-1` is soft/hard `-1`."""
    runtime = service.runtime()
    for dotted, want in settings.items():
        top, *rest = dotted.split(".")
        expected = _expected_at(top, rest, want)
        got = _walk(runtime.get(top), rest) if service.has(top) else None
        if got is None:
            yield error(
                path, service.at(top, *rest), ID, f"{service.name} lacks {dotted}: {scalar_text(want)}"
            )
        elif got != expected:
            yield error(
                path,
                service.at(top, *rest),
                ID,
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


# -- config_variant -------------------------------------------------------------------


def recompute_variant(
    service: Service, tier: str, contract: Contract, replica: Replica | None = None
) -> str | None:
    """The variant from the engine's own argv and env; None when a needed flag is missing."""
    values = {flag.flag: flag.value for flag in service.flags()}
    fields = {key: values.get(flag) for key, flag in contract.variant_fields.items()}
    if any(value is None for value in fields.values()):
        return None
    present = set()
    for feature in contract.features.values():
        if feature.marker_flag and feature.marker_flag in values:
            present.add(feature.name)
        if feature.marker_env and service.env.get(feature.marker_env[0]) == feature.marker_env[1]:
            present.add(feature.name)
    text = _VARIANT_PART.sub(
        lambda m: f"-{m.group('feature')}" if m.group("feature") in present else "", contract.variant
    )
    build = (replica.build if replica is not None else None) or contract.engine_build
    return text.format(tier=tier, build=build, **fields)


def _variant(
    compose: ComposeFile, service: Service, replica: Replica, file: FileContract, contract: Contract
) -> Iterator[Finding]:
    want = recompute_variant(service, file.tier, contract, replica)
    if want is None:
        return
    prefix = str(contract.telemetry["label_prefix"])
    key = prefix + "config_variant"
    label = service.labels.get(key)
    if label is None:
        yield error(compose.path, service.at("labels"), ID, f"{service.name} lacks the label {key}={want}")
    elif label != want:
        yield error(
            compose.path,
            service.label_pos.get(key, service.at("labels")),
            ID,
            f"{service.name} label {key} is {label}; its own argv and env say {want}",
        )
    col = contract.telemetry["collector"]
    parsed = collector(compose, str(col["config"]), str(col["receiver"]))
    if parsed is None:
        return
    job_name = service.labels.get(prefix + "job", service.name)
    for job in parsed.jobs:
        if job.name != job_name:
            continue
        job_value = job.labels.get("config_variant")
        if job_value is None:
            yield error(
                compose.path,
                job.labels_pos or job.pos,
                ID,
                f"scrape job {job.name} lacks the label config_variant={want}",
            )
        elif job_value != want:
            yield error(
                compose.path,
                job.label_pos["config_variant"],
                ID,
                f"scrape job {job.name} label config_variant is {job_value}; the engine's own argv and env say {want}",
            )


# -- GPUs and rendezvous -----------------------------------------------------------------


def _gpus(path: str, service: Service, replica: Replica, contract: Contract) -> Iterator[Finding]:
    ids = service.gpu_ids()
    if ids is None:
        yield error(
            path,
            service.at("deploy"),
            ID,
            f"{service.name} reserves no GPUs (deploy.resources.reservations.devices)",
        )
        return
    got = [token.text for token in ids]
    want = list(replica.gpus)
    where = service.gpu_ids_pos()
    yield from _gpu_devices(path, service)
    if got != want:
        if sorted(got) == sorted(want):
            index = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
            yield error(
                path,
                ids[index].pos,
                ID,
                f"{service.name} GPU list {got} is reordered; the contract order is {want}",
            )
        else:
            bad = next((token for token in ids if token.text not in want), None)
            yield error(
                path,
                bad.pos if bad else where,
                ID,
                f"{service.name} GPUs are {got}; the contract gives {replica.name} {want}",
            )
    yield from _gpu_island(path, service, ids, contract)
    yield from _gpu_tp(path, service, got, where, contract.variant_fields.get("tp"))


def _gpu_devices(path: str, service: Service) -> Iterator[Finding]:
    """Each GPU reservation asks the nvidia driver for the gpu capability."""
    devices_path = service.devices_path()
    devices = service.value(*devices_path)
    for index, device in enumerate(devices if isinstance(devices, list) else ()):
        if isinstance(device, dict):
            if device.get("driver") != "nvidia":
                yield error(
                    path,
                    service.at(*devices_path, index, "driver"),
                    ID,
                    f"{service.name} GPU reservation driver must be nvidia",
                )
            if device.get("capabilities") != ["gpu"]:
                yield error(
                    path,
                    service.at(*devices_path, index, "capabilities"),
                    ID,
                    f"{service.name} GPU reservation capabilities must be [gpu]",
                )


def _gpu_island(path: str, service: Service, ids: Sequence[Token], contract: Contract) -> Iterator[Finding]:
    """An engine's GPUs share one NVLink island (tensor parallel traffic stays on NVLink)."""
    island = next((isl for isl in contract.islands if ids and ids[0].text in isl), None)
    for token in ids:
        if island is None or token.text not in island:
            yield error(
                path,
                token.pos,
                ID,
                f"{service.name} GPU {token.text} is outside the NVLink island of its other GPUs",
            )
            break


def _gpu_tp(
    path: str, service: Service, got: Sequence[str], where: Pos, tp_flag: str | None
) -> Iterator[Finding]:
    """As many GPUs as the tensor-parallel size (the contract's `tp` field): one rank a GPU."""
    tp = next((flag.value for flag in service.flags() if flag.flag == tp_flag), None)
    if tp is not None and tp.isdigit() and int(tp) != len(got):
        yield error(path, where, ID, f"{service.name} reserves {len(got)} GPUs but runs {tp_flag} {tp}")


def _gpu_overlap(path: str, engines: Sequence[tuple[Replica, Service]]) -> Iterator[Finding]:
    owner: dict[str, str] = {}
    for _replica, service in engines:
        for token in service.gpu_ids() or ():
            if token.text in owner and owner[token.text] != service.name:
                yield error(
                    path,
                    token.pos,
                    ID,
                    f"{service.name} GPU {token.text} is also reserved by {owner[token.text]}",
                )
            owner.setdefault(token.text, service.name)


def _rendezvous(path: str, engines: Sequence[tuple[Replica, Service]]) -> Iterator[Finding]:
    seen: dict[str, str] = {}
    for _replica, service in engines:
        for flag in service.flags():
            if flag.flag == "--dist-init-addr" and flag.value is not None:
                if flag.value in seen:
                    yield error(
                        path,
                        flag.value_pos,
                        ID,
                        f"{service.name} --dist-init-addr {flag.value} collides with {seen[flag.value]}",
                    )
                seen.setdefault(flag.value, service.name)


# -- pairing ----------------------------------------------------------------------------


def _pairing(path: str, service: Service, contract: Contract) -> Iterator[Finding]:
    qsplit = contract.features.get("qsplit")
    marker = qsplit.marker_env if qsplit is not None else None
    has_split = marker is not None and service.env.get(marker[0]) == marker[1]
    yield from _chunk_needs_split(path, service, contract, marker, has_split)
    yield from _split_image(path, service, contract, marker, has_split)


def _chunk_needs_split(
    path: str, service: Service, contract: Contract, marker: Any, has_split: bool
) -> Iterator[Finding]:
    for flag in service.flags():
        if (
            flag.flag == "--chunked-prefill-size"
            and flag.value in contract.chunk_requires_qsplit
            and not has_split
        ):
            yield error(
                path,
                flag.value_pos,
                ID,
                f"{service.name} --chunked-prefill-size {flag.value} needs the DSA indexer split ({marker[0] if marker else 'qsplit'}=1): without it a long burst leaves no free GPU memory",
            )


def _split_image(
    path: str, service: Service, contract: Contract, marker: Any, has_split: bool
) -> Iterator[Finding]:
    if (
        has_split
        and marker is not None
        and not any(_same_image(service, image) for image in contract.qsplit_images)
    ):
        yield error(
            path,
            service.at("image"),
            ID,
            f"{service.name} sets {marker[0]}=1 on an image not known to carry the split patch; allowed: {', '.join(contract.qsplit_images)}",
        )


# -- replica parity ---------------------------------------------------------------------


def _parity(
    path: str,
    engines: Sequence[tuple[Replica, Service]],
    file: FileContract,
    contract: Contract,
    contract_findings: dict[str, int],
) -> Iterator[Finding]:
    if len(engines) < 2:
        return
    (first_replica, first), *rest = engines
    exempt = {*contract.parity_keys, "command", "environment"}
    if _own_builds(contract):
        exempt.add("image")  # each replica's image is held to its own build above
    first_form = _without_deltas(first.runtime(), contract)
    for replica, other in rest:
        other_form = _without_deltas(other.runtime(), contract)
        for key in [*first_form, *(k for k in other_form if k not in first_form)]:
            if key in exempt:
                continue
            difference = _first_difference(first_form.get(key), other_form.get(key), (key,))
            if difference is not None:
                where, a, b = difference
                holder = other if other.canon.written(*where[:1]) else first
                yield error(
                    path,
                    holder.at(*where),
                    ID,
                    f"replica parity: {other.name} {_dotted(where)} is {_written(other, where, b)}, {first.name} has {_written(first, where, a)}; replicas differ only in {_deltas(contract)} and declared argv/env",
                )
        if contract_findings.get(first_replica.name) or contract_findings.get(replica.name):
            continue  # the argv/env contract findings already name the difference
        delta = set(file.replicas[replica.name].features) ^ set(file.replicas[first_replica.name].features)
        if not delta <= set(file.delta) and delta:
            yield error(
                path,
                other.pos,
                ID,
                f"replica parity: the contract gives {first.name} and {other.name} different features {sorted(delta)} but declares no such delta",
            )


def _own_builds(contract: Contract) -> bool:
    """A replica of the contract runs its own build: image and engine_image differ by design."""
    return any(replica.image for replica in contract.replicas.values())


# Stands in for a declared per-replica value, so both replicas compare equal there.
_DELTA = "<per-replica>"


def _without_deltas(form: dict[str, Any], contract: Contract) -> dict[str, Any]:
    """The runtime form with the declared per-replica deltas blanked out.

    Every other key is compared whole: `deploy` and `labels` too (parity used
    to skip both, so a limit or a label on one replica passed).
    """
    result = dict(form)
    for path in contract.parity_paths:
        if path and path[0] in result:
            result[path[0]] = _blank(result[path[0]], path[1:])
    labels = result.get("labels")
    if isinstance(labels, dict):
        prefix = str(contract.telemetry["label_prefix"])
        suffixes = [*contract.parity_labels, *(["engine_image"] if _own_builds(contract) else [])]
        own = {prefix + suffix for suffix in suffixes}
        result["labels"] = {key: (_DELTA if key in own else value) for key, value in labels.items()}
    return result


def _blank(node: Any, path: Sequence[str]) -> Any:
    """A copy of `node` with the value at `path` (`*`: every list item) replaced by _DELTA."""
    if not path:
        return _DELTA
    head, rest = path[0], path[1:]
    if head == "*" and isinstance(node, list):
        return [_blank(item, rest) for item in node]
    if isinstance(node, dict) and head in node:
        return {**node, head: _blank(node[head], rest)}
    return node


def _deltas(contract: Contract) -> str:
    prefix = str(contract.telemetry["label_prefix"])
    return ", ".join(
        [
            *contract.parity_keys,
            *(".".join(path) for path in contract.parity_paths),
            *(f"label {prefix}{suffix}" for suffix in contract.parity_labels),
        ]
    )


def _first_difference(
    a: Any, b: Any, where: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], Any, Any] | None:
    """The deepest path under `where` at which two canonical values differ, and the values."""
    if a == b:
        return None
    while True:
        if isinstance(a, dict) and isinstance(b, dict):
            child: str | int | None = next(
                (k for k in [*b, *(k for k in a if k not in b)] if a.get(k) != b.get(k)), None
            )
            if child is None:
                return None
            where, a, b = (*where, child), a.get(child), b.get(child)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            # Same length: the item that differs (a GPU reservation's capabilities, one
            # healthcheck word), not the whole list.
            index = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
            where, a, b = (*where, index), a[index], b[index]
        else:
            return where, a, b


def _written(service: Service, where: tuple[str | int, ...], value: Any) -> str:
    """What the author wrote there (absent when only a default fills it)."""
    return _short(service.canon.quote(*where)) if service.canon.written(*where) else _short(value)


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in path)


def _short(value: Any) -> str:
    if value is None:
        return "absent"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- proxy, downloader, nginx, registrar ----------------------------------------------------


def _proxy(
    compose: ComposeFile, contract: Contract, engines: Sequence[tuple[Replica, Service]]
) -> Iterator[Finding]:
    service = compose.services.get(str(contract.proxy["service"]))
    if service is None:
        return
    path = compose.path
    image = contract.images[str(contract.proxy["image"])]
    if not _same_image(service, image):
        yield error(
            path, service.at("image"), ID, f"{service.name} image is not the tier's proxy build {image}"
        )
    for key, value in contract.proxy["env"].items():
        if service.env.get(key) != scalar_text(value):
            yield error(
                path,
                service.env_pos.get(key, service.at("environment")),
                ID,
                f"{service.name} env {key} must be '{scalar_text(value)}', not '{service.env.get(key)}'",
            )
    pool_key = str(contract.proxy["pool_env"])
    want = []
    for _replica, engine in engines:
        port = next((flag.value for flag in engine.flags() if flag.flag == "--port"), None)
        want.append(f"http://{engine.name}:{port}")
    got = [url.strip() for url in (service.env.get(pool_key) or "").split(",") if url.strip()]
    if got != want:
        pos = service.env_pos.get(pool_key, service.at("environment"))
        missing = [url for url in want if url not in got]
        extra = [url for url in got if url not in want]
        if missing:
            detail = f"lacks {', '.join(missing)}"
        elif extra:
            detail = f"has {', '.join(extra)}, which is no engine of this file"
        else:
            detail = "lists the engines out of replica order"
        yield error(path, pos, ID, f"{service.name} {pool_key} {detail}; expected {','.join(want)}")
    depends = service.get("depends_on")
    engine_names = {engine.name for _replica, engine in engines}
    for name in depends if isinstance(depends, dict) else ():
        if name in engine_names:
            yield error(
                path,
                service.at("depends_on", name),
                ID,
                f"{service.name} depends_on {name}; the proxy must start and report while engines load",
            )


def _downloader(compose: ComposeFile, contract: Contract) -> Iterator[Finding]:
    spec = contract.downloader
    service = compose.services.get(str(spec["service"]))
    if service is None:
        return
    path = compose.path
    tokens = [*(service.get("entrypoint") or ()), *(token.text for token in service.tokens or ())]
    want = [scalar_text(t) for t in spec["argv"]]
    if tokens != want:
        yield error(
            path,
            service.at("command"),
            ID,
            f"{service.name} runs '{' '.join(tokens)}'; the contract says '{' '.join(want)}' (the pinned snapshot)",
        )
    image = contract.images[str(spec["image"])]
    if not _same_image(service, image):
        yield error(path, service.at("image"), ID, f"{service.name} image is not {image}")
    yield from _settings(path, service, spec.get("settings") or {})


def _nginx(compose: ComposeFile, contract: Contract, file: FileContract) -> Iterator[Finding]:
    service = compose.services.get(str(contract.nginx["service"]))
    if service is None:
        return
    # Compared as compose reads them: `8000:8000`, `8000:8000/tcp` and the long syntax are one port.
    if (service.get("ports") or []) != canonical_value("ports", list(file.nginx_ports)):
        raw = service.data.get("ports")
        got = (
            [scalar_text(p) if not isinstance(p, dict) else flow(p) for p in raw]
            if isinstance(raw, list)
            else []
        )
        yield error(
            compose.path,
            service.at("ports"),
            ID,
            f"{service.name} publishes {got}; the contract for {file.stem} says {list(file.nginx_ports)}",
        )


def _registrar(compose: ComposeFile, contract: Contract, file: FileContract) -> Iterator[Finding]:
    service = compose.services.get(str(contract.registrar["service"]))
    if service is None:
        return
    for key, value in file.registrar_env.items():
        if service.env.get(key) != value:
            yield error(
                compose.path,
                service.env_pos.get(key, service.at("environment")),
                ID,
                f"{service.name} env {key} must be '{value}' in {file.stem}",
            )
    others = {key for other in contract.files.values() for key in other.registrar_env} - set(
        file.registrar_env
    )
    for key in sorted(others):
        if key in service.env:
            yield error(
                compose.path,
                service.env_pos[key],
                ID,
                f"{service.name} env {key} belongs to another tier's file, not {file.stem}",
            )
