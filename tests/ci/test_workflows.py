"""The GitHub workflow and the pre-commit configuration: valid, and saying what we mean.

Schemas are the ones the lint tools vendor (check-jsonschema's, pre-commit's own), so
these tests need no network.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from check_jsonschema.builtin_schemas import get_builtin_schema
from pre_commit.clientlib import InvalidConfigError, load_config
from ruamel.yaml import YAML

from validators.interpolation import token_regex

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "check.yml"
PRE_COMMIT = ROOT / ".pre-commit-config.yaml"
README_SETUP = "python3 -m pip install nox==2026.10.20 uv==0.13.8"


def _load(path: Path) -> Any:
    # YAML 1.2 (ruamel), as GitHub reads it: `on` stays a string, not the boolean true.
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def _schema_errors(instance: Any, schema_name: str) -> list[str]:
    schema = get_builtin_schema(schema_name)
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [error.message for error in validator.iter_errors(instance)]


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _load(WORKFLOW)["jobs"]["check"]["steps"]
    return steps


def _session_names() -> dict[str, list[str]]:
    """Every nox session of noxfile.py and its `requires`, read without importing nox."""
    sessions: dict[str, list[str]] = {}
    for node in ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if ast.unparse(target) != "nox.session":
                continue
            keywords = (
                {kw.arg: kw.value for kw in decorator.keywords} if isinstance(decorator, ast.Call) else {}
            )
            name = ast.literal_eval(keywords["name"]) if "name" in keywords else node.name
            sessions[name] = ast.literal_eval(keywords["requires"]) if "requires" in keywords else []
    return sessions


def _group(name: str, groups: dict[str, list[Any]]) -> list[str]:
    """A PEP 735 dependency group, includes expanded, duplicates dropped, order kept."""
    pins: list[str] = []
    for item in groups[name]:
        for pin in _group(item["include-group"], groups) if isinstance(item, dict) else [item]:
            if pin not in pins:
                pins.append(pin)
    return pins


# --- the workflow ----------------------------------------------------------------------


def test_workflow_passes_the_github_workflow_schema() -> None:
    assert _schema_errors(_load(WORKFLOW), "vendor.github-workflows") == []


def test_the_schema_check_can_fail() -> None:
    broken = _load(WORKFLOW)
    del broken["jobs"]["check"]["runs-on"]
    assert _schema_errors(broken, "vendor.github-workflows") != []


def test_workflow_runs_on_every_pull_request_and_push_to_main_without_path_filters() -> None:
    on = _load(WORKFLOW)["on"]
    assert set(on) == {"pull_request", "push"}
    assert on["push"] == {"branches": ["main"]}
    assert not on["pull_request"]  # no paths, no branches: a required check always reports
    assert "paths" not in WORKFLOW.read_text(encoding="utf-8")


def test_workflow_reads_only_and_cancels_superseded_pull_request_runs() -> None:
    workflow = _load(WORKFLOW)
    assert workflow["permissions"] == {"contents": "read"}
    assert "github.ref" in workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


def test_workflow_sets_up_python_and_nox_as_the_readme_does() -> None:
    steps = _steps()
    checkout = next(step for step in steps if step.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    python = next(step for step in steps if step.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "3.11"
    assert [step["run"] for step in steps if step.get("name") == "Install nox"] == [README_SETUP]
    for step in steps:  # third-party code pinned by commit, never by a movable tag
        if "uses" in step:
            assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_workflow_runs_tests_then_check_then_the_record_even_after_a_failure() -> None:
    runs = [
        (step.get("run"), step.get("if"))
        for step in _steps()
        if re.match(r"^(\w+=\S+ )*nox -s ", str(step.get("run", "")))
    ]
    assert runs == [
        ("nox -s tests", None),
        ("nox -s check", None),
        ('TIEROPS_RECORD_SUMMARY="$GITHUB_STEP_SUMMARY" nox -s record', "${{ !cancelled() }}"),
    ]
    sessions = _session_names()
    for run, _condition in runs:
        assert run is not None
        assert run.split()[-1] in sessions


def test_check_requires_the_compose_session() -> None:
    sessions = _session_names()
    assert "compose" in sessions["check"]
    assert {"generated", "lint", "typecheck"} <= set(sessions["check"])


# --- pre-commit ----------------------------------------------------------------------------


def test_pre_commit_config_passes_pre_commits_own_schema() -> None:
    config = load_config(PRE_COMMIT)
    assert config["minimum_pre_commit_version"] == "4.7.0"


def test_pre_commit_schema_check_can_fail(tmp_path: Path) -> None:
    broken = tmp_path / ".pre-commit-config.yaml"
    broken.write_text("repos:\n  - repo: local\n    hooks:\n      - id: x\n", encoding="utf-8")
    with pytest.raises(InvalidConfigError):
        load_config(broken)


def _hooks() -> dict[str, dict[str, Any]]:
    hooks: dict[str, dict[str, Any]] = {}
    for repo in _load(PRE_COMMIT)["repos"]:
        for hook in repo["hooks"]:
            hooks[hook["id"]] = {**hook, "repo": repo["repo"]}
    return hooks


def test_every_hook_works_offline() -> None:
    """No hook repository to clone: local Python hooks from PyPI pins, pygrep, or pre-commit's meta."""
    for hook_id, hook in _hooks().items():
        assert hook["repo"] in ("local", "meta"), hook_id
        if hook["repo"] == "local":
            assert hook["language"] in ("python", "pygrep"), hook_id


def test_hook_pins_equal_the_hooks_dependency_group() -> None:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["dependency-groups"]
    expected = _group("hooks", groups)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][A-Za-z0-9.+]*", pin) for pin in expected)
    for hook_id, hook in _hooks().items():
        if hook.get("language") == "python":
            assert hook["additional_dependencies"] == expected, hook_id


def test_the_hooks_the_issue_asks_for_are_there() -> None:
    hooks = _hooks()
    assert hooks["generated"]["entry"] == "python -m generators --check"
    assert hooks["generated"]["files"] == "^(generators|prod)/"
    assert hooks["check-yaml"]["entry"] == "check-yaml --allow-multiple-documents"
    assert hooks["end-of-file-fixer"]["exclude"] == "^prod/"
    assert hooks["trailing-whitespace"]["exclude"] == "^prod/"
    assert hooks["compose-spec"]["entry"] == "check-jsonschema --builtin-schema vendor.compose-spec"
    assert re.search(hooks["compose-spec"]["files"], "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml")
    assert hooks["github-workflows"]["entry"] == "check-jsonschema --builtin-schema vendor.github-workflows"
    assert re.search(hooks["github-workflows"]["files"], ".github/workflows/check.yml")
    for hook_id in (
        "check-added-large-files",
        "check-merge-conflict",
        "detect-private-key",
        "ruff-check",
        "ruff-format",
    ):
        assert hook_id in hooks


def test_token_shapes_hook_uses_the_dummy_rules_regex() -> None:
    assert _hooks()["token-shapes"]["entry"] == token_regex()
    pattern = re.compile(token_regex())
    assert pattern.search("HF_TOKEN=" + "hf" + "_" + "a1B" * 11)
    assert not pattern.search("image: nginx@sha256:" + "0a" * 32)


def test_prod_files_pass_the_compose_spec_schema() -> None:
    for path in sorted((ROOT / "prod").glob("*.yaml")):
        assert _schema_errors(_load(path), "vendor.compose-spec") == [], path.name


def test_the_compose_spec_check_can_fail() -> None:
    broken = _load(sorted((ROOT / "prod").glob("*.yaml"))[0])
    broken["services"]["nginx"]["restart"] = ["always"]
    assert _schema_errors(broken, "vendor.compose-spec") != []


# --- the check matrix: record, artifact, comment, release gate ------------------------------

COMMENT = ROOT / ".github" / "workflows" / "check-comment.yml"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
UPLOAD = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02"
DOWNLOAD = "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093"


def _job(path: Path, name: str) -> dict[str, Any]:
    job: dict[str, Any] = _load(path)["jobs"][name]
    return job


@pytest.mark.parametrize("path", [COMMENT, RELEASE])
def test_the_other_workflows_pass_the_schema_and_pin_actions_by_commit(path: Path) -> None:
    workflow = _load(path)
    assert _schema_errors(workflow, "vendor.github-workflows") == []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
            # Event values reach scripts through the environment, never spliced into a shell.
            assert "${{" not in step.get("run", ""), step.get("name")


def test_every_stage_and_the_record_share_the_jobs_run_id() -> None:
    env = _load(WORKFLOW)["jobs"]["check"]["env"]
    assert env["TIEROPS_CHECK_RUN"] == "${{ github.run_id }}.${{ github.run_attempt }}"
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert "RUN_ID = os.environ.get(RUN_ENV) or uuid.uuid4().hex" in noxfile


def test_check_uploads_every_file_the_comment_reads_even_after_a_failure() -> None:
    from ci.comment import LIMITS

    upload = next(step for step in _steps() if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["uses"] == UPLOAD
    assert upload["if"] == "${{ !cancelled() }}"
    assert upload["with"]["name"] == "check-matrix"
    paths = set(upload["with"]["path"].split())
    assert {f"build/{name}" for name in LIMITS} <= paths
    # the check job itself never gets more than read access
    assert "permissions" not in _job(WORKFLOW, "check")


def test_the_comment_workflow_reads_only_the_artifact_with_the_least_permissions() -> None:
    workflow = _load(COMMENT)
    assert workflow["on"] == {
        "workflow_run": {"workflows": [_load(WORKFLOW)["name"]], "types": ["completed"]}
    }
    assert workflow["permissions"] == {}
    job = _job(COMMENT, "comment")
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]
    steps = job["steps"]
    checkout = next(step for step in steps if step.get("uses", "").startswith("actions/checkout@"))
    # the base repository's default branch: no ref or repository taken from the event
    assert set(checkout.get("with", {})) == {"persist-credentials"}
    assert checkout["with"]["persist-credentials"] is False
    download = next(step for step in steps if step.get("uses", "").startswith("actions/download-artifact@"))
    assert download["uses"] == DOWNLOAD
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    runs = [step["run"] for step in steps if "run" in step]
    assert len(runs) == 1 and "-m ci.comment" in runs[0]
    assert not any(word in runs[0] for word in ("nox", "pip", "install", "pytest"))  # nothing installed
    post = next(step for step in steps if "run" in step)
    assert post["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"


def test_the_comment_code_imports_only_the_standard_library_and_its_own_modules() -> None:
    """The comment job installs nothing: ci.comment must run on a bare python3."""
    import subprocess
    import sys

    probe = (
        "import sys; before = set(sys.modules); import ci.comment; "
        "print('\\n'.join(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    outside = {name for name in proc.stdout.split() if name not in sys.stdlib_module_names}
    assert outside <= {"ci", "tierops"}, outside


def test_release_tags_only_a_commit_whose_check_passed_and_can_be_dispatched() -> None:
    workflow = _load(RELEASE)
    assert workflow["on"]["workflow_run"] == {
        "workflows": [_load(WORKFLOW)["name"]],
        "types": ["completed"],
        "branches": ["main"],
    }
    assert "commit" in workflow["on"]["workflow_dispatch"]["inputs"]
    assert "push" not in workflow["on"]
    job = _job(RELEASE, "tag")
    condition = " ".join(job["if"].split())
    assert "github.event_name == 'workflow_dispatch'" in condition
    for part in (
        "github.event.workflow_run.conclusion == 'success'",
        "github.event.workflow_run.event == 'push'",
        "github.event.workflow_run.head_repository.full_name == github.repository",
    ):
        assert part in condition
    checkout = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["ref"] == "${{ github.event.workflow_run.head_sha || github.sha }}"
    assert checkout["with"]["fetch-depth"] == 0
    tag = next(step for step in job["steps"] if "release -- tag" in step.get("run", ""))
    assert tag["run"] == 'nox -s release -- tag --remote origin --push --commit "$COMMIT"'
    assert tag["env"]["COMMIT"].startswith("${{ github.event.workflow_run.head_sha ||")
