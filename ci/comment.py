"""`python -m ci.comment`: the one sticky check-matrix comment on a pull request.

Run by .github/workflows/check-comment.yml, a `workflow_run` job of the *base*
repository that holds the write token and never checks out or runs the pull
request's code. Its only input from the pull request's run is the `check-matrix`
artifact, which code from a fork may have written; so this module treats it as data:

- only regular files with known names are read, each with a size limit, never
  executed, never extracted by us (the download action unpacks it into an empty
  directory of the runner);
- the record must parse and validate against ci/check-matrix.schema.json of the
  base checkout (ci/record_schema.py, stdlib only: nothing is installed here);
- the comment is rendered *here*, by the base repository's ci/matrix_markdown.py,
  from the validated record; the diff's and plan's Markdown are size-limited and
  their @-mentions defused, and the whole body stays under GitHub's 65,536;
- the pull-request number the artifact names is only a hint: the comment is posted
  only when GitHub says that pull request's head is the commit the run checked
  (`workflow_run.head_sha`, which GitHub, not the artifact, supplies).

Then one comment per pull request, found by its hidden marker and its author: none
yet, create it; one with another body, edit it in place; the same body, leave it.
HTTP is stdlib `urllib`; redirects are refused, so the token only ever goes to the
API base URL.

    $ GITHUB_TOKEN=... python -m ci.comment --artifact DIR --repo o/r --head-sha SHA
    created comment 1234 on o/r#7
"""

from __future__ import annotations

if __name__ == "__main__":
    # Before the imports below: `launch` imports this module again under its signal
    # handlers, so an interrupt during those imports ends with 130 and one line.
    from tierops.entry import launch

    launch("ci.comment")

import argparse
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from email.message import Message
from http import HTTPStatus
from pathlib import Path
from typing import Any

from ci import matrix_markdown, record_schema
from tierops.checkmatrix import RECORD_NAME
from tierops.cli import guarded, parse
from tierops.entry import visible
from tierops.errors import InputError, TieropsError, UsageError
from tierops.exitcodes import ExitCode, epilog
from tierops.markdown_inert import inert

SCHEMA = Path(__file__).resolve().parent / "check-matrix.schema.json"
DEFAULT_API = "https://api.github.com"
DEFAULT_AUTHOR = "github-actions[bot]"  # who the workflow's GITHUB_TOKEN posts as
# What the artifact may hold and how large each may be (bytes). The record is small
# (a few KiB per prod file); the diff and plan are capped at the step summary's size.
LIMITS = {
    RECORD_NAME: 1 << 20,
    "check/diff.md": 1 << 20,
    "check/plan.md": 1 << 20,
    "pull-request.json": 1 << 10,
}
RESPONSE_LIMIT = 16 << 20
PER_PAGE = 100
MAX_PAGES = 100  # 10,000 comments: a pull request with more is not ours to page through
TIMEOUT_S = 30.0


class GitHubError(TieropsError):
    """The API refused or failed a request (`status`: the HTTP status it answered, if any)."""

    exit_code = ExitCode.INTERNAL
    status: int | None = None


# --------------------------------------------------------------------------- the artifact


@dataclass(frozen=True)
class Artifact:
    record: dict[str, Any]
    diff_markdown: str | None
    plan_markdown: str | None
    pull_request: int


def _read_limited(directory: Path, name: str) -> bytes | None:
    """The bytes of `directory/name` when it is a regular file inside `directory` within
    its size limit; None when absent. A link, a directory or an oversized file is refused."""
    path = directory / name
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        raise InputError(f"{name} in the artifact is not a regular file", where=str(directory))
    root = directory.resolve()
    if root not in path.resolve().parents:
        raise InputError(f"{name} resolves outside the artifact", where=str(directory))
    limit = LIMITS[name]
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{name} is larger than {limit} bytes", where=str(directory))
    return data


class _NotStrictJSON(ValueError):
    """What Python's json accepts and JSON (RFC 8259) does not, or what a UTF-8 text
    cannot hold."""


def _no_constant(name: str) -> Any:
    raise _NotStrictJSON(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number as a float, refused when it overflows to infinity (`1e999`)."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NotStrictJSON(f"{text[:20]} overflows a double")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _NotStrictJSON(f"the key {key[:40]!r} is repeated")
        result[key] = value
    return result


def _no_lone_surrogates(value: Any) -> None:
    """Every string (keys too) is valid Unicode: a `\\ud800` escape is not."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise _NotStrictJSON("a string holds a lone surrogate") from None


def _json(data: bytes, name: str) -> Any:
    """Strict JSON: no NaN or Infinity, no repeated key, no lone surrogate."""
    try:
        value = json.loads(
            data.decode("utf-8"),
            parse_constant=_no_constant,
            parse_float=_finite,
            object_pairs_hook=_unique_keys,
        )
        _no_lone_surrogates(value)
    except _NotStrictJSON as error:
        raise InputError(f"{name} is not strict JSON: {error}", where="the artifact") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise InputError(f"{name} is not JSON: {type(error).__name__}", where="the artifact") from None
    return value


_MARKER_WORD = matrix_markdown.MARKER.removeprefix("<!--").removesuffix("-->").strip()
_MARKER_WORD_BROKEN = _MARKER_WORD[:1] + "\u200b" + _MARKER_WORD[1:]


def defuse(markdown: str) -> str:
    """Markdown from the artifact, made data (tierops/markdown_inert.py): no markup that
    reaches past it, no mention that notifies, never the marker (not even one nested in
    itself, which one removal would leave whole), and no control or format character (a
    terminal escape, a bidi override): each is shown as `\\uXXXX`."""
    text = visible(markdown.replace("\r\n", "\n").replace("\x00", ""))
    # The marker's word with a zero-width space inside: one pass, and no occurrence can
    # form again across a replaced one (each holds the space), so no nesting survives it.
    return inert(text.replace(_MARKER_WORD, _MARKER_WORD_BROKEN))


# The comment shows at most COMMENT_LIMIT bytes of both sections together, and `defuse`
# makes no text shorter but for the NULs and CRLFs it drops: a section's first lines up
# to four times that many characters hold all it can show (and a megabyte of hostile
# lines costs a quarter of the time).
SHOWN_CHARACTERS = 4 * matrix_markdown.COMMENT_LIMIT
CUT_NOTE = "\n_(cut here: the rest is in the artifact)_\n"


def _section(data: bytes) -> str | None:
    """A section's Markdown made data, its lines past what the comment can show left
    out; None for bytes that are not UTF-8 text (shown as "did not run")."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    cut = len(text) > SHOWN_CHARACTERS
    text = visible(_first_lines(text).replace("\r\n", "\n").replace("\x00", ""))
    # `visible` writes a control as six characters and one beyond the BMP as twelve: the
    # escaped text is cut again, so the costly pass reads at most SHOWN_CHARACTERS.
    cut = cut or len(text) > SHOWN_CHARACTERS
    return defuse(_first_lines(text)) + (CUT_NOTE if cut else "")


def _first_lines(text: str) -> str:
    """At most SHOWN_CHARACTERS of `text`, ended at its last newline there (`defuse`
    shows a lone \r as text), else inside one long line."""
    if len(text) <= SHOWN_CHARACTERS:
        return text
    end = text.rfind("\n", 0, SHOWN_CHARACTERS) + 1
    return text[: end or SHOWN_CHARACTERS]


def load_artifact(directory: Path, schema: Mapping[str, Any] | None = None) -> Artifact:
    """Read and validate the artifact; InputError (exit 2) on anything unexpected."""
    if not directory.is_dir():
        raise InputError("the artifact directory does not exist", where=str(directory))
    raw = _read_limited(directory, RECORD_NAME)
    if raw is None:
        raise InputError(f"the artifact has no {RECORD_NAME}", where=str(directory))
    record = _json(raw, RECORD_NAME)
    problems = record_schema.validate(record, schema or json.loads(SCHEMA.read_text(encoding="utf-8")))
    if problems:
        raise InputError(
            f"{RECORD_NAME} does not match ci/check-matrix.schema.json: {problems[0]}"
            + (f" (and {len(problems) - 1} more)" if 1 < len(problems) < record_schema.MAX_ERRORS else "")
            + (
                f" (and at least {len(problems) - 1} more)"
                if len(problems) >= record_schema.MAX_ERRORS
                else ""
            ),
            where="the artifact",
        )
    info_raw = _read_limited(directory, "pull-request.json")
    info = _json(info_raw, "pull-request.json") if info_raw is not None else None
    number = info.get("number") if isinstance(info, dict) else None
    if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 1 << 31:
        raise InputError("pull-request.json names no pull request number", where="the artifact")
    sections: dict[str, str | None] = {}
    for key in ("diff", "plan"):
        data = _read_limited(directory, f"check/{key}.md")
        sections[key] = _section(data) if data is not None else None
    return Artifact(record, sections["diff"], sections["plan"], number)


def comment_body(artifact: Artifact, run_url: str | None) -> str:
    return matrix_markdown.render(
        artifact.record,
        artifact.diff_markdown,
        artifact.plan_markdown,
        limit=matrix_markdown.COMMENT_LIMIT,
        run_url=run_url,
        marker=True,
    )


# --------------------------------------------------------------------------- the API


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the token to another URL: refuse it."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _read_by(response: Any, deadline: float) -> bytes:
    """At most RESPONSE_LIMIT + 1 bytes of a reply, read by `deadline` (a server that
    sends one byte at a time never trips the per-read timeout)."""
    chunks: list[bytes] = []
    size = 0
    while size <= RESPONSE_LIMIT:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no whole reply within {TIMEOUT_S} s")
        chunk = response.read1(min(1 << 16, RESPONSE_LIMIT + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class Response:
    status: int
    data: Any
    headers: Message


class GitHub:
    """The few REST endpoints the comment needs, with a token, against `base`."""

    def __init__(self, base: str, token: str, repo: str) -> None:
        if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", base):
            raise UsageError(f"not an API URL: {base!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo) or any(
            part in (".", "..") for part in repo.split("/")
        ):
            raise UsageError(f"not a repository name: {repo!r} (want OWNER/NAME)")
        if not re.fullmatch(r"[\x21-\x7e]+", token):
            # Never printed: a token with a line break or a space is still a secret.
            raise UsageError("GITHUB_TOKEN holds a character an HTTP header cannot carry (it is not shown)")
        self.base = base.rstrip("/")
        self.token = token
        self.repo = repo
        self.opener = urllib.request.build_opener(_NoRedirects())

    def request(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Response:
        if not url.startswith(self.base + "/"):
            raise GitHubError(f"refusing to send the token to {url} (not under {self.base})")
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", "tierops-check-matrix")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        deadline = time.monotonic() + TIMEOUT_S  # the whole reply, not each read of it
        try:
            with self.opener.open(request, timeout=TIMEOUT_S) as response:
                payload = _read_by(response, deadline)
                status, headers = response.status, response.headers
        except urllib.error.HTTPError as error:
            error.close()  # it holds the connection
            failed = GitHubError(f"{method} {_path(url)}: HTTP {error.code} {error.reason}")
            failed.status = error.code
            raise failed from None
        # HTTPException and ValueError: a URL it cannot send, a reply it cannot read.
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as error:
            raise GitHubError(f"{method} {_path(url)}: {visible(str(error))}") from None
        if len(payload) > RESPONSE_LIMIT:
            raise GitHubError(f"{method} {_path(url)}: response larger than {RESPONSE_LIMIT} bytes")
        try:
            parsed = json.loads(payload) if payload else None
        except (ValueError, RecursionError):
            raise GitHubError(f"{method} {_path(url)}: response is not JSON") from None
        return Response(status, parsed, headers)

    def url(self, path: str, **query: str | int) -> str:
        suffix = f"?{urllib.parse.urlencode(query)}" if query else ""
        return f"{self.base}/repos/{self.repo}/{path}{suffix}"

    def comments(self, number: int) -> Iterator[dict[str, Any]]:
        """Every comment of issue or pull request `number`, oldest first, page by page."""
        url: str | None = self.url(f"issues/{number}/comments", per_page=PER_PAGE)
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self.request("GET", url)
            if not isinstance(response.data, list):
                raise GitHubError(f"GET {_path(url)}: not a list of comments")
            yield from (item for item in response.data if isinstance(item, dict))
            url = next_link(response.headers.get("Link"))
        if url is not None:  # the last page read still names a next one
            raise GitHubError(f"more than {MAX_PAGES} pages of comments on #{number}")

    def pull_request(self, number: int) -> dict[str, Any] | None:
        """The pull request `number`, or None when there is none (GitHub answers 404 for
        an unused number or an issue's)."""
        try:
            data = self.request("GET", self.url(f"pulls/{number}")).data
        except GitHubError as error:
            if error.status == HTTPStatus.NOT_FOUND:
                return None
            raise
        if not isinstance(data, dict):
            raise GitHubError(f"GET pulls/{number}: not a pull request")
        return data


def next_link(header: str | None) -> str | None:
    """The `rel="next"` URL of an RFC 8288 Link header, as GitHub paginates."""
    for part in (header or "").split(","):
        match = re.fullmatch(r'\s*<([^>]+)>\s*;\s*rel="?next"?\s*', part)
        if match:
            return match.group(1)
    return None


def _path(url: str) -> str:
    return urllib.parse.urlsplit(url).path


# --------------------------------------------------------------------------- the comment


@dataclass(frozen=True)
class Posted:
    action: str  # "created", "updated", "unchanged", or "skipped"
    comment_id: int | None
    reason: str = ""


def find_comment(api: GitHub, number: int, author: str) -> dict[str, Any] | None:
    """Our comment: the oldest one of `author` whose body starts with the marker. A
    comment of anybody else that quotes the marker is never taken (nor could it be edited)."""
    for comment in api.comments(number):
        user = comment.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        body = comment.get("body")
        if login == author and isinstance(body, str) and body.startswith(matrix_markdown.MARKER):
            return comment
    return None


def upsert(api: GitHub, number: int, body: str, author: str = DEFAULT_AUTHOR) -> Posted:
    """Create the sticky comment, or edit it in place, or leave it when the body is the same."""
    if not body.startswith(matrix_markdown.MARKER):
        raise ValueError("a sticky comment body starts with the marker")
    existing = find_comment(api, number, author)
    if existing is None:
        created = api.request("POST", api.url(f"issues/{number}/comments"), {"body": body}).data
        return Posted("created", _id(created))
    if existing.get("body") == body:
        return Posted("unchanged", _id(existing))
    comment_id = _id(existing)
    api.request("PATCH", api.url(f"issues/comments/{comment_id}"), {"body": body})
    return Posted("updated", comment_id)


def _id(comment: Any) -> int:
    value = comment.get("id") if isinstance(comment, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise GitHubError("a comment without an id")
    return value


def post(api: GitHub, artifact: Artifact, head_sha: str, *, run_url: str | None, author: str) -> Posted:
    """Post the artifact's comment, if its pull request's head is still the checked commit."""
    pull = api.pull_request(artifact.pull_request)
    if pull is None:  # the number is a hint from the artifact: one naming no pull request is skipped
        return Posted("skipped", None, f"#{artifact.pull_request} is no pull request of {api.repo}")
    head = pull.get("head")
    if not isinstance(head, dict) or head.get("sha") != head_sha:
        # A forged number (another pull request), or a newer push whose own run will post.
        return Posted("skipped", None, f"#{artifact.pull_request}'s head is not {head_sha[:12]}")
    if pull.get("state") != "open":
        return Posted("skipped", None, f"#{artifact.pull_request} is {pull.get('state')}")
    return upsert(api, artifact.pull_request, comment_body(artifact, run_url), author)


# --------------------------------------------------------------------------- the CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ci.comment",
        description=__doc__,
        epilog=epilog("not used"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--artifact", type=Path, required=True, help="the downloaded check-matrix artifact")
    parser.add_argument("--repo", required=True, help="OWNER/NAME (github.repository)")
    parser.add_argument(
        "--head-sha", required=True, help="the commit the run checked (github.event.workflow_run.head_sha)"
    )
    parser.add_argument("--run-url", help="the run's page (github.event.workflow_run.html_url)")
    parser.add_argument(
        "--api-url",
        default=os.environ.get("GITHUB_API_URL", DEFAULT_API),
        help="default: $GITHUB_API_URL, else %(default)s",
    )
    parser.add_argument(
        "--author", default=DEFAULT_AUTHOR, help="whose comment is ours (default: %(default)s)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the body instead of posting")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: _run(args), tool="ci.comment")


def _run(args: argparse.Namespace) -> int:
    if not re.fullmatch(r"[0-9a-f]{40}", args.head_sha):
        raise UsageError(f"--head-sha {args.head_sha!r} is not a commit id")
    artifact = load_artifact(args.artifact)
    if args.dry_run:
        print(comment_body(artifact, args.run_url), end="")
        return ExitCode.OK
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError("GITHUB_TOKEN is not set", hint="the workflow passes github.token")
    api = GitHub(args.api_url, token, args.repo)
    posted = post(api, artifact, args.head_sha, run_url=args.run_url, author=args.author)
    where = f"{args.repo}#{artifact.pull_request}"
    if posted.action == "skipped":
        print(f"not posted to {where}: {posted.reason}")
    else:
        print(f"{posted.action} comment {posted.comment_id} on {where}")
    return ExitCode.OK
