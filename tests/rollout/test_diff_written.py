"""A diff line quotes what the author wrote, where that reads otherwise.

The line compares meanings (what Compose renders); `Change.written` carries the text of
each side as written, and the line ends with `(written: OLD -> NEW)` only when a word
the author wrote is not in it, so a reviewer can find the value in the file.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from rollout.diff.boundary import mask_change
from rollout.diff.changes import Op
from rollout.diff.describe import as_written, describe
from tests.rollout.diffkit import file_change, new_repo, run_cli, text_lines, write
from tests.rollout.test_diff_canonical import service  # one service `web`, then `body`
from tests.tierops.spellings import FAMILIES


def only_change(old: str, new: str):  # type: ignore[no-untyped-def]
    (web,) = file_change(service(old), service(new)).services
    (change,) = [change for change in web.changes if change.op is not Op.NOTE]
    return change


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        pytest.param(
            "    stop_grace_period: 300s\n",
            "    stop_grace_period: 6m\n",
            "  web: stop_grace_period: 5m -> 6m (written: 300s -> 6m)",
            id="a duration Compose renders in other units",
        ),
        pytest.param(
            '    shm_size: "64m"\n',
            "    shm_size: 128m\n",
            '  web: shm_size: 64mb -> 128mb (written: "64m" -> 128m)',
            id="a size, its quotes kept",
        ),
        pytest.param(
            "    command: [sglang, serve, --tp, '4']\n",
            "    command: [sglang, serve, --tp, '8']\n",
            "  web: --tp-size: 4 -> 8 (written: --tp '4' -> --tp '8')",
            id="a flag alias: the option's words as written",
        ),
        pytest.param(
            "    command: sglang serve --tp 4 --port 8000\n",
            "    command: sglang serve --tp 8 --port 8000\n",
            "  web: --tp-size: 4 -> 8 (written: --tp 4 -> --tp 8)",
            id="a string command: its words, not the whole string",
        ),
        pytest.param(
            "    ports: ['8000:8000']\n",
            "    ports:\n      - target: 8000\n        published: '8001'\n",
            "  web: + port 8001:8000 (written: {target: 8000, published: 8001})",
            id="a long-syntax port, in flow style",
        ),
    ],
)
def test_a_value_that_reads_otherwise_is_quoted_as_written(old: str, new: str, line: str) -> None:
    assert line in text_lines(service(old), service(new))


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        pytest.param(
            "    stop_grace_period: 5m\n",
            "    stop_grace_period: 6m\n",
            "  web: stop_grace_period: 5m -> 6m",
            id="a duration written as Compose renders it",
        ),
        pytest.param(
            "    environment:\n      - MODE=fast\n",
            "    environment:\n      - MODE=slow\n",
            "  web: env MODE: fast -> slow",
            id="a KEY=value item: its value is what changed",
        ),
        pytest.param(
            '    command: [sglang, serve, --port, "8000"]\n',
            '    command: [sglang, serve, --port, "8001"]\n',
            "  web: --port: 8000 -> 8001",
            id="quotes alone",
        ),
        pytest.param(
            "    labels: [a=1]\n    cap_add: [SYS_ADMIN]\n",
            "    labels: [a=1]\n    cap_add: [SYS_ADMIN, NET_ADMIN]\n",
            "  web: + cap_add[1]: NET_ADMIN",
            id="an added list item",
        ),
    ],
)
def test_a_line_that_shows_every_written_word_adds_nothing(old: str, new: str, line: str) -> None:
    lines = text_lines(service(old), service(new))
    assert line in lines
    assert not any("(written:" in text for text in lines)


def test_the_model_carries_both_sides_exactly_as_written() -> None:
    change = only_change('    shm_size: "64m"\n', "    shm_size: 128m\n")
    assert change.written == ('"64m"', "128m")
    assert change.at == ("4:5", "4:5")  # a mapping member is pointed at by its key
    assert change.to_json()["written"] == ['"64m"', "128m"]


def test_a_moved_flag_is_quoted_where_it_stands_on_each_side() -> None:
    old = "    command: [sglang, serve, --a, '1', --b, '2', --c, '3']\n"
    new = "    command: [sglang, serve, --b, '2', --c, '3', --a, '1']\n"
    (web,) = file_change(service(old), service(new)).services
    moved = [change for change in web.changes if change.head_index is not None and change.subject == "--a"]
    (change,) = moved
    assert change.written == ("--a '1'", "--a '1'")
    # head side: the flag's own word in the head (column of `--a` in the head's list)
    assert change.at[1] == f"4:{new.index('--a') + 1}"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param('"s3cr\\x65t-but-innocent-key"', id="a YAML escape"),
        pytest.param("'it''s a value'", id="a doubled single quote"),
        pytest.param("|\n        folded\n        text", id="a block scalar"),
        pytest.param("x" * 101, id="longer than the limit"),
    ],
)
def test_a_text_that_is_not_its_values_spelling_is_not_quoted(value: str) -> None:
    # The output boundary masks a secret by its value and printed spellings; a YAML
    # escape is none of them, so such a text is never printed as written.
    change = only_change("    labels:\n      note: plain\n", f"    labels:\n      note: {value}\n")
    assert change.written == ("plain", None)


def test_a_masked_value_is_not_quoted_as_written() -> None:
    change = only_change(
        "    environment:\n      DB_PASSWORD: 's3cret-value-one'\n",
        "    environment:\n      DB_PASSWORD: 's3cret-value-two'\n",
    )
    assert change.written == ("'s3cret-value-one'", "'s3cret-value-two'")
    masked = mask_change(change)
    assert masked.written == (None, None)
    assert "s3cret" not in describe(masked)


def test_the_cli_prints_no_secret_as_written_in_any_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = service("    environment:\n      HF_TOKEN: 'hf-secret-value-one'\n      MODE: '300s'\n")
    repo = new_repo(tmp_path, {"prod/x.yaml": old})
    write(repo, {"prod/x.yaml": old.replace("one", "two").replace("'300s'", "5m")})
    for form in ("text", "markdown", "json"):
        code, out, _ = run_cli(monkeypatch, capsys, repo, ["diff", "--format", form])
        assert code == 0
        assert "hf-secret-value" not in out
    model = json.loads(out)
    changes = {change["subject"]: change for change in model["files"][0]["services"][0]["changes"]}
    assert "written" not in changes["HF_TOKEN"]
    assert changes["MODE"]["written"] == ["'300s'", "5m"]


def test_the_same_meaning_written_two_ways_is_two_lines() -> None:
    old = "services:\n  a:\n    image: x\n    stop_grace_period: 5m\n  b:\n    image: x\n    stop_grace_period: 5m\n"
    new = old.replace("stop_grace_period: 5m\n  b", "stop_grace_period: 6m\n  b").replace(
        "image: x\n    stop_grace_period: 5m\n", "image: x\n    stop_grace_period: 360s\n"
    )
    assert text_lines(old, new) == [
        "prod/x.yaml: 2 service(s) changed",
        "  a: stop_grace_period: 5m -> 6m",
        "  b: stop_grace_period: 5m -> 6m (written: 5m -> 360s)",
    ]


def test_a_side_without_a_text_of_its_own_reads_as_dots() -> None:
    change = only_change("    stop_grace_period: 300s\n", "    stop_grace_period: 6m\n")
    from dataclasses import replace

    assert as_written(replace(change, written=(None, "6m")), "x: 5m -> 6m") == ""
    assert as_written(replace(change, written=("300s", None)), "x: 5m -> 6m") == " (written: 300s -> ...)"


def _indented(body: str) -> str:
    return "".join(f"    {line}\n" for line in body.split("\n"))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_quoted_scalar_is_text_of_its_file(family: str) -> None:
    """On the spelling variants of every field, one after the other: a scalar quoted as
    written is the file's own text (quotes, if any, included), on the side it names."""
    bodies = FAMILIES[family]
    quoted = 0
    for before, after in itertools.pairwise(bodies):
        texts = (service(_indented(before)), service(_indented(after)))
        services = file_change(*texts).services
        for change in services[0].changes if services else ():
            if change.aspect.value in ("argv", "entrypoint"):
                continue  # a string command's words are words, not text (tested above)
            for text, file in zip(change.written, texts, strict=True):
                if text is None or text.startswith(("{", "[")):
                    continue  # a collection is quoted in flow style, not as its block lines
                assert text in file, (family, before, after, change)
                quoted += 1
    assert quoted or family in _NOTHING_QUOTED, family


# Families without a quoted scalar to check: argv (words, skipped above), and those
# whose consecutive variants differ only in collections or not at all for Compose.
_NOTHING_QUOTED = frozenset({"command", "entrypoint", "depends_on", "images", "ports-target-only"})
