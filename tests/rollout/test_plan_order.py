"""The plan follows roles read from the file: order, scope, traffic warnings, untouched services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rollout.diff.forms import load_documents
from tests.rollout.diffkit import LONG, R1, R2, fixture, new_repo, prod_text, run_cli, write
from tests.rollout.plankit import plan_of
from tierops.roles import Role, roles_of

HAND = "prod/hand.yaml"


def roles(text: str) -> dict[str, str]:
    return {name: role.value for name, role in roles_of(load_documents(text.encode(), where="x")[0]).items()}


def test_roles_are_read_from_our_file() -> None:
    assert roles(prod_text()) == {
        "model-downloader": "one-shot job",
        R1: "engine",
        R2: "engine",
        "proxy-glm53": "proxy",
        "nginx": "front door",
        "model-proxy-registrar": "registrar",
        "dcgm-glm53": "telemetry (DCGM)",
        "otelcol-contrib": "telemetry (collector)",
    }


def test_roles_follow_definitions_not_names() -> None:
    text = prod_text()
    for old, new in ((R1, "alpha"), (R2, "beta"), ("proxy-glm53", "gamma"), ("otelcol-contrib", "delta")):
        text = text.replace(old, new)
    assert roles(text) == {
        "model-downloader": "one-shot job",
        "alpha": "engine",
        "beta": "engine",
        "gamma": "proxy",
        "nginx": "front door",
        "model-proxy-registrar": "registrar",
        "dcgm-glm53": "telemetry (DCGM)",
        "delta": "telemetry (collector)",
    }


def test_roles_are_read_from_a_hand_written_file() -> None:
    assert roles(fixture("handwritten.yaml")) == {
        "fetch-weights": Role.ONE_SHOT.value,
        "vllm-a": "engine",
        "vllm-b": "engine",
        "router": "proxy",
        "edge": "front door",
    }


def order(plan: dict[str, Any], index: int = 0) -> list[tuple[str, str]]:
    return [(stage["service"], stage["reason"]) for stage in plan["files"][index]["stages"]]


def test_engines_go_one_at_a_time_highest_replica_first_without_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = fixture("handwritten.yaml")
    new = old.replace("--max-model-len 32768", "--max-model-len 65536")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    assert order(plan) == [("vllm-b", "definition changed (argv)"), ("vllm-a", "definition changed (argv)")]
    assert plan["files"][0]["untouched"] == ["fetch-weights", "router", "edge"]


def test_an_explicit_rollout_order_label_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = fixture("handwritten.yaml")
    new = old.replace("--max-model-len 32768", "--max-model-len 65536")
    new = new.replace("      - replica=1\n", "      - replica=1\n      - tierops.rollout.order=1\n")
    new = new.replace("      - replica=2\n", "      - replica=2\n      - tierops.rollout.order=2\n")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    assert [service for service, _ in order(plan)] == ["vllm-a", "vllm-b"]


def test_a_removed_service_is_taken_down_first_and_never_brought_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = fixture("handwritten.yaml")
    start, end = old.index("  vllm-a:\n"), old.index("  vllm-b:\n")
    new = (old[:start] + old[end:]).replace("--max-model-len 32768", "--max-model-len 65536")
    new = new.replace("BACKENDS: http://vllm-a:8000,http://vllm-b:8000", "BACKENDS: http://vllm-b:8000")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    stages = plan["files"][0]["stages"]
    assert [(stage["service"], stage["reason"]) for stage in stages] == [
        ("vllm-a", "removed"),
        ("vllm-b", "definition changed (argv)"),
        ("router", "definition changed (environment)"),
    ]
    # The preview at the deployed tag writes the deployed file back where the down reads it.
    preview, down = stages[0]["steps"]
    assert (preview["action"], preview["payload"]) == (
        "preview",
        {"tag": "<OLD_TAG>", "file": HAND, "services": ["vllm-a"], "dry_run": True},
    )
    assert (down["action"], down["payload"]) == (
        "down",
        {"tag": "<OLD_TAG>", "file": HAND, "services": ["vllm-a"]},
    )
    assert stages[2]["interrupts_traffic"] is True
    assert stages[2]["warning"] == "interrupts traffic: every request of this host goes through the proxy"


def test_an_added_service_is_brought_up_and_rolled_back_by_a_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = fixture("handwritten.yaml")
    new = old + "  cache:\n    image: redis:7\n"
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    (stage,) = plan["files"][0]["stages"]
    assert (stage["service"], stage["reason"], stage["role"]) == ("cache", "added", "other")
    assert [step["action"] for step in stage["steps"]] == ["preview", "up", "verify"]
    (undo,) = plan["files"][0]["rollback"]
    assert (undo["undoes"], [step["action"] for step in undo["steps"]]) == (1, ["preview", "down"])
    assert undo["steps"][1]["payload"] == {"tag": "<NEW_TAG>", "file": HAND, "services": ["cache"]}
    # A new image is pulled before anything else.
    assert plan["files"][0]["staging"]["payload"] == {
        "tag": "<NEW_TAG>",
        "file": HAND,
        "services": ["cache"],
        "materialize_only": True,
    }
    assert stage["warning"] == "unknown role: read its definition before running these steps"


def test_a_changed_one_shot_job_runs_before_the_engines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = old.replace("99f1fa70408c52b007d4fd69e02e5a522422e755", "0" * 40)
    plan = plan_of(tmp_path, monkeypatch, capsys, {LONG: old}, {LONG: new})
    assert [service for service, _ in order(plan)] == ["model-downloader", R2, R1]
    checks = plan["files"][0]["stages"][0]["steps"][-1]["checks"]
    assert checks[0]["expect"] == "model-downloader exited 0"


def test_proxy_registrar_and_front_door_are_touched_only_when_changed_and_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = old.replace('REGISTER_INTERVAL_SECONDS: "30"', 'REGISTER_INTERVAL_SECONDS: "20"')
    new = new.replace("keepalive 64;", "keepalive 128;")
    plan = plan_of(tmp_path, monkeypatch, capsys, {LONG: old}, {LONG: new})
    stages = plan["files"][0]["stages"]
    assert [(s["service"], s["reason"], s["interrupts_traffic"]) for s in stages] == [
        ("model-proxy-registrar", "definition changed (environment)", True),
        ("nginx", "config nginx_conf changed", True),
    ]
    assert plan["files"][0]["untouched"] == [
        "model-downloader",
        R1,
        R2,
        "proxy-glm53",
        "dcgm-glm53",
        "otelcol-contrib",
    ]


def test_a_renamed_file_downs_with_the_old_path_and_ups_with_the_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = old.replace(
        '      - "8"\n      - --chunked-prefill-size', '      - "16"\n      - --chunked-prefill-size', 1
    )
    plan = plan_of(tmp_path, monkeypatch, capsys, {LONG: old}, {LONG: None, "prod/long.yaml": new})
    file = plan["files"][0]
    assert (file["path"], file["old_path"]) == ("prod/long.yaml", LONG)
    preview, down, up = file["stages"][0]["steps"][:3]
    assert preview["payload"]["file"] == "prod/long.yaml"
    assert (down["payload"]["file"], up["payload"]["file"]) == (LONG, "prod/long.yaml")
    assert file["notes"] == [
        f"renamed from {LONG}: down steps use the old path at <OLD_TAG>, up steps the new one"
    ]
    # a deployed tag given by hand is named in the note too, not the placeholder
    (tmp_path / "given").mkdir()
    tagged = plan_of(
        tmp_path / "given",
        monkeypatch,
        capsys,
        {LONG: old},
        {LONG: None, "prod/long.yaml": new},
        "--base-tag",
        "v0.0.7",
    )
    assert tagged["files"][0]["notes"][0].endswith(
        "down steps use the old path at v0.0.7, up steps the new one"
    )


def test_no_change_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {LONG: prod_text()})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert (code, err) == (0, "")
    assert out == (
        "no changes in prod between the merge-base of HEAD and origin/main "
        f"({out.split('(')[1].split(')')[0]}) and the working tree: nothing to roll out\n"
    )
    assert len(out.splitlines()) == 1


def test_a_file_that_cannot_be_read_stops_its_plan_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {LONG: prod_text()})
    write(repo, {LONG: "services: ["})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert code == 2
    assert f"{LONG}: cannot plan: {LONG}:1:12: invalid YAML" in out
    code, _, err = run_cli(monkeypatch, capsys, repo, ["plan", "--format", "json"])
    assert code == 2 and err.startswith(f"{LONG}: {LONG}:1:12: invalid YAML")


def test_the_markdown_plan_has_an_overview_table_and_the_details(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = old.replace("keepalive 64;", "keepalive 128;")
    repo = new_repo(tmp_path, {LONG: old})
    write(repo, {LONG: new})
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["plan", "--format", "markdown"])
    assert code == 0
    assert "| # | service | role | steps | why |" in out
    assert (
        "| 1 | `nginx` | front door **interrupts traffic** | preview, down, up, verify | config nginx\\_conf changed |"
        in out
    )
    assert f"<details><summary>{LONG}: calls, checks and rollback</summary>" in out


def test_the_preview_comes_before_the_down_and_no_down_is_a_dry_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # compose-manager's down has no dry run: a "dry-run" down stops the service. The only
    # read-only look is the up dry run, and it must come while the service still serves.
    old = fixture("handwritten.yaml")
    new = old.replace("--max-model-len 32768", "--max-model-len 65536")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    for stage in plan["files"][0]["stages"] + plan["files"][0]["rollback"]:
        actions = [step["action"] for step in stage["steps"]]
        assert actions == ["preview", "down", "up", "verify"]
        preview = stage["steps"][0]
        assert (preview["endpoint"], preview["payload"]["dry_run"]) == ("POST /compose/up", True)
        assert preview["expect"].endswith("nothing else created, recreated or removed")
        for step in stage["steps"]:
            if step.get("endpoint") == "POST /compose/down":
                assert "dry_run" not in step["payload"]
                assert " --dry-run " not in step["command"]


def test_a_removed_engine_is_not_called_a_canary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = fixture("handwritten.yaml")
    start, end = old.index("  vllm-a:\n"), old.index("  vllm-b:\n")
    new = (old[:start] + old[end:]).replace("--max-model-len 32768", "--max-model-len 65536")
    new = new.replace("BACKENDS: http://vllm-a:8000,http://vllm-b:8000", "BACKENDS: http://vllm-b:8000")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    notes = [stage["note"] for stage in plan["files"][0]["stages"]]
    assert notes[0] == (
        "engine 1 of 2, one at a time; removed: taken down before any up of the new file (orphan rule); "
        "1 engine(s) serve meanwhile"
    )
    assert not any("canary" in note or "treatment" in note for note in notes)


def test_only_an_engine_that_tries_a_shared_change_first_is_the_canary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = fixture("handwritten.yaml")
    # Different changes on the two engines: nobody tries the other's change first.
    at = old.index("  vllm-b:\n")
    new = old[:at].replace("--max-model-len 32768", "--max-model-len 65536") + old[at:].replace(
        "--port=8000", "--port=8001"
    )
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    assert [stage["note"] for stage in plan["files"][0]["stages"]][:2] == [
        "engine 1 of 2, one at a time; 1 engine(s) serve meanwhile",
        "engine 2 of 2, one at a time; 1 engine(s) serve meanwhile",
    ]
    # The same change on both: the first to get it is the canary of this change.
    (tmp_path / "same").mkdir()
    new = old.replace("--max-model-len 32768", "--max-model-len 65536")
    plan = plan_of(tmp_path / "same", monkeypatch, capsys, {HAND: old}, {HAND: new})
    assert plan["files"][0]["stages"][0]["note"] == (
        "engine 1 of 2, one at a time; the canary of this change: the other engines get it only after "
        "this one verifies; 1 engine(s) serve meanwhile"
    )
