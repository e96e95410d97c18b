"""The CLI in-process: whole output and exit code pinned for each format."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FLEET
from tests.validators.conftest import BASE, ROOT, prod_text, run_cli
from validators import cli
from validators.rules import prod_config

TWO_FINDINGS = (
    prod_text(BASE)
    .replace("num_consumers: 1", "num_consumers: 2")
    .replace("    container_name: nginx\n", "    container_name: nginx-front\n")
)
SHOWN = f"prod/{BASE}"  # as the fleet names its own file
TEXT = (
    f"{SHOWN}:263:5: [error] container_name 'nginx-front' differs from the service key 'nginx'; other services reach it by the key (compose-hygiene)\n"
    f"{SHOWN}:545:13: [error] exporter otlphttp/gateway sending_queue.num_consumers is 2; it must be 1 (cumulative metrics must arrive in order) (otel-labels)\n"
)


@pytest.fixture
def mutated(write_prod: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """The fleet's own prod file, edited (a file elsewhere would not be the stack's)."""
    path = write_prod(BASE, TWO_FINDINGS)
    monkeypatch.chdir(path.parent.parent)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return SHOWN


def test_text_format_prints_one_line_per_finding_and_a_summary(mutated: str) -> None:
    result = run_cli("--format", "text", mutated)
    assert (result.code, result.err) == (1, "")
    assert result.out == TEXT + "1 file checked: 2 errors, 0 warnings\n"


def test_json_format_prints_a_list_and_the_summary_on_stderr(mutated: str) -> None:
    result = run_cli("--format", "json", mutated)
    assert result.code == 1
    assert json.loads(result.out) == [
        {
            "path": SHOWN,
            "line": 263,
            "col": 5,
            "level": "error",
            "rule": "compose-hygiene",
            "message": "container_name 'nginx-front' differs from the service key 'nginx'; other services reach it by the key",
        },
        {
            "path": SHOWN,
            "line": 545,
            "col": 13,
            "level": "error",
            "rule": "otel-labels",
            "message": "exporter otlphttp/gateway sending_queue.num_consumers is 2; it must be 1 (cumulative metrics must arrive in order)",
        },
    ]
    assert result.err == "1 file checked: 2 errors, 0 warnings\n"


def test_github_format_prints_the_full_report_then_one_annotation_per_finding(mutated: str) -> None:
    result = run_cli("--format", "github", mutated)
    assert result.code == 1
    assert result.out == (
        TEXT
        + f"::error file={SHOWN},line=263,col=5,title=compose-hygiene::container_name 'nginx-front' differs from the service key 'nginx'; other services reach it by the key\n"
        + f"::error file={SHOWN},line=545,col=13,title=otel-labels::exporter otlphttp/gateway sending_queue.num_consumers is 2; it must be 1 (cumulative metrics must arrive in order)\n"
        + "1 file checked: 2 errors, 0 warnings\n"
    )


def test_auto_format_is_github_under_github_actions(mutated: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert "::error file=" in run_cli(mutated).out
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    assert "::error" not in run_cli(mutated).out


def test_rule_selects_families(mutated: str) -> None:
    result = run_cli("--format", "text", "--rule", "otel-labels", mutated)
    assert result.out == TEXT.splitlines(keepends=True)[1] + "1 file checked: 1 error, 0 warnings\n"


def test_an_unknown_rule_is_a_usage_error(mutated: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("--rule", "no-such-rule", mutated).code == 2
    assert "invalid choice: 'no-such-rule'" in capsys.readouterr().err


def test_warnings_fail_only_with_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = prod_text(BASE).replace(
        "      - --enable-cache-report\n",
        '      - --enable-cache-report\n      - --cuda-graph-max-bs\n      - "32"\n',
        1,
    )
    (tmp_path / BASE).write_text(text, encoding="utf-8")
    relaxed = run_cli("--format", "text", "--rule", "engine-flags", BASE)
    assert relaxed.code == 0
    assert relaxed.out == (
        f"{BASE}:82:9: [warning] model-sg-glm53-w4afp8-tp4-r1 flag --cuda-graph-max-bs is deprecated in the pinned build; use --cuda-graph-max-bs-decode (engine-flags)\n"
        "1 file checked: 0 errors, 1 warning\n"
    )
    assert run_cli("--strict", "--rule", "engine-flags", BASE).code == 1


def test_the_fleet_s_prod_files_are_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = run_cli("--format", "text")
    assert (result.code, result.out, result.err) == (0, "3 files checked: 0 errors, 0 warnings\n", "")


def test_no_default_files_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIEROPS_FLEET", str(tmp_path))
    result = run_cli()
    assert result.code == 2
    assert result.err.startswith("no files to check: prod/*.yaml matched nothing")


def test_a_file_outside_the_fleet_that_no_contract_claims_gets_only_the_generic_checks(
    tmp_path: Path,
) -> None:
    # A stack's file under another name: the stack's policy (labels, DCGM, the contract's
    # argv) no longer applies, and the generic families still see a real problem.
    path = tmp_path / "other-team.yaml"
    text = prod_text(BASE)
    digest = text[text.index("@sha256:") : text.index("@sha256:") + 72]
    path.write_text(text.replace(digest, ":latest", 1), encoding="utf-8")
    result = run_cli("--format", "json", path)
    rules = {row["rule"] for row in result.findings()}
    assert result.code == 1
    assert "compose-hygiene" in rules
    assert not rules & {"prod-config", "otel-labels", "dcgm-metrics", "collector-config"}


def test_a_fleet_file_no_contract_claims_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(FLEET, fleet)
    monkeypatch.setenv("TIEROPS_FLEET", str(fleet))
    (fleet / "prod" / "GLM-9-Experimental.yaml").write_text(prod_text(BASE), encoding="utf-8")
    result = run_cli("--format", "json", "--rule", "prod-config")
    assert result.code == 1
    assert [(row["path"], row["line"], row["rule"]) for row in result.findings()] == [
        ("prod/GLM-9-Experimental.yaml", 1, "prod-config")
    ]
    assert "no stack contract claims 'GLM-9-Experimental'" in result.findings()[0]["message"]


def test_a_bug_in_a_rule_is_exit_3_with_one_line(mutated: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The only way to exercise the internal-error path is a rule that breaks.
    def broken(*_args: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(prod_config, "check", broken)
    result = run_cli(mutated)
    assert result.code == 3
    assert (
        result.err
        == "internal error: KeyError: 'boom' (a bug in validators; rerun with TIEROPS_DEBUG=1 and report it)\n"
    )


def test_list_rules_names_every_family() -> None:
    result = run_cli("--list-rules")
    assert result.code == 0
    assert [line.split(":")[0] for line in result.out.splitlines()] == [
        "yaml",
        "prod-config",
        "engine-flags",
        "otel-labels",
        "dcgm-metrics",
        "compose-hygiene",
        "collector-config",
        "style",
        "wiring",
        "gpu-sharing",
    ]


def test_help_shows_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out
    assert "1  findings at error level" in out


def test_module_entry_point_smoke() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "validators", "--format", "text"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (0, "3 files checked: 0 errors, 0 warnings\n")


@pytest.mark.parametrize("fmt", ["text", "github", "json", "sarif"])
def test_terminal_controls_from_the_file_are_shown_escaped(tmp_path: Path, fmt: str) -> None:
    """A service name and an image are the file's data: a title-setting OSC and a bidi
    override in them reach the terminal as `\\uXXXX`."""
    path = tmp_path / "x.yaml"
    path.write_text(
        'services:\n  "svc\\e]8;;http://evil\\a\\u202e":\n    image: "busybox\\e]0;PWNED\\a"\n',
        encoding="utf-8",
    )
    result = run_cli(path, "--format", fmt)
    for control in ("\x1b", "\x07", "\u202e"):
        assert control not in result.out + result.err
    assert "\\u001b]0;PWNED\\u0007" in result.out
