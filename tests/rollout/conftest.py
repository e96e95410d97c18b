"""Fixtures the release tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rollout.release_world import World, isolate_git, make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A clone with release history (release_world.py), git isolated from the user's config."""
    isolate_git(monkeypatch, tmp_path)
    return make_world(tmp_path)
