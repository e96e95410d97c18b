"""The dummy environment, variable names and nesting read exactly as the pinned Compose
binary reads them: each case is run through the binary and through the tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tierops import interp
from tierops.composebin import ComposeBinary, ConfigResult, find_compose, run_config
from validators.cli import main as validators_main
from validators.compose import main as compose_main
from validators.interpolation import RULE_SYNTAX, TEXT_LIMIT, load_dummy_env, scan_file


@pytest.fixture(scope="module")
def pinned() -> ComposeBinary:
    return find_compose(use_path=False)


def _compose_file(tmp_path: Path, value: str) -> Path:
    path = tmp_path / "edge.yaml"
    path.write_text(
        f"services:\n  s:\n    image: busybox\n    environment:\n      X: {json.dumps(value)}\n",
        encoding="utf-8",
    )
    return path


def _unset(result: ConfigResult) -> set[str]:
    """The variables compose warned are unset."""
    names: set[str] = set()
    for warning in result.warnings():
        if warning.startswith('The "') and '" variable is not set' in warning:
            names.add(warning[len('The "') : warning.index('" variable is not set')])
    return names


def _rendered(result: ConfigResult) -> str:
    value = json.loads(result.stdout)["services"]["s"]["environment"]["X"]
    assert isinstance(value, str)
    return value.replace("$$", "$")  # compose prints a literal `$` escaped


@pytest.mark.parametrize(
    "separator",
    ["\n", "\r\n", "\r", "\x85", "\u2028", "\u2029", "\v", "\f", "\x1c", "\x1e"],
    ids=repr,
)
def test_the_dummy_env_is_split_into_lines_as_compose_splits_it(
    tmp_path: Path, pinned: ComposeBinary, separator: str
) -> None:
    env_file = tmp_path / "test.env"
    env_file.write_bytes(f"A=dummy-a{separator}B=dummy-b\n".encode())
    result = run_config(pinned, _compose_file(tmp_path, "${A}|${B}"), env_file=env_file)
    assert result.ok, result.stderr
    compose_sets_b = "B" not in _unset(result)
    assert ("B" in load_dummy_env(env_file, "test.env").names()) == compose_sets_b
    assert compose_sets_b == (separator in ("\n", "\r\n"))


@pytest.mark.parametrize("blank", [" ", "\t", "\v", "\f", "\xa0", "\x85", "\u3000", "\x1c", "\x1f"], ids=repr)
def test_a_line_is_a_comment_exactly_when_compose_reads_it_as_one(
    tmp_path: Path, pinned: ComposeBinary, blank: str
) -> None:
    """Python's blanks include \\x1c-\\x1f, Go's do not: a line they start is no comment to
    Compose, and must be no comment here, or its value reaches Compose unchecked (and
    Compose's refusal prints it)."""
    env_file = tmp_path / "test.env"
    secret = "hf_" + "AbCdEf0123" * 4  # built here: a literal of that shape is what the repository refuses
    env_file.write_bytes(f"A=dummy-a\n{blank}# HF_TOKEN={secret}\n".encode())
    result = run_config(pinned, _compose_file(tmp_path, "${A}"), env_file=env_file)
    dummy = load_dummy_env(env_file, "test.env")
    assert (not dummy.problems) == result.ok, result.stderr
    assert all(secret not in str(problem) for problem in dummy.problems)


def test_a_leading_byte_order_mark_is_skipped_as_compose_skips_it(
    tmp_path: Path, pinned: ComposeBinary
) -> None:
    env_file = tmp_path / "test.env"
    env_file.write_bytes(b"\xef\xbb\xbfA=dummy-a\n")
    result = run_config(pinned, _compose_file(tmp_path, "${A}|"), env_file=env_file)
    assert result.ok and _unset(result) == set()
    dummy = load_dummy_env(env_file, "test.env")
    assert dummy.names() == {"A"}
    assert dummy.problems == ()


def test_a_byte_order_mark_inside_the_file_is_named_where_compose_refuses_it(
    tmp_path: Path, pinned: ComposeBinary
) -> None:
    env_file = tmp_path / "test.env"
    env_file.write_bytes(b"A=dummy-a\n\xef\xbb\xbfB=dummy-b\n")
    result = run_config(pinned, _compose_file(tmp_path, "${A}|${B}"), env_file=env_file)
    assert not result.ok
    (problem,) = load_dummy_env(env_file, "test.env").problems
    assert (problem.line, problem.rule) == (2, RULE_SYNTAX)
    assert "byte-order mark" in problem.message


@pytest.mark.parametrize(
    "value",
    [
        "${\u017f}|",  # the long s: Go's case folding makes it a name character
        "$A\u212a|",  # the Kelvin sign, likewise
        "${B\u212aC:-x}|",
        "${\u0130}|",  # the dotted capital I: Python's IGNORECASE would take it, Compose does not
        "${A\u0131}|",
        "$A\u00e9|",  # a name ends at the e-acute
        "${A:-{x}",  # a bare `{` opens a level too, here never closed
        "${A:-x{}",
        "${A:-x{y}z}",  # ...and here closed before the reference's own `}`
        "${A:-a{b{c}d}e}f}",
        "${A:+{}x}",  # the character after a `{` is skipped, a `}` too
        "${A:-{}${B:-{}}}x}",
        "${A:-{{}}x}",
        "${A:+{}x}y}{",
        "${A:-$${x}",  # an escaped `$${` opens one as well
        "${A:-$${x}}}",
        "${A:-${B}",  # unclosed
        "${A:-$${x}y}z",  # counted from `${`, the `$${` opens one more level...
        "x${A:-$${B}}}",
        "${A:-${B:-$${c}}}d}",
        "${A:-$${x}\ny}",  # ...and a reference never ends past its line's last `}`
        "${A:-a\nb}",
        "${A\n}",
    ],
    ids=repr,
)
def test_names_and_braces_read_as_compose_reads_them(
    tmp_path: Path, pinned: ComposeBinary, value: str
) -> None:
    path = _compose_file(tmp_path, value)
    scan = scan_file(path, "edge.yaml")
    env_file = tmp_path / "test.env"
    for env in ({"A": "dummy-a"}, {}):
        env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()), encoding="utf-8")
        result = run_config(pinned, path, env_file=env_file)
        assert (scan.problems == ()) == result.ok, result.stderr
        if result.ok:
            assert {ref.name for ref in scan.references if ref.required} - set(env) == _unset(result)
            assert interp.interpolate(value, env) == _rendered(result)


def test_nesting_hundreds_deep_is_read_and_rendered_like_compose(
    tmp_path: Path, pinned: ComposeBinary
) -> None:
    depth = interp.MAX_NESTING  # three times what used to end the validators with a RecursionError
    value = "${A:-" * depth + "x$$y" + "}" * depth
    path = _compose_file(tmp_path, value)
    env_file = tmp_path / "test.env"
    env_file.write_text("", encoding="utf-8")
    result = run_config(pinned, path, env_file=env_file)
    assert result.ok, result.stderr
    assert _rendered(result) == interp.interpolate(value, {}) == "x$y"
    scan = scan_file(path, "edge.yaml")
    assert scan.problems == ()
    assert [ref.depth for ref in scan.references] == list(range(depth))
    assert interp.normalize(value) == value
    masked = interp.mask(value)
    assert masked.refs == (value,)
    assert validators_main(["--rule", "yaml", str(path)]) != 3  # findings, never an internal error


def test_nesting_past_the_budget_is_one_finding_and_never_handed_to_compose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Compose takes minutes on a value nested a few thousand deep, and each level's text
    kept whole grew with the square of the depth (gigabytes for a 2 MB file)."""
    depth = 50 * interp.MAX_NESTING
    path = _compose_file(tmp_path, "${A:-" * depth + "x" + "}" * depth)
    scan = scan_file(path, "edge.yaml")
    assert [problem.message for problem in scan.problems if interp.TOO_DEEP in problem.message]
    assert max(len(ref.text) for ref in scan.references) <= TEXT_LIMIT
    with pytest.raises(interp.TemplateError, match="nested more than"):
        interp.normalize("${A:-" * depth + "x" + "}" * depth)
    env_file = tmp_path / "test.env"
    env_file.write_text("A=dummy-a\n", encoding="utf-8")
    code = compose_main(
        ["--compose", "pinned", "--env-file", str(env_file), "--rendered-dir", str(tmp_path / "r"), str(path)]
    )
    out = capsys.readouterr().out
    assert code == 1 and "0 of 1 file(s) rendered; 1 problem(s)" in out
    assert all(len(line) < 1000 for line in out.splitlines())


def test_a_key_s_anchor_repeated_as_a_value_is_interpolated_there_as_compose_does(
    tmp_path: Path, pinned: ComposeBinary
) -> None:
    """Compose never interpolates a key, but does the value an alias repeats it as; a
    value's own anchor and its alias are one reference, at the anchor."""
    path = tmp_path / "edge.yaml"
    path.write_text(
        "services:\n  s:\n    image: busybox\n    environment:\n"
        '      ? &k "${FROM_KEY}"\n      : v\n      OTHER: *k\n      A: &v "${FROM_VALUE}"\n      B: *v\n',
        encoding="utf-8",
    )
    env_file = tmp_path / "test.env"
    env_file.write_text("", encoding="utf-8")
    result = run_config(pinned, path, env_file=env_file)
    assert result.ok and _unset(result) == {"FROM_KEY", "FROM_VALUE"}
    scan = scan_file(path, "edge.yaml")
    assert [(ref.name, ref.line) for ref in scan.references] == [("FROM_KEY", 7), ("FROM_VALUE", 8)]


@pytest.mark.parametrize(
    "main_file",
    [
        "include: [inc.yaml]\nservices:\n  a:\n    image: busybox\n",
        "services:\n  a:\n    extends: {file: inc.yaml, service: b}\n",
    ],
    ids=["include", "extends"],
)
def test_a_variable_compose_reads_from_an_included_file_needs_its_dummy_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], main_file: str
) -> None:
    """This check reads the file it is given; Compose also reads what it includes or
    extends, and says which variable it found unset there: that is dummy-missing too."""
    (tmp_path / "inc.yaml").write_text("services:\n  b:\n    image: busybox:${INC_ONLY}\n", encoding="utf-8")
    path = tmp_path / "main.yaml"
    path.write_text(main_file, encoding="utf-8")
    env_file = tmp_path / "test.env"
    env_file.write_text("OTHER=dummy-other\n", encoding="utf-8")
    argv = [
        "--compose",
        "pinned",
        "--env-file",
        str(env_file),
        "--rendered-dir",
        str(tmp_path / "r"),
        str(path),
    ]
    assert compose_main(argv) == 1
    assert "Compose found INC_ONLY unset in a file this one includes or extends" in capsys.readouterr().out
    env_file.write_text("INC_ONLY=dummy-inc\n", encoding="utf-8")
    assert compose_main(argv) == 0
