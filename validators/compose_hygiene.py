"""Rule `compose-hygiene`: names, pinned images, no builds, no literal secrets, no YAML tricks.

Checks, for every service: `container_name` equals the service key (the key is the
DNS name other services use); the image is pinned `@sha256:` + 64 lowercase hex; no
`build:`; environment keys that name a secret (TOKEN, SECRET, PASSWORD, KEY) hold a
`${...}` reference, and no value anywhere in env or argv looks like a token; command,
environment and labels are readable in one of compose's spellings. A generated file
(its header says GENERATED FILE) carries no YAML anchors, aliases or merge keys: the
byte-identical check and the reviewers read it literally.

Passing example::

    proxy-glm53:
      image: docker.io/nearaidev/vllm-proxy-rs@sha256:d61357da...ba6907
      container_name: proxy-glm53
      environment:
        PROXY_API_TOKEN: ${PROXY_API_TOKEN:?required}

Failing example::

    proxy-glm53:
      image: docker.io/nearaidev/vllm-proxy-rs:latest     # not pinned by digest
      container_name: proxy                               # differs from the key
      environment:
        PROXY_API_TOKEN: pasted-secret-value                # literal secret
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tierops.yamlload import YMap
from validators.context import Context
from validators.findings import Finding, error
from validators.model import ComposeFile, Service

ID = "compose-hygiene"
SUMMARY = "container_name = key, images pinned by digest, no build:, no literal secrets, no anchors/aliases in generated files"

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_ANY_DIGEST = re.compile(r"@sha256:(?P<hex>.*)$")
_SECRET_KEY = re.compile(r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|KEY|APIKEY|CREDENTIALS?)(?:_|$)")
# A key naming where a secret lives (a path, a file, an id) is not itself a secret.
_NOT_SECRET_SUFFIX = re.compile(r"_(?:PATH|FILE|DIR|ID|NAME|URL|HEADER)$")
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(?:(?::?[-?+])(?P<rest>[^}]*))?\}$")
# Shapes of real credentials: Hugging Face, GitHub, OpenAI-style, Slack, AWS, PEM.
_TOKEN_SHAPES = re.compile(
    r"hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|sk-[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
# A long opaque word with letters and digits and no path or URL punctuation.
_OPAQUE = re.compile(r"^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9_\-+=]{32,}$")
_HEX_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_SECRET_FLAG = re.compile(r"-(?:key|token|secret|password)$", re.IGNORECASE)
GENERATED_MARK = "GENERATED FILE"


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    path = compose.path
    services = compose.data.get("services")
    if not isinstance(services, YMap):
        yield error(path, compose.services_pos(), ID, "no `services:` mapping; a compose file needs one")
    for pos, message in compose.project.problems:
        yield error(path, pos, ID, message)
    for service in compose:
        for pos, message in service.problems:
            yield error(path, pos, ID, message)
        yield from _name(path, service)
        yield from _image(path, service)
        if "build" in service.data:
            yield error(
                path,
                service.at("build"),
                ID,
                f"{service.name} has `build:`; production runs pinned images only",
            )
        yield from _secrets(path, service)
    if GENERATED_MARK in "\n".join(compose.doc.lines[:5]):
        for pos in compose.doc.loaded.anchors:
            yield error(
                path, pos, ID, "YAML anchor in a generated file; the generator must write every value out"
            )
        for pos in compose.doc.loaded.aliases:
            yield error(
                path, pos, ID, "YAML alias in a generated file; the generator must write every value out"
            )
        for pos in compose.doc.loaded.merges:
            yield error(
                path,
                pos,
                ID,
                "YAML merge key `<<` in a generated file; the generator must write every value out",
            )


def _name(path: str, service: Service) -> Iterator[Finding]:
    name = service.get("container_name")
    if name is None:
        yield error(path, service.pos, ID, f"{service.name} has no container_name; set it to the service key")
    elif str(name) != service.name:
        yield error(
            path,
            service.at("container_name"),
            ID,
            f"container_name '{name}' differs from the service key '{service.name}'; other services reach it by the key",
        )


def _image(path: str, service: Service) -> Iterator[Finding]:
    image = service.get("image")
    if image is None:
        if "build" not in service.data:
            yield error(path, service.pos, ID, f"{service.name} has no image")
        return
    text = str(image)
    if DIGEST.search(text):
        return
    match = _ANY_DIGEST.search(text)
    if match:
        yield error(
            path,
            service.at("image"),
            ID,
            f"{service.name} image digest '{match.group('hex')}' is malformed; expected @sha256: and 64 lowercase hex",
        )
    else:
        yield error(
            path,
            service.at("image"),
            ID,
            f"{service.name} image '{text}' is not pinned by digest (@sha256:<64 hex>)",
        )


def _secrets(path: str, service: Service) -> Iterator[Finding]:
    for key, value in service.env.items():
        pos = service.env_pos.get(key, service.at("environment"))
        if value is None or value == "":
            continue
        if looks_like_token(value):
            yield error(
                path,
                pos,
                ID,
                f"{service.name} env {key} holds a literal credential; pass it as ${{VAR}} from the host",
            )
            continue
        if _SECRET_KEY.search(key.upper()) and not _NOT_SECRET_SUFFIX.search(key.upper()):
            match = _REFERENCE.match(value)
            if match is None:
                yield error(
                    path,
                    pos,
                    ID,
                    f"{service.name} env {key} names a secret but holds a literal value; use ${{{key}}}",
                )
    if service.tokens:
        for index, token in enumerate(service.tokens):
            flag_value = None
            if token.text.startswith("--") and "=" in token.text:
                flag, flag_value = token.text.split("=", 1)
            else:
                flag = token.text
                if index + 1 < len(service.tokens):
                    flag_value = service.tokens[index + 1].text
            if _TOKEN_SHAPES.search(token.text) or (
                flag.startswith("--")
                and _SECRET_FLAG.search(flag)
                and flag_value
                and not flag_value.startswith(("$", "-"))
            ):
                yield error(
                    path,
                    token.pos,
                    ID,
                    f"{service.name} command carries a literal secret; pass it from the host env",
                )


def looks_like_token(value: str) -> bool:
    """A credential-shaped value (a `${VAR:-default}` is judged by its default)."""
    reference = _REFERENCE.match(value)
    if reference:
        default = reference.group("rest")
        return bool(default and looks_like_token(default))
    if _TOKEN_SHAPES.search(value):
        return True
    # Commit ids and sha256 digests are long hex words too, and never secrets here.
    return bool(_OPAQUE.match(value)) and not _HEX_ID.match(value)
