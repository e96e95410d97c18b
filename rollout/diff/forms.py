"""A compose file in the form the diff compares: Compose's own meaning, read once.

The file is read by the one loader (`tierops/yamlload/`: regular files only, size,
depth and alias budgets, positions) and turned into the canonical model
(`tierops/canonical/`: several documents merged as Compose merges them, every short
syntax in its long form, durations, sizes, ports and healthchecks as Compose renders
them). Nothing here re-normalises a spelling; this module only adds what a *diff*
needs on top of the model:

- `command`/`entrypoint` as structured argv: `{"program": [...], "args": [{"flag",
  "value"} | {"arg"}]}`, so a change is reported per flag, never per list position;
  flag aliases are those of the engine program (`tierops/argv.py`: SGLang's for
  sglang, vLLM's for vllm, none for anything else);
- inline `configs`/`secrets` whose `content` is a YAML mapping (the collector config)
  parsed, with Prometheus `scrape_configs` keyed by `job_name`, so a scrape-label
  change is one path and reordering jobs is no change at all;
- top-level `x-*` blocks left out: Compose runs nothing from them, and what they feed
  is already in the services that merge them in (the diff says which block fed them).

The completeness contract (applying the change model to the base form yields the head
form) is stated on this form: see `tests/rollout/diff_oracle.py`.
"""

from __future__ import annotations

import bisect
import copy
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tierops import canonical
from tierops.argv import aliases_for, engine_program, split_argv
from tierops.canonical import Problem, Project, Service
from tierops.errors import InputError
from tierops.yamlload import LoadError, Pos, YList, YMap, load_shared

ARGV_KEYS = ("command", "entrypoint")
_IDENTIFIER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./@-]*$")
# Top-level keys whose entries may carry an inline `content`.
CONTENT_SECTIONS = ("configs", "secrets")


@dataclass
class Document:
    """One compose file as the diff reads it: the canonical model and its compared form.

    Service forms are built on first use: the diff compares the canonical fields first
    and builds the forms of the few services that differ (150 untouched services of a
    200-service file cost one `==` each).
    """

    project: Project | None
    # The compared form without its services (configs, secrets, networks, name, ...).
    sections: dict[str, Any]
    # x- block name -> (first line, first line after it): where its text is written.
    blocks: dict[str, tuple[int, int]] = field(default_factory=dict)
    _forms: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def service(self, name: str) -> Service | None:
        return self.project.services.get(name) if self.project is not None else None

    @property
    def fields(self) -> dict[str, Mapping[str, Any]]:
        """Every service's canonical fields, in file order (what roles are read from)."""
        if self.project is None:
            return {}
        return {service.name: service.fields for service in self.project}

    def service_form(self, name: str) -> dict[str, Any]:
        form = self._forms.get(name)
        if form is None:
            service = self.service(name)
            form = self._forms[name] = service_form(service.fields) if service is not None else {}
        return form

    @property
    def form(self) -> dict[str, Any]:
        """The whole compared form (what the change model applies to)."""
        return {"services": {name: self.service_form(name) for name in self.fields}, **self.sections}

    def roles_view(self) -> dict[str, Any]:
        """Services as canonical fields plus the sections: what roles and mounts read."""
        return {"services": self.fields, **self.sections}

    def block_at(self, pos: Pos) -> str | None:
        """The top-level `x-` block whose text holds `pos` (None outside every block)."""
        for name, (first, after) in self.blocks.items():
            if first <= pos.line < after:
                return name
        return None


EMPTY = Document(None, {"configs": {}, "secrets": {}})


def read(data: bytes, *, where: str) -> Document:
    """Bytes of a compose file to its Document; InputError (`where:line:col: what`) if unusable.

    One reading per process: the diff, the plan and the masking boundary ask for the same
    bytes, so a Document is kept by (bytes, where) and handed out again (no caller
    changes one; the tests' oracle copies before it applies). A refusal is not kept.
    """
    return _read(data, where)


@functools.lru_cache(maxsize=1024)
def _read(data: bytes, where: str) -> Document:
    try:
        loaded = load_shared(data, where)
    except LoadError as error:
        raise InputError(error.message, where=f"{where}:{error.pos}") from None
    project = canonical.build(loaded, project_dir=".")
    for problem in project.problems:
        if "`services`" in problem.message:
            # Without a mapping of services every service would read as removed.
            raise InputError(problem.message, where=f"{where}:{problem.pos}")
    for problem in service_problems(project):
        raise InputError(problem.message, where=f"{where}:{problem.pos}")
    # Any other value Compose would refuse is compared as the model read it (the
    # validators report it); the diff's job is to show what changed.
    return Document(project, sections_form(project), _blocks(loaded.documents, len(loaded.lines)))


def service_problems(project: Project) -> list[Problem]:
    """Problems that leave no words to compare: a command Compose cannot split."""
    return [
        problem
        for service in project
        for problem in service.problems
        if problem.message.endswith("(compose refuses it)")
    ]


def from_data(data: Mapping[str, Any], *, where: str = "<data>") -> Document:
    """A Document from plain data (JSON is YAML: the same reader as a file)."""
    return read(json.dumps(data, default=str).encode("utf-8"), where=where)


def load_documents(data: bytes, *, where: str) -> list[dict[str, Any]]:
    """The compared form of a file, as a one-item list: its documents merged as Compose does.

    (The plan reads roles and checks from this; a list so callers that once got one
    form per document keep working.)
    """
    return [read(data, where=where).form]


def services_of(document: Mapping[str, Any]) -> dict[str, Any]:
    """The service forms of a compared form, in file order."""
    services = document.get("services") or {}
    return {str(name): service for name, service in services.items()} if isinstance(services, Mapping) else {}


def _blocks(documents: Sequence[YMap], line_count: int) -> dict[str, tuple[int, int]]:
    starts = sorted({document.at(key).line for document in documents for key in document})
    blocks: dict[str, tuple[int, int]] = {}
    for document in documents:
        for key in document:
            if key.startswith("x-"):
                first = document.at(key).line
                after_index = bisect.bisect_right(starts, first)
                after = starts[after_index] if after_index < len(starts) else line_count + 1
                blocks[key] = (first, after)
    return blocks


def sections_form(project: Project) -> dict[str, Any]:
    """The compared form of every top-level key but `services` (and the `x-` blocks)."""
    form: dict[str, Any] = {}
    for key, value in project.sections.items():
        if key.startswith("x-"):
            continue
        if key in CONTENT_SECTIONS and isinstance(value, Mapping):
            form[key] = {str(name): entry_form(entry) for name, entry in value.items()}
        else:
            form[key] = value
    # An absent section and an empty one mean the same: no configs.
    for section in CONTENT_SECTIONS:
        if not isinstance(form.get(section), dict):
            form[section] = {}
    return form


def program_of(fields: Mapping[str, Any]) -> str | None:
    """ "sglang", "vllm" or None: the engine the service runs (entrypoint + command, or image)."""
    words = [*_words(fields.get("entrypoint")), *_words(fields.get("command"))]
    image = fields.get("image")
    return engine_program(words, image if isinstance(image, str) else None)


def _words(value: Any) -> list[str]:
    # The model's words are strings already (a non-string item is a recorded problem).
    return value if isinstance(value, list) else []


def service_form(fields: Mapping[str, Any]) -> dict[str, Any]:
    """One service's canonical fields, with command/entrypoint as argv items."""
    aliases = aliases_for(program_of(fields))
    form: dict[str, Any] = {}
    for key in sorted(fields):
        value = fields[key]
        if key in ARGV_KEYS:
            form[key] = None if value is None else argv_form(_words(value), aliases)
        elif key in _BYTES:
            form[key] = short_bytes(value)
        elif key == "stop_grace_period":
            form[key] = short_duration(value)
        elif key == "healthcheck" and isinstance(value, Mapping):
            form[key] = {
                name: short_duration(item) if name in _DURATIONS else item for name, item in value.items()
            }
        else:
            form[key] = value
    return form


_BYTES = frozenset({"shm_size", "mem_limit", "mem_reservation", "memswap_limit"})
_UNITS = (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10))


def short_bytes(value: Any) -> Any:
    """Compose's count of bytes (`"34359738368"`) read as `32gb` (the same size)."""
    if not isinstance(value, str) or not re.fullmatch(r"[0-9]+", value) or value == "0":
        return value
    count = int(value)
    for unit, size in _UNITS:
        if count % size == 0:
            return f"{count // size}{unit}"
    return value


_DURATIONS = frozenset({"interval", "timeout", "start_period", "start_interval"})
_ZERO_UNITS = re.compile(r"(?<=[hm])0m(?=0s$)|(?<=[hm])0s$")


def short_duration(value: Any) -> Any:
    """Compose's `40m0s` read as `40m` (the same duration, as people write it)."""
    if not isinstance(value, str) or not value.endswith("0s") or value == "0s":
        return value
    return _ZERO_UNITS.sub("", _ZERO_UNITS.sub("", value))


def argv_form(words: Sequence[str], aliases: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Words as program + ordered items: `{"flag": f, "value": v}` or `{"arg": word}`."""
    argv = split_argv(words, aliases)
    items: list[tuple[int, dict[str, Any]]] = [
        (option.index, {"flag": option.flag, "value": option.value}) for option in argv.options
    ]
    items += [(index, {"arg": word}) for index, word in argv.positionals]
    items.sort(key=lambda pair: pair[0])
    return {"program": list(argv.program), "args": [item for _, item in items]}


def content_form(text: Any) -> Any:
    """An inline config's `content`: a parsed mapping when it is YAML, else the text."""
    if not isinstance(text, str):
        return text
    parsed = _parsed_content(text)
    if parsed is None:
        return text
    parsed = copy.deepcopy(parsed)  # the cached parse stays as read
    # YAML reads many one-line texts as a mapping (`curl -H 'Authorization: x'` has a key
    # "curl -H 'Authorization"); a config file's top-level keys are identifiers.
    if isinstance(parsed, dict) and parsed and all(_IDENTIFIER.match(str(key)) for key in parsed):
        return _key_scrape_jobs(parsed)
    return text


@functools.lru_cache(maxsize=256)
def _parsed_content(text: str) -> Any:
    """An inline config's one YAML document as plain data, or None when it is not one.

    Kept by text: every file of a fleet, and both sides of a diff, carry the same configs.
    """
    try:
        loaded = load_shared(text.encode("utf-8"), "<content>")
    except Exception:  # any YAML problem means "not a YAML config": compare it as text
        return None
    if len(loaded.documents) != 1:
        return None
    return plain(loaded.documents[0])


def entry_form(entry: Any) -> Any:
    """A `configs`/`secrets` entry with its inline content in content form."""
    if not isinstance(entry, Mapping):
        return entry
    form = {str(key): value for key, value in entry.items() if key != "content"}
    if "content" in entry:
        form["content"] = content_form(entry["content"])
    return dict(sorted(form.items()))


def plain(value: Any) -> Any:
    """Loader data (YMap/YList) as plain dicts and lists."""
    if isinstance(value, (YMap, dict)):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (YList, list, tuple)):
        return [plain(item) for item in value]
    return value


def _key_scrape_jobs(value: Any) -> Any:
    """Prometheus scrape jobs keyed by `job_name` (their order carries no meaning)."""
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, item in value.items():
            if key == "scrape_configs" and _keyable_jobs(item):
                result[key] = {job["job_name"]: _key_scrape_jobs(job) for job in item}
            else:
                result[key] = _key_scrape_jobs(item)
        return result
    if isinstance(value, list):
        return [_key_scrape_jobs(item) for item in value]
    return value


def _keyable_jobs(item: Any) -> bool:
    if not isinstance(item, list) or not item:
        return False
    names = [job.get("job_name") if isinstance(job, dict) else None for job in item]
    return all(isinstance(name, str) for name in names) and len(set(names)) == len(names)
