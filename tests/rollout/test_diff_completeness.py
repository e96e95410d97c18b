"""Completeness: applying the change model to the base yields the head, after normalisation.

Pinned three ways: as a hypothesis property over generated compose documents (every
spelling the diff accepts, secrets included, masked and unmasked), on every
consecutive pair of this repository's own commits that touched prod/, and on the
dyntok change generated from the real generators.
"""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators.cli import main as generate
from rollout import git
from rollout.diff.boundary import mask_file, mask_form
from rollout.diff.changes import ChangeSet, FileChange, Side, Status
from rollout.diff.compare import compare
from rollout.diff.document import diff_document
from rollout.diff.forms import EMPTY, Document, from_data, read
from rollout.diff.snapshot import Snapshot, read_snapshot
from rollout.diff.walk import same
from tests.conftest import FLEET
from tests.rollout.diff_oracle import apply_changes, apply_file
from tests.rollout.diffkit import LONG, ROOT, new_repo, run_cli, write

WORDS = st.sampled_from(["a", "b", "x-1", "8000", "true", "", "4096", "hf_AbCdEfGhIjKlMnOpQrStUv12"])
SCALARS = st.one_of(WORDS, st.integers(-2, 3), st.booleans(), st.none(), st.sampled_from([0.5, 1.0]))
KEYS = st.sampled_from(["alpha", "beta", "gamma", "api_token", "mode"])


def nested(depth: int = 2) -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)
        ),
        max_leaves=depth * 4,
    )


FLAGS = st.sampled_from(["--a", "--b", "--c", "--tp", "--tp-size", "--api-key", "-f"])
TOKENS = st.lists(
    st.one_of(
        FLAGS,
        WORDS.filter(bool),
        st.builds(lambda flag, value: f"{flag}={value}", FLAGS.filter(lambda f: f.startswith("--")), WORDS),
    ),
    max_size=8,
)
COMMANDS = st.one_of(
    st.none(),
    st.builds(lambda head, tokens: [head, *tokens], st.sampled_from(["serve", "sglang"]), TOKENS),
    st.builds(lambda tokens: shlex.join(["serve", *tokens]), TOKENS),
)
ENV_KEYS = st.sampled_from(["HF_TOKEN", "NCCL_DEBUG", "MODE", "PROXY_API_TOKEN"])
ENV_VALUES = st.one_of(
    st.none(),
    WORDS,
    st.sampled_from(["${HUGGING_FACE_HUB_TOKEN}", "${X:-default}", "sk-live-0123456789abcdefXYZ"]),
)
ENVIRONMENTS = st.one_of(
    st.dictionaries(ENV_KEYS, ENV_VALUES, max_size=4),
    st.lists(
        st.builds(lambda k, v: k if v is None else f"{k}={v}", ENV_KEYS, ENV_VALUES), max_size=4, unique=True
    ),
)
DEVICES = st.lists(
    st.fixed_dictionaries(
        {"driver": st.just("nvidia"), "device_ids": st.lists(st.sampled_from("01234567"), max_size=4)},
        optional={"capabilities": st.just(["gpu"])},
    ),
    min_size=1,
    max_size=2,
)
SERVICE_KEYS: dict[str, st.SearchStrategy[Any]] = {
    "image": st.sampled_from(["img:1", "img:2", "sglang@sha256:" + "a" * 64]),
    "command": COMMANDS,
    "entrypoint": COMMANDS,
    "environment": ENVIRONMENTS,
    "labels": ENVIRONMENTS,
    "deploy": st.builds(lambda devices: {"resources": {"reservations": {"devices": devices}}}, DEVICES),
    "ports": st.lists(st.one_of(st.sampled_from(["8000:8000", "8444:443"]), nested(1)), max_size=3),
    "volumes": st.lists(st.sampled_from(["a:/a", "b:/b:ro", "c:/c"]), max_size=3),
    "depends_on": st.one_of(
        st.lists(st.sampled_from(["s1", "s2"]), unique=True, max_size=2),
        st.dictionaries(
            st.sampled_from(["s1", "s2"]),
            st.fixed_dictionaries({"condition": st.sampled_from(["service_started", "service_healthy"])}),
            max_size=2,
        ),
    ),
    "healthcheck": st.dictionaries(
        st.sampled_from(["test", "interval", "retries"]),
        st.one_of(WORDS, st.lists(WORDS, max_size=3)),
        max_size=3,
    ),
    "ulimits": nested(),
    "cap_add": st.lists(WORDS, max_size=3),
    "configs": st.lists(st.sampled_from(["c1", "c2"]), max_size=2, unique=True),
}
SERVICES = st.fixed_dictionaries({}, optional=SERVICE_KEYS)
SPELLED = frozenset({"command", "entrypoint", "environment", "labels", "depends_on"})
YAML_CONTENT = st.builds(
    lambda jobs, extra: json.dumps(
        {"receivers": {"prometheus": {"config": {"scrape_configs": jobs}}}, "exporters": extra}
    ),
    st.lists(
        st.fixed_dictionaries(
            {
                "job_name": st.sampled_from(["r1", "r2", "proxy"]),
                "static_configs": st.lists(
                    st.fixed_dictionaries({"labels": st.dictionaries(KEYS, WORDS, max_size=3)}), max_size=2
                ),
            }
        ),
        max_size=3,
    ),
    nested(),
)
TEXT_CONTENT = st.lists(
    st.sampled_from(["server {", "  listen 8000;", "}", "# comment", "token hf_x"]), max_size=6
).map("\n".join)
CONFIGS = st.dictionaries(
    st.sampled_from(["c1", "c2"]),
    st.fixed_dictionaries({"content": st.one_of(YAML_CONTENT, TEXT_CONTENT)}, optional={"file": WORDS}),
    max_size=2,
)
DOCUMENTS = st.fixed_dictionaries(
    {"services": st.dictionaries(st.sampled_from(["s1", "s2", "s3"]), SERVICES, max_size=3)},
    optional={
        "name": st.sampled_from(["glm53", "other"]),
        "configs": CONFIGS,
        "networks": nested(),
        "x-extra": nested(),
    },
)


def document(data: dict[str, Any]) -> Document:
    """Plain data read as a compose file would be (JSON is YAML)."""
    return from_data(data, where="prod/x.yaml")


def diff(base: dict[str, Any], head: dict[str, Any]) -> FileChange:
    return diff_document(document(base), document(head), path="prod/x.yaml")


def document_form(data: dict[str, Any]) -> dict[str, Any]:
    return document(data).form


def load_documents(data: bytes, *, where: str) -> list[dict[str, Any]]:
    return [read(data, where=where).form]


def assert_complete(base: dict[str, Any], head: dict[str, Any], file: FileChange) -> None:
    """The model, applied to the base form, is the head form; likewise masked."""
    assert_forms_complete(document_form(base), document_form(head), file)


def assert_forms_complete(base_form: dict[str, Any], head_form: dict[str, Any], file: FileChange) -> None:
    assert same(apply_file(base_form, file), head_form)
    masked = mask_file(file)
    assert same(apply_file(mask_form(base_form), masked), mask_form(head_form))


def mutate(data: st.DataObject, value: Any, depth: int = 0) -> Any:
    """A copy of `value` with a few random edits somewhere inside (head = base + edits)."""
    if depth < 4 and isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        result = dict(value)
        result[key] = mutate(data, value[key], depth + 1)
        return result
    if depth < 4 and isinstance(value, list) and value and data.draw(st.booleans()):
        result_list = list(value)
        index = data.draw(st.integers(0, len(value) - 1))
        action = data.draw(st.sampled_from(["edit", "insert", "delete"]))
        if action == "edit":
            result_list[index] = mutate(data, value[index], depth + 1)
        elif action == "insert":
            result_list.insert(index, data.draw(SCALARS))
        else:
            del result_list[index]
        return result_list
    return data.draw(nested())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, DOCUMENTS)
def test_applying_the_model_to_any_base_yields_the_head(base: dict[str, Any], head: dict[str, Any]) -> None:
    assert_complete(base, head, diff(base, head))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, st.data())
def test_applying_the_model_of_small_edits_yields_the_head(base: dict[str, Any], data: st.DataObject) -> None:
    head = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(1, 3))):
        name = data.draw(st.sampled_from(sorted(head["services"]) or ["s1"]))
        service = head["services"].get(name, {})
        key = data.draw(st.sampled_from(sorted(SERVICE_KEYS)))
        # Spelled keys must stay spellable (a dict `command` is an input error, tested elsewhere).
        if key in service and key not in SPELLED and data.draw(st.booleans()):
            service = {**service, key: mutate(data, service[key])}
        else:
            service = {**service, key: data.draw(SERVICE_KEYS[key])}
        head["services"][name] = service
    assert_complete(base, head, diff(base, head))


@settings(max_examples=100, deadline=None)
@given(nested(3), nested(3))
def test_deepdiff_reports_replay_exactly_or_fall_back_to_one_whole_change(before: Any, after: Any) -> None:
    base = {"services": {"s": {"other": before}}}
    head = {"services": {"s": {"other": after}}}
    file = diff(base, head)
    assert_complete(base, head, file)


# Few values, so a splice leaves items equal to others around it (DeepDiff aligns those).
LETTERS = st.sampled_from(["a", "b", "c", None])


def spliced(data: st.DataObject, items: list[Any]) -> list[Any]:
    """`items` with a run deleted and another inserted: removed base positions and added
    head positions that may coincide (which DeepDiff alone would merge into one change)."""
    at = data.draw(st.integers(0, len(items) - 1))
    result = items[:at] + items[at + data.draw(st.integers(1, 3)) :]
    at = data.draw(st.integers(0, len(result)))
    result[at:at] = data.draw(st.lists(LETTERS, min_size=1, max_size=3))
    return result


@settings(max_examples=300, deadline=None)
@given(st.lists(LETTERS, min_size=1, max_size=8), st.data())
def test_deepdiff_reports_of_spliced_lists_replay_exactly(before: list[Any], data: st.DataObject) -> None:
    base = {"services": {"s": {"other": before}}}
    head = {"services": {"s": {"other": spliced(data, before)}}}
    assert_complete(base, head, diff(base, head))


@settings(max_examples=150, deadline=None)
@given(st.one_of(YAML_CONTENT, TEXT_CONTENT), st.one_of(YAML_CONTENT, TEXT_CONTENT))
def test_inline_config_contents_replay_exactly_as_yaml_or_text(before: str, after: str) -> None:
    base = {"services": {"s": {"configs": ["c1"]}}, "configs": {"c1": {"content": before}}}
    head = {"services": {"s": {"configs": ["c1"]}}, "configs": {"c1": {"content": after}}}
    assert_complete(base, head, diff(base, head))


GARBAGE_SERVICES = st.dictionaries(
    st.sampled_from([*sorted(SERVICE_KEYS), "restart", "gpus", "runtime"]), nested(), max_size=5
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["s1", "s2"]), GARBAGE_SERVICES, max_size=2),
    st.dictionaries(st.sampled_from(["s1", "s2"]), GARBAGE_SERVICES, max_size=2),
)
def test_malformed_services_are_an_input_error_or_a_complete_diff_never_a_crash(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    base, head = {"services": before}, {"services": after}
    # A value Compose would refuse is compared as the model read it (the validators
    # report it): the diff stays complete, and never crashes.
    assert_complete(base, head, diff(base, head))


def snapshot(commit: str | None, repo: Path = ROOT) -> dict[str, bytes]:
    """prod/ at a commit as the diff reads it (its YAML files; a stray file is no compose file)."""
    if commit is None:
        return {}
    return read_snapshot(repo, Side("", commit), ["prod"]).files


def assert_changeset_complete(changeset: ChangeSet, old: dict[str, bytes], new: dict[str, bytes]) -> int:
    checked = 0
    for file in changeset.files:
        assert file.status is not Status.ERROR, file.error
        before = (
            load_documents(old[file.old_path or file.path], where="base")
            if file.status is not Status.ADDED
            else [EMPTY.form]
        )
        after = (
            load_documents(new[file.path], where="head")
            if file.status is not Status.REMOVED
            else [EMPTY.form]
        )
        index = (file.document or 1) - 1
        base_doc = before[index] if index < len(before) else EMPTY.form
        head_doc = after[index] if index < len(after) else EMPTY.form
        assert_forms_complete(base_doc, head_doc, file)
        checked += 1
    return checked


def test_every_commit_of_this_repository_that_touched_prod_is_replayed_exactly() -> None:
    history = git.commits_touching(ROOT, "prod")
    assert history, "this repository has no commit touching prod/ (a shallow clone? fetch the history)"
    checked = 0
    for commit, parent in history:
        old, new = snapshot(parent), snapshot(commit)
        if old == new:
            continue  # the commit touched only a file in prod/ that is no compose file
        changeset = compare(Snapshot(Side("p", parent), old), Snapshot(Side("c", commit), new), ["prod"])
        assert changeset.files, f"{commit[:7]} touched prod/ but the diff saw no file change"
        checked += assert_changeset_complete(changeset, old, new)
    assert checked >= 1


def test_the_dyntok_change_is_replayed_exactly(tmp_path: Path) -> None:
    targets = tmp_path / "targets.yaml"
    source = (FLEET / "generators" / "glm53.targets.yaml").read_text(encoding="utf-8")
    targets.write_text("".join(line for line in source.splitlines(True) if "- dyntok" not in line))
    (tmp_path / "prod").mkdir()
    assert (
        generate(
            [
                "--write",
                "--source",
                str(FLEET / "generators" / "glm53.source.yaml"),
                "--targets-file",
                str(targets),
                "--prod-dir",
                str(tmp_path / "prod"),
            ]
        )
        == 0
    )
    old = {f"prod/{path.name}": path.read_bytes() for path in (tmp_path / "prod").iterdir()}
    new = {f"prod/{path.name}": path.read_bytes() for path in (FLEET / "prod").iterdir()}
    changeset = compare(Snapshot(Side("b", "1" * 40), old), Snapshot(Side("", None), new), ["prod"])
    assert [file.path for file in changeset.files] == ["prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"]
    assert assert_changeset_complete(changeset, old, new) == 1


def test_applying_to_the_wrong_base_is_refused() -> None:
    base = {"services": {"s": {"command": ["serve", "--a", "1"]}}}
    head = {"services": {"s": {"command": ["serve"]}}}
    file = diff(base, head)
    wrong = document_form({"services": {"s": {"command": ["serve"]}}})
    try:
        apply_changes(wrong, file.all_changes())
    except ValueError as error:
        assert "no item 0 to remove" in str(error)
    else:
        raise AssertionError("applying to a base without the flag must fail")


def test_the_printed_json_applied_to_the_base_yields_the_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    head = (FLEET / LONG).read_text(encoding="utf-8")
    base = head.replace("      - --enable-dynamic-batch-tokenizer\n", "").replace('"0.80"', '"0.85"')
    repo = new_repo(tmp_path, {LONG: base, "prod/gone.yaml": "services:\n  a:\n    image: a\n"})
    write(repo, {LONG: head, "prod/gone.yaml": None, "prod/new.yaml": "services:\n  b:\n    image: b\n"})
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["diff", "--format", "json"])
    assert code == 0
    printed = ChangeSet.from_json(json.loads(out))
    assert printed.masked
    old = {LONG: base, "prod/gone.yaml": "services:\n  a:\n    image: a\n"}
    new = {LONG: head, "prod/new.yaml": "services:\n  b:\n    image: b\n"}
    assert len(printed.files) == 3
    for file in printed.files:
        before = load_documents(old[file.path].encode(), where="b")[0] if file.path in old else EMPTY.form
        after = load_documents(new[file.path].encode(), where="h")[0] if file.path in new else EMPTY.form
        assert same(apply_file(mask_form(before), file), mask_form(after))
