"""Identical changes on several services are one line, with the same-role exceptions named."""

from __future__ import annotations

import pytest

from rollout.diff.folding import Folded, fold
from rollout.diff.report import render_markdown
from tests.rollout.diffkit import R1, R2, changeset, fixture, prod_text, text_lines

FLAG = "      - --enable-dynamic-batch-tokenizer\n"


def without_dyntok(text: str) -> str:
    return text.replace(FLAG, "")


def test_the_same_flag_on_both_replicas_is_one_line() -> None:
    new = prod_text()
    lines = text_lines(without_dyntok(new), new)
    assert lines[1] == f"  {R1}, {R2}: + --enable-dynamic-batch-tokenizer"
    assert sum("--enable-dynamic-batch-tokenizer" in line for line in lines) == 1


def test_different_values_are_never_folded() -> None:
    old = prod_text()
    new = old.replace('"127.0.0.1:29510"', '"127.0.0.1:29610"').replace(
        '"127.0.0.1:29511"', '"127.0.0.1:29611"'
    )
    assert text_lines(old, new)[1:] == [
        f"  {R1}: --dist-init-addr: 127.0.0.1:29510 -> 127.0.0.1:29610",
        f"  {R2}: --dist-init-addr: 127.0.0.1:29511 -> 127.0.0.1:29611",
    ]


def test_an_engine_left_out_of_a_folded_change_is_named() -> None:
    old = fixture("handwritten.yaml").replace(
        "  router:\n",
        "  vllm-c:\n    <<: *engine\n    command: vllm serve Qwen/Qwen3-8B --port=8000\n  router:\n",
    )
    new = old.replace(
        "--max-model-len 32768 --port=8000", "--max-model-len 32768 --port=8000 --enable-prefix-caching"
    )
    assert text_lines(old, new)[1:] == ["  vllm-a, vllm-b: + --enable-prefix-caching (not on vllm-c)"]


@pytest.mark.parametrize(("peers", "named"), [(8, 8), (9, 5), (40, 5)])
def test_many_peers_left_out_are_named_up_to_five_and_counted(peers: int, named: int) -> None:
    services = "".join(
        f"  e{number:02d}:\n    image: x\n    command: [sglang, serve, --port, '8000']\n"
        for number in range(peers + 2)
    )
    old = f"services:\n{services}"
    new = old.replace(
        "  e00:\n    image: x\n    command: [sglang, serve, --port, '8000']",
        "  e00:\n    image: x\n    command: [sglang, serve, --port, '8000', --x]",
    ).replace(
        "  e01:\n    image: x\n    command: [sglang, serve, --port, '8000']",
        "  e01:\n    image: x\n    command: [sglang, serve, --port, '8000', --x]",
    )
    (line,) = text_lines(old, new)[1:]
    left_out = [f"e{number:02d}" for number in range(2, peers + 2)]
    if named == peers:
        assert line == f"  e00, e01: + --x (not on {', '.join(left_out)})"
    else:
        assert (
            line
            == f"  e00, e01: + --x (not on {', '.join(left_out[:5])} and {peers - 5} more of the same role)"
        )
    markdown = render_markdown(changeset({"prod/x.yaml": old}, {"prod/x.yaml": new}))
    shown = ", ".join(f"`{name}`" for name in left_out[:named])
    assert f"(not on {shown}" in markdown
    assert (f"and {peers - 5} more of the same role)" in markdown) is (named < peers)


def test_a_change_on_every_engine_names_no_exception() -> None:
    old = fixture("handwritten.yaml")
    new = old.replace("--max-model-len 32768", "--max-model-len 65536")
    assert text_lines(old, new)[1:] == ["  vllm-a, vllm-b: --max-model-len: 32768 -> 65536"]


def test_folded_services_share_one_markdown_row() -> None:
    new = prod_text()
    markdown = render_markdown(changeset({"prod/x.yaml": without_dyntok(new)}, {"prod/x.yaml": new}))
    assert f"| `{R1}`<br>`{R2}` | engine | `+ --enable-dynamic-batch-tokenizer` |" in markdown


def test_fold_keeps_first_appearance_order_and_skips_exceptions_across_roles() -> None:
    items = [("a", "x"), ("a", "y"), ("b", "x"), ("c", "y")]
    roles = {"a": "engine", "b": "engine", "c": "proxy", "d": "engine"}
    assert fold(items, roles, ["a", "b", "c", "d"]) == [
        Folded(("a", "b"), "x", ("d",)),
        Folded(("a", "c"), "y", ()),
    ]
