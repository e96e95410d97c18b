"""`${VAR:+text}` words: a flag that is there only when the host sets VAR."""

from __future__ import annotations

import pytest

from tierops.argv import switch_of


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("${EP:+--enable-expert-parallel}", ("EP", "--enable-expert-parallel")),
        ("${EP+--enable-expert-parallel}", ("EP", "--enable-expert-parallel")),
        ("${DP:+--dp-size ${DP}}", ("DP", "--dp-size ${DP}")),
        ("${J:+--json '{\"a\": 1}'}", ("J", "--json '{\"a\": 1}'")),
    ],
)
def test_a_whole_word_switch_is_its_variable_and_text(word: str, expected: tuple[str, str]) -> None:
    assert switch_of(word) == expected


@pytest.mark.parametrize(
    "word",
    [
        "${EP}",  # a value, not a switch
        "${EP:-x}",  # a default
        "--x=${EP:+1}",  # a switch inside a word: the word is there either way
        "${A:+x}${B:+y}",  # two references, not one
        "${A:+x",  # unclosed
        "$${A:+x}",  # an escaped dollar: literal text
    ],
)
def test_anything_else_is_not_a_switch(word: str) -> None:
    assert switch_of(word) is None
