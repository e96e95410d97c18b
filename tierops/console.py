"""The console commands of an installed tierops (`[project.scripts]` in pyproject.toml).

Each runs its CLI module exactly as its `python -m` form does: through
`tierops.entry.launch`, which imports the module (so an interrupt during the imports is
handled too), keeps output readable in any locale, ends a closed pipe with 141 and a
signal with 129, 130 or 143 and one line. Nothing else is imported here, so `--help` stays
as fast as `python -m ... --help`.
"""

from __future__ import annotations

from typing import NoReturn

from tierops.entry import launch


def generate() -> NoReturn:
    """`tierops-generate`: `python -m generators`."""
    launch("generators.cli")


def validate() -> NoReturn:
    """`tierops-validate`: `python -m validators`."""
    launch("validators.cli")


def compose_check() -> NoReturn:
    """`tierops-compose-check`: `python -m validators.compose`."""
    launch("validators.compose")


def rollout() -> NoReturn:
    """`tierops`: `python -m rollout` (diff, plan, release, apply, status)."""
    launch("rollout.cli")
