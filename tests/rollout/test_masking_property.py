"""The planted-secret property: random secrets planted in random places of
random compose files never appear in any format of `diff`, `plan`, `release history`
or `release rollback`.

Places: an environment map and an environment list, argv (`--flag value` and
`--flag=value`), a healthcheck (exec form and CMD-SHELL), labels, inline configs (the
collector's YAML, an nginx conf, a shell script), an `x-` block (also aliased into a
service), a key renamed between base and head (to another secret-like key or to an
innocent one), and a copy of the value under an innocent key. The real CLI runs
in-process (`rollout.cli.main`) on real git repositories; the release commands read
real annotated release tags and render with the real compose binary.

The last tests show the property is not vacuous: with the output boundary switched
off, the same check finds the planted values (in diff and plan; and in release history
and rollback, which print no file values, through a stray tag whose message quotes one).
TIEROPS_MASKING_EXAMPLES sets the diff/plan example count for a longer local run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import string
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rollout.cli import main
from rollout.diff.secret_values import secret_fragments, secret_key
from rollout.release import record as release
from tests.rollout.diffkit import commit, git, new_repo
from tierops.secrets import key_words

FILE = "prod/x.yaml"
FORMATS = ("text", "markdown", "json")

# Values: YAML-quoted places take any printable text; a header credential or a word in
# an nginx/shell line is a token (RFC 7235 token68-like), as real ones are. `$` is left
# out: in a compose file it starts an interpolation.
RICH = string.ascii_letters + string.digits + "-_.+/=~!@#%^&*?<>|[]`'\"\\ é:,;{}"
PLAIN = string.ascii_letters + string.digits + "-_.+/=~"


def _secret(alphabet: str) -> st.SearchStrategy[str]:
    return (
        st.text(alphabet=alphabet, min_size=10, max_size=28)
        .map(str.strip)
        .filter(lambda s: len(s) >= 10 and sum(c.isalpha() for c in s) >= 3)
        # Only what the rule calls a credential: not a path or a bare URL, not a
        # number, never the reference syntax (excluded by the alphabet already).
        .filter(lambda s: secret_fragments(s) == [s])
    )


_PREFIXES = ("", "db", "my", "api", "access", "gateway", "encryption", "pg", "ingest", "admin")
_WORDS = ("token", "password", "pass", "secret", "key", "apikey", "passwd", "credentials", "auth", "pwd")


@st.composite
def secret_keys(draw: st.DrawFn) -> str:
    """A secret-like key in one of the spellings files use: `DB_PASS`, `apiToken`,
    `PGPASSWORD`, `access-token`, `TOKEN2`, `Encryption.Key`."""
    words = [w for w in (draw(st.sampled_from(_PREFIXES)), draw(st.sampled_from(_WORDS))) if w]
    style = draw(st.sampled_from(["upper_snake", "lower_snake", "camel", "kebab", "dotted", "joined"]))
    if style == "upper_snake":
        key = "_".join(words).upper()
    elif style == "lower_snake":
        key = "_".join(words)
    elif style == "camel":
        key = words[0] + "".join(w.capitalize() for w in words[1:])
    elif style == "kebab":
        key = "-".join(words)
    elif style == "dotted":
        key = ".".join(w.capitalize() for w in words)
    else:
        key = "".join(words).upper()
    key += draw(st.sampled_from(["", "", "2", "_1"]))
    # The rule judges (the shared definition, rollout.masking's narrowing): a spelling
    # it does not call secret is no plant.
    return key if secret_key(key) else "API_TOKEN"


def _identifier(key: str) -> str:
    """An env-list / shell-safe spelling of a key (no dots or dashes)."""
    return key.replace(".", "_").replace("-", "_")


def _flag(key: str) -> str:
    """The key as a command-line flag: `dbKey2` -> `--db-key`."""
    return "--" + "-".join(key_words(key))


PLACES = (
    "env-map",
    "env-list",
    "argv-pair",
    "argv-equals",
    "healthcheck",
    "healthcheck-shell",
    "label",
    "collector",
    "nginx",
    "script",
    "x-block",
    "x-alias",
    "renamed-secret",
    "renamed-innocent",
    "copied",
)


@dataclass(frozen=True)
class Plant:
    place: str
    key: str
    base: str | None  # None: absent on that side
    head: str | None


@st.composite
def plants(draw: st.DrawFn) -> Plant:
    place = draw(st.sampled_from(PLACES))
    alphabet = PLAIN if place in ("healthcheck", "healthcheck-shell", "nginx", "script") else RICH
    key = draw(secret_keys())
    secret = _secret(alphabet)
    if place == "argv-pair":
        # `--api-key -x...`: the engine's argparse takes a word that starts with `-` for
        # the next option, never for the value (the engine would not start), so no
        # reading of the file sees it as this flag's value.
        secret = secret.filter(lambda s: not s.startswith("-"))
    base = draw(secret)
    # Same on both sides (a rename, a copy), changed, added or removed.
    head = draw(st.sampled_from(["same", "changed", "added", "removed"]))
    if place in ("renamed-secret", "copied"):
        head = draw(st.sampled_from(["same", "changed"]))
    elif place == "renamed-innocent":
        head = "same"  # a new value under an innocent key only is no secret on either side
    new = {"same": base, "changed": draw(secret), "added": base, "removed": None}[head]
    return Plant(place, key, None if head == "added" else base, new)


@dataclass
class Sides:
    """The two documents being built."""

    docs: tuple[dict[str, Any], dict[str, Any]]
    extras: list[int] = field(default_factory=list)


def skeleton(flags: Sequence[tuple[str, str]], extra_services: int, variant: int) -> dict[str, Any]:
    """A small real-looking compose document: an engine, a proxy and a few others."""
    command = ["sglang", "serve", "--model-path", "/models/m", "--port", "8000"]
    for flag, value in flags:
        command += [flag, value]
    document: dict[str, Any] = {
        "services": {
            "engine": {
                "image": "lmsysorg/sglang:v0.5.16",
                "command": [*command, "--max-running-requests", str(16 + variant)],
                "environment": {"HF_HUB_OFFLINE": "1", "HF_TOKEN": "${HF_TOKEN:-none}"},
                "labels": {"tierops.otel.scrape": "true"},
                "healthcheck": {"test": ["CMD", "curl", "-fsS", "http://localhost:8000/health"]},
            },
            "proxy": {
                "image": "nginx:1.27",
                "environment": ["LOG_LEVEL=info"],
                "configs": ["collector", "nginx_conf", "script"],
            },
        },
        "configs": {
            "collector": {"content": "receivers:\n  otlp: {}\n"},
            "nginx_conf": {"content": "events {}\n"},
            "script": {"content": "#!/bin/sh\nset -eu\n"},
        },
    }
    for number in range(extra_services):
        document["services"][f"worker{number}"] = {
            "image": f"busybox:1.3{number}",
            "command": ["sleep", str(100 + number + variant)],
        }
    return document


def plant(document: dict[str, Any], item: Plant, value: str | None, index: int, side: int) -> None:  # noqa: PLR0912 (one branch per place)
    """Put `value` at `item.place` in `document` (nothing when the side has no value)."""
    if value is None:
        return
    services = document["services"]
    engine, proxy = services["engine"], services["proxy"]
    # One key per plant: two plants under one key would overwrite each other.
    key = f"{item.key}{index}"
    ident = _identifier(key)
    place = item.place
    if place == "env-map":
        engine["environment"][key] = value
    elif place == "env-list":
        proxy["environment"].append(f"{ident}={value}")
    elif place == "argv-pair":
        engine["command"] += [_flag(key), value]
    elif place == "argv-equals":
        engine["command"].append(f"{_flag(key)}={value}")
    elif place == "healthcheck":
        engine["healthcheck"]["test"] += ["-H", f"Authorization: Bearer {value}"]
    elif place == "healthcheck-shell":
        engine["healthcheck"]["test"] = [
            "CMD-SHELL",
            f"curl -fsS -H 'X-Api-Key: {value}' http://localhost:8000/health",
        ]
    elif place == "label":
        engine["labels"][f"com.example.{key}"] = value
    elif place == "collector":
        content = yaml.safe_load(document["configs"]["collector"]["content"])
        headers = content.setdefault("exporters", {}).setdefault("otlphttp", {}).setdefault("headers", {})
        headers[key if index % 2 else "Authorization"] = value if index % 2 else f"Bearer {value}"
        document["configs"]["collector"]["content"] = yaml.safe_dump(content, allow_unicode=True)
    elif place == "nginx":
        document["configs"]["nginx_conf"]["content"] += (
            f'location /p{index} {{ proxy_set_header Authorization "Bearer {value}"; }}\n'
        )
    elif place == "script":
        document["configs"]["script"]["content"] += f"export {ident}='{value}'\n"
    elif place == "x-block":
        document.setdefault("x-credentials", {})[key] = value
    elif place == "x-alias":
        shared = document.setdefault("x-shared-env", {})
        shared[ident] = value
        services.setdefault("aliased", {"image": "busybox:1.36", "command": ["true"]})["environment"] = shared
    elif place == "renamed-secret":
        engine["environment"][key if side == 0 else f"{ident}_NEW"] = value
    elif place == "renamed-innocent":
        engine["environment"][ident if side == 0 else f"SETTING_{index}"] = value
    elif place == "copied":
        engine["environment"][key] = value
        services.setdefault(f"copy{index}", {"image": "busybox:1.36", "command": ["true"], "labels": {}})
        services[f"copy{index}"]["labels"][f"com.example.note{index}"] = value


def build(items: Sequence[Plant], flags: Sequence[tuple[str, str]], extra: int) -> tuple[str, str]:
    """(base text, head text) with every plant in place."""
    texts = []
    for side in (0, 1):
        document = skeleton(flags, extra, side)
        for index, item in enumerate(items):
            plant(document, item, item.base if side == 0 else item.head, index, side)
        texts.append(yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=4096))
    return texts[0], texts[1]


def planted(items: Sequence[Plant]) -> set[str]:
    return {value for item in items for value in (item.base, item.head) if value is not None}


def _markdown(text: str) -> str:
    for char in "\\|<>*_[]`":
        text = text.replace(char, f"\\{char}")
    return text


def leaks(output: str, secrets: set[str]) -> list[str]:
    """The planted values that show in `output`, in any escaping a format applies."""
    found = []
    for value in secrets:
        spellings = {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            _markdown(value),
            value.replace("|", "\\|"),
        }
        if any(spelling in output for spelling in spellings):
            found.append(value)
    return found


_FLAGS = st.lists(
    st.tuples(
        st.sampled_from(["--tp-size", "--chunked-prefill-size", "--max-prefill-tokens", "--context-length"]),
        st.sampled_from(["4", "8192", "32768", "1048576"]),
    ),
    max_size=3,
    unique_by=lambda pair: pair[0],
)


# --------------------------------------------------------------------------- running


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    # hypothesis runs many examples per test: a fresh directory each, not tmp_path.
    with tempfile.TemporaryDirectory(prefix="tierops-mask-") as tmp:
        yield Path(tmp)


def run(repo: Path, argv: Sequence[str]) -> tuple[int, str]:
    """`python -m rollout ARGV` in-process from `repo`: (exit code, stdout + stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(repo), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def diff_and_plan_output(base: str, head: str) -> str:
    """Every format of `diff` and `plan` between a commit of `base` and `head`."""
    with scratch() as tmp:
        repo = new_repo(tmp, {FILE: base}, origin=False)
        commit(repo, {FILE: head}, "head")
        outputs = []
        for command in ("diff", "plan"):
            for fmt in FORMATS:
                code, text = run(repo, [command, "--base", "HEAD~1", "--head", "HEAD", "--format", fmt])
                assert code == 0, text
                outputs.append(text)
    return "\n".join(outputs)


def _tag(repo: Path, name: str) -> None:
    commit_id = git(repo, "rev-parse", "HEAD")
    record = release.record_for_commit(repo, commit_id, release.VERIFY_SKIPPED)
    message = repo / ".git" / f"message-{name}"
    message.write_text(release.format_message(name, record), encoding="utf-8")
    git(repo, "tag", "-a", name, "-F", str(message), commit_id)


def release_output(base: str, head: str) -> str:
    """`release history` and `release rollback` (text and json) over two release tags."""
    with scratch() as tmp:
        repo = new_repo(tmp, {FILE: base}, origin=False)
        _tag(repo, "v0.0.1")
        commit(repo, {FILE: head}, "head")
        _tag(repo, "v0.0.2")
        outputs = []
        for argv in (
            ["release", "history", FILE],
            ["release", "history", FILE, "engine"],
            ["release", "rollback", FILE, "engine", "--format", "text"],
            ["release", "rollback", FILE, "engine", "--format", "json"],
        ):
            code, text = run(repo, argv)
            assert code == 0, text
            outputs.append(text)
    return "\n".join(outputs)


# --------------------------------------------------------------------------- the property


# No shrinking: each example runs the CLI six times, and an unshrunk failure already
# names its plants.
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate)
# About 0.8 s an example (six in-process CLI runs on a fresh git repository).
EXAMPLES = int(os.environ.get("TIEROPS_MASKING_EXAMPLES", "15"))


@settings(max_examples=EXAMPLES, deadline=None, phases=_PHASES, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(plants(), min_size=3, max_size=8), flags=_FLAGS, extra=st.integers(0, 2))
def test_no_planted_secret_appears_in_any_format_of_diff_or_plan(
    items: list[Plant], flags: list[tuple[str, str]], extra: int
) -> None:
    base, head = build(items, flags, extra)
    output = diff_and_plan_output(base, head)
    assert leaks(output, planted(items)) == []


@settings(max_examples=4, deadline=None, phases=_PHASES, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(plants(), min_size=3, max_size=8), flags=_FLAGS)
def test_no_planted_secret_appears_in_release_history_or_rollback(
    items: list[Plant], flags: list[tuple[str, str]]
) -> None:
    # Every service on both sides: a rollback that would orphan one is refused, rightly.
    both = [Plant(item.place, item.key, item.base or item.head, item.head or item.base) for item in items]
    base, head = build(both, flags, 0)
    output = release_output(base, head)
    assert leaks(output, planted(both)) == []


# --------------------------------------------------------------------------- it can fail


# A fixed example with a leak for every reason the issue names: a key renamed to an
# innocent one, keys the old rule missed, hex bearer tokens in argv, healthcheck and
# inline config, and an `x-` block.
LEAKY = [
    Plant("renamed-innocent", "MY_TOKEN", "Rk7-value-of-my-token", "Rk7-value-of-my-token"),
    Plant("env-map", "PGPASSWORD", "pg-old-pass-word", "pg-new-pass-word"),
    Plant("label", "apiToken", "label-api-token-v1", "label-api-token-v2"),
    Plant("healthcheck", "TOKEN2", "0123456789abcdef0123456789abcde1", "0123456789abcdef0123456789abcde2"),
    Plant("nginx", "ACCESS_TOKEN", "fedcba9876543210fedcba9876543211", "fedcba9876543210fedcba9876543212"),
    # an `x-` block is printed only where it reaches a service (the diff shows it there)
    Plant("x-alias", "ENCRYPTION_KEY", "x-block-enc-key-1", "x-block-enc-key-2"),
    Plant("copied", "DB_PASS", "copied-db-pass-1", "copied-db-pass-2"),
]


@contextlib.contextmanager
def _no_boundary() -> Iterator[None]:
    yield


def _switch_off(monkeypatch: pytest.MonkeyPatch, *, model_pass: bool) -> None:
    """Masking as it was before the output boundary (the model pass only), or none at all."""
    import rollout.cli
    import rollout.commands.diff
    import rollout.plan.report

    monkeypatch.setattr(rollout.cli, "boundary", _no_boundary)
    if not model_pass:
        identity: Callable[[Any], Any] = lambda value: value  # noqa: E731
        monkeypatch.setattr(rollout.commands.diff, "mask_changeset", identity)
        monkeypatch.setattr(rollout.plan.report, "mask_text", identity)


def test_the_fixed_leaky_example_passes_with_masking_on() -> None:
    base, head = build(LEAKY, [], 0)
    assert leaks(diff_and_plan_output(base, head), planted(LEAKY)) == []


def test_the_property_finds_every_planted_value_when_masking_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    _switch_off(monkeypatch, model_pass=False)
    base, head = build(LEAKY, [], 0)
    assert sorted(leaks(diff_and_plan_output(base, head), planted(LEAKY))) == sorted(planted(LEAKY))


def test_the_property_finds_the_leaks_of_masking_in_the_model_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # The model pass masks a value where its own key is secret-like; the renamed and
    # copied values sit under innocent keys on one side, and the nginx line is text.
    _switch_off(monkeypatch, model_pass=True)
    base, head = build(LEAKY, [], 0)
    found = leaks(diff_and_plan_output(base, head), planted(LEAKY))
    assert "Rk7-value-of-my-token" in found
    assert "copied-db-pass-2" in found


def _stray_tag_outputs(secret: str) -> str:
    """`release history` and `release rollback` of a file whose DB_PASSWORD is `secret`,
    next to a stray tag whose broken record quotes that value (a hand-made message gone
    wrong): both commands print the reason it is ignored."""
    texts = []
    with scratch() as tmp:
        repo = new_repo(tmp, {FILE: build([], [], 0)[0]}, origin=False)
        _tag(repo, "v0.0.1")
        document = skeleton([], 0, 1)
        document["services"]["engine"]["environment"]["DB_PASSWORD"] = secret
        commit(repo, {FILE: yaml.safe_dump(document, sort_keys=False)}, "head")
        _tag(repo, "v0.0.2")
        message = repo / ".git" / "stray-message"
        message.write_text(f"tierops-release: 1\nservice: DB_PASSWORD={secret}\n", encoding="utf-8")
        git(repo, "tag", "-a", "v0.0.3", "-F", str(message), "HEAD")
        for argv in (["release", "history", FILE], ["release", "rollback", FILE, "engine"]):
            code, text = run(repo, argv)
            assert code == 0, text
            assert "v0.0.3 ignored: unreadable release record" in text
            texts.append(text)
    return "\n".join(texts)


def test_release_history_and_rollback_output_passes_the_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "quoted-by-a-stray-tag-1"
    assert leaks(_stray_tag_outputs(secret), {secret}) == []
    _switch_off(monkeypatch, model_pass=False)
    assert leaks(_stray_tag_outputs(secret), {secret}) == [secret]
