"""The comment's API client against a GitHub that answers badly (a real HTTP server on
127.0.0.1): every way it fails is one line, exit 3, and never a hang or the token."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from ci import comment
from ci.comment import GitHub, GitHubError
from tests.httpstub import Answer, reply, servers, trickle
from tierops.errors import UsageError
from tierops.markdown_inert import inert

TOKEN = "gh-test-" + "7" * 8  # built here, not a credential-shaped literal


@pytest.fixture
def api() -> Iterator[Callable[[Answer], GitHub]]:
    with servers() as start:
        yield lambda answer: GitHub(start(answer)[0], TOKEN, "o/r")


def _json(body: bytes, **headers: str) -> Answer:
    return reply(200, body, **{"Content-Type": "application/json", **headers})


def test_a_next_link_with_a_space_is_a_failed_request(api: Any) -> None:
    base: list[str] = []

    def page(handler: BaseHTTPRequestHandler) -> None:
        # Under the API's own base, so only the space is wrong with it.
        _json(b"[]", Link=f'<{base[0]}/repos/o/r/x y>; rel="next"')(handler)

    github = api(page)
    base.append(github.base)
    with pytest.raises(GitHubError, match="GET /repos/o/r/x y: URL can't contain control characters"):
        list(github.comments(7))


def test_a_reply_nested_past_the_recursion_limit_is_not_json(api: Any) -> None:
    github = api(_json(b"[" * 200_000))
    with pytest.raises(GitHubError, match="response is not JSON"):
        github.request("GET", github.url("pulls/7"))


def test_a_reply_sent_a_byte_at_a_time_ends_at_the_timeout(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comment, "TIMEOUT_S", 1.0)

    github = api(trickle)
    started = time.monotonic()
    with pytest.raises(GitHubError, match="no whole reply within"):
        github.request("GET", github.url("pulls/7"))
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("value", [True, 0, -1, "12"])
def test_a_comment_id_that_is_no_positive_integer_is_refused(value: object) -> None:
    with pytest.raises(GitHubError, match="without an id"):
        comment._id({"id": value})


def test_a_token_a_header_cannot_carry_is_refused_without_showing_it() -> None:
    with pytest.raises(UsageError) as caught:
        GitHub("https://api.github.com", TOKEN + "\r\nX-Injected: 1", "o/r")
    assert TOKEN not in str(caught.value) and "it is not shown" in str(caught.value)


@pytest.mark.parametrize("repo", ["../..", "o/..", "./r"])
def test_a_repository_name_of_dots_is_refused(repo: str) -> None:
    with pytest.raises(UsageError, match="not a repository name"):
        GitHub("https://api.github.com", TOKEN, repo)


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("> [!CAUTION]\n> safe to merge\n", "> \\[\\!CAUTION]\n> safe to merge\n"),
        ("> \\[!NOTE]\n", "> \\[\\!NOTE]\n"),
        ("$\\huge\\text{APPROVED}$ and `$x$`\n", "\\$\\huge\\text{APPROVED}\\$ and `$x$`\n"),
        ("$$\nbanner\n$$\n", "\\$\\$\nbanner\n\\$\\$\n"),
    ],
    ids=["alert", "escaped alert", "inline math", "math block"],
)
def test_alerts_and_math_are_text(written: str, expected: str) -> None:
    """GitHub renders `> [!CAUTION]` (even with its `[` escaped) as a coloured callout and
    `$...$` as typeset math: a fork could paint an approval into its section."""
    assert inert(written) == expected
