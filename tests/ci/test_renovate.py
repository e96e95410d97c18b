"""renovate.json and .github/dependabot.yml: valid, and finding exactly what they should.

Renovate's regex manager is applied here as Renovate applies it: each `matchStrings`
pattern (Renovate's `(?<name>...)` groups as Python's `(?P<name>...)`) over the files
its `managerFilePatterns` select, in the tests' fixture fleet laid out as a repository is.
It compares with an independent scan of the same files, never with digests or counts
written here.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from check_jsonschema.builtin_schemas import get_builtin_schema
from ruamel.yaml import YAML

from tests.conftest import FLEET

ROOT = Path(__file__).resolve().parents[2]
RENOVATE = ROOT / "renovate.json"
DEPENDABOT = ROOT / ".github" / "dependabot.yml"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")


def _renovate() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(RENOVATE.read_text(encoding="utf-8"))
    return config


def _manager() -> dict[str, Any]:
    (manager,) = _renovate()["customManagers"]
    assert isinstance(manager, dict)
    return manager


def python_pattern(renovate_regex: str) -> re.Pattern[str]:
    """A Renovate (JavaScript) regex as Python's: named groups `(?<x>` become `(?P<x>`."""
    return re.compile(re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", renovate_regex))


def file_pattern(renovate_pattern: str) -> re.Pattern[str]:
    """A `managerFilePatterns` entry written as a regex (`/.../`); globs are not used here."""
    assert renovate_pattern.startswith("/") and renovate_pattern.endswith("/"), renovate_pattern
    return re.compile(renovate_pattern[1:-1])


def _tracked_files() -> list[str]:
    """The fleet's files as Renovate sees them: what git tracks (and this branch adds)."""
    proc = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=FLEET,
        capture_output=True,
        check=True,
    )
    return sorted(name for name in proc.stdout.decode("utf-8").split("\0") if name)


def glob_pattern(glob: str) -> re.Pattern[str]:
    """An `ignorePaths` glob (minimatch) as a regex: `**` any path, `*` and `?` within a name."""
    parts = re.split(r"(\*\*|\*|\?)", glob)
    wild = {"**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(wild.get(part, re.escape(part)) for part in parts))


def selected(files: list[str], config: dict[str, Any], manager: dict[str, Any]) -> list[str]:
    """The files the manager reads: its patterns match, and no `ignorePaths` glob does."""
    patterns = [file_pattern(p) for p in manager["managerFilePatterns"]]
    ignored = [glob_pattern(glob) for glob in config.get("ignorePaths", [])]
    return [
        name
        for name in files
        if any(p.search(name) for p in patterns) and not any(g.fullmatch(name) for g in ignored)
    ]


def found(names: list[str], manager: dict[str, Any]) -> list[tuple[str, str, str | None, str]]:
    """(file, depName, currentValue, currentDigest) of every match, in file order."""
    (regex,) = manager["matchStrings"]
    hits = []
    for name in names:
        for match in python_pattern(regex).finditer((FLEET / name).read_text(encoding="utf-8")):
            hits.append((name, match["depName"], match["currentValue"], match["currentDigest"]))
    return hits


def _independent_scan(names: list[str]) -> list[tuple[str, str]]:
    """Every `<reference>@sha256:<64 hex>` in the files, read word by word."""
    pins = []
    for name in names:
        for word in (FLEET / name).read_text(encoding="utf-8").split():
            reference, at, digest = word.strip("\"',[]{}").partition("@")
            if at and re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                pins.append((name, f"{reference}@{digest}"))
    return pins


# --- renovate.json -------------------------------------------------------------------


def test_renovate_json_passes_renovates_schema() -> None:
    schema = get_builtin_schema("vendor.renovate")
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [error.message for error in validator.iter_errors(_renovate())] == []
    broken = {**_renovate(), "customManagers": [{**_manager(), "customType": "regexp"}]}
    assert list(validator.iter_errors(broken)) != []


def test_renovate_manages_only_the_image_digests_from_the_data_never_prod() -> None:
    config = _renovate()
    assert config["enabledManagers"] == ["custom.regex"]  # pins and actions have their own tools
    assert config["ignorePaths"] == ["prod/**"]
    manager = _manager()
    assert manager["customType"] == "regex"
    assert manager["datasourceTemplate"] == "docker"
    assert "fileMatch" not in manager  # the old name of managerFilePatterns


def test_the_regex_manager_finds_exactly_every_pinned_image_in_the_data() -> None:
    config, manager = _renovate(), _manager()
    files = _tracked_files()
    names = selected(files, config, manager)
    assert names, "the manager selects no file"
    assert all(name.startswith("generators/") for name in names)
    assert "generators/glm53.source.yaml" in names  # where the images are declared
    hits = found(names, manager)
    expected = _independent_scan(names)
    assert expected, "no pinned image in the data: the scan itself is broken"
    got = [(name, f"{dep}:{tag}@{digest}" if tag else f"{dep}@{digest}") for name, dep, tag, digest in hits]
    assert got == expected
    for _name, dep, tag, digest in hits:
        assert DIGEST.fullmatch(f"@{digest}")
        assert "/" in dep and not dep.endswith((":", "/")), dep
        assert tag is None or not tag.startswith("sha256"), tag
    # No digest in the data lies outside the files the manager reads (say, in Python).
    unread = [
        name
        for name in files
        if name.startswith("generators/")
        and name not in names
        and DIGEST.search((FLEET / name).read_text(encoding="utf-8", errors="replace"))
    ]
    assert unread == []


def test_the_regex_manager_never_reads_prod_even_though_prod_holds_the_same_digests() -> None:
    config, manager = _renovate(), _manager()
    files = _tracked_files()
    prod = [name for name in files if name.startswith("prod/")]
    assert prod and any(_independent_scan(prod))  # prod/ has digests Renovate must not touch
    assert [name for name in selected(files, config, manager) if name.startswith("prod/")] == []
    # ignorePaths would exclude prod/ even if a pattern matched it
    assert selected(prod, config, {"managerFilePatterns": ["/.*/"]}) == []
    assert selected(["generators/x.yaml"], config, {"managerFilePatterns": ["/.*/"]}) == ["generators/x.yaml"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "  nginx: docker.io/library/nginx:1.27-alpine@sha256:" + "a" * 64,
            ("docker.io/library/nginx", "1.27-alpine", "sha256:" + "a" * 64),
        ),
        (
            "  engine: docker.io/org/engine@sha256:" + "b" * 64,
            ("docker.io/org/engine", None, "sha256:" + "b" * 64),
        ),
        (
            '  x: "registry.local:5000/team/app:v2.1_rc@sha256:' + "c" * 64 + '"',
            ("registry.local:5000/team/app", "v2.1_rc", "sha256:" + "c" * 64),
        ),
        ("  y: docker.io/org/app:1.0@sha256:" + "d" * 63, None),  # a digest one short
        ("  z: docker.io/org/app:1.0", None),  # a tag alone is not a pin
    ],
)
def test_the_match_string_reads_name_tag_and_digest(
    line: str, expected: tuple[str, str | None, str] | None
) -> None:
    (regex,) = _manager()["matchStrings"]
    match = python_pattern(regex).search(line)
    assert (
        None if match is None else (match["depName"], match["currentValue"], match["currentDigest"])
    ) == expected


def test_a_bump_regenerates_prod_in_the_same_branch() -> None:
    tasks = _renovate()["postUpgradeTasks"]
    assert tasks["commands"] == ["nox -s generate"]
    assert tasks["fileFilters"] == ["prod/**"]
    docs = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    assert "allowedCommands" in docs  # self-hosted Renovate runs only allowed commands
    assert '"^nox -s generate$"' in docs


def test_named_groups_convert_and_lookarounds_stay() -> None:
    pattern = python_pattern(r"(?<a>x)(?<=x)(?<!y)(?<b>z)?")
    assert pattern.groupindex == {"a": 1, "b": 2}


# --- dependabot ------------------------------------------------------------------------


def _dependabot() -> dict[str, Any]:
    config: dict[str, Any] = YAML(typ="safe", pure=True).load(DEPENDABOT.read_text(encoding="utf-8"))
    return config


def test_dependabot_passes_its_schema() -> None:
    schema = get_builtin_schema("vendor.dependabot")
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [error.message for error in validator.iter_errors(_dependabot())] == []
    assert list(validator.iter_errors({**_dependabot(), "version": 1})) != []


def test_dependabot_bumps_the_action_pins_weekly_in_one_group() -> None:
    config = _dependabot()
    assert config["version"] == 2
    (update,) = config["updates"]
    assert update["package-ecosystem"] == "github-actions"
    assert update["directory"] == "/"
    assert update["schedule"]["interval"] == "weekly"
    (group,) = update["groups"].values()
    assert group["patterns"] == ["*"]
