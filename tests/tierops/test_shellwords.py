"""Compose's shell rules for a string command, pinned against the real binary."""

from __future__ import annotations

import json

import pytest

from tests.tierops import oracle
from tierops.shellwords import ShellError, join, split

# Each string is split by the binary and by tierops.shellwords; they must agree.
LINES = [
    "sglang serve --port 8000",
    "  lead  and\ttrail  ",
    "a 'b c' \"d e\"",
    'a "b\\"c"',
    "a\\ b c",
    'a "x\\y"',
    "'a\\b'",
    "a;b c",
    "echo a; rm -rf /x",
    "a | b",
    "a && b",
    "run 2>&1 x",
    "a > b",
    "a < b",
    "a `b` c",
    "a $$(b c)d e",
    "a '' b",
    "x=1 y",
    "a#b #c",
    "{a,b} *.txt ~/x",
    "a\\\nb",
]
REFUSED = ["a(b)", "(a)", "a) b", "echo 'open", 'echo "open', "trailing\\", "$$(a (b))"]


def _file(lines: list[str]) -> str:
    services = {f"s{index}": {"image": "busybox", "command": line} for index, line in enumerate(lines)}
    return json.dumps({"services": services})


def test_strings_split_into_the_words_compose_runs() -> None:
    rendered = oracle.render(_file(LINES), {})
    assert rendered.model is not None, rendered.error
    for index, line in enumerate(LINES):
        theirs = rendered.model["services"][f"s{index}"]["command"]
        # compose prints a literal `$` as `$$`; the splitter sees the interpolated text
        ours = [word.replace("$", "$$") for word in split(line.replace("$$", "$")).words]
        assert ours == theirs, line


@pytest.mark.parametrize("line", REFUSED)
def test_strings_compose_refuses_are_refused(line: str) -> None:
    rendered = oracle.render(_file([line]), {})
    assert rendered.model is None
    assert "invalid command line string" in (rendered.error or "")
    with pytest.raises(ShellError):
        split(line.replace("$$", "$"))


def test_an_unquoted_separator_ends_the_command_and_says_what_was_dropped() -> None:
    parsed = split("echo a; rm -rf /x")
    assert parsed.words == ["echo", "a"]
    assert parsed.dropped == "; rm -rf /x"
    assert split("echo 'a; b'").dropped is None


# Words the generators may have to write into a string command.
HARD_WORDS = [
    "--plain",
    "",
    "a b",
    '{"temperature": 0.6, "top_p": 0.95}',
    "it's",
    'it\'s "quoted" \\ `x`',
    "a;b",
    "x > y",
    "(paren)",
    "tab\there",
    "back\\slash",
]


def test_joined_words_are_the_words_compose_runs() -> None:
    line = join(HARD_WORDS)
    assert split(line).words == HARD_WORDS
    rendered = oracle.render(json.dumps({"services": {"s": {"image": "busybox", "command": line}}}), {})
    assert rendered.model is not None, rendered.error
    assert rendered.model["services"]["s"]["command"] == HARD_WORDS
