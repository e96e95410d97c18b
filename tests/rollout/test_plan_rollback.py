"""The rollback of a plan is its exact reverse, under the orphan rule.

compose-manager's `up` removes orphans with a short timeout: a service the forward
plan added is not in the old file, so any `up` at the old tag would kill it. Every
rollback therefore takes the added services down with the new file first, and says why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rollout.plankit import HAND, add_engine, hand, plan_of, services, step, text_of

NEW, OLD = "<NEW_TAG>", "<OLD_TAG>"


def test_the_proxy_rollback_takes_the_added_engine_down_with_the_new_file_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_of(
        tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: add_engine(hand(), "vllm-c", ("4", "5"))}
    )
    file = plan["files"][0]
    assert services(file["stages"]) == ["vllm-c", "router"]
    # A failure at the router (stage 2) undoes stages 2 and 1 in the rollback's order: the
    # added engine first, with the file that defines it, then the router back to OLD.
    rollback = file["rollback"]
    assert [(stage["service"], stage["undoes"]) for stage in rollback] == [("vllm-c", 1), ("router", 2)]
    assert [(s["action"], s["endpoint"], s["payload"]["tag"]) for s in rollback[0]["steps"]] == [
        ("preview", "POST /compose/up", NEW),
        ("down", "POST /compose/down", NEW),
    ]
    router = [(s["action"], s["payload"]["tag"]) for s in rollback[1]["steps"] if "payload" in s]
    assert router == [("preview", OLD), ("down", NEW), ("up", OLD)]


def test_the_whole_rollback_is_the_reverse_with_added_services_down_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    new = add_engine(hand(), "vllm-c", ("4", "5")).replace("--max-model-len 32768", "--max-model-len 65536")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: new})
    file = plan["files"][0]
    assert services(file["stages"]) == ["vllm-c", "vllm-b", "vllm-a", "router"]
    rollback = file["rollback"]
    assert services(rollback) == ["vllm-c", "router", "vllm-a", "vllm-b"]
    first = rollback[0]
    assert [(s["number"], s["action"], s["payload"]["tag"]) for s in first["steps"]] == [
        ("R1.1", "preview", NEW),
        ("R1.2", "down", NEW),
    ]
    assert first["reason"] == (
        "added by this plan: <OLD_TAG> does not define it, so any compose/up at <OLD_TAG> would "
        "remove it as an orphan with a short timeout; it goes down first"
    )
    for stage in rollback[1:]:
        assert [s["action"] for s in stage["steps"]] == ["preview", "down", "up", "verify"]
        assert [step(stage, "down")["payload"]["tag"], step(stage, "up")["payload"]["tag"]] == [NEW, OLD]
        assert stage["reason"] == "back to its definition at <OLD_TAG>"


def test_a_removed_service_comes_back_before_the_changed_ones_are_reverted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = hand()
    start, end = old.index("  vllm-b:\n"), old.index("  router:\n")
    new = (old[:start] + old[end:]).replace(",http://vllm-b:8000", "")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    file = plan["files"][0]
    assert services(file["stages"]) == ["vllm-b", "router"]
    assert services(file["rollback"]) == ["vllm-b", "router"]
    back = file["rollback"][0]
    assert [(s["action"], s["payload"]["tag"]) for s in back["steps"] if "payload" in s] == [
        ("preview", OLD),
        ("up", OLD),
    ]
    assert back["reason"] == "removed by this plan: brought back up from <OLD_TAG>"


def test_the_text_plan_prints_the_rollback_after_the_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = text_of(
        tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: add_engine(hand(), "vllm-c", ("4", "5"))}
    )
    lines = out.splitlines()
    at = lines.index(f"{HAND}: the rollback, the same rules in reverse (added services go down first)")
    assert [line for line in lines[at:] if line.startswith("  R")] == [
        "  R1 vllm-c [engine]: added by this plan: <OLD_TAG> does not define it, so any compose/up at "
        "<OLD_TAG> would remove it as an orphan with a short timeout; it goes down first",
        "  R2 router [proxy]: back to its definition at <OLD_TAG>",
    ]
    assert (
        "  rollback, in this order (stages already past their down, when a step fails): R1 vllm-c; R2 router"
        in lines[:at]
    )
