"""ci/collector_validate.py: extraction from the real renders, and what happens without Docker.

Rendering uses the real Compose binary; Docker itself (the outside world here: no
daemon on the build machines) is replaced by small scripts that answer like it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ci.collector_validate import NOT_RUN, docker_argv, extract, main, render, unescape
from tests.conftest import FLEET
from tierops.composebin import find_compose

ROOT = Path(__file__).resolve().parents[2]
PROD = sorted((FLEET / "prod").glob("*.yaml"))
CANARY = FLEET / "prod" / "GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"


@pytest.fixture(scope="module")
def rendered() -> dict[Path, dict[str, object]]:
    binary = find_compose()
    return {path: render(binary, path) for path in PROD}


def _image_in_file(path: Path) -> str:
    """The collector image exactly as the prod file's own text pins it."""
    text = path.read_text(encoding="utf-8")
    match = re.search(r"^  otelcol-contrib:\n    image: (\S+)$", text, re.MULTILINE)
    assert match, path
    return match[1]


@pytest.mark.parametrize("path", PROD, ids=lambda path: path.stem)
def test_the_config_is_what_the_container_reads(rendered: dict[Path, dict[str, object]], path: Path) -> None:
    extracted = extract(rendered[path], path.name)
    assert extracted.image == _image_in_file(path)
    assert extracted.target == "/etc/otelcol-contrib/config.yaml"
    # compose's variables are resolved with the dummy values; the collector's own stay.
    assert "host_machine: dummy-cvm-host" in extracted.content
    assert "${CVM_HOST}" not in extracted.content
    assert "value: ${env:CVM_NAME}" in extracted.content
    assert "$$" not in extracted.content
    assert extracted.environment["CVM_HOST"] == "dummy-cvm-host"  # from ci/dummy.env
    assert extracted.environment["CVM_NAME"] == "unknown"  # the file's own default
    assert extracted.content.startswith("receivers:\n")


def test_profile_gated_services_are_rendered(rendered: dict[Path, dict[str, object]]) -> None:
    """Every service of the canary file is behind a profile; without `--profile '*'` there is no collector."""
    assert extract(rendered[CANARY], CANARY.name).image == _image_in_file(CANARY)


def test_unescape_undoes_composes_dollar_doubling() -> None:
    assert unescape("$${env:A} costs $$$$5") == "${env:A} costs $$5"


def test_an_unpinned_image_or_a_missing_config_fails_extraction(
    rendered: dict[Path, dict[str, object]],
) -> None:
    from tierops.errors import InputError

    document = json.loads(json.dumps(rendered[PROD[0]]))
    document["services"]["otelcol-contrib"]["image"] = "otel/opentelemetry-collector-contrib:0.144.0"
    with pytest.raises(InputError, match="not pinned by digest"):
        extract(document, "x.yaml")
    del document["configs"]["otelcol_app_config"]
    with pytest.raises(InputError, match=r"no top-level `configs\.otelcol_app_config\.content`"):
        extract(document, "x.yaml")


def test_docker_runs_the_image_s_own_validate_without_network(
    rendered: dict[Path, dict[str, object]],
) -> None:
    extracted = extract(rendered[PROD[0]], "x")
    argv = docker_argv("docker", extracted, Path("/tmp/c/config.yaml"))
    assert argv[:5] == ["docker", "run", "--rm", "--network", "none"]
    assert argv[-3:] == [extracted.image, "validate", "--config=/etc/otelcol-contrib/config.yaml"]
    assert "/tmp/c/config.yaml:/etc/otelcol-contrib/config.yaml:ro" in argv
    assert "CVM_HOST=dummy-cvm-host" in argv


def _fake_docker(tmp_path: Path, *, daemon: bool, validate_exit: int = 0) -> Path:
    log = tmp_path / "docker.log"
    script = tmp_path / "docker"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys, pathlib\n"
        f"pathlib.Path({str(log)!r}).open('a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1] == 'info':\n"
        + (
            "    print('28.2.2'); sys.exit(0)\n"
            if daemon
            else "    print('Cannot connect to the Docker daemon', file=sys.stderr); sys.exit(1)\n"
        )
        + "config = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--config='))\n"
        + f"print('Error: invalid configuration', file=sys.stderr) if {validate_exit} else None\n"
        + f"sys.exit({validate_exit})\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def test_without_docker_every_file_is_not_run_never_passed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    record = tmp_path / "result.json"
    docker = _fake_docker(tmp_path, daemon=False)
    assert main(["--docker", str(docker), "--json", str(record)]) == 0
    out = capsys.readouterr().out
    assert out.count("not-run ") == len(PROD)
    assert "passed" not in out.replace("0 passed", "")
    assert f"{NOT_RUN}: `{docker} info` found no daemon (Cannot connect to the Docker daemon)" in out
    data = json.loads(record.read_text(encoding="utf-8"))
    assert (data["format"], data["check"], data["docker"]) == (1, "collector-validate", False)
    assert [entry["result"] for entry in data["files"]] == ["not-run"] * len(PROD)
    assert [entry["file"] for entry in data["files"]] == [f"prod/{path.name}" for path in PROD]
    assert all(
        entry["image"] == _image_in_file(path) for entry, path in zip(data["files"], PROD, strict=True)
    )


def test_without_docker_under_github_actions_it_is_a_notice_or_with_require_docker_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    missing = str(tmp_path / "no-docker-here")
    assert main(["--docker", missing, "--json", str(tmp_path / "r.json"), str(PROD[0])]) == 0
    assert (
        f"::notice title=collector validate::{NOT_RUN}: `{missing}` is not installed"
        in capsys.readouterr().out
    )
    assert (
        main(["--require-docker", "--docker", missing, "--json", str(tmp_path / "r.json"), str(PROD[0])]) == 1
    )
    assert f"::error title=collector validate::{NOT_RUN}" in capsys.readouterr().out


def test_with_docker_the_collector_s_verdict_is_the_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "r.json"
    (tmp_path / "good").mkdir()
    good = _fake_docker(tmp_path / "good", daemon=True)
    assert main(["--docker", str(good), "--json", str(record), str(PROD[0])]) == 0
    assert json.loads(record.read_text(encoding="utf-8"))["files"][0]["result"] == "passed"
    calls = (good.parent / "docker.log").read_text(encoding="utf-8").splitlines()
    assert calls[0] == "info --format {{.ServerVersion}}"
    assert calls[1].startswith("run --rm --network none --volume ")
    assert calls[1].endswith(f"{_image_in_file(PROD[0])} validate --config=/etc/otelcol-contrib/config.yaml")

    (tmp_path / "bad").mkdir()
    bad = _fake_docker(tmp_path / "bad", daemon=True, validate_exit=1)
    assert main(["--docker", str(bad), "--json", str(record), str(PROD[0])]) == 1
    entry = json.loads(record.read_text(encoding="utf-8"))["files"][0]
    assert entry["result"] == "failed"
    assert entry["message"] == "validate exited 1: Error: invalid configuration"
    capsys.readouterr()
