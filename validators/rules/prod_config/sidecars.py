"""prod-config on the sidecars the contract names: proxy, downloader, front door, registrar."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tierops.canonical import canonical_value, flow
from tierops.yamlload import scalar_text
from validators.contract import Contract, FileContract, Replica
from validators.findings import Finding, error
from validators.model import ComposeFile, Service
from validators.rules.prod_config.common import RULE as ID
from validators.rules.prod_config.common import _same_image, _settings


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
