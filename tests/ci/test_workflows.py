"""The GitHub workflow and the pre-commit configuration: valid, and saying what we mean.

Schemas are the ones the lint tools vendor (check-jsonschema's, pre-commit's own), so
these tests need no network.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from check_jsonschema.builtin_schemas import get_builtin_schema
from pre_commit.clientlib import InvalidConfigError, load_config
from ruamel.yaml import YAML

from ci.file_checks import CHECKS, token_findings
from tests.conftest import FLEET
from validators.interpolation import token_regex

CHECK_NAMES = tuple(check.name for check in CHECKS)

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "check.yml"
RELEASE = WORKFLOWS / "release.yml"
PRE_COMMIT = ROOT / ".pre-commit-config.yaml"
README_SETUP = "python3 -m pip install --require-hashes -r ci/lock/nox.txt"


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


# --- the workflows ------------------------------------------------------------------


def _workflows() -> dict[str, Any]:
    return {path.name: _load(path) for path in sorted(WORKFLOWS.glob("*.yml"))}


def _all_steps() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (name, job_id, step)
        for name, workflow in _workflows().items()
        for job_id, job in workflow["jobs"].items()
        for step in job.get("steps", [])
    ]


def _step(name: str) -> dict[str, Any]:
    (step,) = [step for step in _steps() if step.get("name") == name]
    return step


def test_there_are_exactly_the_check_comment_and_release_workflows() -> None:
    assert sorted(_workflows()) == ["check-comment.yml", "check.yml", "release.yml"]


@pytest.mark.parametrize("name", ["check.yml", "check-comment.yml", "release.yml"])
def test_workflow_passes_the_github_workflow_schema(name: str) -> None:
    assert _schema_errors(_load(WORKFLOWS / name), "vendor.github-workflows") == []


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


def test_check_reads_only() -> None:
    """Read-only but for the code-scanning job, which runs none of the repository's code."""
    workflow = _load(WORKFLOW)
    assert workflow["permissions"] == {"contents": "read"}
    assert sorted(workflow["jobs"]) == ["check", "code-scanning"]
    assert "permissions" not in workflow["jobs"]["check"]
    assert workflow["jobs"]["code-scanning"]["permissions"] == {
        "actions": "read",
        "contents": "read",
        "security-events": "write",
    }


def test_concurrency_never_drops_a_main_commit_and_cancels_superseded_pull_request_runs() -> None:
    """GitHub cancels a *pending* run of a group when a newer one queues: main needs one group per commit."""
    concurrency = _load(WORKFLOW)["concurrency"]
    assert concurrency == {
        "group": "${{ github.workflow }}-${{ github.event_name == 'pull_request' && github.ref || github.sha }}",
        "cancel-in-progress": "${{ github.event_name == 'pull_request' }}",
    }
    for job in _load(WORKFLOW)["jobs"].values():
        assert "concurrency" not in job  # a job-level group would share one slot again


def test_every_checkout_drops_its_credentials_and_every_action_is_pinned_by_commit() -> None:
    checkouts = [step for _, _, step in _all_steps() if step.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 4
    for name, job, step in _all_steps():
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
            # the diff and the tags need the history; the comment reads only the base's
            # code, code scanning only the lines its log points at
            shallow = name == "check-comment.yml" or job == "code-scanning"
            assert step["with"].get("fetch-depth") == (None if shallow else 0)
    for name, job, step in _all_steps():  # third-party code pinned by commit, never by a movable tag
        if "uses" in step:
            # owner/repo, or an action in a subdirectory of it (github/codeql-action/upload-sarif)
            assert re.fullmatch(r"[\w-]+/[\w-]+(/[\w-]+)*@[0-9a-f]{40}", step["uses"]), (
                name,
                job,
                step["uses"],
            )


def test_no_expression_is_expanded_inside_a_shell_script() -> None:
    """Template injection: values reach `run:` only through `env:`."""
    for name, job, step in _all_steps():
        assert "${{" not in str(step.get("run", "")), (name, job, step.get("name"))


def test_workflow_sets_up_python_and_nox_as_the_readme_does() -> None:
    python = next(step for step in _steps() if step.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "3.11"
    assert python["id"] == "python"
    assert _step("Install nox")["run"] == README_SETUP
    assert README_SETUP in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_push_to_main_diffs_against_the_commit_before_the_push() -> None:
    base = _step("Base of the diff")
    assert base["id"] == "base"
    assert base["run"] == "python3 -m ci.base_ref"
    assert base["env"] == {"EVENT_NAME": "${{ github.event_name }}", "BEFORE": "${{ github.event.before }}"}
    for name in ("nox -s check",):
        assert _step(name)["env"] == {"TIEROPS_BASE_REF": "${{ steps.base.outputs.ref }}"}


def test_workflow_runs_tests_check_collector_then_the_record_even_after_a_failure() -> None:
    runs = [
        (step.get("run"), step.get("if"))
        for step in _steps()
        if re.match(r"^(\w+=\S+ )*nox -s ", str(step.get("run", "")))
    ]
    assert runs == [
        ("nox -s tests", None),
        ("nox -s check", "${{ !cancelled() }}"),
        ("nox -s collector -- --require-docker", "${{ !cancelled() }}"),
        ('TIEROPS_RECORD_SUMMARY="$GITHUB_STEP_SUMMARY" nox -s record', "${{ always() }}"),
    ]
    # The record hears the tests step's own outcome: a red tests step is never a pass.
    assert _step("nox -s tests")["id"] == "tests"
    record_step = _step("Check matrix (record and step summary)")
    assert record_step["env"]["TIEROPS_RECORD_STEP_OUTCOMES"] == "tests=${{ steps.tests.outcome }}"
    sessions = _session_names()
    for run, _condition in runs:
        assert run is not None
        words = run.split()
        assert words[words.index("-s") + 1] in sessions


def test_caches_are_keyed_by_os_and_python_and_uv_s_cache_is_one_of_them() -> None:
    caches = [step for step in _steps() if step.get("uses", "").startswith("actions/cache@")]
    paths = [step["with"]["path"].split() for step in caches]
    assert ["~/.cache/uv", "~/.cache/pip"] in paths
    assert ["~/.cache/pre-commit"] in paths
    for step in caches:
        key = step["with"]["key"]
        assert "${{ runner.os }}" in key
        assert "${{ steps.python.outputs.python-version }}" in key
    assert "hashFiles('ci/lock/*.txt')" in caches[paths.index(["~/.cache/uv", "~/.cache/pip"])]["with"]["key"]


def test_annotations_and_the_summary_each_come_from_one_place() -> None:
    """validate annotates (`--format auto`), the git hook never does; the workflow's matrix step alone writes the summary."""
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert noxfile.count('"python", "-m", "validators"') == 1
    # the stage asks for JSON and prints it as `--format auto` would (ci/stages.py)
    assert '"validate": ("python", "-m", "validators", "--format", "json"),' in noxfile
    assert 'stage(session, "validate")' in noxfile
    assert _hooks()["validators"]["entry"] == "python -m validators --format text"
    writers = [
        path.relative_to(ROOT).as_posix()
        for package in ("generators", "validators", "rollout", "tierops", "ci")
        for path in sorted((ROOT / package).rglob("*.py"))
        if re.search(r"environ(\.get\(|\[)\"GITHUB_STEP_SUMMARY\"", path.read_text(encoding="utf-8"))
    ]
    assert writers == []
    summary = [step.get("name") for _, _, step in _all_steps() if "GITHUB_STEP_SUMMARY" in str(step)]
    assert summary == ["Check matrix (record and step summary)"]  # the matrix, written once


# --- code scanning --------------------------------------------------------------------------

UPLOAD_SARIF = "github/codeql-action/upload-sarif@45cbd0c69e560cd9e7cd7f8c32362050c9b7ded2"


def test_check_writes_the_validators_sarif_log_after_the_check_and_hands_it_on() -> None:
    names = [step.get("name") for step in _steps()]
    assert names.index("Validators as SARIF") > names.index("nox -s check")
    write = _step("Validators as SARIF")
    assert write["if"] == "${{ !cancelled() }}"
    lines = write["run"].splitlines()
    assert (
        ".nox/validate/bin/python -m validators --format sarif > build/validators.sarif || status=$?" in lines
    )
    assert lines[-1] == 'test "$status" -le 1'  # findings (1) still give a log; a crash fails
    upload = _step("Upload the SARIF log")
    assert upload["uses"] == UPLOAD
    assert upload["with"]["name"] == "validators-sarif"
    assert upload["with"]["path"] == "build/validators.sarif"
    assert upload["if"] == "${{ !cancelled() }}"


def test_code_scanning_uploads_the_log_from_a_job_that_runs_no_repository_code() -> None:
    job = _job(WORKFLOW, "code-scanning")
    assert job["needs"] == "check"
    condition = " ".join(job["if"].split())
    assert condition.startswith("${{ !cancelled() && (")
    for clause in (
        "github.event_name == 'push'",
        "github.event.pull_request.head.repo.full_name == github.repository",
    ):
        assert clause in condition  # never a fork's pull request
    steps = job["steps"]
    assert all("run" not in step for step in steps)
    assert [step["uses"].split("@")[0] for step in steps] == [
        "actions/checkout",
        "actions/download-artifact",
        "github/codeql-action/upload-sarif",
    ]
    assert steps[1]["uses"] == DOWNLOAD
    assert steps[1]["with"] == {"name": "validators-sarif", "path": "build/sarif"}
    assert steps[2]["uses"] == UPLOAD_SARIF
    assert steps[2]["with"] == {
        "sarif_file": "build/sarif/validators.sarif",
        "category": "tierops-validators",
    }
    assert "# v4.32.2" in WORKFLOW.read_text(encoding="utf-8").split(UPLOAD_SARIF, 1)[1].splitlines()[0]


# --- release.yml ---------------------------------------------------------------------------


def test_release_runs_after_a_successful_check_of_a_push_to_main_or_by_hand() -> None:
    release = _load(RELEASE)
    assert release["on"] == {
        "workflow_run": {
            "workflows": [_load(WORKFLOW)["name"]],
            "types": ["completed"],
            "branches": ["main"],
        },
        "workflow_dispatch": release["on"]["workflow_dispatch"],
    }
    assert set(release["on"]["workflow_dispatch"]["inputs"]) == {"commit"}
    condition = " ".join(release["jobs"]["tag"]["if"].split())
    for clause in (
        "github.event.workflow_run.conclusion == 'success'",
        "github.event.workflow_run.event == 'push'",
        "github.event.workflow_run.head_branch == 'main'",
        "github.event.workflow_run.head_repository.full_name == github.repository",
        "(github.event_name == 'workflow_dispatch' && github.ref == 'refs/heads/main')",
    ):
        assert clause in condition


def test_release_tags_the_commit_check_passed_never_a_pull_request_s() -> None:
    steps = _load(RELEASE)["jobs"]["tag"]["steps"]
    checkout = steps[0]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["ref"] == "${{ github.event.workflow_run.head_sha || github.sha }}"
    assert _load(RELEASE)["concurrency"]["cancel-in-progress"] is False


def test_the_write_token_is_only_in_the_step_that_pushes_tags() -> None:
    release = _load(RELEASE)
    assert release["permissions"] == {}
    # contents: push the tags; id-token and attestations: sign and store the attestation
    # of each tag's check-matrix record (actions/attest-build-provenance).
    assert release["jobs"]["tag"]["permissions"] == {
        "contents": "write",
        "id-token": "write",
        "attestations": "write",
    }
    steps = release["jobs"]["tag"]["steps"]
    holders = [step for step in steps if "github.token" in str(step) or "secrets." in str(step)]
    assert [step["name"] for step in holders] == [
        "Tag and push (each commit verified again in its own worktree)"
    ]
    (pusher,) = holders
    pushed = steps.index(pusher)
    assert pusher["run"] == (
        'nox -R -s release -- tag --remote origin --push --commit "$COMMIT" --records build/records'
    )
    assert pusher["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    # No override of the check: `release tag` itself starts it without the token and
    # git's per-process credential config (tests/rollout: check_environment), so the tag
    # records `passed: nox -s check`.
    assert "TIEROPS_RELEASE_VERIFY" not in pusher["env"]
    assert {"GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"} <= set(pusher["env"])
    assert "--install-only" in steps[pushed - 1]["run"]  # every install before the token exists
    assert "token" not in str(release["jobs"]["tag"].get("env", {})).lower()
    # After the push only actions run, and they read what the tag command wrote: the
    # records the tags name, attested, then kept as an artifact.
    attest, keep = steps[pushed + 1 :]
    assert attest["uses"].startswith("actions/attest-build-provenance@")
    assert attest["with"] == {"subject-path": "build/records/*.check-matrix.json"}
    assert keep["uses"].startswith("actions/upload-artifact@") and keep["with"]["path"] == "build/records/"
    assert all("run" not in step for step in (attest, keep))


# --- zizmor --------------------------------------------------------------------------------


def _zizmor(*args: str) -> list[dict[str, Any]]:
    binary = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    assert binary, "zizmor is in the hooks group, so in the test environment"
    proc = subprocess.run(
        [
            binary,
            "--offline",
            "--persona",
            "pedantic",
            "--no-progress",
            "--format",
            "json",
            *args,
            str(WORKFLOWS),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 10, 11, 12, 13, 14), proc.stderr
    findings: list[dict[str, Any]] = json.loads(proc.stdout)
    return findings


def test_zizmor_pedantic_finds_nothing() -> None:
    assert _zizmor() == []


def test_the_ignored_zizmor_findings_are_the_two_workflow_run_triggers() -> None:
    findings = _zizmor("--no-ignores")
    located = sorted(
        (f["ident"], Path(f["locations"][0]["symbolic"]["key"]["Local"]["verbatim_path"]).name)
        for f in findings
    )
    assert located == [("dangerous-triggers", "check-comment.yml"), ("dangerous-triggers", "release.yml")]
    for name in ("check-comment.yml", "release.yml"):
        assert (WORKFLOWS / name).read_text(encoding="utf-8").count("zizmor: ignore[") == 1


def test_zizmor_runs_offline_and_pedantic_as_a_pinned_hook() -> None:
    hook = _hooks()["zizmor"]
    assert hook["entry"].split()[:4] == ["zizmor", "--offline", "--persona", "pedantic"]
    assert hook["language"] == "python"
    assert re.search(hook["files"], ".github/workflows/check.yml")
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["dependency-groups"]
    assert "zizmor==1.32.0" in _group("hooks", groups)


def test_every_session_has_a_row_in_the_readme_s_session_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # A row may name several sessions: `bench`, `bench-check`, ...
    rows = {
        name
        for line in readme.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`([^`]+)`", line.split("|")[1])
    }
    assert sorted(set(_session_names()) - rows) == []


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
    # check-yaml, the two fixers, merge markers, private keys and token shapes in one
    # process; tests/ci/test_file_checks.py pins which files each check gets
    assert hooks["file-checks"]["entry"] == "python -m ci.file_checks"
    assert hooks["file-checks"]["types"] == ["text"]
    assert CHECK_NAMES == (
        "check-yaml",
        "end-of-file-fixer",
        "trailing-whitespace",
        "check-merge-conflict",
        "detect-private-key",
        "token-shapes",
    )
    # the vendored schemas: ci/schemas.py routes each file; two ids, so that `nox -s
    # check` can skip the compose one (its compose session validates with Compose itself)
    for hook_id, path in (
        ("compose-schema", "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml"),
        ("workflow-schema", ".github/workflows/check.yml"),
    ):
        assert hooks[hook_id]["entry"] == "python -m ci.schemas"
        assert re.search(hooks[hook_id]["files"], path)
        assert not re.search(hooks[hook_id]["files"], "generators/glm53.source.yaml")
    assert not re.search(hooks["compose-schema"]["files"], ".github/workflows/check.yml")
    assert not re.search(hooks["workflow-schema"]["files"], "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml")
    for hook_id in ("check-added-large-files", "ruff-check", "ruff-format", "zizmor"):
        assert hook_id in hooks
    assert hooks["check-added-large-files"].get("types") is None  # binary files too


def test_every_hook_runs_in_one_process() -> None:
    """pre-commit would split files across one process per CPU; start-up is most of each hook's cost."""
    for hook_id, hook in _hooks().items():
        if hook["repo"] == "local":
            assert hook.get("require_serial") is True, hook_id


def test_the_token_shapes_check_uses_the_dummy_rules_regex(tmp_path: Path) -> None:
    leaked = tmp_path / "leaked.env"
    leaked.write_text("ok=1\nHF_TOKEN=" + "hf" + "_" + "a1B" * 11 + "\n", encoding="utf-8")
    digest = tmp_path / "digest.yaml"
    digest.write_text("image: nginx@sha256:" + "0a" * 32 + "\n", encoding="utf-8")
    assert token_findings([str(leaked), str(digest)]) == [
        f"{leaked}:2:10: token-shaped string (36 characters)"
    ]
    assert token_findings([str(leaked)], re.compile(token_regex())) == token_findings([str(leaked)])


def test_prod_files_pass_the_compose_spec_schema() -> None:
    for path in sorted((FLEET / "prod").glob("*.yaml")):
        assert _schema_errors(_load(path), "vendor.compose-spec") == [], path.name


def test_the_compose_spec_check_can_fail() -> None:
    broken = _load(sorted((FLEET / "prod").glob("*.yaml"))[0])
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
    assert "RUN_ID = os.environ.setdefault(RUN_ENV, uuid.uuid4().hex)" in noxfile


def test_check_uploads_every_file_the_comment_reads_even_after_a_failure() -> None:
    from ci.comment import LIMITS

    upload = next(step for step in _steps() if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["uses"] == UPLOAD
    assert upload["if"] == "${{ always() }}"
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
    assert (
        tag["run"]
        == 'nox -R -s release -- tag --remote origin --push --commit "$COMMIT" --records build/records'
    )
    assert tag["env"]["COMMIT"].startswith("${{ github.event.workflow_run.head_sha ||")
