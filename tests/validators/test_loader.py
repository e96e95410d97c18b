"""Malformed inputs: each is one `yaml` finding, and the next file is still checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.validators.conftest import BASE, prod_text, run_cli
from tierops.yamlload import MAX_BYTES, MAX_DEPTH, MAX_NODES, YList, YMap
from validators.findings import Finding
from validators.loader import Document, parse

BOMB = b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n".encode() for i in range(6)
)

MALFORMED: list[tuple[str, bytes, int, str]] = [
    ("unclosed-flow", b"services:\n  x: [1, 2\n", 3, "invalid YAML"),
    (
        "duplicate-key",
        b"services:\n  x:\n    image: a\n    image: b\n",
        4,
        "duplicate key 'image' (first at line 3)",
    ),
    ("sequence-document", b"- services\n", 1, "document 1 is a sequence"),
    ("scalar-document", b"just text\n", 1, "document 1 is a scalar (str)"),
    ("empty", b"", 1, "empty compose file"),
    ("empty-second-document", b"services: {}\n---\n", 2, "document 2 is empty"),
    ("invalid-utf8", b"services:\n  x: \xff\xfe\n", 2, "not valid UTF-8 (byte 0xff)"),
    ("alias-bomb", BOMB, 6, f"alias expansion exceeds {MAX_NODES} nodes"),
    ("recursive-alias", b"a: &a\n  b: *a\n", 2, "recursive alias *a"),
    ("undefined-alias", b"a: *nowhere\n", 1, "undefined alias *nowhere"),
    ("complex-key", b"? [a, b]\n: 1\n", 1, "a mapping or sequence used as a key"),
    ("deep-nesting", b"[" * 5000 + b"]" * 5000 + b"\n", 1, f"nesting deeper than {MAX_DEPTH} levels"),
]


@pytest.mark.parametrize(("name", "raw", "line", "message"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_malformed_input_is_one_yaml_finding_and_the_next_file_is_still_checked(
    name: str, raw: bytes, line: int, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / f"{name}.yaml").write_bytes(raw)
    (tmp_path / BASE).write_text(
        prod_text(BASE).replace("    container_name: nginx\n", "    container_name: nginx-front\n"),
        encoding="utf-8",
    )
    result = run_cli("--format", "json", f"{name}.yaml", BASE)
    rows = result.findings()
    assert result.code == 1
    assert "Traceback" not in result.out + result.err
    mine = [row for row in rows if row["path"] == f"{name}.yaml"]
    assert [(row["rule"], row["line"]) for row in mine] == [("yaml", line)]
    assert message in mine[0]["message"]
    # The run went on: the prod copy after it was checked and its one mutation found.
    assert [(row["rule"], row["path"]) for row in rows if row["path"] == BASE] == [("compose-hygiene", BASE)]
    assert "2 files checked" in result.err


def test_a_file_over_the_size_limit_is_one_finding_without_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"a: " + b"x" * MAX_BYTES + b"\n")
    result = run_cli("--format", "json", path)
    assert result.code == 1
    assert [(row["rule"], row["line"], row["col"]) for row in result.findings()] == [("yaml", 1, 1)]
    assert f"larger than {MAX_BYTES // (1024 * 1024)} MiB" in result.findings()[0]["message"]


def test_a_missing_file_exits_2_after_checking_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / BASE).write_text(prod_text(BASE), encoding="utf-8")
    result = run_cli("nowhere.yaml", BASE)
    assert result.code == 2
    assert result.err == "error: nowhere.yaml: file not found; check the path\n"
    assert result.out == "1 file checked: 0 errors, 0 warnings\n"


def test_positions_are_one_based_for_keys_and_items() -> None:
    doc = parse(b"services:\n  x:\n    command: [a, b]\n    env:\n      - K=V\n", "t.yaml")
    assert isinstance(doc, Document)
    service = doc.data["services"]["x"]
    assert isinstance(service, YMap)
    assert (doc.data.at("services"), service.at("command"), service.at("env")) == ((1, 1), (3, 5), (4, 5))
    command = service["command"]
    assert isinstance(command, YList)
    assert [command.at(0), command.at(1)] == [(3, 15), (3, 18)]
    assert service["env"].at(0) == (5, 9)


def test_merge_keys_are_resolved_with_explicit_keys_winning_and_recorded() -> None:
    doc = parse(b"base: &b {restart: always, init: true}\nsvc:\n  <<: *b\n  restart: 'no'\n", "t.yaml")
    assert isinstance(doc, Document)
    assert dict(doc.data["svc"]) == {"restart": "no", "init": True}
    assert doc.loaded.merges == ((3, 3),)
    assert doc.loaded.anchors == ((1, 7),)
    assert doc.loaded.aliases == ((3, 7),)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0o444", 0o444),
        ("0444", 0o444),
        ("444", 444),
        ('"0444"', "0444"),
        ("true", True),
        ("yes", "yes"),
        ("~", None),
        ("1.5", 1.5),
    ],
)
def test_scalars_resolve_like_compose(text: str, value: Any) -> None:
    doc = parse(f"v: {text}\n".encode(), "t.yaml")
    assert isinstance(doc, Document)
    assert doc.data["v"] == value
    assert type(doc.data["v"]) is type(value)


def test_a_finding_is_never_raised_as_an_exception() -> None:
    assert isinstance(parse(b"a: [\n", "t.yaml"), Finding)
