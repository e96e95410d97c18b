"""What each service *is*, read from the file itself, never from a list of names.

Roles are read from a document of canonical services (the model of
`tierops/canonical/`, where `command`/`entrypoint` may also be the diff's argv items)
plus the top-level `configs`/`secrets`, so every spelling of a definition gets the same
role. This module is the shared core's: the rollout plan and the validators read it.

The rollout plan orders steps by role and decides what interrupts traffic, and the
wiring rule finds listeners and edges by role, so the role must follow the definition:
a renamed engine is still an engine, and a hand-written file with other names gets the
same plan and the same checks. Rules, first match wins:

- engine: runs SGLang or vLLM, told by what it runs (`sglang serve`, `vllm serve`,
  `python -m sglang.launch_server`, ..., `tierops/argv.py`), so a locally built
  engine (`build:` plus a local image name) is one; or reserves GPUs with an SGLang or
  vLLM image whose default entrypoint is the engine;
- one-shot job: `restart: "no"`/`on-failure`, or another service waits for it with
  `condition: service_completed_successfully` (the model downloader);
- telemetry (collector): an OpenTelemetry/Prometheus-style collector image, or it
  mounts a YAML config with `receivers` and `exporters`;
- telemetry (DCGM): a DCGM exporter image, or it mounts a counters CSV of `DCGM_` fields;
- proxy: its environment or argv points at one or more engines by service name;
- registrar: its environment, argv or mounted script registers with a gateway;
- front door: publishes ports, or points at the proxy (depends_on or its config);
- other: anything else (the plan flags it for a human).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from tierops.argv import engine_program


class Role(StrEnum):
    ENGINE = "engine"
    ONE_SHOT = "one-shot job"
    COLLECTOR = "telemetry (collector)"
    DCGM = "telemetry (DCGM)"
    PROXY = "proxy"
    REGISTRAR = "registrar"
    FRONT_DOOR = "front door"
    OTHER = "other"

    @property
    def key(self) -> str:
        """How data names the role (a YAML key): `engine`, `one_shot`, `front_door`, ..."""
        return self.name.lower()

    @classmethod
    def from_key(cls, key: str) -> Role | None:
        """The role a data key names (`front_door`), or None for a key that names none."""
        return next((role for role in cls if role.key == key), None)


# Recreating these cuts or re-announces every request path of the host.
INTERRUPTS_TRAFFIC = frozenset({Role.PROXY, Role.REGISTRAR, Role.FRONT_DOOR})

_ENGINE_IMAGE = re.compile(r"(sglang|vllm)(-openai)?")
_COLLECTOR_IMAGE = re.compile(
    r"(opentelemetry-collector|otelcol|otel-collector|prometheus|grafana-agent|alloy)"
)
_REGISTER = re.compile(r"regist", re.IGNORECASE)


def roles_of(document: Mapping[str, Any]) -> dict[str, Role]:
    """The role of every service of a raw (checked) compose document, in file order."""
    services: dict[str, Any] = {str(k): v for k, v in (document.get("services") or {}).items()}
    contents = _config_texts(document)
    one_shots = _awaited_completion(services)
    engines = {name for name, service in services.items() if _is_engine(service)}
    roles: dict[str, Role] = {}
    for name, service in services.items():
        roles[name] = _role(name, service, engines, one_shots, contents)
    # The front door is what points at the proxy; find proxies first, then look again.
    proxies = {name for name, role in roles.items() if role is Role.PROXY}
    for name, service in services.items():
        if roles[name] is Role.OTHER and _points_at(service, proxies, contents):
            roles[name] = Role.FRONT_DOOR
    return roles


def image_name(service: Mapping[str, Any]) -> str:
    """The repository's last path component: `docker.io/x/sglang@sha256:...` -> `sglang`."""
    image = str(service.get("image") or "")
    image = image.split("@", 1)[0]
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[0].lower()


def reserves_gpus(service: Mapping[str, Any]) -> bool:
    if service.get("gpus") or str(service.get("runtime") or "") == "nvidia":
        return True
    try:
        devices = service["deploy"]["resources"]["reservations"]["devices"]
    except (KeyError, TypeError):
        return False
    if not isinstance(devices, list):
        return False
    for device in devices:
        if not isinstance(device, Mapping):
            continue
        listed = device.get("capabilities")
        capabilities = [str(item) for item in listed] if isinstance(listed, list) else []
        if "gpu" in capabilities or str(device.get("driver") or "") == "nvidia":
            return True
    return False


class SpellingError(ValueError):
    """A value in none of the shapes the compared form gives (callers skip it)."""


def command_tokens(value: Any) -> list[str] | None:
    """`command`/`entrypoint` as words: from argv items, or a canonical list of words."""
    if value is None:
        return None
    if isinstance(value, Mapping) and "args" in value:
        words = [str(word) for word in value.get("program") or ()]
        for item in value.get("args") or ():
            if isinstance(item, Mapping) and "flag" in item:
                words.append(str(item["flag"]))
                if item.get("value") is not None:
                    words.append(str(item["value"]))
            elif isinstance(item, Mapping):
                words.append(str(item.get("arg", "")))
        return words
    if isinstance(value, list):
        return [str(word) for word in value]
    raise SpellingError(f"command must be a list of words, not {type(value).__name__}")


def key_values(value: Any, *, what: str = "environment") -> dict[str, str | None]:
    """`environment`/`labels` of the compared form (a mapping, as Compose renders it)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(key): None if item is None else str(item) for key, item in value.items()}
    raise SpellingError(f"{what} must be a mapping, not {type(value).__name__}")


def gpu_device_ids(service: Mapping[str, Any]) -> list[str] | None:
    """The GPU ids reserved by `deploy.resources.reservations.devices`, in file order."""
    try:
        devices = service["deploy"]["resources"]["reservations"]["devices"]
    except (KeyError, TypeError):
        return None
    ids: list[str] = []
    for device in devices or ():
        if isinstance(device, Mapping):
            ids.extend(str(gpu) for gpu in device.get("device_ids") or ())
    return ids


def words_of(service: Mapping[str, Any]) -> list[str]:
    """What the container runs: entrypoint words, then command words."""
    words: list[str] = []
    for key in ("entrypoint", "command"):
        with contextlib.suppress(SpellingError):
            words += command_tokens(service.get(key)) or []
    return words


def engine_of(service: Mapping[str, Any]) -> str | None:
    """ "sglang", "vllm" or None: the engine a service runs, by its words, else its image."""
    image = service.get("image")
    return engine_program(words_of(service), image if isinstance(image, str) else None)


def _is_engine(service: Mapping[str, Any]) -> bool:
    if engine_of(service) is not None:
        return True
    return reserves_gpus(service) and bool(_ENGINE_IMAGE.fullmatch(image_name(service)))


def _role(  # noqa: PLR0911 (one return per role: first match wins)
    name: str,
    service: Mapping[str, Any],
    engines: set[str],
    one_shots: set[str],
    contents: dict[str, str],
) -> Role:
    if name in engines:
        return Role.ENGINE
    restart = str(service.get("restart", "")).lower()
    if name in one_shots or restart in ("no", "false") or restart.startswith("on-failure"):
        return Role.ONE_SHOT
    image = image_name(service)
    mounted = [contents.get(source, "") for source in _mounted(service)]
    if _COLLECTOR_IMAGE.search(image) or any(_looks_like_collector(text) for text in mounted):
        return Role.COLLECTOR
    if "dcgm" in image or any("DCGM_" in text for text in mounted):
        return Role.DCGM
    if engines and _points_at(service, engines, {}):
        return Role.PROXY
    if _mentions_registration(service, mounted):
        return Role.REGISTRAR
    if service.get("ports"):
        return Role.FRONT_DOOR
    return Role.OTHER


def _awaited_completion(services: Mapping[str, Any]) -> set[str]:
    awaited: set[str] = set()
    for service in services.values():
        depends = service.get("depends_on") if isinstance(service, Mapping) else None
        if isinstance(depends, Mapping):
            for other, spec in depends.items():
                if isinstance(spec, Mapping) and spec.get("condition") == "service_completed_successfully":
                    awaited.add(str(other))
    return awaited


def _mounted(service: Mapping[str, Any]) -> list[str]:
    """Names of the configs and secrets a service mounts (short or long syntax)."""
    names: list[str] = []
    for section in ("configs", "secrets"):
        entries = service.get(section)
        if not isinstance(entries, list):  # malformed: the diff still reports it, roles ignore it
            continue
        for entry in entries:
            if isinstance(entry, Mapping):
                names.append(f"{section}/{entry.get('source', '')}")
            else:
                names.append(f"{section}/{entry}")
    return names


def mounted_by(document: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """`configs/<name>` or `secrets/<name>` -> the services mounting it, in file order."""
    users: dict[str, list[str]] = {}
    for name, service in (document.get("services") or {}).items():
        if isinstance(service, Mapping):
            for source in _mounted(service):
                users.setdefault(source, []).append(str(name))
    return {source: tuple(names) for source, names in users.items()}


def _config_texts(document: Mapping[str, Any]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for section in ("configs", "secrets"):
        for name, entry in (document.get(section) or {}).items():
            content = entry.get("content") if isinstance(entry, Mapping) else None
            if isinstance(content, str):
                texts[f"{section}/{name}"] = content
            elif isinstance(content, Mapping):
                # Parsed YAML (the collector config): its top-level keys, then its data.
                keys = "".join(f"{key}:\n" for key in content)
                texts[f"{section}/{name}"] = keys + json.dumps(content)
    return texts


def _looks_like_collector(text: str) -> bool:
    return bool(
        re.search(r"^receivers:", text, re.MULTILINE) and re.search(r"^exporters:", text, re.MULTILINE)
    )


def _strings(service: Mapping[str, Any]) -> list[str]:
    """Environment values and argv tokens: where a service names the hosts it talks to."""
    texts: list[str] = []
    with contextlib.suppress(SpellingError):
        texts += [value for value in key_values(service.get("environment")).values() if value]
    for key in ("command", "entrypoint"):
        with contextlib.suppress(SpellingError):
            texts += command_tokens(service.get(key)) or []
    return texts


def _points_at(service: Mapping[str, Any], targets: set[str], contents: dict[str, str]) -> bool:
    if not targets:
        return False
    depends = service.get("depends_on")
    names = {str(item) for item in depends} if isinstance(depends, (list, Mapping)) else set()
    if names & targets:
        return True
    texts = _strings(service) + [contents.get(source, "") for source in _mounted(service)]
    for target in targets:
        pattern = re.compile(rf"(?<![\w.-]){re.escape(target)}(?![\w.-])")
        if any(pattern.search(text) for text in texts):
            return True
    return False


def _mentions_registration(service: Mapping[str, Any], mounted: list[str]) -> bool:
    try:
        env = key_values(service.get("environment"))
    except SpellingError:
        env = {}
    texts = list(env) + _strings(service) + mounted
    return any(_REGISTER.search(text) for text in texts)
