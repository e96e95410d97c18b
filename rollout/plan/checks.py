"""How an operator verifies a recreated service, derived from its definition and its change.

Each check names what it proves, how to read it through compose-manager (`GET
/docker/ps`, `POST /compose/logs`: the hosts are confidential VMs, an operator may
have no shell there) and the same reading as a shell command on the host, in the
project compose-manager runs the file under. Only what the change can move is
checked, so a check cannot pass with the old container still running:

- every service: running, healthy when it has a healthcheck;
- an image change: the container runs the new image reference (`docker ps` shows the
  reference a container was created from);
- a changed `config_variant` label: the container carries the new value, and the
  metrics show it once the collector has been recreated;
- an SGLang engine: one real completion through that replica alone, and one check per
  flag the change added, removed or changed (the model path included: a new model
  revision is a new snapshot directory): the startup `server_args` line shows the new
  value, as the operator runbook does by hand (`'enable_dynamic_batch_tokenizer': True`);
- telemetry: running, and its series present.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rollout.diff.changes import ABSENT, Aspect, Change, Op
from rollout.plan import deployer
from tierops.argv import split_argv
from tierops.errors import TieropsError
from tierops.roles import Role, SpellingError, command_tokens, gpu_device_ids, image_name, key_values
from tierops.secrets import secret_key

VARIANT_LABEL = "tierops.otel.config_variant"
# How rollout/diff/masking.py shows a masked value (`<secret sha256:1a2b3c4d>`).
_MASKED = re.compile(r"<secret\b")


@dataclass(frozen=True)
class Check:
    what: str
    command: str  # on the host, in a shell
    expect: str
    api: str = ""  # the same reading through compose-manager's API, when it has one
    # What `rollout apply` reads: running, healthy, image, label, job (through GET
    # /docker/ps), server_args (POST /compose/logs); shell and promql are the operator's.
    kind: str = "shell"
    key: str = ""  # the label key (label), the server_args text (server_args)

    def to_json(self) -> dict[str, str]:
        out = {"what": self.what, "command": self.command, "expect": self.expect, "kind": self.kind}
        if self.api:
            out["api"] = self.api
        if self.key:
            out["key"] = self.key
        return out


def compose_prefix(file: str, project: str | None = None) -> str:
    """`docker compose -p PROJECT -f FILE`, the project compose-manager runs the file
    under (its default when the fleet's data names none): from another directory, a
    command without `-p` would look for the containers in another project."""
    return shlex.join(["docker", "compose", "-p", project or deployer.load().default_project, "-f", file])


def _ps_api(name: str, what: str) -> str:
    return f"GET /docker/ps: the line whose Names is {name}: {what}"


def checks_for(
    file: str,
    name: str,
    role: str,
    service: Mapping[str, Any],
    stem: str,
    changes: Sequence[Change] = (),
    project: str | None = None,
) -> tuple[Check, ...]:
    """The verification of one service after its `up`, from the definition it now runs
    and the changes that brought it there."""
    compose = compose_prefix(file, project)
    checks = [_health(compose, name, service)]
    labels = _labels(service)
    checks += _image(compose, name, service, changes)
    if role == Role.ENGINE:
        checks += _engine(compose, name, service, labels, changes)
        checks += flag_checks(compose, name, service, changes, file)
    elif role == Role.COLLECTOR:
        checks.append(
            Check(
                "the collector starts cleanly",
                f"{compose} logs --since 5m {shlex.quote(name)} 2>&1 | grep -iE 'error|invalid' || true",
                "no error lines",
            )
        )
        deployment = labels.get("tierops.otel.deployment") or stem
        checks.append(
            Check(
                "every scrape job reports, with its labels (PromQL)",
                f'count by (job, config_variant) (up{{deployment="{deployment}"}} == 1)',
                "one series per scrape job; each engine with the config_variant it runs after this step",
                kind="promql",
            )
        )
    elif role == Role.DCGM:
        try:
            gpus = gpu_device_ids(service) or []
        except TypeError:  # a malformed reservation: no count to promise
            gpus = []
        deployment = labels.get("tierops.otel.deployment") or stem
        checks.append(
            Check(
                "GPU metrics arrive (PromQL)",
                f'count(DCGM_FI_DEV_GPU_UTIL{{deployment="{deployment}"}})',
                f"{len(gpus)} (one series per GPU)" if gpus else "one series per GPU",
                kind="promql",
            )
        )
    elif role == Role.ONE_SHOT:
        checks[0] = Check(
            "the job ran to completion",
            f"{compose} ps -a --format '{{{{.Service}}}} {{{{.State}}}} {{{{.ExitCode}}}}' {shlex.quote(name)}",
            f"{name} exited 0",
            kind="job",
        )
    elif role == Role.PROXY:
        checks.append(
            Check(
                "the proxy sees its backends healthy",
                f"{compose} logs --since 5m {shlex.quote(name)} 2>&1 | grep -iE 'unhealthy|error' || true",
                "no unhealthy backend after the start",
            )
        )
    return tuple(checks)


def _health(compose: str, name: str, service: Mapping[str, Any]) -> Check:
    healthcheck = service.get("healthcheck")
    state = "{{.Service}} {{.State}} {{.Health}}"
    command = f"{compose} ps --format '{state}' {shlex.quote(name)}"
    if isinstance(healthcheck, Mapping) and not healthcheck.get("disable"):
        wait = healthcheck.get("start_period")
        within = f" (allow its start_period, {wait})" if wait else ""
        return Check(
            f"healthy{within}",
            command,
            f"{name} running healthy",
            _ps_api(name, "State running, Status (healthy)"),
            kind="healthy",
        )
    return Check("running", command, f"{name} running", _ps_api(name, "State running"), kind="running")


def _image(compose: str, name: str, service: Mapping[str, Any], changes: Sequence[Change]) -> list[Check]:
    """After an image change, the container must run the new reference: health and
    labels alone pass with the old image still running."""
    image = service.get("image")
    if not isinstance(image, str) or not any(change.aspect is Aspect.IMAGE for change in changes):
        return []
    return [
        Check(
            "it runs the new image",
            f"docker inspect -f '{{{{.Config.Image}}}}' $({compose} ps -q {shlex.quote(name)})",
            image,
            _ps_api(name, f"Image is {image}"),
            kind="image",
        )
    ]


def _labels(service: Mapping[str, Any]) -> dict[str, str]:
    try:
        return {key: value or "" for key, value in key_values(service.get("labels"), what="labels").items()}
    except SpellingError:
        return {}


def _real_request(
    options: Mapping[str, str], switches: set[str], model: str
) -> tuple[str, str, dict[str, Any], str]:
    """What one real request to the engine is, by what it serves: a pooling model (vLLM
    `--runner pooling`, SGLang `--is-embedding`) answers embeddings, or scores when it
    is converted to a classifier (a reranker); anything else a chat completion."""
    pooling = (
        options.get("--runner") == "pooling"
        or "--is-embedding" in switches
        or options.get("--task")
        in (
            "embed",
            "embedding",
            "score",
            "classify",
        )
    )
    if pooling and (options.get("--convert") == "classify" or options.get("--task") in ("score", "classify")):
        return (
            "score",
            "/v1/score",
            {"model": model, "text_1": "Is this OK?", "text_2": ["OK."]},
            "HTTP 200 with one score",
        )
    if pooling:
        return "embedding", "/v1/embeddings", {"model": model, "input": "OK"}, "HTTP 200 with one embedding"
    request = {"model": model, "messages": [{"role": "user", "content": "Reply with OK."}], "max_tokens": 8}
    return "completion", "/v1/chat/completions", request, "HTTP 200 with one choice"


def _engine(
    compose: str, name: str, service: Mapping[str, Any], labels: Mapping[str, str], changes: Sequence[Change]
) -> list[Check]:
    options = _options(service)
    port = options.get("--port") or "8000"
    model = options.get("--served-model-name") or options.get("--model-path") or options.get("--model") or ""
    what, path, request, expect = _real_request(options, _switches(service), model)
    body = json.dumps(request, separators=(",", ":"))
    url = f"http://localhost:{port}{path}"
    checks = [
        Check(
            f"one real {what} through this replica alone",
            f"{compose} exec -T {shlex.quote(name)} curl -fsS --max-time 300 {url} "
            f"-H 'Content-Type: application/json' -d {shlex.quote(body)}",
            expect,
        )
    ]
    variant = labels.get(VARIANT_LABEL)
    # Only a variant the change moved proves anything: an unchanged label reads the same
    # on the old container.
    moved = any(
        change.aspect is Aspect.LABELS and VARIANT_LABEL in (change.subject, *map(str, change.path))
        for change in changes
    )
    if variant and (moved or not changes):
        label = "{{index .Config.Labels " + json.dumps(VARIANT_LABEL) + "}}"
        checks.append(
            Check(
                "the container carries the config_variant this step deploys",
                f"docker inspect -f {shlex.quote(label)} $({compose} ps -q {shlex.quote(name)})",
                variant,
                _ps_api(name, f"Labels hold {VARIANT_LABEL}={variant}"),
                kind="label",
                key=VARIANT_LABEL,
            )
        )
        metric = "vllm:num_requests_running" if "vllm" in _engine_kind(service) else "sglang_num_running_reqs"
        checks.append(
            Check(
                "its config_variant is seen in metrics (PromQL; the scrape label follows the collector step)",
                f'count by (container_name, config_variant) ({metric}{{container_name="{name}"}})',
                f'config_variant="{variant}"',
                kind="promql",
            )
        )
    return checks


def flag_checks(
    compose: str, name: str, service: Mapping[str, Any], changes: Sequence[Change], file: str = ""
) -> list[Check]:
    """One check per flag added, removed or changed: the SGLang engine's startup
    `server_args` line shows the value it now runs with. The key is the flag with
    underscores (`--enable-dynamic-batch-tokenizer` -> `enable_dynamic_batch_tokenizer`);
    the value is printed as Python prints it, typed by the pinned build's manifest.
    Other engine programs print their arguments differently: no check is invented; nor
    for a secret flag (its value is masked, and the check would print it)."""
    if "sglang" not in _engine_kind(service):
        return []
    image = str(service.get("image") or "")
    read = f"{compose} logs --no-log-prefix {shlex.quote(name)} 2>&1 | grep -m1 server_args"
    wanted: dict[str, tuple[str, str]] = {}  # key -> (what, expect); the last change of a flag wins
    for change in changes:
        if change.aspect is not Aspect.ARGV:
            continue
        old = change.old if isinstance(change.old, Mapping) else {}
        new = change.new if isinstance(change.new, Mapping) else {}
        flag = str(new.get("flag") or old.get("flag") or "")
        if not flag.startswith("-"):
            continue  # a positional argument or the program: no server_args key
        key = flag.lstrip("-").replace("-", "_")
        values = (str(old.get("value")), str(new.get("value")))
        if secret_key(flag) or any(_MASKED.match(value) for value in values):
            # A secret's value is masked in the model; reading it back would print it.
            wanted.pop(key, None)
            continue
        if change.op is Op.REMOVED or change.new is ABSENT:
            value = old.get("value")
            if value is None:
                wanted[key] = (f"{flag} is off", f"'{key}': False")
            else:
                wanted[key] = (
                    f"{flag} is back to the build's default",
                    f"'{key}': <the default>, no longer {_python_value(flag, value, image)}",
                )
        elif change.op is Op.CHANGED and old == new:
            continue  # moved, same value: nothing new to see at startup
        else:
            value = new.get("value")
            shown = "True" if value is None else _python_value(flag, value, image)
            verb = "is on" if value is None else f"is {shown}"
            wanted[key] = (f"{flag} {verb}", f"'{key}': {shown}")
    checks: list[Check] = []
    for key, (what, expect) in wanted.items():
        pattern = "'" + key + "': [^,})]*"
        # Double quotes read better than shlex's '"'"' and are safe for an identifier key.
        pattern = f'"{pattern}"' if re.fullmatch(r"\w+", key) else shlex.quote(pattern)
        body = json.dumps({"file": file, "services": [name], "tail": 100000}) if file else ""
        api = f"POST /compose/logs {body}: the first server_args line" if body else ""
        checks.append(
            Check(
                f"startup server_args: {what}",
                f"{read} | grep -o {pattern}",
                expect,
                api,
                kind="server_args" if api else "shell",
            )
        )
    return checks


def _python_value(flag: str, value: Any, image: str = "") -> str:
    """How the engine's server_args print a CLI value: by the flag's type in the
    manifest of the engine's build, else by the value's shape (an int, a float, else a
    quoted string)."""
    if isinstance(value, list):
        return "[" + ", ".join(_python_value(flag, item, image) for item in value) + "]"
    text = str(value)
    kind = _flag_types(image).get(flag)
    try:
        if kind == "int" or (kind is None and re.fullmatch(r"-?\d+", text)):
            return repr(int(text))
        if kind == "float" or (kind is None and re.fullmatch(r"-?\d*\.\d+(e-?\d+)?", text)):
            return repr(float(text))
    except ValueError:
        pass
    return repr(text)


@functools.lru_cache(maxsize=8)
def _flag_types(image: str) -> dict[str, str | None]:
    """Flag -> argparse type in the SGLang build that runs `image` (its manifest plus
    patch flags), else in the first SGLang build listed (server_args are SGLang's);
    empty when no manifest can be read (the shape rule then decides)."""
    try:
        # Imported here: only engines with flag changes need the manifest.
        from validators.contract import load_builds
        from validators.manifest import HERE, load_manifest

        sglang = [build for build in load_builds() if build.engine == "sglang"]
        build = next((b for b in sglang if image in b.images), sglang[0] if sglang else None)
        if build is None:
            return {}
        manifest = load_manifest(HERE / build.manifest)
    except (TieropsError, OSError):
        return {}
    types: dict[str, str | None] = {flag: spec.type for flag, spec in manifest.flags.items()}
    types.update({flag: patch.type for flag, patch in build.patch_flags.items()})
    return types


def _options(service: Mapping[str, Any]) -> dict[str, str]:
    try:
        tokens = command_tokens(service.get("command")) or []
    except SpellingError:
        return {}
    return {option.flag: option.value for option in split_argv(tokens).options if option.value is not None}


def _switches(service: Mapping[str, Any]) -> set[str]:
    """The flags written without a value (`--is-embedding`)."""
    try:
        tokens = command_tokens(service.get("command")) or []
    except SpellingError:
        return set()
    return {option.flag for option in split_argv(tokens).options if option.value is None}


def _engine_kind(service: Mapping[str, Any]) -> str:
    try:
        tokens = command_tokens(service.get("entrypoint")) or []
        tokens += command_tokens(service.get("command")) or []
    except SpellingError:
        tokens = []
    return " ".join([image_name(service), *tokens[:3]]).lower()


def served_model(name: str, service: Mapping[str, Any]) -> str:
    """The model an engine serves: `--served-model-name`, else its model path, else the
    model word of `vllm serve MODEL`, else its `model` label, else its own name (an
    engine whose model nothing names)."""
    options = _options(service)
    for flag in ("--served-model-name", "--model-path", "--model"):
        if options.get(flag):
            return options[flag]
    try:
        program = split_argv(command_tokens(service.get("command")) or []).program
    except SpellingError:
        program = ()
    if len(program) >= 3 and program[1] == "serve":  # `vllm serve MODEL ...`
        return program[2]
    labels = _labels(service)
    return labels.get("tierops.otel.model") or labels.get("model") or name


def replica_number(name: str, service: Mapping[str, Any]) -> int | None:
    """The replica's number: the `instance` label, else a trailing `r<N>`/`-<N>` in its name."""
    labels = _labels(service)
    for key in ("tierops.otel.instance", "instance"):
        if re.fullmatch(r"[0-9]+", labels.get(key, "")):
            return int(labels[key])
    match = re.search(r"(\d+)$", name)
    return int(match.group(1)) if match else None


def rollout_order(service: Mapping[str, Any]) -> int | None:
    """An explicit `tierops.rollout.order` label (lower goes first), when the file says so."""
    value = _labels(service).get("tierops.rollout.order", "")
    return int(value) if re.fullmatch(r"-?[0-9]+", value) else None
