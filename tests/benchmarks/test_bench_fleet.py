"""benchmarks/bench_fleet.py: the fleet it builds and the commands it times (figures are not tested).

One real run of the validators on a small fleet proves the stacks are what the
contracts accept; the whole benchmark (`nox -s fleet-bench`) is run by hand.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.bench_fleet import EDIT, PRODS, SIZES, make_fleet, stack_name, stack_text, stages
from tierops.yamlio import roundtrip


def test_the_curve_is_1_10_50_and_100_stacks() -> None:
    assert SIZES == (1, 10, 50, 100)


def test_stacks_are_the_prod_files_under_other_names_with_their_deployment_renamed() -> None:
    prod = PRODS[0]
    name = stack_name(7, prod)
    assert name == f"stack-007-{prod.name}"
    text = Path(prod).read_text(encoding="utf-8")
    renamed = stack_text(prod, name)
    assert f"deployment: {prod.stem}\n" in text
    assert f"deployment: {prod.stem}\n" not in renamed
    assert renamed.count(f"deployment: {Path(name).stem}\n") == text.count(f"deployment: {prod.stem}\n")


def test_a_fleet_is_a_committed_repository_with_a_contract_per_stack_and_every_stack_edited(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "fleet"
    files = make_fleet(repo, 4)
    assert files == [f"prod/{stack_name(index, PRODS[index % 3])}" for index in range(4)]
    assert sorted(str(path.relative_to(repo)) for path in (repo / "prod").iterdir()) == sorted(files)
    contracts = roundtrip().load((repo / "validators/contracts/glm53.yaml").read_text(encoding="utf-8"))
    assert sorted(contracts["files"]) == sorted(Path(name).stem for name in files)
    changed = subprocess.run(
        ["git", "diff", "--name-only"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(changed) == sorted(files)
    assert all(EDIT[1] in (repo / name).read_text(encoding="utf-8") for name in files)
    # the real validators, from the fleet's own copy of the code, accept every stack
    proc = subprocess.run(
        [sys.executable, "-m", "validators", "--format", "text", *files],
        cwd=repo,
        env={"PYTHONPATH": str(repo), "PATH": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (0, "4 files checked: 0 errors, 0 warnings")


def test_unchanged_leaves_the_stacks_as_committed(tmp_path: Path) -> None:
    make_fleet(tmp_path / "fleet", 2, edit=False)
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tmp_path / "fleet", capture_output=True, text=True, check=True
    ).stdout
    assert status == ""


def test_every_per_file_stage_of_check_is_timed_on_the_stacks() -> None:
    table = stages(["prod/a.yaml", "prod/b.yaml"])
    assert list(table) == ["validate", "compose", "lint hooks", "diff", "plan"]
    modules = [command[2] for commands in table.values() for command in commands]
    assert modules == [
        "validators",
        "validators.compose",
        "ci.file_checks",  # the compose-spec hook is not run by `nox -s check` (ci/lint_scope.py)
        "rollout",
        "rollout",
    ]
    for name in ("validate", "compose", "lint hooks"):
        assert all(command[-2:] == ["prod/a.yaml", "prod/b.yaml"] for command in table[name])
    # as the stages run them (ci/stages.py): one run gives the JSON and the Markdown
    for name in ("diff", "plan"):
        assert table[name][0][3:] == [
            name, "--base", "HEAD", "--format", "json", "--markdown-to", f"build/{name}.md", "prod"
        ]  # fmt: skip


def test_one_check_runs_every_stage_and_reports_each_one_s_own_cpu(tmp_path: Path) -> None:
    """Side by side (as `nox -R -s check` runs them) and one after another: every stage
    passes on a real one-stack fleet, and each stage's CPU is its own processes' CPU."""
    import os

    from benchmarks.bench_fleet import check_once

    repo = tmp_path / "fleet"
    files = make_fleet(repo, 1)
    env = {key: value for key, value in os.environ.items() if key != "GITHUB_ACTIONS"}
    for serial in (False, True):
        per_stage, wall = check_once(files, repo, env, serial=serial)
        assert list(per_stage) == list(stages(files))
        assert all(cpu > 0 and stage_wall > 0 for stage_wall, cpu in per_stage.values())
        longest = max(stage_wall for stage_wall, _ in per_stage.values())
        if serial:
            assert wall >= sum(stage_wall for stage_wall, _ in per_stage.values()) * 0.99
        else:
            assert longest <= wall < sum(stage_wall for stage_wall, _ in per_stage.values()) + 1
