"""A compose document in the one form the diff compares: spelling removed, meaning kept.

The spelling rules themselves (string or list `command`, `--flag=value`, flag aliases,
env and labels as lists or mappings, short `depends_on`) are `tierops.compose`'s; this
module only adds what a *diff* needs on top of them:

- `command`/`entrypoint` as structured argv: `{"program": [...], "args": [{"flag",
  "value"} | {"arg"}]}`, so a change is reported per flag, never per list position;
- inline `configs`/`secrets` whose `content` is a YAML mapping (the collector config)
  parsed, with Prometheus `scrape_configs` keyed by `job_name`, so a scrape-label
  change is one path and reordering jobs is no change at all;
- every other value as plain JSON-able data.

The completeness contract (applying the change model to the base form yields the head
form) is stated on this form: see `rollout/apply.py`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from tierops.compose import SpellingError, command_tokens, normalise_service, split_argv
from tierops.errors import InputError

ARGV_KEYS = ("command", "entrypoint")
_IDENTIFIER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./@-]*$")
# Top-level keys whose entries may carry an inline `content`.
CONTENT_SECTIONS = ("configs", "secrets")


def fast_yaml() -> YAML:
    """The diff's loader: safe (no arbitrary objects), YAML 1.2 like Compose, pure Python.

    Anchors, aliases and merge keys are resolved by the loader itself, so `<<: *engine`
    compares as the keys it expands to. Pure Python on purpose: with ruamel.yaml.clib the
    safe loader scans with libyaml, which follows YAML 1.1 and rejects what Compose and
    our own files accept (`[CMD, curl, http://localhost:8000/health]`: "found unexpected
    ':'"). A fresh instance per call: never mutate a shared one. (The round-trip loader
    in tierops.yamlio keeps positions but is slower; the diff prints none.)
    """
    yaml = YAML(typ="safe", pure=True)
    yaml.allow_duplicate_keys = False
    return yaml


def load_documents(data: bytes, *, where: str) -> list[dict[str, Any]]:
    """Every YAML document of a compose file, checked for the compose shape.

    An empty file (or an empty document) is an empty compose document: no services.
    Raises InputError with `where:line:col` for anything that cannot be compared.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", where=where) from None
    try:
        with warnings.catch_warnings():
            # ruamel warns (e.g. about reused anchors) where it can still load the file;
            # the diff needs the data, not the warning, and pytest runs with -W error.
            warnings.simplefilter("ignore")
            raw = list(fast_yaml().load_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        shown = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark is not None else where
        raise InputError(f"invalid YAML: {_problem(exc)}", where=shown) from None
    except YAMLError as exc:
        raise InputError(f"invalid YAML: {' '.join(str(exc).split())}", where=where) from None
    documents: list[dict[str, Any]] = []
    for number, document in enumerate(raw, start=1):
        label = where if len(raw) == 1 else f"{where} (document {number})"
        documents.append(_checked_document(document, label))
    return documents or [{}]


def _problem(exc: MarkedYAMLError) -> str:
    problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
    # A duplicate-key message quotes both values; a value may be a secret.
    cut = problem.find(" with value ")
    return problem[:cut] if cut >= 0 else problem


def _checked_document(document: Any, where: str) -> dict[str, Any]:
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise InputError(
            f"the top level is a {type(document).__name__}, not a mapping of compose keys", where=where
        )
    services = document.get("services")
    if services is not None and not isinstance(services, dict):
        raise InputError("`services` is not a mapping of service names to definitions", where=where)
    for name, service in (services or {}).items():
        if not isinstance(service, dict):
            raise InputError(f"service '{name}' is not a mapping", where=where)
    for section in CONTENT_SECTIONS:
        entries = document.get(section)
        if entries is not None and not isinstance(entries, dict):
            raise InputError(f"`{section}` is not a mapping", where=where)
    return {str(key): value for key, value in document.items()}


def services_of(document: Mapping[str, Any]) -> dict[str, Any]:
    """The raw service definitions of a checked document, in file order."""
    return {str(name): service for name, service in (document.get("services") or {}).items()}


def argv_form(tokens: Sequence[str]) -> dict[str, Any]:
    """Tokens as program + ordered items: `{"flag": f, "value": v}` or `{"arg": token}`."""
    argv = split_argv(tokens)
    items: list[tuple[int, dict[str, Any]]] = [
        (option.index, {"flag": option.flag, "value": option.value}) for option in argv.options
    ]
    items += [(index, {"arg": token}) for index, token in argv.positionals]
    items.sort(key=lambda pair: pair[0])
    return {"program": list(argv.program), "args": [item for _, item in items]}


def service_form(name: str, service: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    """One service in the compared form (tierops.compose's normalisation plus argv items)."""
    return {key: key_form(name, key, service[key], where=where) for key in sorted(str(k) for k in service)}


def key_form(name: str, key: str, value: Any, *, where: str) -> Any:
    """One key of a service in compared form.

    `normalise_service` treats every key on its own, so the diff normalises only the
    keys whose raw values differ (a changed flag does not re-read 20 labels).
    """
    try:
        if key in ARGV_KEYS:
            tokens = command_tokens(value)
            return None if tokens is None else argv_form(tokens)
        return normalise_service({key: value})[key]
    except SpellingError as exc:
        raise InputError(f"service '{name}': {key}: {exc}", where=where) from None


def content_form(text: Any) -> Any:
    """An inline config's `content`: a parsed mapping when it is YAML, else the text."""
    if not isinstance(text, str):
        return plain(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = fast_yaml().load(text)
    except Exception:  # any YAML problem means "not a YAML config": compare it as text
        return text
    # YAML reads many one-line texts as a mapping (`curl -H 'Authorization: x'` has a key
    # "curl -H 'Authorization"); a config file's top-level keys are identifiers.
    if isinstance(parsed, dict) and parsed and all(_IDENTIFIER.match(str(key)) for key in parsed):
        return _key_scrape_jobs(plain(parsed))
    return text


def entry_form(entry: Any) -> Any:
    """A `configs`/`secrets` entry with its inline content in content form."""
    if not isinstance(entry, Mapping):
        return plain(entry)
    form = {str(key): plain(value) for key, value in entry.items() if key != "content"}
    if "content" in entry:
        form["content"] = content_form(entry["content"])
    return dict(sorted(form.items()))


def document_form(document: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
    """The whole document in compared form (the diff computes it lazily, per changed part)."""
    form: dict[str, Any] = {}
    for key, value in document.items():
        if key == "services":
            form[key] = {
                name: service_form(name, service, where=where)
                for name, service in services_of(document).items()
            }
        elif key in CONTENT_SECTIONS and isinstance(value, Mapping):
            form[key] = {str(name): entry_form(entry) for name, entry in value.items()}
        else:
            form[key] = plain(value)
    # An absent section and an empty one mean the same: no services, no configs.
    for section in ("services", *CONTENT_SECTIONS):
        if not isinstance(form.get(section), dict):
            form[section] = {}
    return form


def plain(value: Any) -> Any:
    """JSON-able data: str keys, lists, str/int/float/bool/None (dates become text)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


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
