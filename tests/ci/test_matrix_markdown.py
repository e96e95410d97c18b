"""The check matrix's Markdown: pinned by golden files, parsed by a CommonMark parser, always under the limit.

Golden files live in tests/ci/golden/; `TIEROPS_UPDATE_GOLDEN=1 nox -s tests --
tests/ci/test_matrix_markdown.py` rewrites them (review the diff before committing).
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ci import matrix_markdown
from ci.matrix_markdown import COMMENT_LIMIT, MARKER, render, size
from tests.ci.matrix_records import FILES, diff_markdown, many_files, plan_markdown, sample_record

GOLDEN = Path(__file__).resolve().parent / "golden"
RUN_URL = "https://github.com/tierops/tierops/actions/runs/123"
STAGE_NAMES = ["generated", "validate", "compose", "collector", "diff", "plan", "lint", "typecheck", "tests"]


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TIEROPS_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def parse(text: str) -> list[Token]:
    # CommonMark plus GitHub's tables: the two things GitHub's renderer adds that we use.
    return MarkdownIt("commonmark").enable("table").parse(text)


def tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    found: list[list[list[str]]] = []
    rows: list[list[str]] = []
    row: list[str] = []
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            rows = []
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            inline = tokens[index + 1]
            row.append(inline.content if inline.type == "inline" else "")
        elif token.type == "tr_close":
            rows.append(row)
        elif token.type == "table_close":
            found.append(rows)
    return found


def details_balance(text: str) -> list[int]:
    """The `<details>` nesting depth after each line outside code fences (never negative, ends at 0)."""
    depth, fence, depths = 0, False, []
    for line in text.splitlines():
        if re.match(r"^ {0,3}(`{3,}|~{3,})", line):
            fence = not fence
            continue
        if not fence:
            depth += line.count("<details") - line.count("</details>")
        depths.append(depth)
    return depths


# --------------------------------------------------------------------------- golden files


def test_the_comment_of_a_failing_run_is_the_golden_file() -> None:
    text = render(sample_record(), diff_markdown(), plan_markdown(), run_url=RUN_URL, marker=True)
    golden("matrix-comment.md", text)
    assert text.startswith(
        MARKER + "\n### Check matrix: **fail**: validate (1 of 3 files), lint (check-yaml 1, ruff-check 1); "
        "collector not run (no result from this run)\n"
    )


def test_a_truncated_comment_is_the_golden_file() -> None:
    text = render(sample_record(), diff_markdown(), plan_markdown(), limit=8000, run_url=RUN_URL, marker=True)
    golden("matrix-truncated.md", text)
    assert size(text) <= 8000
    assert f"[the run's step summary]({RUN_URL})" in text
    assert "`check-matrix` artifact" in text


def test_a_stage_that_did_not_run_says_so_instead_of_a_diff() -> None:
    text = render(sample_record(), None, None)
    golden("matrix-no-diff.md", text)
    assert "_The diff did not run in this run._" in text


# --------------------------------------------------------------------------- the table, parsed


def test_the_table_parses_as_prod_files_by_stages_with_pass_or_fail_and_counts() -> None:
    text = render(sample_record(), diff_markdown(), plan_markdown())
    matrix = tables(parse(text))[0]
    header, *rows = matrix
    assert header == ["prod file", *STAGE_NAMES]
    assert [row[0] for row in rows] == [f"`{path.removeprefix('prod/')}`" for path in FILES] + [
        "_repository_"
    ]
    assert all(len(row) == len(header) for row in rows)
    by_file = {row[0]: dict(zip(header[1:], row[1:], strict=True)) for row in rows}
    long_context = by_file["`GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml`"]
    assert long_context["validate"] == "**fail** · prod-config 2, engine-flags 1"
    assert long_context["diff"] == "pass · flag 2, env 1"
    assert long_context["collector"] == "_not run_"
    assert long_context["lint"] == "-"
    assert by_file["`GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml`"]["validate"] == "pass · compose-hygiene 1"
    assert by_file["_repository_"]["lint"] == "**fail** · check-yaml 1, ruff-check 1"


def test_a_pipe_in_tool_text_cannot_add_a_column() -> None:
    record = copy.deepcopy(sample_record())
    record["files"][0] = "prod/a|b.yaml"
    for stage in record["stages"]:
        if stage["scope"] == "file":
            stage["files"]["prod/a|b.yaml"] = stage["files"].pop(FILES[0])
    header, *rows = tables(parse(render(record, None, None)))[0]
    assert all(len(row) == len(header) for row in rows)
    assert rows[0][0] == "`a?b.yaml`"  # plain(): outside the safe character set


def test_the_parser_sees_a_broken_table() -> None:
    """The checks above can fail: a row with a cell too many or a line break is not the matrix."""
    good = render(sample_record(), None, None)
    line = next(
        line for line in good.splitlines() if line.startswith("| `GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml`")
    )
    broken = good.replace(line, line.replace(" | pass | pass", " | pass\n| pass", 1))
    _header, *rows = tables(parse(broken))[0]
    expected = [f"`{path.removeprefix('prod/')}`" for path in FILES] + ["_repository_"]
    assert [row[0] for row in rows] != expected  # what the first table test pins


def test_the_details_sections_parse_as_html_blocks_around_markdown() -> None:
    tokens = parse(render(sample_record(), diff_markdown(), plan_markdown()))
    blocks = [token.content for token in tokens if token.type == "html_block"]
    assert any(block.startswith("<details><summary>Semantic diff of prod/</summary>") for block in blocks)
    assert any(block.startswith("<details><summary>Rollout plan</summary>") for block in blocks)
    # the diff's own table is parsed as a table, not swallowed by the HTML block
    assert any(table[0] == ["service", "role", "change"] for table in tables(tokens))


def test_durations_never_change_the_text() -> None:
    record = sample_record()
    slower = copy.deepcopy(record)
    for stage in slower["stages"]:
        stage["duration_s"] = 99.0
    assert render(record, None, None) == render(slower, None, None)


def test_tool_text_is_made_inert() -> None:
    record = copy.deepcopy(sample_record())
    collector = next(stage for stage in record["stages"] if stage["name"] == "collector")
    collector["note"] = "</details><img src=x onerror=alert(1)> [click](javascript:x)\n| a |"
    text = render(record, None, None)
    assert "<img" not in text and "](javascript" not in text and "</details><" not in text


@pytest.mark.parametrize(
    "said",
    ["~~struck~~", "_stressed_", "see https://evil.example", "www.evil.example", ":rocket:", "GH-12"],
)
def test_tool_text_that_github_would_make_something_of_is_shown_as_code(said: str) -> None:
    """Emphasis, strike-through, a link GitHub makes of a bare URL or `www.`, an emoji
    shortcode and a `GH-` reference all come from text with no markup character; in a
    code span GitHub makes none of them."""
    record = copy.deepcopy(sample_record())
    collector = next(stage for stage in record["stages"] if stage["name"] == "collector")
    collector["note"] = f"no Docker {said}"
    collector["repository"]["counts"] = {f"rule {said}": 1}
    collector["verdict"] = "fail"
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(render(record, None, None))
    outside = re.sub(r"<code>.*?</code>", "", html)
    assert said.rsplit(maxsplit=1)[-1] not in outside
    assert "<em>stressed" not in html and "<s>" not in html
    assert f"<code>no Docker {said}</code>" in html and f"<code>rule {said}</code> 1" in html


def test_tool_text_github_leaves_alone_stays_plain() -> None:
    record = copy.deepcopy(sample_record())
    collector = next(stage for stage in record["stages"] if stage["name"] == "collector")
    collector["note"] = "no Docker daemon (see docs/rehearsal.md)"
    assert "- collector: not run (no Docker daemon (see docs/rehearsal.md))" in render(record, None, None)


def test_a_run_url_that_is_not_plain_https_is_left_out() -> None:
    text = render(sample_record(), "x\n" * 40_000, None, limit=8000, run_url="javascript:alert(1)")
    assert "javascript" not in text
    assert "the run's step summary and" in text


# --------------------------------------------------------------------------- the limit


@pytest.mark.parametrize("diff_size", [0, 60_000, 70_000, 1_000_000])
def test_every_comment_fits_githubs_limit_with_fences_and_details_closed(diff_size: int) -> None:
    diff = "### Semantic diff\n\n```text\n" + "changed --flag value\n" * (diff_size // 21) + "```\n"
    text = render(sample_record(), diff, plan_markdown() * 10, run_url=RUN_URL, marker=True)
    assert size(text) <= COMMENT_LIMIT
    depths = details_balance(text)
    assert min(depths) >= 0 and depths[-1] == 0
    assert text.count("```") % 2 == 0
    assert text.rstrip().endswith("</sub>")  # the footer is outside every section
    if size(diff) + size(plan_markdown()) * 10 > COMMENT_LIMIT:
        assert "> **Truncated**" in text
        assert "_(cut here)_" in text


def test_a_thousand_files_keep_as_many_rows_as_fit_and_say_how_many_are_left_out() -> None:
    record = many_files(1000)
    text = render(record, diff_markdown(), plan_markdown(), run_url=RUN_URL)
    assert size(text) <= COMMENT_LIMIT
    header, *rows = tables(parse(text))[0]
    assert all(len(row) == len(header) for row in rows)
    shown = len(rows) - 1  # the repository row
    assert 0 < shown < 1000
    assert f"_{1000 - shown} more prod file(s): see the step summary._" in text
    assert "> **Truncated**" in text


def test_the_step_summary_limit_keeps_everything() -> None:
    diff = "x\n" * 100_000
    text = render(sample_record(), diff, plan_markdown(), limit=matrix_markdown.SUMMARY_LIMIT)
    assert diff.rstrip() in text and "Truncated" not in text


def test_cut_ends_on_a_line_and_closes_what_it_opened() -> None:
    text = "a\n<details><summary>x</summary>\n\n```text\n" + "line\n" * 100 + "```\n</details>\n"
    cut = matrix_markdown.cut(text, 120)
    assert size(cut) <= 120
    assert cut.count("```") == 2 and cut.count("</details>") == 1
    assert "line\n```\n" in cut


def _stage_cell(record: dict[str, Any], name: str) -> dict[str, Any]:
    cell: dict[str, Any] = next(stage for stage in record["stages"] if stage["name"] == name)["repository"]
    return cell


def test_many_rule_ids_in_one_cell_show_the_largest_four_and_a_rest() -> None:
    record = copy.deepcopy(sample_record())
    _stage_cell(record, "typecheck").update(
        verdict="fail", counts={"a": 1, "b": 5, "c": 2, "d": 2, "e": 3, "f": 1}
    )
    row = tables(parse(render(record, None, None)))[0][-1]
    assert row[STAGE_NAMES.index("typecheck") + 1] == "**fail** · b 5, e 3, c 2, d 2, +2 more"
