"""What reaches git, and what git hands back, stays inside the lines: no option smuggled in
as a remote or a ref, no tag for a commit the remote's main dropped, no tag of zero
services, no file read outside the repository, no report line forged by a file name."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from rollout import git as rollout_git
from rollout.cli import main
from tests.rollout.diffkit import commit as diff_commit
from tests.rollout.diffkit import git as diff_git
from tests.rollout.diffkit import new_repo
from tests.rollout.release_world import (
    T0,
    World,
    days,
    git,
    release_base,
    tagged_commits,
)
from tierops.errors import UsageError
from tierops.exitcodes import ExitCode

ONE = "services:\n  app:\n    image: busybox\n    command: [echo, one]\n"


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("option", ["--remote=--upload-pack=touch {marker}", "--remote=-u touch {marker}"])
def test_a_remote_that_is_an_option_never_reaches_git(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    marker = tmp_path / "ran"
    code = main(["release", "tag", "--repo", str(world.a), "--no-verify", option.format(marker=marker)])
    assert code == ExitCode.USAGE
    assert "not a git remote" in capsys.readouterr().err
    assert not marker.exists()
    assert tagged_commits(world.a) == {}


def test_a_release_branch_that_is_an_option_is_refused_before_any_hint_names_it(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["release", "tag", "--repo", str(world.a), "--no-verify", "--branch=-x"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err == "not a git ref: '-x' starts with '-', which git would read as an option\n"


@pytest.mark.parametrize("value", ["--output=x", "-n", "", "a\nb", "main\x00"])
def test_refs_and_remotes_that_git_would_misread_are_refused(value: str) -> None:
    with pytest.raises(UsageError, match="not a git ref"):
        rollout_git.check_ref(value)
    with pytest.raises(UsageError, match="not a git remote"):
        rollout_git.check_remote(value)


def test_a_diff_base_that_is_an_option_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    assert main(["diff", "--base=--all"]) == ExitCode.USAGE
    assert "not a git ref: '--all'" in capsys.readouterr().err


# --------------------------------------------------------------------------- release tags


def test_main_rewound_while_the_check_runs_gets_no_tag(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    release_base(world)
    base = git(world.a, "rev-parse", "HEAD")
    head = world.commit(world.a, "a change", T0 + days(1), extra={"notes/a": "a\n"})
    # The check itself stands in for a force-push: it moves origin's main back to base.
    rewind = shlex.join(["git", "--git-dir", str(world.origin), "update-ref", "refs/heads/main", base])
    capsys.readouterr()
    code = main(["release", "tag", "--repo", str(world.a), "--push", "--verify-command", rewind])
    assert git(world.origin, "rev-parse", "refs/heads/main") == base
    assert code == ExitCode.USAGE, capsys.readouterr()
    assert head not in tagged_commits(world.origin).values()
    assert head not in tagged_commits(world.a).values()


def test_prod_as_a_submodule_is_no_release(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    base = git(world.a, "rev-parse", "HEAD")
    git(world.a, "rm", "-r", "-q", "prod")
    git(world.a, "update-index", "--add", "--cacheinfo", f"160000,{base},prod")
    git(world.a, "commit", "-q", "-m", "prod as a submodule")
    (world.a / "prod").mkdir()  # an uninitialised submodule: the tree is clean
    capsys.readouterr()
    assert main(["release", "tag", "--repo", str(world.a), "--no-verify"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "prod/ at" in err and "holds no services (prod is a submodule there)" in err
    assert tagged_commits(world.a) == {}


# --------------------------------------------------------------------------- paths and names


def test_a_prod_file_linked_outside_the_repository_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    outside = tmp_path / "outside.yaml"
    outside.write_text(ONE.replace("one", "SECRET-FROM-OUTSIDE"), encoding="utf-8")
    (repo / "prod" / "x.yaml").unlink()
    (repo / "prod" / "x.yaml").symlink_to(outside)
    assert main(["diff", "--base", "HEAD"]) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert "SECRET-FROM-OUTSIDE" not in out + err
    assert err.strip() == f"prod/x.yaml: a symbolic link that leads outside the repository {repo.resolve()}"


@pytest.mark.parametrize("command", ["diff", "plan"])
@pytest.mark.parametrize("side", ["working tree", "commit"])
@pytest.mark.parametrize(
    "forged",
    ["prod/y.yaml\n  app: + image: evil.yaml", "prod/\u202elmay.live-canary.yaml", "prod/a\u200bb.yaml"],
    ids=["line break", "bidi override", "zero-width space"],
)
def test_a_file_name_with_a_control_or_invisible_character_is_refused_escaped(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    side: str,
    forged: str,
    command: str,
) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    args = [command, "--base", "HEAD", "--format", "markdown"]
    if side == "commit":
        diff_commit(repo, {forged: ONE}, "a forged name")
        args = [command, "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown"]
    else:
        (repo / forged).write_text(ONE, encoding="utf-8")
    assert main(args) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.isascii() and err.count("\n") == 1
    assert f"{forged!a} at " in err and "a file name with a control or invisible character" in err


def test_a_repository_of_another_owner_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    diff_git(repo, "status")
    # git's own switch for its ownership check, as if another user owned the clone.
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    assert main(["diff", "--base", "HEAD"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "dubious ownership" in err and "not inside a git repository" not in err
    assert "safe.directory" in err


@pytest.mark.parametrize("command", ["diff", "plan"])
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_terminal_controls_in_values_and_names_are_shown_escaped(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    fmt: str,
) -> None:
    """A value, an environment key and a service name are the file's data: a title-setting
    OSC, a screen clear, a hyperlink, a C1 CSI and a bidi override reach the terminal as
    `\\uXXXX`, never as themselves (a JSON string reads them back the same)."""
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    changed = (  # YAML's own escapes: the loader refuses the raw characters
        'services:\n  app:\n    image: "busybox\\e]0;PWNED\\a"\n    environment:\n'
        '      "K\\e[2J\\u202e": "v\\x9b31m"\n  "svc\\e]8;;http://evil\\a": {image: busybox}\n'
    )
    (repo / "prod/x.yaml").write_text(changed, encoding="utf-8")
    main([command, "--base", "HEAD", "--format", fmt])
    out, err = capsys.readouterr()
    for control in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert control not in out + err
    assert "\\u001b]0;PWNED\\u0007" in out


@pytest.mark.parametrize("where", ["committed", "working tree"])
def test_a_submodule_or_nested_repository_under_the_paths_is_refused_on_either_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """The working tree would read the submodule's checked-out files and a commit only
    its pointer: the two sides of one commit would disagree."""
    (tmp_path / "inner").mkdir()
    (tmp_path / "outer").mkdir()
    inner = new_repo(tmp_path / "inner", {"sub.yaml": ONE}, origin=False)
    repo = new_repo(tmp_path / "outer", {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    if where == "committed":
        diff_git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "prod/sub")
        diff_git(repo, "commit", "-qm", "sub")
        args = ["diff", "--base", "HEAD~1", "--head", "HEAD"]
    else:
        diff_git(repo, "clone", "-q", str(inner), "prod/sub")
        args = ["diff", "--base", "HEAD"]
    assert main(args) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "'prod/sub'" in err and "only this repository's files are read" in err and err.count("\n") == 1


def test_a_committed_symbolic_link_is_named_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    (repo / "prod/y.yaml").symlink_to("x.yaml")
    diff_git(repo, "add", "prod/y.yaml")
    diff_git(repo, "commit", "-qm", "a link")
    assert main(["diff", "--base", "HEAD~1", "--head", "HEAD"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("'prod/y.yaml' at ") and "a symbolic link, committed as the path it names" in err


@pytest.mark.parametrize("command", ["diff", "plan"])
def test_a_path_typed_with_terminal_controls_is_quoted_escaped_in_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    monkeypatch.chdir(repo)
    assert main([command, "--base", "HEAD", "prod/m\x1b[31m\u202e.yaml"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and "prod/m\\u001b[31m\\u202e.yaml" in err
