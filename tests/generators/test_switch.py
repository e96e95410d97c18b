"""`{when_set: VAR, argv: ...}`: flags an engine gets only on hosts that set VAR."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.cli import main as generate
from tests.conftest import FLEET, replace_once
from tests.validators.conftest import run_cli
from tierops.shellwords import split
from validators.contract import load_contract

SWITCH = '    - {when_set: LOG_REQUESTS, argv: "--log-requests --log-requests-level 2"}\n'
FILE = "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fleet"
    shutil.copytree(FLEET, root)
    monkeypatch.setenv("TIEROPS_FLEET", str(root))
    replace_once(
        root / "generators" / "glm53.source.yaml",
        "    - --enable-cache-report\n",
        "    - --enable-cache-report\n" + SWITCH,
    )
    assert generate(["--write"]) == 0
    return root


def _errors(*argv: str) -> list[str]:
    load_contract.cache_clear()  # these tests edit the contract between runs
    result = run_cli("--format", "json", *argv)
    assert "Traceback" not in result.err
    return [row["message"] for row in result.findings() if row["level"] == "error"]


def test_a_switch_makes_the_command_one_string_that_compose_splits_back(fleet: Path) -> None:
    engine: dict[str, Any] = yaml.safe_load((fleet / "prod" / FILE).read_bytes())["services"][
        "model-sg-glm53-w4afp8-tp4-r1"
    ]
    command = engine["command"]
    assert isinstance(command, str)
    assert command.endswith(
        " --enable-metrics --enable-cache-report ${LOG_REQUESTS:+--log-requests --log-requests-level 2}"
    )
    # Unset, the switch is dropped; set, it is its three words.
    words = split(command.replace("${LOG_REQUESTS:+--log-requests --log-requests-level 2}", "")).words
    assert words[:2] == ["sglang", "serve"] and words[-1] == "--enable-cache-report"
    assert split(command.replace("${LOG_REQUESTS:+", "").replace("2}", "2")).words[-3:] == [
        "--log-requests",
        "--log-requests-level",
        "2",
    ]


def test_the_contract_says_which_flags_wait_for_which_variable(fleet: Path) -> None:
    contract = fleet / "validators" / "contracts" / "glm53.yaml"
    errors = _errors("--rule", "prod-config")
    assert any("argv has --log-requests, which is not in the contract" in m for m in errors)
    # Declared as always there: the file passes it only when the host sets the variable.
    replace_once(
        contract,
        "    - --enable-cache-report\n",
        "    - --enable-cache-report\n    - --log-requests\n    - --log-requests-level 2\n",
    )
    errors = _errors("--rule", "prod-config")
    assert any(
        "argv has --log-requests only when LOG_REQUESTS is set; the contract has it always" in m
        for m in errors
    )
    replace_once(
        contract,
        "    - --log-requests\n    - --log-requests-level 2\n",
        '    - ["${LOG_REQUESTS:+--log-requests --log-requests-level 2}"]\n',
    )
    assert _errors("--rule", "prod-config") == []
    # Every rule: the string form is not a style finding, the flags exist in the build.
    assert _errors() == []
    assert not any("command is a string" in row["message"] for row in run_cli("--format", "json").findings())


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            '    - {when_set: 9X, argv: "--log-requests"}\n',
            "a switch is written `{when_set: VAR, argv: '--flag value'}`",
        ),
        (
            "    - {when_set: X, argv: []}\n",
            "switch on X: argv is a string '--flag value' or a list of words",
        ),
        (
            '    - {when_set: X, argv: ["--json", "{\\"a\\": 1}"]}\n',
            "switch on X: a brace other than a ${NAME} reference would end ${X:+...} early",
        ),
    ],
)
def test_a_malformed_switch_is_refused_at_its_line(
    source_copy: tuple[Path, Path],
    prod_copy: Path,
    capsys: pytest.CaptureFixture[str],
    item: str,
    message: str,
) -> None:
    source, targets = source_copy
    replace_once(source, "    - --enable-cache-report\n", "    - --enable-cache-report\n" + item)
    code = generate(
        ["--write", "--source", str(source), "--targets-file", str(targets), "--prod-dir", str(prod_copy)]
    )
    err = capsys.readouterr().err
    line = source.read_text().splitlines().index(item.rstrip("\n")) + 1
    assert code == 2
    assert f"{source}:{line}:" in err and message in err, err
