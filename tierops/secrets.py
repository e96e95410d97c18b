"""What a secret looks like: one definition for the validators, the diff and the release tools.

Three signals, any one enough:

1. **A secret-like key** (an env name, a label key, a flag, a YAML key): one of its
   words is a secret word (token, secret, password/passwd/pass/pwd, key, credential,
   auth, bearer, ...), matched case- and separator-insensitively (`HF_TOKEN`,
   `apiToken`, `accessToken`, `DB_PASS`, `PGPASSWORD`, `TOKEN2`, `--api-key`,
   `ENCRYPTION_KEY`); a last word that names *where* a secret is (`_PATH`, `_FILE`,
   `_URL`, `_ID`, `_NAME`, ...) makes it not one.
2. **An Authorization header or scheme** (`Authorization: Bearer x`, `Basic x`,
   `Token x`, `-H "Authorization: x"`): the credential after it.
3. **A token shape**: known prefixes (`hf_`, `sk-`, `ghp_`, `github_pat_`, `xox?-`,
   `AKIA`, `glpat-`), JWTs, PEM private keys, and long high-entropy runs of letters and
   digits (Shannon entropy of at least 3.5 bits a character over 24 or more).

A value that is nothing but references (`${VAR}`, `${VAR:?message}`, `$${env:VAR}`,
optionally after `Bearer `) is never a secret: it names where the secret comes from.
A soft default (`${VAR:-changeme}`) is literal text, and is judged as such.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

# Words that make a key secret-like, whole words after splitting (`api_key`, `apiKey`).
SECRET_WORDS = frozenset(
    {
        "token",
        "tokens",
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "key",
        "apikey",
        "credential",
        "credentials",
        "creds",
        "auth",
        "authorization",
        "bearer",
        "cookie",
        "pat",
        "privatekey",
    }
)
# Run-together words (`PGPASSWORD`, `MYTOKEN`, `dbpass`): a word ending in one of these.
_SECRET_ENDINGS = ("password", "passwd", "token", "secret", "apikey", "privatekey", "credentials", "pass")
# A last word naming where a secret is, or what it is about, not the secret itself.
NOT_SECRET_LAST = frozenset(
    {
        "path",
        "file",
        "files",
        "dir",
        "url",
        "uri",
        "name",
        "names",
        "id",
        "ids",
        "type",
        "header",
        "env",
        "var",
        "ttl",
        "length",
        "len",
        "size",
        "count",
        "endpoint",
        "host",
        "port",
        "user",
        "username",
        "policy",
        "mode",
        "algorithm",
        "format",
        "version",
        "ref",
        "hint",
        "prefix",
    }
)
# Words that contain a secret ending without being secrets (`passthrough`, `bypass`).
_NOT_SECRET_WORDS = frozenset(
    {"passthrough", "bypass", "compass", "keyspace", "keyboard", "monkey", "hotkey"}
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[^A-Za-z]+")


def key_words(key: str) -> list[str]:
    """A key's words, lower-case: `apiToken2` -> [api, token], `--api-key` -> [api, key]."""
    words: list[str] = []
    for chunk in _SEPARATORS.split(key):
        words.extend(part.lower() for part in _CAMEL.split(chunk) if part)
    return words


def secret_key(key: object) -> bool:
    """Whether a key, env name, label or flag names a secret."""
    if not isinstance(key, str):
        return False
    words = key_words(key)
    if not words or words[-1] in NOT_SECRET_LAST:
        return False
    for word in words:
        if word in _NOT_SECRET_WORDS:
            continue
        if word in SECRET_WORDS or word.endswith(_SECRET_ENDINGS):
            return True
    return False


# --------------------------------------------------------------------------- values

# `${VAR}`, `${VAR:?message}`, `$VAR`, and the collector's `$${env:VAR}` / `${env:VAR}`.
_REFERENCE = re.compile(r"\$\$?\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*(?::?\?[^}]*)?\}|\$\$?[A-Za-z_][A-Za-z0-9_]*")
_SCHEME_PREFIX = re.compile(r"^\s*(?:Bearer|Basic|Token)\s+", re.IGNORECASE)


def only_references(value: str) -> bool:
    """Nothing but `${VAR}`-style references (after an optional `Bearer `): not a secret."""
    rest = _REFERENCE.sub("", _SCHEME_PREFIX.sub("", value)).strip()
    return rest == "" and bool(_REFERENCE.search(value))


# Shapes of real credentials (labels name the kind; the value is never printed).
TOKEN_SHAPES: dict[str, str] = {
    "a Hugging Face token (hf_ + 30 or more letters or digits)": r"hf_[A-Za-z0-9]{30,}",
    "a GitHub token": r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    "an OpenAI-style secret key": r"sk-(?:proj-)?[A-Za-z0-9_-]{32,}",
    "an AWS access key id": r"(?:AKIA|ASIA)[A-Z0-9]{16}",
    "a Slack token": r"xox[abposr]-[A-Za-z0-9-]{10,}",
    "a GitLab token": r"glpat-[A-Za-z0-9_-]{20,}",
    "a JSON web token": r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}",
    "a PEM private key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
}
_SHAPES = re.compile("|".join(f"(?:{pattern})" for pattern in TOKEN_SHAPES.values()))
# `Authorization: x`, `Bearer x`, `Basic x`, `Token x`, `X-Api-Key: x`: the credential.
_HEADER = re.compile(
    r"(?i)\b(?:authorization|proxy-authorization|x-api-key|api-key)\s*[:=]\s*"
    r"(?:(?:bearer|basic|token)\s+)?(?P<a>[^\s\"',;}\]]+)"
    r"|\b(?:bearer|basic)\s+(?P<b>[A-Za-z0-9._~+/=-]{8,})"
)
_RUN = re.compile(r"[A-Za-z0-9+/=_-]{24,}")
_HEX_DIGEST = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
ENTROPY_BITS = 3.5


def entropy(text: str) -> float:
    """Shannon entropy of the characters, in bits per character."""
    counts = Counter(text)
    total = len(text)
    return -sum(count / total * math.log2(count / total) for count in counts.values())


def high_entropy(run: str) -> bool:
    """A long random-looking run: letters and digits mixed, 3.5 bits a character or more.

    Commit ids and sha256 digests (40 or 64 lower-case hex) are excluded: image pins and
    snapshot paths are full of them, and they are never secrets.
    """
    if _HEX_DIGEST.match(run) or run.startswith("sha256"):
        return False
    if not (re.search(r"[0-9]", run) and re.search(r"[A-Za-z]", run)):
        return False
    return entropy(run) >= ENTROPY_BITS


def token_shape(text: str) -> str | None:
    """What kind of credential `text` contains, if any (never the text itself)."""
    for label, pattern in TOKEN_SHAPES.items():
        if re.search(pattern, text):
            return label
    return None


def secret_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where credentials sit inside free text (argv words, healthchecks, inline configs)."""
    for match in _SHAPES.finditer(text):
        yield match.span()
    for match in _HEADER.finditer(text):
        group = "a" if match.group("a") else "b"
        value = match.group(group)
        if value and not only_references(value) and not value.startswith("$"):
            yield match.span(group)
    for match in _RUN.finditer(text):
        if high_entropy(match.group()):
            yield match.span()


def looks_secret(value: str) -> bool:
    """A value that carries a credential whatever key it sits under."""
    return any(True for _ in secret_spans(value))


def token_regex() -> str:
    """One regex matching every token shape (the `token-shapes` pre-commit hook's entry)."""
    return "|".join(pattern for pattern in TOKEN_SHAPES.values() if not pattern.startswith("-----"))
