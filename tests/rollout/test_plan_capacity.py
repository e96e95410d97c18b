"""Capacity: engines serving through every step.

The orphan rule takes an engine the new file drops down before the first `up` of that
file; its replacement then comes up before any other engine goes down. When capacity
still drops by more than one engine, to none, or for good, the plan warns, with the
number of engines serving at each step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rollout.plankit import HAND, add_engine, hand, plan_of, rename_engine, services

LONGER = ("--max-model-len 32768", "--max-model-len 65536")


def test_a_replacement_comes_up_before_the_other_engine_goes_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    new = rename_engine(hand(), "vllm-a", "vllm-c").replace(*LONGER)
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: new})
    file = plan["files"][0]
    assert [(s["service"], s["reason"]) for s in file["stages"]] == [
        ("vllm-a", "removed"),
        ("vllm-c", "added"),
        ("vllm-b", "definition changed (argv)"),
        ("router", "definition changed (environment)"),
    ]
    serving = [(s["number"], s["engines_serving"]) for st in file["stages"][:3] for s in st["steps"]]
    # removed: preview, down; added: preview, up, verify; changed: preview, down, up, verify.
    assert serving == [
        ("1.1", 2), ("1.2", 1),
        ("2.1", 1), ("2.2", 1), ("2.3", 1),
        ("3.1", 2), ("3.2", 1), ("3.3", 1), ("3.4", 1),
    ]  # fmt: skip
    assert file["warnings"] == []
    # Its rollback mirrors it: the replacement down, the original back up, then the rest.
    assert services(file["rollback"]) == ["vllm-c", "vllm-a", "router", "vllm-b"]
    assert [s["note"] for s in file["stages"][:3]] == [
        "engine 1 of 3, one at a time; removed: taken down before any up of the new file (orphan rule); "
        "1 engine(s) serve meanwhile",
        "engine 2 of 3, one at a time; replaces vllm-a, removed above; 1 engine(s) serve meanwhile",
        "engine 3 of 3, one at a time; 1 engine(s) serve meanwhile",
    ]


def test_replacing_every_engine_warns_that_none_serves_with_the_count_at_each_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    new = rename_engine(rename_engine(hand(), "vllm-a", "vllm-c"), "vllm-b", "vllm-d")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: new})
    file = plan["files"][0]
    assert services(file["stages"]) == ["vllm-a", "vllm-b", "vllm-d", "vllm-c", "router"]
    # Each replacement is paired with the engine whose GPUs it takes.
    assert [stage["note"].split("; ")[1] for stage in file["stages"][2:4]] == [
        "replaces vllm-b, removed above",
        "replaces vllm-a, removed above",
    ]
    assert file["warnings"] == [
        "capacity: no engine serves during some steps in this plan (the orphan rule: every engine the new "
        "file drops goes down before its first up). Engines serving: 2 before; 1.2 down vllm-a: 1; "
        "2.2 down vllm-b: 0; 3.2 up vllm-d: 0; 4.2 up vllm-c: 1; 2 after",
        "capacity: no engine serves during some steps in its rollback (the orphan rule: every engine this "
        "plan added goes down before the first up at <OLD_TAG>). Engines serving: 2 before; R1.2 down "
        "vllm-c: 1; R2.2 down vllm-d: 0; R3.2 up vllm-b: 0; R4.2 up vllm-a: 1; 2 after",
    ]


def test_a_removal_without_a_replacement_warns_of_the_lost_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = hand()
    start, end = old.index("  vllm-b:\n"), old.index("  router:\n")
    new = (old[:start] + old[end:]).replace(",http://vllm-b:8000", "")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: new})
    (warning,) = plan["files"][0]["warnings"]
    assert warning.startswith("capacity: it ends with 1 engine(s) instead of 2 in this plan")
    assert warning.endswith("Engines serving: 2 before; 1.2 down vllm-b: 1; 1 after")


def test_an_added_engine_waits_for_the_engine_whose_gpus_it_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # vllm-b moves from GPUs 2,3 to 6,7 and the new vllm-c takes 2,3: c must wait for b.
    new = add_engine(hand(), "vllm-c", ("2", "3"))
    new = new.replace('device_ids: ["2", "3"]\n    depends_on', 'device_ids: ["6", "7"]\n    depends_on')
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: hand()}, {HAND: new})
    assert services(plan["files"][0]["stages"]) == ["vllm-b", "vllm-c", "router"]
    # On free GPUs it comes up first: capacity before anything goes down.
    (tmp_path / "free").mkdir()
    new = add_engine(hand(), "vllm-c", ("4", "5")).replace(*LONGER)
    plan = plan_of(tmp_path / "free", monkeypatch, capsys, {HAND: hand()}, {HAND: new})
    assert services(plan["files"][0]["stages"]) == ["vllm-c", "vllm-b", "vllm-a", "router"]


def test_a_single_engine_host_is_warned_that_nothing_serves_while_it_is_recreated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = hand()
    start, end = old.index("  vllm-b:\n"), old.index("  router:\n")
    old = (old[:start] + old[end:]).replace(",http://vllm-b:8000", "")
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: old}, {HAND: old.replace(*LONGER)})
    file = plan["files"][0]
    assert file["stages"][0]["note"] == "NO engine serves meanwhile"
    assert file["warnings"][0] == (
        "capacity: no engine serves during some steps in this plan. Engines serving: 1 before; "
        "1.2 down vllm-a: 0; 1.3 up vllm-a: 0; 1 after"
    )


def test_in_a_file_of_several_models_an_engine_step_counts_the_engines_of_its_own_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # vllm-b serves another model: taking vllm-a out leaves none of Qwen3-8B serving,
    # whatever the file's other engine does.
    two_models = hand().replace(
        "  vllm-b:\n    <<: *engine\n    command: vllm serve Qwen/Qwen3-8B",
        "  vllm-b:\n    <<: *engine\n    command: vllm serve Qwen/Qwen3-Embedding-0.6B",
    )
    assert two_models != hand()
    changed = two_models.replace(
        "--max-model-len 32768 --port=8000\n    labels:\n      - team=inference\n      - replica=1",
        "--max-model-len 65536 --port=8000\n    labels:\n      - team=inference\n      - replica=1",
    )
    assert changed != two_models
    plan = plan_of(tmp_path, monkeypatch, capsys, {HAND: two_models}, {HAND: changed})
    notes = [stage["note"] for stage in plan["files"][0]["stages"] if stage["service"] == "vllm-a"]
    assert notes == ["NO engine of Qwen/Qwen3-8B serves meanwhile"]
