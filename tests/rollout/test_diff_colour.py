"""The text diff is coloured on a terminal only, and never when NO_COLOR is set."""

from __future__ import annotations

import io

from rollout.diff import boundary, colour, masking

REPORT = (
    "diff of prod: base a -> head b: 1 file(s) changed, 0 unreadable\n"
    "prod/x.yaml: 2 service(s) changed\n"
    "  engine-r1, engine-r2: + --enable-metrics\n"
    "  engine-r1: - --enable-cache-report\n"
    "  engine-r1: label variant: a -> b\n"
    "  config c (used by collector):\n"
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_each_kind_of_line_gets_its_colour_and_the_text_is_unchanged() -> None:
    lines = colour.colour(REPORT).split("\n")
    assert lines[0] == f"{colour.BOLD}{REPORT.splitlines()[0]}{colour.RESET}"
    assert lines[2].startswith(colour.GREEN) and lines[3].startswith(colour.RED)
    assert lines[4].startswith(colour.YELLOW)
    assert lines[5] == "  config c (used by collector):"
    for code in (colour.GREEN, colour.RED, colour.YELLOW, colour.BOLD, colour.RESET):
        lines = [line.replace(code, "") for line in lines]
    assert "\n".join(lines) == REPORT


def test_colour_only_on_a_terminal_without_no_color() -> None:
    assert colour.wanted(Terminal(), {}) is True
    assert colour.wanted(Terminal(), {"NO_COLOR": ""}) is True  # empty means unset (no-color.org)
    assert colour.wanted(Terminal(), {"NO_COLOR": "1"}) is False
    assert colour.wanted(io.StringIO(), {}) is False  # a pipe or a file


def test_the_masking_boundary_says_what_its_output_is() -> None:
    # Everything the diff prints passes the masking boundary; a terminal stays one behind it.
    assert boundary.MaskingStream(masking.Masker(), Terminal()).isatty() is True
    assert boundary.MaskingStream(masking.Masker(), io.StringIO()).isatty() is False
