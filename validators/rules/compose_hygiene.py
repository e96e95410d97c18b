"""Rule `compose-hygiene`: names, pinned images, no builds, no literal secrets, no YAML tricks.

Checks, for every service: `container_name` equals the service key (the key is the
DNS name other services use); the image is pinned `@sha256:` + 64 lowercase hex; no
`build:` unless the service declares why (`x-build-reason:`, which Compose ignores and
reviewers read in the file); command, environment and labels are readable in one of compose's spellings,
and a value of a type Compose refuses (`name: 5`, `healthcheck.interval: 30`, an
unknown healthcheck or config key, a config mount's `target: 5`) is a finding.
A generated file (its header says GENERATED FILE) carries no YAML anchors, aliases or
merge keys: the byte-identical check and the reviewers read it literally.

**No secret written literally anywhere a secret goes** (what a secret looks
like is tierops/secrets.py, shared with the diff and the release tools):

- an env value, label value or flag value whose key names a secret (token, secret,
  password/passwd/pass, key, credential, auth, bearer, ...; `PGPASSWORD`, `apiToken`,
  `DB_PASS`, `ENCRYPTION_KEY`, `TOKEN2`, `--api-key`) holds only `${VAR}` references;
- no soft default `${VAR:-text}` (or `:+`, `-`, `+`) for such a key or a secret-like
  VAR anywhere: the text is the secret whenever the host lacks VAR. Only the soft
  defaults the contract declares for the collector may stay, with a placeholder
  (`unset` or empty);
- no credential of an Authorization, X-Api-Key, X-Auth-Token or PRIVATE-TOKEN header
  (its name quoted or not: `"X-Api-Key": "x"`) or of a Bearer/Basic scheme,
  `NAME=literal` with a secret-like NAME (also inside another's value:
  `NOTE=DB_PASS=x`), token shape (`hf_`, `ghp_`, `sk-`, AWS, Slack, GitLab, JWT, PEM) or high-entropy run in any
  argv word (command, entrypoint, healthcheck test), env or label value, or inline
  config (`configs.*.content`, the collector's included: there a secret-like key holds
  only `${env:VAR}` references).

A finding names the service or config, the key and the place; it never prints the value.

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
        PROXY_API_TOKEN: ${PROXY_API_TOKEN:-changeme}     # a soft default: a literal secret
      healthcheck:
        test: [CMD, curl, -H, "Authorization: Bearer <literal>", http://localhost:8000/health]
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tierops import interp, secrets
from tierops.argv import switch_of
from tierops.yamlload import YList, YMap
from validators.context import Context
from validators.findings import Finding, Pos, error
from validators.model import ComposeFile, Service
from validators.rules.collector import collector
from validators.rules.embedded import Embedded, embedded

ID = "compose-hygiene"
SUMMARY = "container_name = key, images pinned by digest, no build:, no literal secrets, no anchors/aliases in generated files"

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_ANY_DIGEST = re.compile(r"@sha256:(?P<hex>.*)$")
GENERATED_MARK = "GENERATED FILE"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    yield from _services_mapping(compose, ctx)
    yield from _shape(compose, ctx)
    yield from _compose_types(compose, ctx)
    yield from _names(compose, ctx)
    yield from _images(compose, ctx)
    yield from _builds(compose, ctx)
    yield from _env_secrets(compose, ctx)
    yield from _label_secrets(compose, ctx)
    yield from _argv_secrets(compose, ctx)
    yield from _empty_words(compose, ctx)
    yield from _config_secrets(compose, ctx)
    yield from _yaml_tricks(compose, ctx)


# -- the checks, each addressable (registry.CHECKS; tests/validators/test_guards.py) ----


def _services_mapping(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    if not isinstance(compose.data.get("services"), YMap):
        yield error(
            compose.path, compose.services_pos(), ID, "no `services:` mapping; a compose file needs one"
        )


def _shape(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    """What the canonical model could not read in compose's spellings (wrong types included)."""
    for pos, message in compose.project.problems:
        yield error(compose.path, pos, ID, message)
    for service in compose:
        for pos, message in service.problems:
            yield error(compose.path, pos, ID, message)


# Types Compose's schema requires where the canonical model passes a value through as
# written (Docker Compose v2.40.3 refuses each with "must be a string" or "additional
# properties not allowed"; a service config `target: 5` makes it panic).
_HEALTHCHECK_KEYS = frozenset(
    {"test", "interval", "timeout", "retries", "start_period", "start_interval", "disable"}
)
_HEALTHCHECK_DURATIONS = ("interval", "timeout", "start_period", "start_interval")
_CONFIG_KEYS = frozenset({"file", "environment", "content", "external", "name", "labels", "template_driver"})
_MOUNT_STRINGS = ("source", "target", "uid", "gid")


def _compose_types(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:  # noqa: PLR0912 (one branch per key)
    """Values of the wrong type that Compose refuses and the model keeps as written."""
    path, data = compose.path, compose.data
    if "name" in data and not isinstance(data["name"], str):
        yield error(path, data.at("name"), ID, "top-level name must be a string (the project name)")
    configs = data.get("configs")
    for name, entry in configs.items() if isinstance(configs, YMap) else ():
        if not isinstance(entry, YMap):
            continue  # the model reports a non-mapping entry
        for key in entry:
            if key not in _CONFIG_KEYS and not str(key).startswith("x-"):
                yield error(path, entry.at(key), ID, f"configs.{name} has no key `{key}`; compose refuses it")
    for service in compose:
        raw = service.data
        check = raw.get("healthcheck")
        if isinstance(check, YMap):
            for key in check:
                if key not in _HEALTHCHECK_KEYS and not str(key).startswith("x-"):
                    yield error(
                        path,
                        check.at(key),
                        ID,
                        f"{service.name} healthcheck has no key `{key}`; compose refuses it",
                    )
                elif key in _HEALTHCHECK_DURATIONS and not isinstance(check[key], str):
                    yield error(
                        path,
                        check.at(key),
                        ID,
                        f"{service.name} healthcheck.{key} must be a duration string such as 30s",
                    )
        mounts = raw.get("configs")
        for index, mount in enumerate(mounts if isinstance(mounts, YList) else ()):
            for key in _MOUNT_STRINGS if isinstance(mount, YMap) else ():
                if key in mount and not isinstance(mount[key], str):
                    yield error(
                        path, mount.at(key), ID, f"{service.name} configs[{index}].{key} must be a string"
                    )


def _names(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    path = compose.path
    for service in compose:
        name = service.get("container_name")
        if name is None and ctx.contract is None:
            continue  # Compose names the container itself; the key rule is a stack's own
        if name is None:
            yield error(
                path, service.pos, ID, f"{service.name} has no container_name; set it to the service key"
            )
        elif str(name) != service.name:
            yield error(
                path,
                service.at("container_name"),
                ID,
                f"container_name '{name}' differs from the service key '{service.name}'; other services reach it by the key",
            )


def _images(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    path = compose.path
    for service in compose:
        image = service.get("image")
        if image is None:
            if "build" not in service.data:
                yield error(path, service.pos, ID, f"{service.name} has no image")
            continue
        if _declared_build(service):
            continue  # the image is the tag `build:` gives what it builds here, not a pull
        text = str(image)
        if DIGEST.search(text):
            continue
        match = _ANY_DIGEST.search(text)
        if match:
            yield error(
                path,
                service.at("image"),
                ID,
                f"{service.name} image digest is malformed; expected @sha256: and 64 lowercase hex",
            )
        else:
            yield error(
                path,
                service.at("image"),
                ID,
                f"{service.name} image '{text}' is not pinned by digest (@sha256:<64 hex>)",
            )


# A service built on the host says why, in the file, where its reviewers read it.
BUILD_REASON = "x-build-reason"


def _declared_build(service: Service) -> bool:
    reason = service.data.get(BUILD_REASON)
    return "build" in service.data and isinstance(reason, str) and bool(reason.strip())


def _builds(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    for service in compose:
        if "build" in service.data and not _declared_build(service):
            yield error(
                compose.path,
                service.at("build"),
                ID,
                f"{service.name} has `build:`; production runs pinned images only, or declare the exception with `{BUILD_REASON}: <why it is built on the host>`",
            )


def _yaml_tricks(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    if GENERATED_MARK not in "\n".join(compose.doc.lines[:5]):
        return
    loaded = compose.doc.loaded
    for kind, positions in (
        ("YAML anchor", loaded.anchors),
        ("YAML alias", loaded.aliases),
        ("YAML merge key `<<`", loaded.merges),
    ):
        for pos in positions:
            yield error(
                compose.path, pos, ID, f"{kind} in a generated file; the generator must write every value out"
            )


# -- secrets --------------------------------------------------------------------------


def _declared_soft(compose: ComposeFile, service: Service, ctx: Context) -> frozenset[str]:
    """Env keys the contract lets this service default softly (the collector's: it must start without its token)."""
    if ctx.pack is not None:
        allowed = ctx.pack.soft_default_env if service.name == ctx.pack.collector else ()
        return frozenset(allowed)
    col = (ctx.contract.telemetry.get("collector") or {}) if ctx.contract is not None else {}
    if service.name != str(col.get("service")):
        return frozenset()
    return frozenset(str(key) for key in col.get("soft_default_env") or ())


def _keyed(key: str, value: str, allowed_soft: bool) -> str | None:
    """Why a secret-like key's value is a literal secret, or None (never the value)."""
    literal = secrets.literal_in(value)
    if literal is None:
        return None
    if literal.kind == "soft-default":
        if allowed_soft and literal.text in secrets.PLACEHOLDERS:
            return None
        return (
            f"has a soft default for ${{{literal.variable}}}, a literal secret whenever the host lacks it; "
            f"write ${{{literal.variable}:?{literal.variable} is required}}"
        )
    var = key if _ENV_NAME.match(key) else "VAR"
    return f"holds a literal value; pass it from the host: ${{{var}:?{var} is required}}"


def _soft_secret_refs(text: str) -> str | None:
    """A soft default of a secret-like variable inside any text: `${PROXY_API_TOKEN:-changeme}`."""
    found, _bad = interp.scan(text)
    for ref in found:
        if ref.operator in {":-", "-", ":+", "+"} and secrets.secret_key(ref.name):
            literal = secrets.literal_in(text[ref.start : ref.end])
            if literal is not None:
                return f"a soft default for ${{{ref.name}}} (a literal secret whenever the host lacks it)"
    return None


def _free_text(text: str) -> str | None:
    """What credential free text carries (a token, a header, a soft default), if any."""
    hit = next(secrets.text_hits(text), None)
    if hit is not None:
        return hit.what
    return _soft_secret_refs(text)


def _env_secrets(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    # That a secret must be required (`:?`), never left empty, is a stack's policy: in a
    # file no stack claims, a placeholder default ("" or "unset") is no secret at all.
    unclaimed = ctx.contract is None and ctx.pack is None
    for service in compose:
        declared = _declared_soft(compose, service, ctx)
        for key, value in service.env.items():
            if not isinstance(value, str) or value == "":
                continue
            pos = service.env_pos.get(key, service.at("environment"))
            if secrets.secret_key(key):
                why = _keyed(key, value, unclaimed or key in declared)
                if why is not None:
                    yield error(compose.path, pos, ID, f"{service.name} env {key} names a secret and {why}")
                continue
            what = _free_text(value)
            if what is not None:
                yield error(
                    compose.path,
                    pos,
                    ID,
                    f"{service.name} env {key} carries {what}; pass it from the host env",
                )


def _label_secrets(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    for service in compose:
        for key, value in service.labels.items():
            if not isinstance(value, str) or value == "":
                continue
            pos = service.label_pos.get(key, service.at("labels"))
            why = _keyed(key, value, False) if secrets.secret_key(key) else None
            what = None if why else _free_text(value)
            if why or what:
                detail = f"names a secret and {why}" if why else f"carries {what}"
                yield error(compose.path, pos, ID, f"{service.name} label {key} {detail}")


def _empty_words(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    """A list item that is one `${VAR:+text}`: unset, Compose keeps it as an empty word."""
    for service in compose:
        for key in ("command", "entrypoint"):
            words = service.data.get(key)  # as written: a string command drops an empty word
            if not isinstance(words, YList):
                continue
            for index, word in enumerate(words):
                switch = switch_of(word) if isinstance(word, str) else None
                if switch is not None:
                    yield error(
                        compose.path,
                        service.at(key, index),
                        ID,
                        f"{service.name} {key} item '{word}' is an empty argument when {switch[0]} is unset "
                        f"(a list keeps it, and the program refuses ''); write the {key} as one string, "
                        "where Compose drops an empty word",
                    )


def _argv_secrets(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    """Every argv a service runs: command, entrypoint, healthcheck test."""
    for service in compose:
        for where, path in (
            ("command", ("command",)),
            ("entrypoint", ("entrypoint",)),
            ("healthcheck test", ("healthcheck", "test")),
        ):
            words = service.value(*path)
            if isinstance(words, str):
                words = [words]
            if not isinstance(words, list):
                continue
            for index, word in enumerate(words):
                if not isinstance(word, str):
                    continue
                flag, equals, attached = word.partition("=")
                following = words[index + 1] if index + 1 < len(words) else None
                value = attached if equals else following
                if (
                    flag.startswith("--")
                    and secrets.secret_key(flag)
                    and isinstance(value, str)
                    and not value.startswith("-")
                    and secrets.literal_in(value) is not None
                ):
                    what: str | None = f"a literal {flag} value"
                else:
                    what = _free_text(word)
                if what is not None:
                    yield error(
                        compose.path,
                        service.at(*path, index),
                        ID,
                        f"{service.name} {where} word {index + 1} carries {what}; pass it from the host env",
                    )


def _config_secrets(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    """Inline configs (`configs.*.content`): nginx, the registrar script, the collector."""
    configs = compose.data.get("configs")
    if not isinstance(configs, YMap):
        return
    col = ctx.contract.telemetry["collector"] if ctx.contract is not None else {}
    for name in configs:
        config = embedded(compose, str(name))
        if config is None:
            continue
        # The collector's config is the one YAML config: its keys are read as keys (the
        # parse is shared with the collector rules). The others are text (nginx, sh).
        parsed = (
            collector(compose, str(name), str(col["receiver"]))
            if col and str(name) == str(col["config"])
            else None
        )
        data = parsed.data if parsed is not None else None
        keyed = list(_yaml_keys(compose.path, config, str(name), data, ())) if isinstance(data, YMap) else []
        yield from keyed
        # One secret, one finding: a line the key check named is not scanned again.
        named = {finding.line for finding in keyed}
        for number, line in enumerate(config.text.split("\n"), start=1):
            hit = next(secrets.text_hits(line), None)
            what = hit.what if hit is not None else _soft_secret_refs(line)
            if what is None:
                continue
            where = config.outer(Pos(number, (hit.start if hit else 0) + 1))
            if where.line not in named:
                yield error(
                    compose.path,
                    where,
                    ID,
                    f"configs.{name}.content line {number} carries {what}; read it from the environment",
                )


def _yaml_keys(
    path: str, config: Embedded, name: str, node: object, trail: tuple[str, ...]
) -> Iterator[Finding]:
    """A YAML config's secret-like keys hold only references (`$${env:VAR}` in the file)."""
    if isinstance(node, YMap):
        for key, value in node.items():
            here = (*trail, str(key))
            # A bare `key:` is a field name (the collector's attribute `key: host.name`).
            if isinstance(value, str) and str(key) != "key" and secrets.secret_key(str(key)):
                why = _keyed(str(key), value, False)
                if why is not None and "soft default" not in why:
                    why = (
                        "holds a literal value; write $${env:VAR} and set VAR in the collector's environment"
                    )
                if why is not None:
                    yield error(
                        path,
                        config.outer(node.at(str(key))),
                        ID,
                        f"configs.{name}.content {'.'.join(here)} names a secret and {why}",
                    )
            else:
                yield from _yaml_keys(path, config, name, value, here)
    elif isinstance(node, YList):
        for index, item in enumerate(node):
            yield from _yaml_keys(path, config, name, item, (*trail, str(index)))
