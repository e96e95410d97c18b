"""Which values are secrets, and how a masked one is shown: by key (the shared definition
of tierops.secrets, narrowed for values), by shape (credential headers, token shapes,
long random runs), and the salted fingerprint `<secret sha256:XXXXXXXX>`. The rule as a
whole is described in rollout/diff/masking.py.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

from tierops.secrets import HEADER, HEADER_WORDS, entropy, only_references
from tierops.secrets import SHAPES as _SHAPES
from tierops.secrets import secret_key as shared_secret_key

SALT_ENV = "TIEROPS_MASK_SALT"
# The fingerprints' salt: a secret the operator holds (a CI secret) makes them the same
# from run to run; without it, a random one for this run (see docs/diff-and-plan.md).
SALT = os.environ.get(SALT_ENV, "").encode("utf-8") or os.urandom(16)  # what secrets.token_bytes reads
# Values shorter than this are masked only as whole words (`abc` not inside `abcdef`).
WHOLE_WORD_BELOW = 8


# Two narrowings of the shared definition, for values only (tierops.secrets owns the
# definition; these live here because they are about what a report may show):
# a lower-case key that is just `key` names a field (`- key: host.name` in the
# collector's attributes processor; an env `KEY` stays secret), and a location is not
# a credential (`ssl_certificate_key /etc/nginx/tls/privkey.pem`, `proxy_pass
# http://glm53_proxy` with its word `pass`).
_BARE_KEY_WORDS = frozenset({"key"})
_LOCATION = re.compile(
    r"^(?:\.{0,2}(?:/[A-Za-z0-9._-]+)+/?|[a-z][a-z0-9+.-]*://[^\s/@:]+(?::\d+)?(?:[/?#][^\s@]*)?)$"
)


def secret_key(key: object) -> bool:
    """The shared definition (tierops.secrets.secret_key), minus a lower-case bare `key`."""
    if isinstance(key, str) and key.strip("-_ ") in _BARE_KEY_WORDS:
        return False
    return shared_secret_key(key)


_NAME = re.compile(r"[A-Za-z_][\w.-]*")


def _secret_name(name: str) -> bool:
    return shared_secret_key(name)


def names_a_secret(line: str) -> bool:
    """Whether any name in the line (a flag's, a `KEY=`'s) is secret-like: only then is
    the line worth splitting into words (most lines of a compose file are not)."""
    return any(_secret_name(name) for name in _NAME.findall(line))


def fingerprint(value: str) -> str:
    # Imported here: a run that masks nothing (most diffs) never loads OpenSSL.
    import hashlib
    import hmac

    digest = hmac.new(SALT, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"<secret sha256:{digest[:8]}>"


_SCHEME = re.compile(r"^\s*(?:Bearer|Basic|Token)\s+", re.IGNORECASE)
# Any reference; `${VAR:-default}` and friends are cut into the reference and its default.
# A bare `$$NAME` is no reference: in a compose value `$$` is a literal `$` (a password
# `Xk9$$mQ2` is one literal); `$${env:VAR}` (the collector's) still is. One level of
# nesting is read: `${X:-${Y:-default}}`.
_BRACED = r"\$\$?\{(?:[^{}]|\{[^{}]*\})*\}"
_REFERENCE = re.compile(rf"{_BRACED}|(?<!\$)\$[A-Za-z_][A-Za-z0-9_]*")
_DEFAULTED = re.compile(r"\$\$?\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*:?[-+=](?P<default>(?:[^{}]|\{[^{}]*\})*)\}")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SWITCHES = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none", "~"})


def meaningful(fragment: str) -> bool:
    """A literal worth masking: has a letter or digit, and is not a count or a switch."""
    text = fragment.strip()
    if not re.search(r"[A-Za-z0-9]", text):
        return False
    return not (_NUMBER.fullmatch(text) or text.lower() in _SWITCHES)


def secret_fragments(value: str) -> list[str]:
    """The literal parts of a value found under a secret-like key: the whole value, or,
    around references, the literal text and soft defaults (never the references)."""
    text = value.strip()
    if not text or only_references(text):
        return []
    text = _SCHEME.sub("", text)
    if _LOCATION.match(text):
        return []
    if not _REFERENCE.search(text):
        return [text] if meaningful(text) else []
    found: list[str] = []
    for match in _DEFAULTED.finditer(text):
        default = match.group("default")
        # a default that holds a reference of its own: its literal parts, recursively
        found += secret_fragments(default) if _REFERENCE.search(default) else [default]
    found += _REFERENCE.split(text)
    return [part.strip() for part in found if meaningful(part) and not only_references(part.strip())]


# Random-looking runs. tierops.secrets.high_entropy also flags service names and config
# variants (`model-sg-glm53-w4afp8-tp4-r1`); in a report that would hide the very
# names an operator reads, so the boundary asks for more: mixed case and two digits.
# `/` ends a run: paths (`.../W4AFP8/snapshots/<commit>`) are not tokens.
_RUN = re.compile(r"[A-Za-z0-9+=_]{24,}")
_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{32,}(?![0-9A-Za-z])")
_ENTROPY_BITS = 3.5


def _random_run(run: str) -> bool:
    if not (re.search(r"[A-Z]", run) and re.search(r"[a-z]", run) and len(re.findall(r"[0-9]", run)) >= 2):
        return False
    return entropy(run) >= _ENTROPY_BITS


def _hex_token(run: str) -> bool:
    # 40 hex: a commit id; 64: a sha256 digest (image pins, snapshot paths). Not secrets.
    return len(run) not in (40, 64) and bool(re.search(r"[0-9]", run)) and bool(re.search(r"[a-fA-F]", run))


def shape_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where credentials sit in free text by their look alone."""
    for match in _SHAPES.finditer(text):
        yield match.span()
    for match in HEADER.finditer(text):
        group = "a" if match.group("a") else "b"
        value = match.group(group)
        if value and not value.startswith(("$", "<secret")) and meaningful(value):
            yield match.span(group)
    for match in _RUN.finditer(text):
        if _random_run(match.group()):
            yield match.span()
    for match in _HEX.finditer(text):
        if _hex_token(match.group()):
            yield match.span()


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    result: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if result and start <= result[-1][1]:
            result[-1] = (result[-1][0], max(end, result[-1][1]))
        else:
            result.append((start, end))
    return result


def mask_text(text: str) -> str:
    """`text` with every credential-shaped part replaced by its fingerprint.

    Line by line, each distinct line once, where no shape can span a line break (see
    `lines_apart`): the same text as masking it whole, in a fraction of the time on a
    report that repeats its lines.
    """
    if "\n" in text and lines_apart(text):
        masked: dict[str, str] = {}
        out = []
        for line in text.split("\n"):
            shown = masked.get(line)
            if shown is None:
                shown = masked[line] = _mask_shapes(line)
            out.append(shown)
        return "\n".join(out)
    return _mask_shapes(text)


def lines_apart(text: str) -> bool:
    """Whether no credential shape in `text` can span a line break: only `HEADER`'s
    spaces can, and only after one of its words (looked for lower-cased in ASCII text)."""
    if not text.isascii():
        return False
    lowered = text.lower()
    return not any(word in lowered for word in HEADER_WORDS)


def _mask_shapes(text: str) -> str:
    if not text:
        return text
    spans = merged(shape_spans(text))
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in spans:
        out += [text[last:start], fingerprint(text[start:end])]
        last = end
    out.append(text[last:])
    return "".join(out)
