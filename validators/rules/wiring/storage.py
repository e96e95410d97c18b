"""Where the model lives: the downloader writes the snapshot the engines read, on a named volume.

The downloader is the one-shot job the engines wait for (the contract's
`storage.downloader` role); every config, secret and volume a service mounts is defined.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from validators.findings import Finding, Pos
from validators.model import ComposeFile, Flag, Service
from validators.rules.wiring import checks
from validators.rules.wiring.graph import Graph, locate, of_role, value_at


class Mount(NamedTuple):
    source: str
    target: str
    item: int  # its index in the service's volumes


def _volume_mount(service: Service, named: Mapping[str, Any], path: str) -> Mount | None:
    """The named-volume mount of `service` that holds `path` (the deepest one)."""
    best: Mount | None = None
    for index, entry in enumerate(service.get("volumes") or ()):
        if not isinstance(entry, dict) or entry.get("type") != "volume":
            continue
        source, target = entry.get("source"), str(entry.get("target") or "")
        if source not in named or not target:
            continue
        if (path == target or path.startswith(target.rstrip("/") + "/")) and (
            best is None or len(target) > len(best.target)
        ):
            best = Mount(str(source), target, index)
    return best


@dataclass(frozen=True)
class Download:
    repo: str | None
    repo_at: Pos
    revision: str | None
    revision_at: Pos
    directory: str  # the absolute path the snapshot lands in
    directory_at: Pos | None  # where that path is decided (None: the default cache)


_SNAPSHOT = re.compile(r"/models--(?P<repo>[^/]+)/snapshots/(?P<revision>[^/]+)/?$")


# Options of `hf download` that take no value.
_HF_SWITCHES = frozenset({"--force-download", "--quiet", "--dry-run", "--resume-download"})


def _download(compose: ComposeFile, service: Service, storage: Mapping[str, Any]) -> Download | None:
    """Where `hf download` puts the snapshot; None when the service runs no `download`."""
    entry = [str(word) for word in service.get("entrypoint") or ()]
    words = [*entry, *(str(word) for word in service.get("command") or ())]

    def at(index: int) -> Pos:
        if index < len(entry):
            return service.at("entrypoint", index)
        return service.at("command", index - len(entry))

    repo: tuple[str, Pos] | None = None
    options: dict[str, tuple[str, Pos]] = {}
    if "download" not in words:
        return None  # prod-config holds the downloader's argv to the contract
    index = words.index("download") + 1
    while index < len(words):
        word = words[index]
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if word in _HF_SWITCHES:
                options[word] = ("", at(index))
            elif eq:
                options[name] = (value, at(index))
            elif index + 1 < len(words):
                options[name] = (words[index + 1], at(index + 1))
                index += 1
        elif repo is None:
            repo = (word, at(index))
        index += 1
    if "--local-dir" in options:
        directory, local_at = options["--local-dir"]
        directory_at: Pos | None = local_at
    else:
        cache, directory_at = _hf_cache(compose, service, options, storage)
        name = (repo[0] if repo else "").replace("/", "--")
        revision = options.get("--revision", ("main", service.at("command")))[0]
        directory = f"{cache.rstrip('/')}/models--{name}/snapshots/{revision}"
    revision_opt = options.get("--revision")
    return Download(
        repo[0] if repo else None,
        repo[1] if repo else service.at("command"),
        revision_opt[0] if revision_opt else None,
        revision_opt[1] if revision_opt else service.at("command"),
        posixpath.normpath(directory),
        directory_at,
    )


def _hf_cache(
    compose: ComposeFile, service: Service, options: Mapping[str, tuple[str, Pos]], storage: Mapping[str, Any]
) -> tuple[str, Pos | None]:
    """The hub cache `hf download` writes into, and where that is decided (None: the default)."""
    if "--cache-dir" in options:
        return options["--cache-dir"]
    if service.env.get("HF_HUB_CACHE"):
        return str(service.env["HF_HUB_CACHE"]), locate(compose, service, ("environment", "HF_HUB_CACHE"))
    home = service.env.get("HF_HOME")
    if home:
        return posixpath.join(home, "hub"), locate(compose, service, ("environment", "HF_HOME"))
    return posixpath.join(str(storage["default_hf_home"]), "hub"), None


def _downloader(graph: Graph) -> Service | None:
    """The one-shot job the engines wait for (`condition: service_completed_successfully`);
    of several, the first that runs `download`."""
    awaited: list[str] = []
    for name in graph.engines:
        depends = graph.compose.services[name].get("depends_on")
        for other, spec in depends.items() if isinstance(depends, dict) else ():
            if isinstance(spec, dict) and spec.get("condition") == "service_completed_successfully":
                awaited.append(str(other))
    jobs = [
        graph.compose.services[name] for name in of_role(graph, [graph.wiring.downloader]) if name in awaited
    ]
    downloading = [job for job in jobs if "download" in (job.get("command") or ())]
    found = downloading or jobs
    return found[0] if found else None


def check_storage(graph: Graph) -> Iterator[Finding]:
    compose, storage, engines = graph.compose, graph.wiring.storage, graph.engines
    downloader = _downloader(graph)
    named = compose.project.sections.get("volumes")
    if not isinstance(named, Mapping):
        named = {}  # a `volumes:` that is not a mapping: compose-hygiene says so
    if downloader is not None and graph.claimed:  # the token env is the stack's policy
        yield from _token(compose, downloader, storage)
    download = _download(compose, downloader, storage) if downloader is not None else None
    written = _volume_mount(downloader, named, download.directory) if download and downloader else None
    if downloader is not None and download is not None and written is None:
        yield checks.finding(
            compose,
            download.directory_at or _first_volume(compose, downloader),
            "model-volume",
            f"{downloader.name} writes the snapshot to {download.directory}, which lies under no named volume: it is lost with the container",
            "mount the shared cache volume where the downloader writes",
        )
    reads: list[tuple[Service, Flag, str, Mount]] = []
    for name in engines:
        engine = compose.services[name]
        flag = next((f for f in engine.flags() if f.flag == storage["model_flag"]), None)
        if flag is None or flag.value is None:
            continue  # prod-config reports the missing flag
        if not flag.value.startswith("/"):
            continue  # a hub repo id (`org/name`), resolved through the hub cache, not a path
        model_path = posixpath.normpath(flag.value)
        read = _volume_mount(engine, named, model_path)
        if read is None:
            yield checks.finding(
                compose,
                flag.value_pos,
                "model-volume",
                f"{name} {storage['model_flag']} {flag.value} lies under no mount of a named volume",
                f"mount {written.source} at {written.target}" if written else None,
            )
        else:
            reads.append((engine, flag, model_path, read))
    if download is None or downloader is None or written is None or not reads:
        return
    yield from _same_snapshot(compose, storage, downloader, download, written, reads)


def _same_snapshot(
    compose: ComposeFile,
    storage: Mapping[str, Any],
    downloader: Service,
    download: Download,
    written: Mount,
    reads: Sequence[tuple[Service, Flag, str, Mount]],
) -> Iterator[Finding]:
    """The engines read the volume and the path inside it that the downloader writes."""
    sources = {read.source for _, _, _, read in reads}
    if len(sources) == 1 and written.source not in sources:
        # Every engine agrees: the downloader is the odd one out.
        yield checks.finding(
            compose,
            downloader.at("volumes", written.item),
            "model-volume",
            f"{downloader.name} writes into volume {written.source}; the engines read the model from {next(iter(sources))}",
            f"mount {next(iter(sources))} at {written.target}",
        )
        return
    for engine, _flag, _path, read in reads:
        if read.source != written.source:
            yield checks.finding(
                compose,
                engine.at("volumes", read.item),
                "model-volume",
                f"{engine.name} reads the model from volume {read.source}; {downloader.name} writes into {written.source}",
                f"mount {written.source} at {read.target}",
            )
    inside_written = posixpath.relpath(download.directory, written.target)
    readers = [
        (engine, flag, path, posixpath.relpath(path, read.target))
        for engine, flag, path, read in reads
        if read.source == written.source
    ]
    wrong = [reader for reader in readers if reader[3] != inside_written]
    if not wrong:
        return
    got = _SNAPSHOT.search(download.directory)
    if len({reader[3] for reader in readers}) == 1:
        # Every engine reads one path: the downloader is the odd one out.
        engine, flag, path, inside_read = wrong[0]
        want = _SNAPSHOT.search(path)
        if want and got and want.groupdict() == got.groupdict():
            yield checks.finding(
                compose,
                download.directory_at or downloader.at("volumes", written.item),
                "model-volume",
                f"{downloader.name} writes the snapshot to {written.source}:/{inside_written}; the engines read {written.source}:/{inside_read}",
                "mount the volume at the same path in both, and let both use one cache path",
            )
        else:
            yield from _snapshot(compose, engine.name, flag.value_pos, path, downloader, download, storage)
        return
    for engine, flag, _path, inside_read in wrong:
        yield checks.finding(
            compose,
            flag.value_pos,
            "model-volume",
            f"{engine.name} reads {written.source}:/{inside_read}; {downloader.name} writes the snapshot to {written.source}:/{inside_written}",
            "read the snapshot the downloader writes",
        )


def _first_volume(compose: ComposeFile, service: Service) -> Pos:
    for index, entry in enumerate(service.get("volumes") or ()):
        if isinstance(entry, dict) and entry.get("type") == "volume":
            return service.at("volumes", index)
    return value_at(compose, service, "volumes")


def _snapshot(
    compose: ComposeFile,
    engine: str,
    engine_at: Pos,
    model_path: str,
    downloader: Service,
    download: Download,
    storage: Mapping[str, Any],
) -> Iterator[Finding]:
    want = _SNAPSHOT.search(model_path)
    if want is None:
        yield checks.finding(
            compose,
            engine_at,
            "snapshot",
            f"{engine} {storage['model_flag']} {model_path} is not a snapshot directory (.../models--<org>--<name>/snapshots/<revision>)",
            "point it at the snapshot the downloader fetches",
        )
        return
    repo = want.group("repo").replace("--", "/", 1)
    if download.repo != repo:
        yield checks.finding(
            compose,
            download.repo_at,
            "snapshot",
            f"{downloader.name} downloads {download.repo}; the engines' {storage['model_flag']} is a snapshot of {repo}",
        )
    elif download.revision != want.group("revision"):
        yield checks.finding(
            compose,
            download.revision_at,
            "snapshot",
            f"{downloader.name} downloads revision {download.revision or 'main (unpinned)'}; the engines' {storage['model_flag']} names revision {want.group('revision')}",
        )


def _token(compose: ComposeFile, downloader: Service, storage: Mapping[str, Any]) -> Iterator[Finding]:
    for key, value in (storage.get("token_env") or {}).items():
        got = downloader.env.get(key)
        if key not in downloader.env:
            yield checks.finding(
                compose,
                downloader.at("environment"),
                "download-token",
                f"{downloader.name} lost its token env {key}: gated or private repos fail to download",
                f"set {key}: {value}",
            )
        elif got != value:
            yield checks.finding(
                compose,
                locate(compose, downloader, ("environment", key)),
                "download-token",
                f"{downloader.name} env {key} is not {value}",
                f"set {key}: {value}",
            )


def mount_sources(compose: ComposeFile) -> Iterator[Finding]:
    sections = compose.project.sections
    for service in compose:
        for key in ("configs", "secrets"):
            # A top-level section of the wrong type (`configs: 7`) defines nothing.
            listed = sections.get(key)
            defined = listed if isinstance(listed, dict) else {}
            for index, entry in enumerate(service.get(key) or ()):
                source = entry.get("source") if isinstance(entry, dict) else None
                if isinstance(source, str) and source not in defined:
                    yield checks.finding(
                        compose,
                        service.at(key, index),
                        "mount-source",
                        f"{service.name} mounts {key[:-1]} {source}, which is not defined under top-level {key}: (defined: {', '.join(sorted(map(str, defined))) or 'none'})",
                    )
        listed = sections.get("volumes")
        volumes = listed if isinstance(listed, dict) else {}
        for index, entry in enumerate(service.get("volumes") or ()):
            if (
                isinstance(entry, dict)
                and entry.get("type") == "volume"
                and isinstance(entry.get("source"), str)
                and entry["source"]
                and entry["source"] not in volumes
            ):
                yield checks.finding(
                    compose,
                    service.at("volumes", index),
                    "mount-source",
                    f"{service.name} mounts volume {entry['source']}, which is not defined under top-level volumes: (defined: {', '.join(sorted(map(str, volumes))) or 'none'})",
                )
