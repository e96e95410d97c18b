"""Helpers for the plan tests: a real repository with a base commit, the head in its
working tree, and `python -m rollout plan --format json` run in-process on it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rollout.release import record as release
from tests.rollout.diffkit import fixture, git, new_repo, run_cli, write

HAND = "prod/hand.yaml"


def plan_of(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    old: Mapping[str, str],
    new: Mapping[str, str | None],
    *extra: str,
) -> dict[str, Any]:
    repo = new_repo(tmp_path, dict(old))
    write(repo, new)
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan", "--format", "json", *extra])
    assert (code, err) == (0, ""), err
    result: dict[str, Any] = json.loads(out)
    return result


def text_of(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    old: Mapping[str, str],
    new: Mapping[str, str | None],
) -> str:
    repo = new_repo(tmp_path, dict(old))
    write(repo, new)
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan"])
    assert (code, err) == (0, ""), err
    return out


def release_tag(repo: Path, name: str, commit_id: str) -> None:
    """An annotated release tag with the record `rollout release tag` writes."""
    record = release.record_for_commit(repo, commit_id, release.VERIFY_SKIPPED)
    git(repo, "tag", "-a", name, "-m", release.format_message(name, record), commit_id)


def tagged_plan(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], repo: Path, base: str, head: str
) -> str:
    """The JSON plan from `base` (tagged v0.0.1) to `head` (tagged v0.0.2), as deployed."""
    release_tag(repo, "v0.0.1", base)
    release_tag(repo, "v0.0.2", head)
    tags = ["--tag", "v0.0.2", "--base-tag", "v0.0.1"]
    argv = ["plan", "--base", "v0.0.1", "--head", "v0.0.2", *tags, "--format", "json"]
    code, out, err = run_cli(monkeypatch, capsys, repo, argv)
    assert (code, err) == (0, ""), err
    return out


def services(stages: list[dict[str, Any]]) -> list[str]:
    return [stage["service"] for stage in stages]


def calls(step: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A step's rollback calls as (endpoint, tag, service)."""
    return [
        (call["endpoint"], call["payload"]["tag"], ",".join(call["payload"]["services"]))
        for call in step["rollback"]
    ]


def step(stage: dict[str, Any], action: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [item for item in stage["steps"] if item["action"] == action]
    (found,) = steps
    return found


def hand() -> str:
    return fixture("handwritten.yaml")


def rename_engine(text: str, old: str, new: str) -> str:
    """The hand-written file with engine `old` replaced by `new` (same definition, same
    place, the router's backends following)."""
    return text.replace(f"  {old}:\n", f"  {new}:\n").replace(f"http://{old}:8000", f"http://{new}:8000")


def add_engine(text: str, name: str, gpus: tuple[str, ...]) -> str:
    """The hand-written file with one more engine on `gpus`, before the router, which
    lists it as a backend."""
    ids = ", ".join(f'"{gpu}"' for gpu in gpus)
    block = (
        f"  {name}:\n"
        "    <<: *engine\n"
        "    command: vllm serve Qwen/Qwen3-8B --tensor-parallel-size=2 --max-model-len 32768 --port=8000\n"
        "    deploy:\n"
        "      resources:\n"
        "        reservations:\n"
        "          devices:\n"
        f"            - {{driver: nvidia, capabilities: [gpu], device_ids: [{ids}]}}\n"
    )
    text = text.replace("  router:\n", block + "  router:\n")
    return text.replace("http://vllm-b:8000", f"http://vllm-b:8000,http://{name}:8000")
