"""`python -m ci.schemas FILE...` (the `compose-schema` and `workflow-schema` pre-commit hooks).

Each file goes to check-jsonschema's own command with the built-in schema its path
selects, exactly as two separate hooks would run it:

| files | schema |
|---|---|
| `prod/*.yaml` | `vendor.compose-spec` (check-jsonschema's own hook only matches `compose*.yaml`) |
| `.github/workflows/*.yml` | `vendor.github-workflows` |

Both hooks run this command (each on the files its `files:` selects), so one call
with files of both kinds checks each against its own schema in one process. Output and
exit code are check-jsonschema's (the worst of the runs); a file no schema claims is a
usage error (2), never silently passed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from tierops.exitcodes import ExitCode

# (built-in schema, repository-relative path pattern): the hook's `files:` is their union.
SCHEMAS = (
    ("vendor.compose-spec", re.compile(r"^prod/[^/]*\.ya?ml$")),
    ("vendor.github-workflows", re.compile(r"^\.github/workflows/[^/]*\.ya?ml$")),
)


def assign(files: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Files per schema, in argument order, and the files no schema claims."""
    groups: dict[str, list[str]] = {}
    unclaimed: list[str] = []
    for name in files:
        posix = name.replace("\\", "/")
        schema = next((schema for schema, pattern in SCHEMAS if pattern.match(posix)), None)
        if schema is None:
            unclaimed.append(name)
        else:
            groups.setdefault(schema, []).append(name)
    return groups, unclaimed


def check(schema: str, files: Sequence[str]) -> int:
    """check-jsonschema's command, in this process; its exit code."""
    import click
    from check_jsonschema.cli.main_command import main as check_jsonschema

    try:
        code = check_jsonschema.main(
            args=["--builtin-schema", schema, *files], prog_name="check-jsonschema", standalone_mode=False
        )
    except click.ClickException as error:
        error.show()
        return ExitCode.USAGE
    return int(code or 0)


def main(argv: Sequence[str] | None = None) -> int:
    files = list(sys.argv[1:] if argv is None else argv)
    if not files or any(name in ("-h", "--help") for name in files):
        print(__doc__)
        return ExitCode.OK if files else ExitCode.USAGE
    groups, unclaimed = assign(files)
    for name in unclaimed:
        print(f"{name}: no schema for this path (ci/schemas.py SCHEMAS)", file=sys.stderr)
    codes = [check(schema, names) for schema, names in groups.items()]
    if unclaimed:
        codes.append(ExitCode.USAGE)
    return max(codes, default=ExitCode.OK)


if __name__ == "__main__":
    raise SystemExit(main())
