"""engine-flags beyond the mutation suite: patch declarations, warnings, value counts."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tests.validators.conftest import BASE, LONG, line_of, prod_text, run_cli
from validators.context import Context, EngineBuild, load_context
from validators.findings import Level
from validators.loader import Document, parse
from validators.model import build
from validators.rules import engine_flags


def sglang_build(ctx: Context) -> EngineBuild:
    return next(build for build in ctx.builds if build.contract.engine == "sglang")


def findings(text: str, name: str = BASE, **context: Any) -> list[tuple[int, str, str]]:
    ctx = load_context()
    if context:
        old = sglang_build(ctx)
        new = dataclasses.replace(old, contract=dataclasses.replace(old.contract, **context))
        ctx = dataclasses.replace(ctx, builds=tuple(new if b is old else b for b in ctx.builds))
    doc = parse(text.encode(), name)
    assert isinstance(doc, Document)
    return [(f.line, f.level.value, f.message) for f in engine_flags.check(build(doc), ctx)]


def test_a_patch_flag_is_an_error_once_its_declaration_is_gone() -> None:
    text = prod_text(BASE)
    assert findings(text) == []
    found = findings(text, patch_flags={})
    assert [(line, level) for line, level, _ in found] == [
        (line_of(text, "      - --prefill-decode-interval", 1), "error"),
        (line_of(text, "      - --prefill-decode-interval", 2), "error"),
    ]
    assert "not a declared patch flag" in found[0][2]


def test_skip_tokenizer_init_with_the_dynamic_batch_tokenizer_is_a_warning(write_prod: Any) -> None:
    text = prod_text(LONG).replace(
        "      - --enable-dynamic-batch-tokenizer\n",
        "      - --skip-tokenizer-init\n      - --enable-dynamic-batch-tokenizer\n",
        1,
    )
    found = findings(text, LONG)
    assert found == [
        (
            line_of(text, "      - --skip-tokenizer-init", 1),
            "warning",
            "model-sg-glm53-w4afp8-tp4-r1 sets --enable-dynamic-batch-tokenizer and --skip-tokenizer-init: "
            "--skip-tokenizer-init silently turns the dynamic batch tokenizer off; the engine starts without it",
        )
    ]
    path: Path = write_prod(LONG, text)
    assert run_cli("--rule", "engine-flags", path).code == 0
    assert run_cli("--rule", "engine-flags", "--strict", path).code == 1


def test_values_written_with_equals_are_checked_too() -> None:
    text = prod_text(BASE).replace('      - --tp-size\n      - "4"\n', "      - --tp-size=four\n", 1)
    assert [message for _line, _level, message in findings(text)] == [
        "model-sg-glm53-w4afp8-tp4-r1 flag --tp-size value 'four' is not an integer"
    ]


def test_a_flag_missing_its_value_and_a_store_true_with_equals() -> None:
    text = prod_text(BASE).replace(
        '      - --watchdog-timeout\n      - "1800"\n', "      - --watchdog-timeout\n", 1
    )
    text = text.replace("      - --enable-metrics\n", "      - --enable-metrics=yes\n", 1)
    messages = [message for _line, _level, message in findings(text)]
    assert messages == [
        "model-sg-glm53-w4afp8-tp4-r1 flag --watchdog-timeout needs a value",
        "model-sg-glm53-w4afp8-tp4-r1 flag --enable-metrics is a switch (store_true) and takes no value, got 'yes'",
    ]


def test_human_readable_ints_and_nargs_plus_are_understood() -> None:
    text = prod_text(BASE).replace(
        '      - --max-prefill-tokens\n      - "32768"\n', "      - --max-prefill-tokens\n      - 32Ki\n", 1
    )
    text = text.replace(
        "      - --enable-cache-report\n",
        "      - --enable-cache-report\n      - --cuda-graph-bs-decode\n      - '1'\n      - '2'\n",
        1,
    )
    assert findings(text) == []


def test_only_engines_are_checked() -> None:
    doc = parse(
        b"services:\n  tool:\n    image: x@sha256:" + b"a" * 64 + b"\n    command: [--nonsense, yes]\n",
        "x.yaml",
    )
    assert isinstance(doc, Document)
    assert list(engine_flags.check(build(doc), load_context())) == []
    assert Level.ERROR.value == "error"


def test_an_argparse_abbreviation_is_a_warning_and_an_ambiguous_one_an_error() -> None:
    text = prod_text(BASE).replace("      - --max-queued-requests\n", "      - --max-queued\n", 1)
    text = text.replace(
        "      - --enable-cache-report\n", "      - --enable-cache-report\n      - --enable-d\n", 1
    )
    found = findings(text)
    assert found[0] == (
        line_of(text, "      - --max-queued\n"),
        "warning",
        "model-sg-glm53-w4afp8-tp4-r1 flag --max-queued works only as an argparse abbreviation of --max-queued-requests; write --max-queued-requests",
    )
    assert found[1][:2] == (line_of(text, "      - --enable-d\n"), "error")
    assert "is an ambiguous abbreviation" in found[1][2]
    assert len(found) == 2


SNIPPET = """\
services:
  engine:
    image: {image}
    command: [sglang, serve, --model-path, /models/m, {flag}, "4096"]
""".replace("{image}", sglang_build(load_context()).contract.images[0])


def test_past_a_hundred_unknown_flags_in_one_engine_no_near_miss_is_searched() -> None:
    unknown = ", ".join(f"--no-such-flag-{index}" for index in range(engine_flags.SUGGESTED))
    text = SNIPPET.replace("{flag}", f"--chunked-prefil-size, '1', {unknown}, --chunked-prefil-size")
    found = [message for _, _, message in findings(text, "fixture.yaml") if "chunked-prefil-size" in message]
    # The first typo is the first unknown flag: it gets its hint; the same typo after a
    # hundred other unknown flags does not.
    assert [message.endswith("; did you mean --chunked-prefill-size?") for message in found] == [True, False]


def test_an_engine_on_an_image_without_a_manifest_is_named_once_never_judged_by_another_build() -> None:
    other = "docker.io/lmsysorg/sglang@sha256:" + "a" * 64
    text = SNIPPET.replace(sglang_build(load_context()).contract.images[0], other).replace(
        "{flag}", "--a-flag-of-a-newer-build"
    )
    text += "  twin:\n    image: " + other + "\n    command: [sglang, serve, --another-new-flag]\n"
    text += (
        "  vllm:\n    image: docker.io/vllm/vllm-openai@sha256:"
        + "b" * 64
        + "\n    command: [--tensor-parallel-size, '8']\n"
    )
    found = findings(text, "fixture.yaml")
    assert [(line, level) for line, level, _ in found] == [(3, "warning"), (9, "warning")]
    assert found[0][2].startswith(
        "flags of engine, twin not checked: no flag manifest for the sglang build of "
    )
    assert found[1][2].startswith("flags of vllm not checked: no flag manifest for the vllm build of ")


def test_a_near_miss_of_a_known_flag_says_which_flag_it_meant() -> None:
    found = findings(SNIPPET.replace("{flag}", "--chunked-prefil-size"), "fixture.yaml")
    assert [(line, level) for line, level, _ in found] == [(4, "error")]
    assert found[0][2].endswith("; did you mean --chunked-prefill-size?")
    # A word nothing resembles gets no guess.
    (far,) = findings(SNIPPET.replace("{flag}", "--zzzz-qqqq"), "fixture.yaml")
    assert "did you mean" not in far[2]
