"""Secrets never reach a report: masked in the model before any rendering.

Two rules, applied to every value of a ChangeSet (and to anything else printed):

1. **Secret-looking keys** (env names, label keys, flags, YAML keys) such as `HF_TOKEN`,
   `PROXY_API_TOKEN`, `--api-key`, `password`, `Authorization`: the value is shown only
   when it is nothing but references (`${VAR}`, `${VAR:?message}`, `$${env:VAR}`,
   optionally after `Bearer`/`Basic`), because a reference names where the secret comes
   from and is not the secret. A default (`${VAR:-x}`) is literal text, so it is masked.
2. **Token-shaped text** anywhere (any key, argv values, config text): known token
   prefixes (`hf_`, `sk-`, `ghp_`, `github_pat_`, `xox?-`, `AKIA`), JWTs, PEM private
   key blocks, and long mixed-case alphanumeric runs with digits and high entropy.

A masked value reads `<secret sha256:1a2b3c4d>`: the first 8 hex digits of its SHA-256,
so two reports can say whether a secret changed without showing it (a short hash of a
guessable value can be brute-forced; real tokens are not guessable).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from rollout.changes import ABSENT, Change, ChangeSet, FileChange, Key, ServiceChange

_SECRET_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "apikey",
        "credential",
        "credentials",
        "authorization",
        "auth",
        "bearer",
        "cookie",
        "pat",
    }
)
_SECRET_PAIRS = ("api_key", "private_key", "access_key", "secret_key", "client_secret", "signing_key")
# A key ending in one of these names where the secret is, not the secret.
_NOT_SECRET_LAST = frozenset(
    {"path", "file", "dir", "url", "uri", "name", "id", "type", "header", "env", "var"}
)
_SPLIT = re.compile(r"[^a-z0-9]+")
_REFERENCE = re.compile(r"\$\$?\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*(?::?\?[^}]*)?\}|\$\$?[A-Za-z_][A-Za-z0-9_]*")
_SCHEMES = re.compile(r"\b(?:Bearer|Basic|Token)\b", re.IGNORECASE)
_TOKENS = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
    r"|\b(?:hf|sk|pk|rk)[-_][A-Za-z0-9_-]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    re.DOTALL,
)
_RUN = re.compile(r"[A-Za-z0-9+=_]{24,}")


def secret_key(key: Any) -> bool:
    """Whether a key, env name or flag names a secret (`HF_TOKEN`, `--api-key`)."""
    if not isinstance(key, str):
        return False
    lowered = key.lower().lstrip("-")
    parts = [part for part in _SPLIT.split(lowered) if part]
    if not parts or parts[-1] in _NOT_SECRET_LAST:
        return False
    joined = "_".join(parts)
    return any(part in _SECRET_WORDS for part in parts) or any(pair in joined for pair in _SECRET_PAIRS)


def fingerprint(value: str) -> str:
    return f"<secret sha256:{hashlib.sha256(value.encode('utf-8')).hexdigest()[:8]}>"


def mask_text(text: str) -> str:
    """`text` with every token-shaped part replaced by its fingerprint."""
    if not text:
        return text
    text = _TOKENS.sub(lambda match: fingerprint(match.group(0)), text)
    return _RUN.sub(
        lambda match: fingerprint(match.group(0)) if _random(match.group(0)) else match.group(0), text
    )


def _random(run: str) -> bool:
    if not (re.search(r"[A-Z]", run) and re.search(r"[a-z]", run) and len(re.findall(r"[0-9]", run)) >= 2):
        return False
    counts = Counter(run)
    entropy = -sum(count / len(run) * math.log2(count / len(run)) for count in counts.values())
    return entropy >= 3.5


def _only_references(text: str) -> bool:
    rest = _SCHEMES.sub("", _REFERENCE.sub("", text))
    return bool(_REFERENCE.search(text)) and not rest.strip(" \t\"'")


def mask_value(value: Any, key: Key | None = None) -> Any:  # noqa: PLR0911 (one return per kind of value)
    """A value with secrets masked; `key` is the name it is stored under (if any)."""
    if isinstance(value, dict):
        if set(value) <= {"flag", "value"} and "flag" in value:  # an argv item: the flag is its key
            return {"flag": value["flag"], "value": mask_value(value.get("value"), value["flag"])}
        return {name: mask_value(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [mask_value(item, key) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value  # YAML numbers and booleans: counts and switches, not secrets
    if secret_key(key):
        text = str(value)
        if isinstance(value, str) and _only_references(text):
            return mask_text(text)
        return fingerprint(text)
    if isinstance(value, str):
        return mask_text(value)
    return value


def _key_of(path: tuple[Key, ...]) -> Key | None:
    for key in reversed(path):
        if isinstance(key, str) and key not in ("args",):
            return key
    return None


def mask_change(change: Change) -> Change:
    key = _key_of(change.path)
    old = change.old if change.old is ABSENT else mask_value(change.old, key)
    new = change.new if change.new is ABSENT else mask_value(change.new, key)
    if change.unified:
        from rollout.diff import unified

        return replace(change, old=old, new=new, unified=unified(str(old), str(new)))
    return replace(change, old=old, new=new)


def mask_file(file: FileChange) -> FileChange:
    services = tuple(
        ServiceChange(
            service.name, service.status, service.role, tuple(mask_change(c) for c in service.changes)
        )
        for service in file.services
    )
    others = tuple(mask_change(change) for change in file.others)
    error = mask_text(file.error) if file.error else file.error
    return replace(file, services=services, others=others, error=error)


def mask_changeset(changeset: ChangeSet) -> ChangeSet:
    """The ChangeSet every format renders: no secret value anywhere."""
    if changeset.masked:
        return changeset
    return replace(changeset, files=tuple(mask_file(file) for file in changeset.files), masked=True)


def mask_form(form: Any) -> Any:
    """A compared form with the same masking (for the completeness check of masked JSON)."""
    return mask_value(form) if isinstance(form, Mapping) else form
