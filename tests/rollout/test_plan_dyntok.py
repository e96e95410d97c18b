"""The dyntok rollout, end to end from two real commits: exactly r2, r1, then the collector.

Base: this repository's files generated without the dyntok feature (its lines removed
from generators/glm53.targets.yaml); head: generated with it. Both are commits of a
temporary repository with a bare origin.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from generators.cli import main as generate
from rollout.release import record as release
from tests.conftest import SOURCE, TARGETS
from tests.rollout.diffkit import LONG, R1, R2, commit, git, new_repo, run_cli


@functools.cache
def generated(*, dyntok: bool) -> dict[str, bytes]:
    """The prod files the real generators write with or without dyntok: the same bytes for
    every test, so generated once per test process (in a directory of its own)."""
    text = TARGETS.read_text(encoding="utf-8")
    if not dyntok:
        text = "".join(line for line in text.splitlines(True) if "- dyntok" not in line)
    with tempfile.TemporaryDirectory(prefix="tierops-dyntok-") as tmp:
        targets = Path(tmp) / "glm53.targets.yaml"
        targets.write_text(text, encoding="utf-8")
        out = Path(tmp) / "prod"
        out.mkdir()
        assert (
            generate(
                ["--write", "--source", str(SOURCE), "--targets-file", str(targets), "--prod-dir", str(out)]
            )
            == 0
        )
        return {f"prod/{path.name}": path.read_bytes() for path in sorted(out.iterdir())}


@pytest.fixture
def dyntok_repo(tmp_path: Path) -> Path:
    base = generated(dyntok=False)
    head = generated(dyntok=True)
    assert base != head
    # The fleet's data: where each file runs (a fixture of its own, not this repository's).
    placement = {"generators/fleet.targets.yaml": f"{Path(LONG).stem}:\n  hosts: [gpu02]\n"}
    repo = new_repo(tmp_path, {**base, **placement})
    commit(repo, head, "Enable the dynamic batch tokenizer on the long-context replicas")
    return repo


def plan_json(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, Any]:
    code, out, err = run_cli(
        monkeypatch, capsys, repo, ["plan", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", *extra]
    )
    assert (code, err) == (0, "")
    result: dict[str, Any] = json.loads(out)
    return result


def test_the_dyntok_plan_is_r2_then_r1_then_the_collector_alone(
    dyntok_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_json(dyntok_repo, monkeypatch, capsys)
    (file,) = plan["files"]
    assert file["path"] == LONG
    steps = [(stage["service"], step["action"]) for stage in file["stages"] for step in stage["steps"]]
    # The preview (an up dry run) while r2 still serves; compose-manager's down has no dry run.
    replace = ["preview", "down", "up", "verify"]
    assert steps == (
        [(R2, action) for action in replace]
        + [(R1, action) for action in replace]
        + [("otelcol-contrib", action) for action in replace]
    )
    assert [stage["role"] for stage in file["stages"]] == ["engine", "engine", "telemetry (collector)"]
    assert [stage["interrupts_traffic"] for stage in file["stages"]] == [False, False, False]
    assert file["untouched"] == [
        "model-downloader",
        "proxy-glm53",
        "nginx",
        "model-proxy-registrar",
        "dcgm-glm53",
    ]
    assert file["notes"] == []
    assert file["warnings"] == []
    # Nothing to pull: no image or model snapshot changes.
    assert file["staging"] is None
    assert file["hosts"] == ["gpu02"]
    assert [stage["note"] for stage in file["stages"]] == [
        "engine 1 of 2, one at a time; the canary of this change: the other engines get it only after "
        "this one verifies; 1 engine(s) serve meanwhile",
        "engine 2 of 2, one at a time; 1 engine(s) serve meanwhile",
        "",
    ]


def test_every_call_is_scoped_to_one_service_with_the_file_that_defines_it(
    dyntok_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_json(dyntok_repo, monkeypatch, capsys)
    for stage in plan["files"][0]["stages"]:
        preview, down, up, _verify = stage["steps"]
        only = [stage["service"]]
        assert (preview["endpoint"], preview["payload"]) == (
            "POST /compose/up",
            {"tag": "<NEW_TAG>", "file": LONG, "services": only, "dry_run": True},
        )
        assert (down["endpoint"], down["payload"]) == (
            "POST /compose/down",
            {"tag": "<OLD_TAG>", "file": LONG, "services": only},
        )
        assert (up["endpoint"], up["payload"]) == (
            "POST /compose/up",
            {"tag": "<NEW_TAG>", "file": LONG, "services": only},
        )
        # The command is the one compose-manager runs: its default project, its three
        # phases, no --no-deps, no --profile.
        compose = f"docker compose -p work -f {LONG}"
        name = stage["service"]
        assert up["command"] == (
            f"git checkout --quiet '<NEW_TAG>' && {compose} pull --ignore-buildable {name} && "
            f"{compose} build {name} && {compose} up -d --remove-orphans {name}"
        )
        assert down["command"] == f"{compose} down {name}"
    # Each rollback stage says which stage it undoes, in reverse order.
    assert [stage["undoes"] for stage in plan["files"][0]["rollback"]] == [3, 2, 1]


def test_each_engine_is_verified_by_health_a_real_completion_and_its_variant(
    dyntok_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_json(dyntok_repo, monkeypatch, capsys)
    r2 = plan["files"][0]["stages"][0]
    checks = r2["steps"][-1]["checks"]
    assert [check["what"] for check in checks] == [
        "healthy (allow its start_period, 40m)",
        "one real completion through this replica alone",
        "the container carries the config_variant this step deploys",
        "its config_variant is seen in metrics (PromQL; the scrape label follows the collector step)",
        "startup server_args: --enable-dynamic-batch-tokenizer is on",
    ]
    # The runbook's check, derived from the change: the flag with underscores, its new value.
    assert checks[4]["expect"] == "'enable_dynamic_batch_tokenizer': True"
    assert checks[4]["command"] == (
        f"docker compose -p work -f {LONG} logs --no-log-prefix {R2} 2>&1 | grep -m1 server_args"
        " | grep -o \"'enable_dynamic_batch_tokenizer': [^,})]*\""
    )
    variant = "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi2-h200-tp4-ep4-dyntok"
    assert checks[2]["expect"] == variant
    assert checks[3]["command"] == (
        f'count by (container_name, config_variant) (sglang_num_running_reqs{{container_name="{R2}"}})'
    )
    assert '"model":"z-ai/glm-5.3-flash"' in checks[1]["command"]


def test_tags_come_from_the_options_or_the_commits(
    dyntok_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A release tag: annotated, with the record `rollout release tag` writes.
    base = git(dyntok_repo, "rev-parse", "HEAD~1")
    record = release.record_for_commit(dyntok_repo, base, release.VERIFY_SKIPPED)
    git(dyntok_repo, "tag", "-a", "v0.0.7", "-m", release.format_message("v0.0.7", record), base)
    plan = plan_json(dyntok_repo, monkeypatch, capsys)
    assert (plan["tags"]["new"], plan["tags"]["old"]) == ("<NEW_TAG>", "v0.0.7")
    assert plan["tags"]["notes"] == [
        "<NEW_TAG>: the v0.0.N tag of the merge commit; the head "
        f"(HEAD ({git(dyntok_repo, 'rev-parse', '--short=7', 'HEAD')})) is not tagged yet. "
        "Substitute it, or pass --tag, once it exists and is old enough to deploy"
    ]
    plan = plan_json(dyntok_repo, monkeypatch, capsys, "--tag", "v0.0.8")
    assert (plan["tags"]["new"], plan["tags"]["old"]) == ("v0.0.8", "v0.0.7")
    assert plan["tags"]["notes"] == [
        "v0.0.8 does not exist in this clone yet: before deploying, check that it tags the reviewed commit"
    ]
    first_up = plan["files"][0]["stages"][0]["steps"][2]
    assert first_up["payload"]["tag"] == "v0.0.8"


def test_the_text_plan_opens_with_one_screen_then_the_calls(
    dyntok_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        monkeypatch, capsys, dyntok_repo, ["plan", "--base", "HEAD~1", "--head", "HEAD", "--tag", "v0.0.8"]
    )
    assert code == 0
    lines = out.splitlines()
    summary = lines[: lines.index("") + 1 + lines[lines.index("") + 1 :].index("")]
    assert summary[-5:] == [
        f"    1  {R2}  [engine]  preview, down, up, verify: definition changed (argv, labels)",
        f"    2  {R1}  [engine]  preview, down, up, verify: definition changed (argv, labels)",
        "    3  otelcol-contrib  [telemetry (collector)]  preview, down, up, verify: config otelcol_app_config changed",
        "  untouched: model-downloader, proxy-glm53, nginx, model-proxy-registrar, dcgm-glm53",
        f"  rollback, in this order (stages already past their down, when a step fails): R1 otelcol-contrib; "
        f"R2 {R1}; R3 {R2}",
    ]
    assert "capacity z-ai/glm-5.3-flash: 2 engine(s) on 1 host; at most 1 out at a time, 1 serve" in summary
    assert (
        len(
            lines[
                : lines.index(
                    f"{LONG}: the calls, in order, host by host on gpu02 (compose-manager's default project)"
                )
            ]
        )
        <= 24
    )
    at = lines.index("     1.3 up:")
    assert lines[at + 1] == (
        f'         POST /compose/up {{"tag": "v0.0.8", "file": "{LONG}", "services": ["{R2}"]}}'
    )
    # No line that says nothing: no "nothing to undo", no traffic flag on a preview.
    assert not any("nothing to undo" in line or "dry run)" in line for line in lines)
