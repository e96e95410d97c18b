"""argv is diffed as flags, not list positions: what a reviewer needs to see, and no more."""

from __future__ import annotations

import textwrap

from rollout.diff.changes import Op
from rollout.diff.report import render_text
from tests.rollout.diffkit import changeset, file_change, text_lines


def compose(command: str) -> str:
    """A one-service file whose `command` is the given YAML value (list or string)."""
    return textwrap.dedent(
        """\
        services:
          engine:
            image: lmsysorg/sglang:v0.5.16
            command: {command}
        """
    ).format(command=command)


BASE = compose(
    "[sglang, serve, --model-path, /m, --tp-size, '4', --chunked-prefill-size, '4096', --enable-metrics]"
)


def lines(new: str, old: str = BASE) -> list[str]:
    return text_lines(old, new)


def test_a_flag_inserted_in_the_middle_is_one_added_flag_not_a_cascade() -> None:
    new = compose(
        "[sglang, serve, --model-path, /m, --tp-size, '4', --enable-dynamic-batch-tokenizer,"
        " --chunked-prefill-size, '4096', --enable-metrics]"
    )
    assert lines(new)[1:] == ["  engine: + --enable-dynamic-batch-tokenizer"]
    (change,) = file_change(BASE, new).services[0].changes
    assert (change.op, change.path[-1], change.subject) == (Op.ADDED, 2, "--enable-dynamic-batch-tokenizer")


def test_a_removed_flag_is_named_with_its_value() -> None:
    new = compose("[sglang, serve, --model-path, /m, --tp-size, '4', --enable-metrics]")
    assert lines(new)[1:] == ["  engine: - --chunked-prefill-size 4096"]


def test_a_changed_value_names_the_flag_and_both_values() -> None:
    new = compose(
        "[sglang, serve, --model-path, /m, --tp-size, '4', --chunked-prefill-size, '8192', --enable-metrics]"
    )
    assert lines(new)[1:] == ["  engine: --chunked-prefill-size: 4096 -> 8192"]


def test_a_value_moving_between_flags_is_two_changes_never_none() -> None:
    old = compose("[serve, --max-running-requests, '32', --max-queued-requests, '8']")
    new = compose("[serve, --max-running-requests, '8', --max-queued-requests, '32']")
    assert lines(new, old)[1:] == [
        "  engine: --max-running-requests: 32 -> 8",
        "  engine: --max-queued-requests: 8 -> 32",
    ]


def test_a_value_handed_from_one_flag_to_another_shows_both_flags() -> None:
    old = compose("[serve, --max-prefill-tokens, '32768']")
    new = compose("[serve, --context-length, '32768']")
    assert lines(new, old)[1:] == [
        "  engine: - --max-prefill-tokens 32768",
        "  engine: + --context-length 32768",
    ]


def test_flag_equals_value_is_the_same_flag_and_compose_still_recreates_for_it() -> None:
    old = compose("[sglang, serve, --tp-size=4, --chunked-prefill-size, '4096']")
    new = compose("[sglang, serve, --tp-size, '4', --chunked-prefill-size=4096]")
    (service,) = file_change(old, new).services
    assert [change.op for change in service.changes] == [Op.NOTE]
    assert lines(new, old)[1:] == [
        "  engine: note: Compose recreates the container, although nothing changes at runtime "
        "(argv spelling only)"
    ]


def test_a_string_command_and_its_list_form_are_the_same() -> None:
    old = compose('"sglang serve --model-path /m --tp-size 4"')
    new = compose("[sglang, serve, --model-path, /m, --tp-size, '4']")
    assert file_change(old, new).services == ()
    report = render_text(changeset({"prod/x.yaml": old}, {"prod/x.yaml": new}))
    assert report == (
        "no changes in prod between base (bbbbbbb) and the working tree "
        "(formatting, comments or spelling only in prod/x.yaml)\n"
    )


def test_sglang_aliases_are_one_flag_for_sglang() -> None:
    old = compose('"sglang serve --model-path /m --tp 4"')
    new = compose("[sglang, serve, --model-path, /m, --tp-size, '4']")
    (service,) = file_change(old, new).services
    assert [change.op for change in service.changes] == [Op.NOTE]


def test_vllm_tensor_parallel_size_to_tp_size_is_a_real_change() -> None:
    old = compose('"vllm serve /m --tensor-parallel-size 4"')
    new = compose('"vllm serve /m --tp-size 4"')
    assert lines(new, old)[1:] == [
        "  engine: - --tensor-parallel-size 4",
        "  engine: + --tp-size 4",
    ]


def test_an_unknown_program_gets_no_aliases() -> None:
    old = compose('"serve --tp 4"')
    new = compose('"serve --tp-size 4"')
    assert lines(new, old)[1:] == ["  engine: - --tp 4", "  engine: + --tp-size 4"]


def test_repeated_flags_are_told_apart_by_occurrence() -> None:
    old = compose("[serve, --lora-paths, a, --lora-paths, b, --port, '8000']")
    new = compose("[serve, --lora-paths, a, --lora-paths, c, --port, '8000']")
    assert lines(new, old)[1:] == ["  engine: --lora-paths (#2): b -> c"]
    removed = compose("[serve, --lora-paths, a, --port, '8000']")
    assert lines(removed, old)[1:] == ["  engine: - --lora-paths b"]


def test_positional_arguments_are_reported_as_arguments() -> None:
    old = compose('"vllm serve Qwen/Qwen3-8B --port 8000"')
    new = compose('"vllm serve Qwen/Qwen3-8B --port 8000 extra.json"')
    assert lines(new, old)[1:] == ["  engine: + extra.json"]
    (change,) = file_change(old, new).services[0].changes
    assert change.subject == "argument"


def test_the_program_before_the_first_flag_is_its_own_change() -> None:
    old = compose('"python3 serve.py --port 8000"')
    new = compose('"sglang serve --port 8000"')
    assert lines(new, old)[1:] == ["  engine: program: python3 serve.py -> sglang serve"]


def test_a_flag_that_only_moved_says_so_with_its_positions() -> None:
    old = compose("[serve, --a, '1', --b, '2', --c, '3']")
    new = compose("[serve, --b, '2', --c, '3', --a, '1']")
    assert lines(new, old)[1:] == ["  engine: --a 1: moved (argument 1 -> 3)"]


def test_a_reversed_argv_names_the_true_old_and_new_positions() -> None:
    old = compose("[serve, --a, '1', --b, '2', --c, '3']")
    new = compose("[serve, --c, '3', --b, '2', --a, '1']")
    assert lines(new, old)[1:] == [
        "  engine: --c 3: moved (argument 3 -> 1)",
        "  engine: --a 1: moved (argument 1 -> 3)",
    ]


def test_entrypoint_changes_are_prefixed() -> None:
    old = "services:\n  job:\n    image: x\n    entrypoint: [/bin/sh, -c]\n"
    new = "services:\n  job:\n    image: x\n    entrypoint: [/bin/bash, -c]\n"
    assert lines(new, old)[1:] == ["  job: entrypoint program: /bin/sh -> /bin/bash"]


def test_a_command_added_to_a_service_lists_its_tokens() -> None:
    old = "services:\n  job:\n    image: x\n"
    new = "services:\n  job:\n    image: x\n    command: [run, --fast]\n"
    assert lines(new, old)[1:] == ["  job: + command: run --fast"]


def test_an_unsplittable_string_command_is_one_error_line() -> None:
    change = file_change(compose('"serve --port 8000"'), compose('"serve --name \'oops"'))
    assert change.error is not None
    assert change.error == (
        "prod/x.yaml:4:14: engine command invalid command line string: an open quote or a trailing "
        "backslash (compose refuses it) (in the head, the working tree)"
    )
