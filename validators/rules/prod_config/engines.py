"""prod-config on each engine: its image and settings, config_variant, GPUs, rendezvous, pairing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from validators.contract import Contract, FileContract, Replica
from validators.findings import Finding, Pos, error
from validators.model import ComposeFile, Service, Token
from validators.rules.collector import collector
from validators.rules.prod_config.common import _VARIANT_PART, _same_image, _settings
from validators.rules.prod_config.common import RULE as ID


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
