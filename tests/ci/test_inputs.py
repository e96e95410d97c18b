"""ci/inputs.py: what every stage result records about its environment."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

from ci.inputs import environment, installed, normalise


def _by_metadata(path: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=path):
        if dist.metadata["Name"]:
            found[normalise(dist.metadata["Name"])] = dist.version
    return found


def test_the_installed_distributions_are_what_importlib_metadata_lists() -> None:
    assert installed() == _by_metadata(sys.path)
    assert environment()["packages"] == dict(sorted(_by_metadata(sys.path).items()))
    assert "pytest" in installed()


def test_odd_names_and_egg_info_are_read_from_their_metadata_and_later_entries_win(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for directory, version in ((first, "1.0"), (second, "2.0")):
        info = directory / f"Some_Pkg-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: Some.Pkg\nVersion: {version}\n")
    legacy = first / "old_thing.egg-info"
    legacy.mkdir()
    (legacy / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: Old-Thing\nVersion: 0.3\n")
    odd = first / "weird-name-with-dashes-9.9.dist-info"  # not the spec's escaping
    odd.mkdir()
    (odd / "METADATA").write_text("Metadata-Version: 2.1\nName: weird-name-with-dashes\nVersion: 9.9\n")
    path = [str(first), str(second), str(tmp_path / "missing")]
    assert installed(path) == {"some-pkg": "2.0", "old-thing": "0.3", "weird-name-with-dashes": "9.9"}
    assert installed(path) == _by_metadata(path)
