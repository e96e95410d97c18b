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
from typing import NamedTuple

from tierops import interp

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
        # a proportion or a pace of tokens (`--swa-full-tokens-ratio`), never a token
        "ratio",
        "rate",
        "fraction",
        "percent",
        "threshold",
        "timeout",
        "interval",
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


# Words that make a key a quantity (`--max-prefill-tokens`, `NUM_TOKENS`), never a secret.
_QUANTITY_WORDS = frozenset({"max", "min", "num", "limit", "budget", "chunk", "batch"})


def secret_key(key: object) -> bool:
    """Whether a key, env name, label or flag names a secret."""
    if not isinstance(key, str):
        return False
    return _secret_words(key)


def _secret_words(key: str) -> bool:
    words = key_words(key)
    if not words or words[-1] in NOT_SECRET_LAST or _QUANTITY_WORDS.intersection(words):
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
    "a Google API key": r"AIza[0-9A-Za-z_-]{35}",
    "a JSON web token": r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}",
    "a PEM private key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
}
# Any token shape, in one pattern (the output boundary masks by it, rollout/diff/masking.py).
SHAPES = re.compile("|".join(f"(?:{pattern})" for pattern in TOKEN_SHAPES.values()))
_SHAPE_LIST = [(label, re.compile(pattern)) for label, pattern in TOKEN_SHAPES.items()]
# The credential of a header or an auth scheme: `Authorization: x`, `Bearer x`, `Basic
# x`, `Token x`, `X-Api-Key: x`, a quoted key (`"X-Api-Key": "x"`, JSON headers),
# `PRIVATE-TOKEN: x` (GitLab), `X-Auth-Token: x`. One definition: the validators' findings
# (`text_hits`) and the rollout tools' output boundary (rollout/diff/masking.py) read the same.
HEADER = re.compile(
    r"(?i)\b(?:authorization|proxy-authorization|x-api-key|api-key|x-auth-token|private-token)"
    r"[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token)\s+)?(?P<a>[^\s\"',;}\]\\]+)"
    r"|\b(?:bearer|basic)\s+(?P<b>[A-Za-z0-9._~+/=-]{8,})"
)
# What every `HEADER` match holds, lower-cased (its words are matched ignoring case).
HEADER_WORDS = ("authorization", "api-key", "auth-token", "private-token", "bearer", "basic")
_MIN_RUN = 24
_RUN = re.compile(r"[A-Za-z0-9+/=_.-]{24,}")
_PIECES = re.compile(r"[-_/.]+")
_HEX_DIGEST = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# A CamelCase identifier made of words (`Qwen3ForSequenceClassification`, a model
# architecture in an argv's JSON): capitalised words of three letters or more, short
# acronyms (`LM`) and numbers, mostly lower case.
_CAMEL_WORDS = re.compile(r"^(?:[A-Z][a-z]{2,}|[A-Z]{2,4}|[0-9]+)+$")
ENTROPY_BITS = 3.5


def entropy(text: str) -> float:
    """Shannon entropy of the characters, in bits per character."""
    counts = Counter(text)
    total = len(text)
    return -sum(count / total * math.log2(count / total) for count in counts.values())


def high_entropy(run: str) -> bool:
    """A long random-looking run: letters and digits mixed, 3.5 bits a character or more.

    Judged on the longest piece between `-`, `_`, `/` and `.`, which must be 24 or more
    characters: hyphenated names (`fc91d24-long-context-w4afp8-c8192-...`, container
    names, snapshot paths) are long and varied too, but made of short words. Commit ids
    and sha256 digests (40 or 64 lower-case hex) are excluded: image pins and snapshot
    paths are full of them, and they are never secrets. So are CamelCase identifiers
    of whole words (class names): a random token does not read as words.
    """
    piece = max(_PIECES.split(run), key=len)
    if len(piece) < _MIN_RUN or _HEX_DIGEST.match(piece) or piece.startswith("sha256"):
        return False
    if _CAMEL_WORDS.match(piece) and 2 * sum(ch.islower() for ch in piece) >= len(piece):
        return False
    if not (re.search(r"[0-9]", piece) and re.search(r"[A-Za-z]", piece)):
        return False
    return entropy(piece) >= ENTROPY_BITS


def token_shape(text: str) -> str | None:
    """What kind of credential `text` contains, if any (never the text itself)."""
    for label, pattern in TOKEN_SHAPES.items():
        if re.search(pattern, text):
            return label
    return None


def token_regex() -> str:
    """One regex matching every token shape (the `token-shapes` pre-commit hook's entry)."""
    return "|".join(pattern for pattern in TOKEN_SHAPES.values() if not pattern.startswith("-----"))


# --------------------------------------------------------------------------- literals


# Soft-default values that say "no secret here" rather than guess one: a declared soft
# default of a secret-like key (the collector's MONITORING_INGEST_TOKEN) may use
# only these. `changeme` is a password, not a placeholder.
PLACEHOLDERS = frozenset({"", "unset"})


class Literal(NamedTuple):
    """Literal text where a secret goes (the text itself is kept for the caller's
    placeholder test only; it is never printed)."""

    kind: str  # "literal" (the value itself) or "soft-default" (`${X:-text}`'s text)
    variable: str | None  # the referenced variable of a soft default
    text: str


_SOFT = frozenset({":-", "-", ":+", "+"})


_COLLECTOR_ENV = re.compile(r"\$\{env:(?=[A-Za-z_])")


def _plain(text: str) -> str:
    """References in one spelling: `$$X` (a shell's or the collector's, escaped for
    compose) and the collector's `${env:X}` read as `${X}` does."""
    return _COLLECTOR_ENV.sub("${", text.replace("$$", "$"))


def _literal_text(text: str) -> str:
    """`text` without its top-level references and an auth scheme word: what is literal."""
    text = _plain(text)
    found, _bad = interp.scan(text)
    rest, last = [], 0
    for ref in found:
        if ref.depth == 0:
            rest.append(text[last : ref.start])
            last = ref.end
    rest.append(text[last:])
    literal = _SCHEME_PREFIX.sub("", "".join(rest)).strip()
    # A path names where the secret is (a mounted file), not the secret.
    if literal.startswith("/") and not any(char.isspace() for char in literal):
        return ""
    return literal


def literal_in(value: str) -> Literal | None:
    """The literal a secret-like key's value carries, if any: itself, or a soft default.

    `${X}`, `${X:?message}`, `Bearer ${X}` and `${X:-${Y}}` carry none; `changeme`,
    `${X:-changeme}` and `${X:+changeme}` do (a soft default is the value whenever the
    host lacks X).
    """
    value = _plain(value)
    found, _bad = interp.scan(value)
    for ref in found:
        if ref.operator in _SOFT:
            operand = value[ref.start + 2 + len(ref.name) + len(ref.operator) : ref.end - 1]
            literal = _literal_text(operand)
            if literal or operand == "":
                return Literal("soft-default", ref.name, literal)
    literal = _literal_text(value)
    return Literal("literal", None, literal) if literal else None


class Hit(NamedTuple):
    """A credential inside free text: where (character offsets) and what kind; never the text."""

    start: int
    end: int
    what: str


# `NAME=value` (shell, env files, URLs' query strings) with a secret-like NAME.
_ASSIGNMENT = re.compile(
    r"(?<![\w$.-])(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)=(?P<value>\"[^\"]*\"|'[^']*'|[^\s;&|)]+)"
)


# What every hit needs somewhere in the text: a shape's prefix, a header or scheme word,
# an `=`, or a run long enough to be a token. Most words have none of them, and one
# search rules them out (the validators scan every word of every file).
_CANDIDATE = re.compile(
    r"hf_|gh[pousr]_|github_pat_|sk-|AKIA|ASIA|xox|glpat-|eyJ|-----BEGIN|=|"
    rf"(?i:{'|'.join(HEADER_WORDS)})|[A-Za-z0-9+/=_.-]{{24}}"
)


def _assignment_hits(text: str, offset: int) -> Iterator[Hit]:
    """`NAME=literal` with a secret-like NAME, also inside an innocent name's value
    (`NOTE=DB_PASS=hunter2`; each level is strictly shorter, so it ends)."""
    for match in _ASSIGNMENT.finditer(text):
        name, written = match.group("name"), match.group("value")
        value = written.strip("\"'")
        if secret_key(name):
            if literal_in(value) is not None:
                start, end = match.span("value")
                yield Hit(start + offset, end + offset, f"a literal {name}")
        elif "=" in value and len(value) < len(text):
            yield from _assignment_hits(value, offset + match.start("value") + written.index(value))


def text_hits(text: str) -> Iterator[Hit]:
    """Every credential written into free text: argv words, healthchecks, inline configs."""
    if not _CANDIDATE.search(text):
        return
    for label, compiled in _SHAPE_LIST:
        for match in compiled.finditer(text):
            yield Hit(*match.span(), label)
    for match in HEADER.finditer(text):
        group = "a" if match.group("a") else "b"
        value = match.group(group)
        # A value starting with `$` is a reference (the match stops at its `}`).
        if value and not value.startswith("$") and _literal_text(value):
            yield Hit(*match.span(group), "an Authorization credential")
    yield from _assignment_hits(text, 0)
    for match in _RUN.finditer(text):
        if high_entropy(match.group()):
            yield Hit(*match.span(), "a high-entropy token")
