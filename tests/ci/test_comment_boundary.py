"""Everything the pull-request comment renders from an artifact stays data: no mention,
no markup that reaches past its section, no record that is not strict JSON.

Each comment is rendered as GitHub would read it: CommonMark with tables (markdown-it-py),
then the HTML walked as a browser nests it (html.parser).
"""

from __future__ import annotations

import copy
import html
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from ci import comment
from ci.comment import load_artifact
from ci.matrix_markdown import COMMENT_LIMIT, MARKER, cut, render, size
from tests.ci.matrix_records import plan_markdown, sample_record
from tests.ci.test_comment import RUN_URL, write_artifact
from tests.conftest import ROOT
from tierops.errors import InputError
from tierops.markdown_inert import ZERO_WIDTH_SPACE, closers_by_line, inert

# GitHub links `@name` when no ASCII letter, digit or `_` comes before the `@`.
LINKED_MENTION = re.compile(r"(?<![A-Za-z0-9_])@[A-Za-z0-9]")
VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}


class Nesting(HTMLParser):
    """For each text of interest, the elements open around it (comments hide text)."""

    def __init__(self, wanted: tuple[str, ...]) -> None:
        super().__init__(convert_charrefs=True)
        self.wanted = wanted
        self.open: list[str] = []
        self.seen: dict[str, list[str]] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if "plaintext" in self.open:
            return  # a browser reads everything after `<plaintext>` as its text
        if tag in self.open:
            while self.open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for wanted in self.wanted:
            if wanted in data and wanted not in self.seen:
                self.seen[wanted] = list(self.open)


def html_of(markdown: str) -> str:
    html: str = MarkdownIt("commonmark").enable("table").render(markdown)  # typed as Any
    return html


def nesting(markdown: str) -> Nesting:
    walker = Nesting(("Semantic diff of prod/", "Rollout plan", "Record:"))
    walker.feed(html_of(markdown))
    walker.close()
    return walker


def assert_sections_stand(body: str) -> None:
    """Both sections are collapsed sections of their own, and the footer is outside them."""
    walked = nesting(body)
    assert walked.seen.get("Semantic diff of prod/") == ["details", "summary"], walked.seen
    assert walked.seen.get("Rollout plan") == ["details", "summary"], walked.seen
    assert walked.seen.get("Record:") == ["p", "sub"], walked.seen


def body_for(tmp_path: Path, diff: str, record: Any = None) -> str:
    artifact = load_artifact(write_artifact(tmp_path, record=record, diff=diff))
    body = comment.comment_body(artifact, RUN_URL)
    assert size(body) <= COMMENT_LIMIT
    return body


# --------------------------------------------------------------------------- mentions


def test_mentions_in_the_records_notes_and_base_explanation_are_defused(tmp_path: Path) -> None:
    record = copy.deepcopy(sample_record())
    record["commits"]["base"]["how"] = "merge-base, ask @octocat"
    for stage in record["stages"]:
        if stage["name"] == "collector":
            stage["verdict"] = "not run"
            stage["note"] = "no Docker; cc @org/team and @octocat"
    body = body_for(tmp_path, "nothing\n", record)
    assert "octocat" in body  # the text is shown...
    assert not LINKED_MENTION.search(html_of(body))  # ...and pings nobody


@pytest.mark.parametrize(
    "spelling",
    [
        "@octocat",
        ".@octocat",
        "-@octocat",
        "/@octocat",
        "`x`@octocat",
        "\u00e9@octocat",
        "@@octocat",
        "&#64;octocat",
        "&#064;octocat",
        "&#x40;octocat",
        "&#X0040;octocat",
        "&commat;octocat",
        "<b>@octocat</b>",
        "_@octocat_",
        "__@octocat__",
        "*_@octocat_*",
        "_x_@octocat",
        "_&#64;octocat_",
        "@&#111;ctocat",
        "@&#x6F;ctocat",
        "| _@octocat_ |",
    ],
)
def test_every_spelling_github_links_is_defused_in_the_diff(tmp_path: Path, spelling: str) -> None:
    body = body_for(tmp_path, f"ping {spelling} please\n")
    assert not LINKED_MENTION.search(html_of(body)), spelling


def test_an_address_is_no_mention_and_stays_as_written() -> None:
    assert inert("image nginx@sha256:abc and a.b_c@example.invalid\n").startswith(
        "image nginx@sha256:abc and a.b_c@example.invalid"
    )


# --------------------------------------------------------------------------- markup


def test_a_three_character_fence_does_not_close_a_four_character_one_when_cut(tmp_path: Path) -> None:
    """A real-size diff with a ``` line inside a ```` block, cut to fit the comment."""
    inner = "".join(f"changed --flag-{n} value\n" for n in range(3000))
    diff = "### Semantic diff\n\n````text\n" + inner[:40_000] + "```\n" + inner + "````\n"
    assert size(diff) > 92_000
    body = body_for(tmp_path, diff)
    assert "> **Truncated**" in body
    assert_sections_stand(body)


@pytest.mark.parametrize(
    "opener",
    [
        "```text",  # an unclosed fence
        "~~~~",
        "<!-- hide the rest",  # an HTML comment that never ends
        "<!--",
        "<details>",  # a collapsed section left open
        "<details><summary>x</summary>",
        "</details>",  # one that closes ours
        "<plaintext>",  # raw text to the end of the document
        "<pre>",
        "<textarea>",
        "<![CDATA[",
        "<?php",
        "- item\n  ```",  # a fence inside a list item
        "> ```",
        "a `` b\n\n<details>`` c",
        "| a | `b | c` |\n|---|---|\n| `<plaintext>` |",
    ],
)
def test_nothing_in_a_short_diff_swallows_the_plan_or_the_footer(tmp_path: Path, opener: str) -> None:
    body = body_for(tmp_path, f"### Semantic diff\n\n{opener}\nchanged\n")
    assert_sections_stand(body)


def test_a_marker_nested_in_itself_is_removed(tmp_path: Path) -> None:
    half = len(MARKER) // 2
    nested = MARKER[:half] + MARKER + MARKER[half:]
    body = body_for(tmp_path, f"{nested}\nchanged\n")
    assert body.count(MARKER) == 1 and body.startswith(MARKER)


def test_a_megabyte_of_markers_nested_in_themselves_is_defused_in_linear_time() -> None:
    """One removal per nesting level was quadratic in the depth (twice the deadline on
    this input); the run is a child with a deadline about ten times the linear time."""
    half = len(MARKER) // 2
    depth = (1 << 20) // len(MARKER)
    text = MARKER[:half] * depth + MARKER + MARKER[half:] * depth
    code = "import sys; from ci.comment import defuse; assert 'tierops-check-matrix' not in defuse(sys.stdin.read())"
    subprocess.run([sys.executable, "-c", code], input=text, text=True, check=True, timeout=4, cwd=ROOT)


# --------------------------------------------------------------------------- links and headings


@pytest.mark.parametrize(
    "written",
    [
        "[click](https://evil.example)",
        "![pixel](https://evil.example/p.png)",
        "[click][x]\n\n[x]: https://evil.example",
        "\\\\[click](https://evil.example)",  # an escaped backslash, then a live link
        "| cell | [click](https://evil.example) |",
        "note[^1]\n\n[^1]: https://evil.example",
    ],
)
def test_no_link_or_image_in_the_artifact_renders_as_one(written: str) -> None:
    html = html_of(inert(written + "\n"))
    assert "<a " not in html and "<img" not in html, html


@pytest.mark.parametrize("level", [1, 2, 5, 6])
def test_a_heading_of_a_level_the_reports_never_write_is_text(level: int) -> None:
    html = html_of(inert("#" * level + " Check matrix: pass\n"))
    assert "<h" not in html and "Check matrix: pass" in html


@pytest.mark.parametrize("underline", ["===", "---", "  -", "- ", " -\t"])
def test_a_setext_underline_cannot_make_the_line_above_a_heading(underline: str) -> None:
    html = html_of(inert(f"Check matrix: pass\n{underline}\n"))
    assert "<h" not in html and "Check matrix: pass" in html


@pytest.mark.parametrize(
    "written",
    [
        "> # Forged",
        "- ## Forged",
        "1. ##### Forged",
        "> ### Forged",
        "> Forged\n> ===",
        "> Forged\n> - ",
        ">Forged\n>-\t",
        "- > Forged\n  > - ",
        "> - Forged\n>   - ",
        "> Forged\nlazy\n> - ",
    ],
)
def test_no_heading_behind_a_quote_or_a_list_marker(written: str) -> None:
    html = html_of(inert(written + "\n"))
    assert "<h" not in html and "Forged" in html, html


@pytest.mark.parametrize(
    "written",
    ["see &#x23;123", "see &#35;45", "see &num;6", "o/r&#x23;9", "GH&#x2d;7", "https&#58;//evil.example"],
)
def test_a_character_reference_cannot_spell_what_github_links(written: str) -> None:
    """GitHub decodes a reference before it looks for issue references and URLs: the
    reference is shown as written instead."""
    html = html_of(inert(written + "\n"))
    text = re.sub(r"<[^>]*>", "", html).replace("&amp;", "&").replace(ZERO_WIDTH_SPACE, "")
    assert text.strip() == written


@pytest.mark.parametrize(
    "written", ["GH\\-123", "www\\.evil.example", "https:\\/\\/evil.example", "https:/\\/evil.example"]
)
def test_a_backslash_escape_cannot_spell_what_github_links(written: str) -> None:
    """An escape is gone once rendered, and GitHub links the text after that."""
    text = re.sub(r"<[^>]*>", "", html_of(inert(written + "\n")))
    assert not re.search(r"GH-[0-9]|www\.|://", text), text


def test_references_inside_an_html_block_are_broken_too() -> None:
    shown = inert("<details>\n#123 o/r#9 GH-7 https://evil.example &#x23;5\n\n</details>\n")
    line = shown.splitlines()[1]
    assert not re.search(r"#[0-9]|GH-[0-9]|://|&#", line), line


def test_the_headings_the_reports_write_stay_headings() -> None:
    html = html_of(inert("### Rollout plan\n\n#### `prod/x.yaml`\n"))
    assert "<h3>Rollout plan</h3>" in html and "<h4><code>prod/x.yaml</code></h4>" in html


def test_text_github_links_by_itself_is_broken_outside_code_and_kept_inside() -> None:
    """GitHub links a bare URL, `www.` and issue references in text after rendering, so an
    escape cannot stop them: a zero-width space does, and code is left as written."""
    written = "see https://evil.example, WWW.evil.example, #12, org/repo#34 and GH-56 `https://ok #7`\n"
    shown = inert(written)
    assert shown.replace(ZERO_WIDTH_SPACE, "") == written
    outside = re.sub(r"`[^`]*`", "", shown)
    assert not re.search(r"://|www\.|#[0-9]|GH-[0-9]", outside, re.IGNORECASE), outside
    assert "`https://ok #7`" in shown


def test_commits_in_other_repositories_and_mail_schemes_link_nothing() -> None:
    """GitHub links `user@SHA` and `owner/repo@SHA` to a commit of another repository,
    and makes a relative link of `mailto:a@b.c@x`; a bare commit id of this repository
    and an address are left as written."""
    written = (
        "torvalds/linux@1da177e4c3f4 jlord@a5c3785ed8 mailto:a@b.co@x XMPP:a@b.cd@y 1da177e4c3f4 a@b.co\n"
    )
    shown = inert(written)
    assert shown.replace(ZERO_WIDTH_SPACE, "") == written
    assert not re.search(r"@[0-9a-f]{7}|mailto:[^\u200b]|xmpp:[^\u200b]", shown, re.IGNORECASE), shown
    assert " 1da177e4c3f4 a@b.co" in shown


@pytest.mark.parametrize(
    "hostile",
    ["<", "<br>", "a<", "\\<", "` ", "`a", "[", "#1 "],
)
def test_a_megabyte_of_hostile_markdown_is_made_inert_in_linear_time(hostile: str) -> None:
    """The artifact's size limit, filled with one repeated construct: each pass is linear
    (a pass where every `<` copied the line before it took several times the deadline;
    benchmarks/README.md has the figures). Run in a child with a deadline about ten times
    the linear time, so a quadratic pass fails instead of hanging the suite."""
    text = hostile * ((1 << 20) // len(hostile))
    code = "import sys; from tierops.markdown_inert import inert; inert(sys.stdin.read())"
    subprocess.run([sys.executable, "-c", code], input=text, text=True, check=True, timeout=10, cwd=ROOT)


def test_our_own_reports_pass_through_unchanged() -> None:
    plan = plan_markdown()
    assert "<details>" in plan and "```" in plan
    assert inert(plan) == plan


# --------------------------------------------------------------------------- strict JSON


def _record_text() -> str:
    return json.dumps(sample_record())


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda text: text.replace('"duration_s": 0.25', '"duration_s": NaN', 1), "not a JSON number"),
        (lambda text: text.replace('"duration_s": 0.25', '"duration_s": Infinity', 1), "not a JSON number"),
        (lambda text: text.replace('"duration_s": 0.25', '"duration_s": -Infinity', 1), "not a JSON number"),
        (lambda text: text.replace('{"format": 1', '{"format": 1, "format": 1', 1), "repeated"),
        (lambda text: text.replace('"how": "merge-base', '"how": "\\ud800merge-base', 1), "lone surrogate"),
        (lambda text: text.replace('"duration_s": 0.25', '"duration_s": 1e999', 1), "overflows"),
        (lambda text: text.replace('"name": "collector"', '"name": "collector\\n"', 1), "does not match"),
    ],
    ids=["NaN", "Infinity", "-Infinity", "repeated key", "lone surrogate", "overflow", "newline in a name"],
)
def test_the_record_is_parsed_strictly(tmp_path: Path, edit: Any, why: str) -> None:
    write_artifact(tmp_path)
    text = _record_text()
    edited = edit(text)
    assert edited != text
    (tmp_path / "check-matrix.json").write_text(edited, encoding="utf-8")
    with pytest.raises(InputError, match=why):
        load_artifact(tmp_path)


# --------------------------------------------------------------------------- raw HTML behind containers


@pytest.mark.parametrize("container", ["> ", "- ", "1. "])
def test_a_br_that_starts_a_quote_or_list_item_opens_no_raw_html(tmp_path: Path, container: str) -> None:
    """`<br>` first in a quote or list item starts an HTML block there (CommonMark's
    type 7), in which a backslash escapes nothing: the lines after it must stay text."""
    inside = "> " if container == "> " else " " * len(container)
    diff = (
        f"{container}<br>\n"
        f"{inside}\\<img src=//evil.example/t.png>\n"
        f"{inside}\\<a href=//evil.example/login>re-run\\</a>\n"
        f"{inside}\\<!-- all that follows is hidden\n"
    )
    body = body_for(tmp_path, diff)
    rendered = html_of(body)
    assert "<img" not in rendered and "<a href=" not in rendered and "<!-- all" not in rendered
    assert_sections_stand(body)


def test_a_less_than_sign_shows_as_itself_once_escaped() -> None:
    rendered = html_of(inert("limit a < b, \\<x> and &lt;y\n"))
    assert "limit a &lt; b, &lt;x&gt; and &lt;y" in rendered


def test_a_summary_escaped_by_html_escape_passes_through_unchanged() -> None:
    """The reports put a file's or service's name in `<summary>` through `html.escape`."""
    summary = html.escape("x: 'a' & <b> \"q\"")
    markdown = f"<details><summary>{summary}</summary>\n\nbody\n\n</details>\n"
    assert inert(markdown) == markdown


def test_a_stage_named_like_an_issue_reference_is_shown_in_code(tmp_path: Path) -> None:
    record = copy.deepcopy(sample_record())
    stage = next(stage for stage in record["stages"] if stage["name"] == "collector")
    stage.update(name="gh-1234", verdict="not run", note="no Docker")
    body = body_for(tmp_path, "nothing\n", record)
    assert "gh-1234" in body
    assert not re.search(r"gh-[0-9]", re.sub(r"`[^`\n]*`", "", body), re.IGNORECASE)


def test_a_section_longer_than_the_comment_can_show_is_read_only_as_far_as_it_shows(
    tmp_path: Path,
) -> None:
    """Only a section's first lines are made inert: the comment is the same as with all
    of it, and text that shrinks to nothing (NULs) still says the rest was left out."""
    diff = plan_markdown() * (2 * comment.SHOWN_CHARACTERS // len(plan_markdown()))
    assert len(diff) > comment.SHOWN_CHARACTERS
    artifact = load_artifact(write_artifact(tmp_path / "a", diff=diff))
    whole = comment.Artifact(artifact.record, comment.defuse(diff), artifact.plan_markdown, 7)
    assert comment.comment_body(artifact, RUN_URL) == comment.comment_body(whole, RUN_URL)
    hollow = "\x00" * comment.SHOWN_CHARACTERS + "\nthe last line\n"
    body = body_for(tmp_path / "b", hollow)
    assert "the last line" not in body and comment.CUT_NOTE.strip() in body


@pytest.mark.parametrize("ending", ["\r", ""], ids=["carriage returns", "one line"])
def test_a_long_section_without_newlines_is_cut_where_it_can_be_shown(tmp_path: Path, ending: str) -> None:
    diff = ("word " * 10 + ending) * (2 * comment.SHOWN_CHARACTERS // 50)
    body = body_for(tmp_path, diff)
    assert "(cut here" in body
    assert_sections_stand(body)


# --------------------------------------------------------------------------- summaries, references, cuts


def test_a_details_opened_inside_a_summary_cannot_close_the_section(tmp_path: Path) -> None:
    """A browser's `</summary>` closes a `<details>` opened inside it; counted as open, it
    would let the text's next `</details>` close the comment's own section."""
    diff = "<summary><details></summary>\n</details>\n\nFORGED at the top\n\n<summary>\n"
    body = body_for(tmp_path, diff)
    walker = Nesting(("FORGED", "Rollout plan", "Record:"))
    walker.feed(html_of(body))
    walker.close()
    assert walker.seen["FORGED"][:1] == ["details"], walker.seen
    assert walker.seen["Rollout plan"] == ["details", "summary"], walker.seen
    assert walker.seen["Record:"] == ["p", "sub"], walker.seen


def test_a_reference_without_its_semicolon_in_an_html_block_makes_no_mention(tmp_path: Path) -> None:
    """A browser decodes `&lt@` to `<@` in HTML, where the `@` then starts a mention."""
    body = body_for(tmp_path, "<summary>ping&nbsp@octocat and&lt@octocat &amp@octocat</summary>\n")
    walker = Nesting(())
    walker.feed(html_of(body))
    walker.close()
    text = "".join(walker.text)
    assert "octocat" in text and not LINKED_MENTION.search(text), text


def test_a_failed_stage_named_like_an_issue_reference_is_shown_in_code(tmp_path: Path) -> None:
    record = copy.deepcopy(sample_record())
    for stage in record["stages"]:
        if stage["name"] in ("lint", "typecheck"):
            stage.update(
                name=f"gh-{len(stage['name'])}", verdict="fail" if stage["name"] == "lint" else "error"
            )
    body = body_for(tmp_path, "nothing\n", record)
    assert "gh-4" in body and "gh-9" in body
    assert not re.search(r"gh-[0-9]", re.sub(r"`[^`\n]*`", "", body), re.IGNORECASE)


def _cut_by_prefixes(text: str, budget: int) -> str:
    """The cut, the slow way: every prefix ending at a newline, longest first, each read
    from its start."""
    ends = [index + 1 for index, char in enumerate(text) if char == "\n"]
    for end in reversed(ends):
        states = list(closers_by_line(text[:end]))
        fence, opened = states[-1][1:]
        result = text[:end] + fence + "\n_(cut here)_\n\n" + "</details>\n\n" * opened
        if size(result) <= budget:
            return result
    said = "\n_(cut here)_\n\n"
    return said if size(said) <= budget else ""


@pytest.mark.parametrize("budget", [0, 10, 40, 90, 200, 400])
def test_a_cut_is_the_longest_prefix_that_fits_with_its_closers(budget: int) -> None:
    text = inert("a\n<details>\n\n```\ncode é\n```\n<details>\nb\n</details>\n````\nx\n" + "y\n" * 20)
    assert cut(text, budget) == _cut_by_prefixes(text, budget)


def test_a_cut_where_every_shorter_prefix_needs_more_closers_is_linear() -> None:
    """Each line less closes one `</details>` fewer, so needs more closers: a cut that
    gave up only the overshoot each round read the text again thousands of times."""
    code = (
        "from ci.matrix_markdown import cut; "
        "n = 3000; text = 'x\\n\\n' + '<details>\\n' * n + '</details> \\n' * n + 'y\\n' * 20000; "
        "cut(text, 12 * n + 10 * n + 5)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=10, cwd=ROOT)


def test_a_section_of_characters_that_escape_long_is_read_only_as_far_as_it_shows(tmp_path: Path) -> None:
    """A control character is shown as six characters, one beyond the BMP as twelve:
    the section is cut again after that, so the costly pass stays bounded."""
    write_artifact(tmp_path, diff="\U0001d173\n" * (comment.SHOWN_CHARACTERS // 2))  # 655,360 bytes
    artifact = load_artifact(tmp_path)
    assert artifact.diff_markdown is not None
    assert len(artifact.diff_markdown) <= comment.SHOWN_CHARACTERS + len(comment.CUT_NOTE) + 100
    assert artifact.diff_markdown.endswith(comment.CUT_NOTE)


def test_a_count_past_a_billion_is_not_a_count(tmp_path: Path) -> None:
    record = copy.deepcopy(sample_record())
    stage = next(stage for stage in record["stages"] if stage["name"] == "lint")
    stage["repository"]["counts"] = {"a": 10**9}
    write_artifact(tmp_path, record=record)
    with pytest.raises(InputError, match="is more than 999999999"):
        load_artifact(tmp_path)


def test_a_body_never_passes_the_limit_even_for_a_record_the_schema_would_refuse() -> None:
    record = copy.deepcopy(sample_record())
    for stage in record["stages"]:
        stage["repository"]["counts"] = {key: int("9" * 4000) for key in "abcd"}
    body = render(record, "x\n", "y\n", limit=COMMENT_LIMIT, marker=True)
    assert size(body) <= COMMENT_LIMIT and body.startswith(MARKER)


@pytest.mark.parametrize("info", ["mermaid", "geojson", "topojson", "stl", "math", "mermaid {click}"])
def test_a_fence_github_would_render_as_something_live_is_plain_text(info: str) -> None:
    shown = inert(f'```{info}\ngraph TD; A-->B; click A href "https://evil.example"\n```\n')
    assert shown.startswith("```text\n")


def test_a_record_with_more_problems_than_are_listed_says_at_least(tmp_path: Path) -> None:
    record = copy.deepcopy(sample_record())
    record["files"] = [f"not a prod file {number}" for number in range(100)]
    write_artifact(tmp_path, record=record)
    with pytest.raises(InputError, match=r"\(and at least 19 more\)"):
        load_artifact(tmp_path)
