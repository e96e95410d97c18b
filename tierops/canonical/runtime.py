"""Runtime equivalence: the canonical fields with the differences that do not change
what runs removed (`docker.io/` on images, `CAP_` on capabilities, a ulimit's soft/hard
spelling, `count: all` for every GPU of a host).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def runtime_form(fields: Mapping[str, Any], *, host_gpus: int | None = None) -> dict[str, Any]:
    """The canonical fields with the differences that do not change what runs removed.

    `docker.io/` (and `library/`) on images, `CAP_` on capabilities and their order,
    a ulimit as one value or as equal soft/hard values, and GPU reservations by
    `count: all` or by every id of a host with `host_gpus` GPUs.
    """
    result = dict(fields)
    image = result.get("image")
    if isinstance(image, str):
        result["image"] = normalize_image(image)
    for key in ("cap_add", "cap_drop"):
        caps = result.get(key)
        if isinstance(caps, list):
            result[key] = sorted({_capability(cap) for cap in caps if isinstance(cap, str)})
    limits = result.get("ulimits")
    if isinstance(limits, dict):
        result["ulimits"] = {
            name: (
                value["soft"]
                if isinstance(value, dict) and value.get("soft") == value.get("hard") and "soft" in value
                else value
            )
            for name, value in limits.items()
        }
    if host_gpus is not None:
        deploy = result.get("deploy")
        if isinstance(deploy, dict):
            result["deploy"] = _all_gpus(deploy, host_gpus)
    return result


def normalize_image(image: str) -> str:
    """An image reference in full: `nginx` is `docker.io/library/nginx`, `a/b` is `docker.io/a/b`."""
    name, at, digest = image.partition("@")
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + name
    return name + at + digest


def _capability(cap: str) -> str:
    upper = cap.upper()
    return upper[4:] if upper.startswith("CAP_") else upper


def _all_gpus(deploy: dict[str, Any], host_gpus: int) -> dict[str, Any]:
    every = [str(index) for index in range(host_gpus)]
    resources = deploy.get("resources")
    if not isinstance(resources, dict):
        return deploy
    changed: dict[str, Any] = {}
    for kind, section in resources.items():
        if isinstance(section, dict) and isinstance(section.get("devices"), list):
            devices = []
            for device in section["devices"]:
                ids = device.get("device_ids") if isinstance(device, dict) else None
                # A non-list device_ids is already a problem of the model (wrong type): never a crash.
                if isinstance(device, dict) and (
                    device.get("count") == -1 or (isinstance(ids, list) and sorted(ids, key=str) == every)
                ):
                    whole = {k: v for k, v in device.items() if k not in ("count", "device_ids")}
                    whole["gpus"] = "all"
                    devices.append(whole)
                else:
                    devices.append(device)
            changed[kind] = {**section, "devices": devices}
    if not changed:
        return deploy
    return {**deploy, "resources": {**resources, **changed}}
