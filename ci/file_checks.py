"""`python -m ci.file_checks FILE...` (the `file-checks` pre-commit hook): the cheap per-file checks, one process.

pre-commit passes every tracked text file; each check gets the files its row selects
and runs with the upstream tool's own `main` (pre-commit-hooks, pinned in the `hooks`
group), so the verdicts are exactly the separate hooks' verdicts:

| check | files | what |
|---|---|---|
| `check-yaml` | `*.yaml`, `*.yml` except compose files (`prod/`, `tests/tierops/corpus/`) | parses, multi-document allowed (compose files are read as Compose reads them: docs/development.md) |
| `end-of-file-fixer` | outside `prod/` | exactly one newline at the end (fixer) |
| `trailing-whitespace` | outside `prod/` | no trailing whitespace (fixer) |
| `check-merge-conflict` | all | no conflict markers while a merge is in progress |
| `detect-private-key` | all | no PEM, SSH or PGP private key headers |
| `token-shapes` | all | no credential-shaped string: `validators.interpolation.token_regex()`, the regex the dummy rule uses; a match is reported by position, never printed |

prod/ is written only by the generators, byte for byte: no fixer touches it.

Why one process: for these checks starting Python and importing the tool is nearly all
of the cost (about 60 ms each here, against well under 1 ms of checking per file), and
six hooks paid it six times on every `nox -s lint`. A failing check prints its name
and the tool's own output; the exit code is the worst of the checks (1: a finding or a
fixed file).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from tierops.exitcodes import ExitCode

YAML_SUFFIXES = (".yaml", ".yml")


def _generated(path: str) -> bool:
    return path.replace("\\", "/").startswith("prod/")


# Compose files are judged by Compose's reading (tierops.yamlload, the validators and
# `nox -s compose`), not by a generic YAML parser: Compose keeps anchors across the
# documents of one file, which plain YAML does not (tests/tierops/corpus/ relies on it).
COMPOSE_CORPUS = "tests/tierops/corpus/"


def _compose_file(path: str) -> bool:
    return _generated(path) or path.replace("\\", "/").startswith(COMPOSE_CORPUS)


class Check(NamedTuple):
    name: str
    selects: Callable[[str], bool]
    run: Callable[[list[str]], int]


def _check_yaml(files: list[str]) -> int:
    from pre_commit_hooks import check_yaml

    return int(check_yaml.main(["--allow-multiple-documents", *files]))


def _end_of_file(files: list[str]) -> int:
    from pre_commit_hooks import end_of_file_fixer

    return int(end_of_file_fixer.main(files))


def _trailing_whitespace(files: list[str]) -> int:
    from pre_commit_hooks import trailing_whitespace_fixer

    return int(trailing_whitespace_fixer.main(files))


def _merge_conflict(files: list[str]) -> int:
    from pre_commit_hooks import check_merge_conflict

    return int(check_merge_conflict.main(files))


def _private_key(files: list[str]) -> int:
    from pre_commit_hooks import detect_private_key

    return int(detect_private_key.main(files))


def token_findings(files: Sequence[str], pattern: re.Pattern[str] | None = None) -> list[str]:
    """`path:line:col: token-shaped string (N characters)` per match; the match itself is never shown."""
    if pattern is None:
        from validators.interpolation import token_regex

        pattern = re.compile(token_regex())
    found = []
    for name in files:
        try:
            text = Path(name).read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            found.append(f"{name}: cannot read: {error.strerror}")
            continue
        if pattern.search(text) is None:  # the common case: one scan of the whole file
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for match in pattern.finditer(line):
                found.append(
                    f"{name}:{number}:{match.start() + 1}: token-shaped string ({len(match[0])} characters)"
                )
    return found


def _token_shapes(files: list[str]) -> int:
    findings = token_findings(files)
    for line in findings:
        print(line)
    return ExitCode.FINDINGS if findings else ExitCode.OK


CHECKS = (
    Check("check-yaml", lambda path: path.endswith(YAML_SUFFIXES) and not _compose_file(path), _check_yaml),
    Check("end-of-file-fixer", lambda path: not _generated(path), _end_of_file),
    Check("trailing-whitespace", lambda path: not _generated(path), _trailing_whitespace),
    Check("check-merge-conflict", lambda path: True, _merge_conflict),
    Check("detect-private-key", lambda path: True, _private_key),
    Check("token-shapes", lambda path: True, _token_shapes),
)


def assign(files: Sequence[str]) -> dict[str, list[str]]:
    """The files each check gets, in argument order."""
    return {check.name: [name for name in files if check.selects(name)] for check in CHECKS}


def main(argv: Sequence[str] | None = None) -> int:
    files = list(sys.argv[1:] if argv is None else argv)
    if any(name in ("-h", "--help") for name in files):
        print(__doc__)
        return ExitCode.OK
    worst = ExitCode.OK
    selected = assign(files)
    for check in CHECKS:
        if not selected[check.name]:
            continue
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            code = check.run(selected[check.name])
        if code != ExitCode.OK:
            print(f"{check.name}: failed")
            sys.stdout.write("".join(f"  {line}\n" for line in output.getvalue().splitlines()))
        worst = max(worst, ExitCode(min(code, ExitCode.INTERNAL)))
    return int(worst)


if __name__ == "__main__":
    raise SystemExit(main())
