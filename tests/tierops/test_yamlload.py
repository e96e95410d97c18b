"""The one loader: what it reads as Compose reads it, what it refuses, and hostile input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FLEET
from tests.tierops import oracle
from tierops.errors import InputError
from tierops.yamlload import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    Loaded,
    LoadError,
    Pos,
    YList,
    YMap,
    load_bytes,
    load_path,
    resolve_plain,
)

ROOT = Path(__file__).resolve().parents[2]
FILES = [*sorted((FLEET / "prod").glob("*.yaml")), *sorted((Path(__file__).parent / "corpus").glob("*.yaml"))]


def _load(text: str) -> Loaded:
    return load_bytes(text.encode(), "f.yaml")


def _refusal(text: str | bytes) -> LoadError:
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(LoadError) as caught:
        load_bytes(raw, "f.yaml")
    return caught.value


# --- positions and quoting ----------------------------------------------------------


def test_every_key_and_item_keeps_its_1_based_line_and_column() -> None:
    loaded = _load("services:\n  a:\n    image: x\n    command: [one, 'two']\n")
    service = loaded.documents[0]["services"]["a"]
    assert isinstance(service, YMap)
    assert service.at("image") == Pos(3, 5)
    assert service.value_at("image") == Pos(3, 12)
    command = service["command"]
    assert isinstance(command, YList)
    assert command.at(1) == Pos(4, 20)
    assert loaded.quote(command.item_span[1]) == "'two'"


def test_a_scalar_is_quoted_exactly_as_written() -> None:
    loaded = _load('services:\n  a:\n    shm_size: "64"\n    init: yes\n')
    service = loaded.documents[0]["services"]["a"]
    assert service["shm_size"] == "64"
    assert loaded.quote(service.value_span["shm_size"]) == '"64"'
    assert loaded.quote(service.value_span["init"]) == "yes"


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("1_000", 1000),
        ("0b11", 3),
        ("0x1F", 31),
        ("0o17", 15),
        ("017", 15),
        ("08", 8.0),
        ("1e3", 1000.0),
        ("+1", 1),
        (".5", 0.5),
        ("yes", "yes"),
        ("True", True),
        ("~", None),
        (".inf", float("inf")),
        ("1.2.3", "1.2.3"),
    ],
)
def test_plain_scalars_resolve_as_yaml_v3_resolves_them(written: str, value: object) -> None:
    assert _load(f"a: {written}\n").documents[0]["a"] == value


# --- two parsers, one result ----------------------------------------------------------


def test_where_libyaml_refuses_what_compose_accepts_the_pure_parser_reads_it() -> None:
    text = "services:\n  a:\n    image: busybox\n    command: [echo, a:]\n"
    loaded = _load(text)
    assert loaded.parser == "pure"
    assert loaded.documents[0]["services"]["a"]["command"] == ["echo", "a:"]
    rendered = oracle.render(text, {})
    assert rendered.model is not None
    assert rendered.model["services"]["a"]["command"] == ["echo", "a:"]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_both_parsers_give_identical_data_and_positions(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = path.read_bytes()
    fast = load_bytes(raw, path.name)
    assert fast.parser == "libyaml"
    monkeypatch.setattr("tierops.yamlload._C_LOADER", None)  # as on a PyYAML built without libyaml
    slow = load_bytes(raw, path.name)
    assert slow.parser == "pure"
    assert slow.documents == fast.documents
    assert _positions(slow.documents) == _positions(fast.documents)


def _positions(node: object) -> object:
    if isinstance(node, YMap):
        return (
            node.pos,
            node.key_pos,
            node.value_pos,
            node.value_span,
            {k: _positions(v) for k, v in node.items()},
        )
    if isinstance(node, YList):
        return (node.pos, node.item_pos, node.item_span, [_positions(v) for v in node])
    if isinstance(node, tuple):
        return [_positions(v) for v in node]
    return None


# --- what Compose refuses, refused with a line -------------------------------------------


def test_a_duplicate_key_is_refused_as_compose_refuses_it() -> None:
    text = "services:\n  a:\n    image: x\n    image: y\n"
    error = _refusal(text)
    assert error.pos == Pos(4, 5)
    assert "duplicate key 'image' (first at line 3)" in error.message
    rendered = oracle.render(text, {})
    assert rendered.model is None
    assert 'mapping key "image" already defined at line 3' in (rendered.error or "")


def test_merge_keys_follow_compose_explicit_keys_and_earlier_sources_win() -> None:
    text = (
        "x-a: &a {image: from-a, restart: always}\n"
        "x-b: &b {image: from-b, user: b}\n"
        "services:\n"
        "  s1: {image: explicit, <<: *a}\n"
        "  s2: {<<: [*a, *b]}\n"
        "  s3: {<<: [*b, *a]}\n"
    )
    services = _load(text).documents[0]["services"]
    rendered = oracle.render(text, {})
    assert rendered.model is not None
    for name in ("s1", "s2", "s3"):
        for key in ("image", "restart", "user"):
            assert services[name].get(key) == rendered.model["services"][name].get(key)


def test_anchors_stay_usable_in_later_documents_as_in_compose() -> None:
    text = "x-a: &a\n  image: busybox\nservices:\n  one: *a\n---\nservices:\n  two: *a\n"
    loaded = _load(text)
    assert len(loaded.documents) == 2
    assert loaded.documents[1]["services"]["two"] == {"image": "busybox"}
    rendered = oracle.render(text, {})
    assert rendered.model is not None
    assert rendered.model["services"]["two"]["image"] == "busybox"


@pytest.mark.parametrize(
    ("text", "line"),
    [("---\nservices: {}\n---\n", 3), ("services: {}\n---\n- a\n", 3), ("---\n", 1), ("42\n", 1)],
    ids=["empty second document", "a list", "one empty document", "a scalar"],
)
def test_every_document_must_be_a_mapping_as_compose_requires(text: str, line: int) -> None:
    error = _refusal(text)
    assert error.pos.line == line
    assert "must be a mapping" in error.message
    assert oracle.render(text, {}).model is None  # compose refuses it too


def test_a_file_without_a_document_is_an_empty_compose_file() -> None:
    assert "empty compose file" in _refusal("# only a comment\n").message
    assert "empty compose file" in (oracle.render("# only a comment\n", {}).error or "")


# --- hostile input: one line, fast, never a hang ------------------------------------------


def test_a_fifo_a_device_a_directory_and_a_missing_path_are_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading would block forever
    for path, what in [(fifo, "a FIFO"), (Path("/dev/zero"), "a device"), (tmp_path, "a directory")]:
        with pytest.raises(InputError) as caught:
            load_path(path)
        assert what in str(caught.value)
        assert "\n" not in str(caught.value)
    with pytest.raises(InputError, match="file not found"):
        load_path(tmp_path / "absent.yaml")


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 200_000,
        b"- " * 100_000 + b"x\n",
        b"a: " + b"{a: " * 100_000,
        ("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 1500))).encode(),
    ],
    ids=["flow sequences", "block sequences", "flow mappings", "block mappings"],
)
def test_deep_nesting_is_refused_at_the_depth_limit(raw: bytes) -> None:
    error = _refusal(raw)
    assert f"nesting deeper than {MAX_DEPTH} levels" in error.message


def test_an_alias_bomb_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in "bcdefg":
        previous = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [{', '.join([f'*{previous}'] * 10)}]")
    assert "alias expansion exceeds" in _refusal("\n".join(lines) + "\n").message


@pytest.mark.parametrize(
    ("text", "nodes"),
    [
        ("a: [x, x, x]\n", 6),
        ("a: &a [x, x, x]\nb: [*a, *a]\n", 16),
        ("base: &b {x: 1, y: 2}\ns: {<<: *b, z: 3}\n", 17),
        ("a: &s v\nb: [*s, *s, *s]\n", 8),
        ("a: &a {b: [x, {c: d}]}\ne: {f: *a, g: [*a]}\n---\nh: *a\n", 37),
    ],
    ids=["flat", "aliases", "merge", "scalar alias", "nested across documents"],
)
def test_the_node_budget_counts_every_node_and_each_alias_expansion_exactly(
    text: str, nodes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key, value, item and collection is one node, and an alias counts what its
    anchor expands to: a file of `nodes` nodes fits a budget of `nodes`, not one less."""
    for parser in ("libyaml", "pure"):
        if parser == "pure":
            monkeypatch.setattr("tierops.yamlload._C_LOADER", None)
        monkeypatch.setattr("tierops.yamlload.MAX_NODES", nodes)
        assert load_bytes(text.encode(), "f.yaml").parser == parser
        monkeypatch.setattr("tierops.yamlload.MAX_NODES", nodes - 1)
        assert "alias expansion exceeds" in _refusal(text).message


def test_a_flat_list_over_the_node_budget_is_refused_where_the_budget_ends() -> None:
    # Twice the budget's items: the refusal points at the node that ran over it, half-way
    # in, so the rest of the list is never composed (no timing: a position says it).
    items = 2 * MAX_NODES
    raw = b"a: [" + b"1," * items + b"1]\n"
    refusal = _refusal(raw)
    assert "alias expansion exceeds" in refusal.message
    assert refusal.pos.line == 1
    assert refusal.pos.col == len(b"a: [") + 2 * (MAX_NODES - 1) + 1  # `a`, the list, then items


def test_a_file_over_the_size_budget_is_refused_without_parsing() -> None:
    assert "larger than" in _refusal(b"a: " + b"x" * (MAX_BYTES + 1)).message


def test_hostile_files_end_in_one_line_from_the_validators(tmp_path: Path) -> None:
    """Through the real entry point: exit 1 or 2, one line, no traceback, no hang."""
    cases = {
        "deep.yaml": b"[" * 200_000,
        "bomb.yaml": (
            "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
            + "".join(f"{c}: &{c} [{','.join([f'*{chr(ord(c) - 1)}'] * 10)}]\n" for c in "bcdefg")
        ).encode(),
        "big.yaml": b"a: " + b"x" * (5 * 1024 * 1024),
    }
    for name, raw in cases.items():
        (tmp_path / name).write_bytes(raw)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path in [*(tmp_path / name for name in cases), fifo, Path("/dev/zero")]:
        proc = subprocess.run(
            [sys.executable, "-m", "validators", str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=30,
            check=False,
        )
        assert proc.returncode in (1, 2), (path, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if str(path.name) in line]
        assert len(lines) == 1, (path, proc.stdout, proc.stderr)


def _snapshot(node: object) -> object:
    """A loaded node as plain data with its positions, to compare before and after."""
    if isinstance(node, YMap):
        return (
            "map",
            [
                (key, _snapshot(value), node.key_pos.get(key), node.value_pos.get(key))
                for key, value in node.items()
            ],
        )
    if isinstance(node, YList):
        return ("list", [_snapshot(item) for item in node], list(node.item_pos))
    return node


@pytest.mark.parametrize(
    "text",
    [
        # one document whose lists Compose deduplicates (the path that once wrote back)
        "services:\n  app:\n    image: busybox\n    ports: ['8000:8000', '8000:8000']\n"
        "    volumes: ['/a:/b', '/c:/b']\n",
        # two documents merged as override files
        "services:\n  app:\n    image: busybox\n    ports: ['1:1']\n---\nservices:\n  app:\n"
        "    ports: ['1:1', '2:2']\n    environment: {A: b}\n",
    ],
)
def test_a_shared_reading_is_left_as_read_by_the_canonical_model(text: str) -> None:
    from tierops import canonical
    from tierops.yamlload import load_shared

    raw = text.encode("utf-8")
    loaded = load_shared(raw, "a.yaml")
    before = [_snapshot(document) for document in loaded.documents]
    canonical.build(loaded, project_dir=".")
    assert [_snapshot(document) for document in loaded.documents] == before
    again = load_shared(raw, "b.yaml")
    assert again.documents is loaded.documents and again.path == "b.yaml"  # one parse, its own name
    assert (
        canonical.build(again, project_dir=".").services["app"].fields
        == canonical.build(load_bytes(raw, "c.yaml"), project_dir=".").services["app"].fields
    )


def test_a_shared_refusal_is_kept_and_raised_again_the_same() -> None:
    from tierops.yamlload import _shared, load_shared

    text = b"#!/bin/sh\necho a: b: c\n[unclosed\n"
    errors = []
    for _ in range(2):
        with pytest.raises(LoadError) as caught:
            load_shared(text, "<inline>")
        errors.append((caught.value.pos, caught.value.message))
    assert errors[0] == errors[1]
    kept = _shared(text)  # the refusal, read once
    assert isinstance(kept, LoadError) and errors[0] == (kept.pos, kept.message)


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[0-9]{1,22}", fullmatch=True))
def test_a_plain_decimal_resolves_as_the_general_path_reads_it(digits: str) -> None:
    # `+` takes the general path (Go's ParseInt with its octal `0` prefix, then a float):
    # the one-call path for plain decimals must read every digit string the same way.
    read, general = resolve_plain(digits), resolve_plain("+" + digits)
    assert (type(read), read) == (type(general), general)


def test_compose_files_keeps_files_with_a_top_level_services_key(tmp_path: Path) -> None:
    from tierops.yamlload import compose_files

    texts = {
        "plain.yaml": "services:\n  a: {image: x}\n",
        "quoted.yaml": '"services": {}\n',
        "later.yaml": "name: p\n\nservices :\n  a: {}\n",
        "nested.yaml": "x:\n  services:\n    a: {}\n",
        "workflow.yaml": "on: push\njobs: {}\n",
        "comment.yaml": "# services: none here\nkey: 1\n",
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    missing = tmp_path / "missing.yaml"
    paths = [tmp_path / name for name in texts] + [missing]
    kept = [path.name for path in compose_files(paths)]
    # an unreadable path stays, so that the command reading it says why
    assert kept == ["plain.yaml", "quoted.yaml", "later.yaml", "missing.yaml"]


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029"])
def test_a_raw_unicode_line_break_is_refused_as_compose_refuses_it(char: str) -> None:
    raw = f"services:\n  s:\n    image: busybox\n    environment:\n      X: a{char}b\n".encode()
    with pytest.raises(LoadError) as refused:
        load_bytes(raw, "x.yaml")
    assert (refused.value.pos.line, refused.value.pos.col) == (5, 11)
    assert f"U+{ord(char):04X}" in refused.value.message
