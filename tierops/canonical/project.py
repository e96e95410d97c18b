"""The entry points: a file (or one document) read into its canonical project.

Documents are merged as Compose merges override files, each service is read key by key,
and the top-level sections get the names and defaults compose fills in.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tierops import units
from tierops.canonical.context import TRUE_WORDS, Ctx
from tierops.canonical.merge import merge_documents
from tierops.canonical.model import Origin, Problem, Project, Service, type_name
from tierops.canonical.service import read_service
from tierops.canonical.volumes import resolve
from tierops.yamlload import START, Loaded, YList, YMap, key_text, load_path


def load(path: Path, display: str | None = None, *, project_dir: str | None = None) -> Project:
    """Read a file and build its project (InputError if unreadable, LoadError if not YAML)."""
    loaded = load_path(path, display)
    return build(loaded, project_dir=project_dir if project_dir is not None else str(path.parent))


def build(loaded: Loaded, *, project_dir: str | None = None, env: Mapping[str, str] | None = None) -> Project:
    """The canonical project of a loaded file.

    `project_dir` resolves relative bind mounts (default: the directory of
    `loaded.path`). With `env`, variables are substituted as compose would with that
    environment (the equivalence tests compare this with the real binary); without it
    (the normal case) they stay symbolic.
    """
    directory = project_dir if project_dir is not None else posixpath.dirname(loaded.path) or "."
    problems: list[Problem] = []
    raw = merge_documents(list(loaded.documents), problems)
    return _project(raw, loaded.path, loaded, directory, env, problems, loaded.text)


def build_raw(
    document: YMap, *, path: str = "<data>", project_dir: str = ".", env: Mapping[str, str] | None = None
) -> Project:
    """The canonical project of one already-loaded document (tests, contracts)."""
    problems: list[Problem] = []
    enforced = merge_documents([document], problems)
    return _project(enforced, path, None, project_dir, env, problems, "")


def canonical_value(key: str, value: Any, *, project_dir: str = ".") -> Any:
    """What compose makes of one service key's value: for contracts that state a value."""
    raw = _plain_to_ymap({"services": {"_": {key: value}}})
    service = build_raw(raw, project_dir=project_dir).services["_"]
    return service.fields.get(key)


def _project(  # noqa: PLR0912 (one branch per top-level key)
    raw: YMap,
    path: str,
    loaded: Loaded | None,
    directory: str,
    env: Mapping[str, str] | None,
    problems: list[Problem],
    text: str,
) -> Project:
    ctx = Ctx(env, directory, problems)
    services: dict[str, Service] = {}
    raw_services = raw.get("services")
    if raw_services is not None and not isinstance(raw_services, YMap):
        problems.append(
            Problem(raw.at("services"), "`services` must be a mapping of service names to definitions")
        )
        raw_services = None
    for name, body in (raw_services or {}).items():
        pos = raw_services.at(name) if isinstance(raw_services, YMap) else START
        if not isinstance(body, YMap):
            service = Service(name, pos, YMap(pos), {}, text=text)
            if body is None:
                # compose reads `name:` with nothing as an empty service (and then
                # refuses it for having no image or build): keep it, say so.
                service.problems.append(Problem(pos, f"service {name} is empty (no image, no build)"))
            else:
                service.problems.append(
                    Problem(pos, f"service {name} must be a mapping, not {type_name(body)}")
                )
            services[name] = service
            continue
        services[name] = read_service(ctx, name, pos, body, text)
    sections: dict[str, Any] = {}
    project_name: str | None = None
    for key, value in raw.items():
        if key == "services":
            continue
        at = Origin(raw.value_at(key), value, raw.value_span.get(key))
        if key == "name":
            project_name = ctx.text_value(value, at, ("name",), where=None) if value is not None else None
            sections["name"] = project_name
        elif key in ("networks", "volumes", "configs", "secrets"):
            sections[key] = _section(ctx, key, value, at)
        elif key == "version":
            continue  # obsolete: compose ignores it (and warns)
        else:
            sections[key] = ctx.generic(value, at, (key,), None)
    uses_default = any("default" in (service.fields.get("networks") or {}) for service in services.values())
    if uses_default:
        networks = sections.setdefault("networks", {})
        if isinstance(networks, dict) and "default" not in networks:
            networks["default"] = {"name": "{project}_default", "ipam": {}}
    return Project(path, loaded, project_name, services, sections, raw, problems)


def _section(ctx: Ctx, key: str, value: Any, origin: Origin) -> Any:
    """A top-level networks/volumes/configs/secrets section: names and defaults filled in."""
    if value is None:
        return {}
    if not isinstance(value, YMap):
        ctx.file_problems.append(Problem(origin.pos, f"`{key}` must be a mapping"))
        return ctx.generic(value, origin, (key,), None)
    result: dict[str, Any] = {}
    for name in value:
        entry = value[name]
        child = ctx.member_value(value, name)
        body = ctx.generic(entry, child, (key, name), None) if entry is not None else {}
        if not isinstance(body, dict):
            ctx.file_problems.append(Problem(child.pos, f"{key}.{name} must be a mapping"))
            result[name] = body
            continue
        external = body.get("external")
        if isinstance(external, str):
            external = external.lower() in TRUE_WORDS
            body["external"] = external
        if external is True:
            body.setdefault("name", name)
        else:
            body.pop("external", None)
            body.setdefault("name", "{project}_" + name)
            if key == "networks":
                body.setdefault("ipam", {})
        if key in ("configs", "secrets") and isinstance(body.get("file"), str):
            body["file"] = resolve(ctx.directory, body["file"])
        if key == "volumes" and "driver_opts" in body and isinstance(body["driver_opts"], dict):
            body["driver_opts"] = {k: _go_string(v) for k, v in body["driver_opts"].items()}
        result[name] = body
    return result


def _go_string(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return units.go_float(value) if isinstance(value, float) else str(value)
    return value


def _plain_to_ymap(value: Any) -> Any:
    if isinstance(value, Mapping):
        result = YMap(START)
        for key, item in value.items():
            result[key_text(key)] = _plain_to_ymap(item)
        return result
    if isinstance(value, (list, tuple)):
        items = YList(START)
        for item in value:
            items.append(_plain_to_ymap(item))
            items.item_pos.append(START)
            items.item_span.append(None)
        return items
    return value
