"""Where the fleet's data lives, apart from the tool's code.

The fleet is what the tool works on: the stacks (`generators/*.source.yaml` and
`generators/*.targets.yaml`), the contracts (`validators/contracts/`), the files they
produce (`prod/`) and the dummy values the compose stage renders them with
(`ci/dummy.env`). By default that tree is this repository. `TIEROPS_FLEET` names another
tree with the same layout: the tool's own tests point it at their fixture fleet
(`tests/fixtures/fleet/`), so a change to the real fleet never needs a test edit, and
`nox -s check` is what judges the real one.
"""

from __future__ import annotations

import os
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parent.parent
FLEET_ENV = "TIEROPS_FLEET"


def fleet_root() -> Path:
    """The fleet's tree: `$TIEROPS_FLEET` when set, else this repository."""
    named = os.environ.get(FLEET_ENV, "")
    return Path(named).resolve() if named else CODE_ROOT


def prod_dir() -> Path:
    return fleet_root() / "prod"


def stacks_dir() -> Path:
    """Where the stacks' data is: one `<stack>.source.yaml` and `<stack>.targets.yaml` each."""
    return fleet_root() / "generators"


def contracts_dir() -> Path:
    return fleet_root() / "validators" / "contracts"


def dummy_env() -> Path:
    return fleet_root() / "ci" / "dummy.env"


def shown(path: Path) -> str:
    """A path as the fleet names it: relative to the fleet's root when inside it (`prod/x.yaml`),
    else relative to the working directory when inside that, else as given."""
    resolved = path.resolve()
    for base in (fleet_root(), Path.cwd().resolve()):
        try:
            return str(resolved.relative_to(base)) or "."
        except ValueError:
            continue
    return str(path)
