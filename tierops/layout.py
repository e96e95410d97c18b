"""Where the fleet's data lives, apart from the tool's code.

The fleet is what the tool works on: the stacks (`generators/*.source.yaml` and
`generators/*.targets.yaml`), the contracts (`validators/contracts/`), the files they
produce (`prod/`) and the dummy values the compose stage renders them with
(`ci/dummy.env`). By default that tree is this repository when the code runs from it,
and the current directory when the code is an installed package (`fleet_root`).
`TIEROPS_FLEET` names another tree with the same layout: the tool's own tests point it at
their fixture fleet (`tests/fixtures/fleet/`), so a change to the real fleet never needs
a test edit, and `nox -s check` is what judges the real one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tierops.errors import InputError

CODE_ROOT = Path(__file__).resolve().parent.parent
FLEET_ENV = "TIEROPS_FLEET"


def fleet_root() -> Path:
    """The fleet's tree, the first of:

    1. `$TIEROPS_FLEET` when set and not empty, resolved against the current directory;
       taken as it is, so a part it lacks is that command's own error, never another
       tree's data;
    2. the code's root (the directory above `tierops/`) when it holds a `prod/`
       directory: the repository running its own code (`python -m ...` in a checkout,
       or an editable install of it);
    3. the current directory otherwise: an installed package's code root is
       site-packages, which holds no fleet, so a console command (`tierops-validate`, a
       pre-commit hook) reads the fleet where it is run, normally a repository's top
       (pre-commit runs hooks there).

    Read at every call: a command that changes directory or the variable sees the change.
    """
    named = os.environ.get(FLEET_ENV, "")
    if named:
        return Path(named).resolve()
    if (CODE_ROOT / "prod").is_dir():
        return CODE_ROOT
    return Path.cwd()


def prod_dir() -> Path:
    return fleet_root() / "prod"


def prod_files() -> list[Path]:
    """The fleet's prod/*.yaml, sorted; InputError for one that is a symbolic link leading
    out of the fleet: a change could otherwise make the checks read, print and render a
    file from anywhere on the machine."""
    root = fleet_root().resolve()
    files = sorted(prod_dir().glob("*.yaml"))
    for path in files:
        check_prod_name(path)
        check_inside(path, root)
    return files


def check_inside(path: Path, root: Path, display: str | None = None) -> None:
    """InputError for a file that is a symbolic link leading out of `root` (the fleet)."""
    if path.is_symlink() and not path.resolve().is_relative_to(root.resolve()):
        raise InputError(
            "a symbolic link that leads outside the fleet; refusing to read it",
            where=display or shown(path),
            hint="commit the file itself",
        )


# What a prod file may be called: the names the generators write, and nothing a report
# could print as another line, a terminal escape or Markdown.
_PROD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def check_prod_name(path: Path) -> None:
    """InputError for a prod file whose name is more than letters, digits, `.`, `_`, `-`."""
    if not _PROD_NAME.fullmatch(path.name):
        raise InputError(
            f"a prod file named {path.name!a}: a name holds only letters, digits, '.', '_' and '-'",
            where=shown(path.parent),
            hint="rename it (`git mv`)",
        )


def stacks_dir() -> Path:
    """Where the stacks' data is: one `<stack>.source.yaml` and `<stack>.targets.yaml` each."""
    return fleet_root() / "generators"


def contracts_dir() -> Path:
    """The fleet's `validators/contracts/`. A fleet found by default (no `$TIEROPS_FLEET`)
    without that directory gets the contracts shipped with the code instead, so that the
    validators' generic checks still run in a compose repository of another layout (a
    pre-commit hook's); a named fleet gets its own or the error."""
    own = fleet_root() / "validators" / "contracts"
    if has_own_contracts():
        return own
    return CODE_ROOT / "validators" / "contracts"


def has_own_contracts() -> bool:
    """Whether the fleet's stack contracts are its own: the shipped ones describe this
    repository's stacks and never claim another repository's prod/ files."""
    return (fleet_root() / "validators" / "contracts").is_dir() or bool(os.environ.get(FLEET_ENV, ""))


def build_dir() -> Path:
    """Where a run leaves its outputs (`build/rendered/`): the code's root in a checkout,
    as before, and the fleet's root for an installed package, never site-packages."""
    return CODE_ROOT / "build" if (CODE_ROOT / "prod").is_dir() else fleet_root() / "build"


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
