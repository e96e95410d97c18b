"""The flag manifest: the extractor on a small wheel built here, and the committed 0.5.16 manifest."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.validators.conftest import BASE, ROOT, line_of, prod_text, replace_nth
from tools.flag_manifest.cli import main as manifest_main
from tools.flag_manifest.crosscheck import Difference, compare, runtime_parser
from tools.flag_manifest.extract import extract as extract_wheel
from validators.context import Context, load_context
from validators.loader import Document, parse
from validators.manifest import Manifest, load_manifest
from validators.manifest import _spec as spec_of
from validators.model import build
from validators.rules import engine_flags

COMMITTED = ROOT / "validators" / "manifest" / "sglang-0.5.16.json"

SERVER_ARGS = """
from __future__ import annotations

import argparse
import dataclasses
from typing import List, Literal, Optional

from sglang.srt.arg_groups.arg_utils import A, Arg, add_cli_args_from_dataclass
from sglang.srt.arg_groups.argparse_actions import DeprecatedStoreTrueAction
from sglang.srt.arg_groups.fields.cache import CacheFields
from sglang.srt.parsers import Registry

POLICIES = ["write_back", "write_through"]


def human_readable_int(value):
    return int(value)


@dataclasses.dataclass
class ServerArgs(CacheFields):
    model_path: A[str, Arg(help="Weights.", aliases=["--model"])]
    tp_size: A[int, Arg(help="TP.", aliases=["--tensor-parallel-size"])] = 1
    enable_metrics: A[bool, "Metrics."] = False
    timeout: A[Optional[float], "Seconds."] = 0.002
    max_prefill_tokens: A[int, Arg(help="Tokens.", type_parser=human_readable_int)] = 16384
    mode: A[Literal["fast", "slow"], "Mode."] = "fast"
    sizes: A[Optional[List[int]], "Sizes."] = None
    hidden: A[int, Arg(help="Internal.", no_cli=True)] = 0
    untyped_extra: int = 3
    parser_name: Optional[str] = None

    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        choices = list(Registry.DETECTORS.keys())
        parser.add_argument("--parser-name", type=str, choices=["auto"] + choices, default=ServerArgs.parser_name)
        parser.add_argument("--old-metrics", action=DeprecatedStoreTrueAction, new_flag="--enable-metrics")
"""

CACHE_FIELDS = """
import dataclasses

from sglang.srt.arg_groups.arg_utils import A, Arg


@dataclasses.dataclass
class CacheFields:
    write_policy: A[str, Arg(help="Policy.", choices=POLICIES_HERE)] = "write_through"


POLICIES_HERE = ["write_back", "write_through", "write_through_selective"]
"""

ACTIONS = """
import argparse


class DeprecatedStoreTrueAction(argparse.Action):
    def __init__(self, option_strings, dest, new_flag=None, nargs=0, const=True, default=False, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, const=const, default=default, **kwargs)
"""

PARSERS = """
class Registry:
    DETECTORS = {"glm45": object, "qwen3": object}
"""


def build_wheel(folder: Path, files: dict[str, str], name: str = "sglang-9.9.9-py3-none-any.whl") -> Path:
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, textwrap.dedent(text))
    return path


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    return build_wheel(
        tmp_path,
        {
            "sglang/srt/server_args.py": SERVER_ARGS,
            "sglang/srt/arg_groups/fields/cache.py": CACHE_FIELDS,
            "sglang/srt/arg_groups/argparse_actions.py": ACTIONS,
            "sglang/srt/parsers.py": PARSERS,
            "sglang-9.9.9.dist-info/METADATA": "Name: sglang\nVersion: 9.9.9\n",
        },
    )


def extract(wheel: Path, out: Path) -> tuple[int, dict[str, Any]]:
    code = manifest_main(["extract", str(wheel), "-o", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}


def test_extractor_reads_fields_bases_and_add_argument_calls_statically(wheel: Path, tmp_path: Path) -> None:
    code, manifest = extract(wheel, tmp_path / "m.json")
    assert code == 0
    flags = {entry["flag"]: entry for entry in manifest["flags"]}
    assert list(flags) == sorted(flags)
    assert set(flags) == {
        "--enable-metrics",
        "--max-prefill-tokens",
        "--mode",
        "--model-path",
        "--old-metrics",
        "--parser-name",
        "--sizes",
        "--timeout",
        "--tp-size",
        "--write-policy",
    }
    assert flags["--tp-size"] == {
        "flag": "--tp-size",
        "aliases": ["--tensor-parallel-size"],
        "dest": "tp_size",
        "action": "store",
        "nargs": None,
        "takes_value": True,
        "type": "int",
        "choices": None,
        "choices_expr": None,
        "choices_conditional": None,
        "default": 1,
        "deprecated": None,
    }
    assert (flags["--enable-metrics"]["action"], flags["--enable-metrics"]["takes_value"]) == (
        "store_true",
        False,
    )
    assert (flags["--timeout"]["type"], flags["--timeout"]["default"]) == ("float", 0.002)
    assert flags["--max-prefill-tokens"]["type"] == "human_readable_int"
    assert flags["--mode"]["choices"] == ["fast", "slow"]
    assert (flags["--sizes"]["nargs"], flags["--sizes"]["type"]) == ("+", "int")
    # A base-class field in arg_groups/fields/, with its choices from that module.
    assert flags["--write-policy"]["choices"] == ["write_back", "write_through", "write_through_selective"]
    # Choices computed into a local from an imported class attribute.
    assert flags["--parser-name"]["choices"] == ["auto", "glm45", "qwen3"]
    old = flags["--old-metrics"]
    assert (old["takes_value"], old["deprecated"], old["nargs"]) == (False, "--enable-metrics", 0)
    assert flags["--model-path"]["aliases"] == ["--model"]


def test_manifest_records_the_wheel_and_is_byte_stable(wheel: Path, tmp_path: Path) -> None:
    _code, manifest = extract(wheel, tmp_path / "a.json")
    extract(wheel, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert manifest["source"] == {
        "package": "sglang",
        "version": "9.9.9",
        "wheel": wheel.name,
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "files": ["sglang/srt/server_args.py", "sglang/srt/arg_groups/fields/cache.py"],
        "resolved_from": ["sglang/srt/arg_groups/argparse_actions.py", "sglang/srt/parsers.py"],
    }
    assert manifest["flag_count"] == 10


def test_extractor_never_imports_sglang(wheel: Path, tmp_path: Path) -> None:
    extract(wheel, tmp_path / "m.json")
    assert not any(name == "sglang" or name.startswith("sglang.") for name in sys.modules)


def test_check_mode_reports_a_stale_manifest(
    wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    extract(wheel, out)
    assert manifest_main(["extract", str(wheel), "-o", str(out), "--check"]) == 0
    out.write_text("{}\n", encoding="utf-8")
    assert manifest_main(["extract", str(wheel), "-o", str(out), "--check"]) == 1
    assert "differs from what" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("sglang-1.0-py3-none-any.whl", b"not a zip", "not a zip archive"),
        ("notes.txt", b"", "not a wheel file name"),
    ],
)
def test_a_bad_wheel_is_one_line_and_exit_2(
    name: str, content: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert manifest_main(["extract", str(path), "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "m.json").exists()


def test_a_wheel_without_server_args_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = build_wheel(tmp_path, {"sglang/__init__.py": ""})
    assert manifest_main(["extract", str(path), "-o", str(tmp_path / "m.json")]) == 2
    assert "server_args.py not found" in capsys.readouterr().err


def test_committed_manifest_is_sglang_0_5_16_with_the_facts_spec_lists() -> None:
    raw = json.loads(COMMITTED.read_text(encoding="utf-8"))
    defaults = {entry["flag"]: entry["default"] for entry in raw["flags"]}
    assert defaults["--dynamic-batch-tokenizer-batch-size"] == 32
    assert defaults["--dynamic-batch-tokenizer-batch-timeout"] == 0.002
    assert raw["source"]["package"] == "sglang"
    assert raw["source"]["version"] == "0.5.16"
    assert len(raw["source"]["sha256"]) == 64
    assert raw["flag_count"] == len(raw["flags"]) == 460
    manifest = load_manifest(COMMITTED)
    spec = manifest.lookup
    assert spec("--tensor-parallel-size") is spec("--tp-size")
    assert spec("--prefill-decode-interval") is None  # a patch flag, declared in engine-build.yaml
    dyntok = spec("--enable-dynamic-batch-tokenizer")
    assert dyntok is not None and (dyntok.action, dyntok.takes_value) == ("store_true", False)
    size = spec("--dynamic-batch-tokenizer-batch-size")
    timeout = spec("--dynamic-batch-tokenizer-batch-timeout")
    assert size is not None and size.type == "int"
    assert timeout is not None and timeout.type == "float"
    policy = spec("--hicache-write-policy")
    assert policy is not None and policy.choices == ("write_back", "write_through", "write_through_selective")
    for flag in (
        "--ep-size",
        "--enable-hierarchical-cache",
        "--hicache-io-backend",
        "--hicache-mem-layout",
        "--chunked-prefill-size",
        "--max-prefill-tokens",
        "--max-running-requests",
        "--max-queued-requests",
        "--enable-metrics",
        "--enable-tokenizer-batch-encode",
        "--skip-tokenizer-init",
    ):
        assert spec(flag) is not None, flag
    parser = spec("--reasoning-parser")
    assert parser is not None and parser.choices is not None and "glm45" in parser.choices


# -- the committed miniature wheel (tests/tools/fixtures/manifest/wheel) -------------

FIXTURE_TREE = Path(__file__).resolve().parent / "fixtures" / "manifest" / "wheel"


@pytest.fixture(scope="module")
def mini_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The miniature wheel, zipped the way pip downloads one."""
    path = tmp_path_factory.mktemp("wheel") / "sglang-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for source in sorted(FIXTURE_TREE.rglob("*.py")):
            archive.write(source, source.relative_to(FIXTURE_TREE).as_posix())
    return path


@pytest.fixture(scope="module")
def mini(mini_wheel: Path) -> dict[str, dict[str, Any]]:
    return {entry["flag"]: entry for entry in extract_wheel(mini_wheel)["flags"]}


def test_choices_given_by_a_class_attribute_are_resolved_in_the_class_scope(
    mini: dict[str, dict[str, Any]],
) -> None:
    # choices=Backend.ALL, where ALL = (FULL, BREAKABLE, DISABLED) names the class's own
    # attributes; Arg.choices wins over the Literal (which also lists "legacy").
    entry = mini["--cuda-graph-backend"]
    assert (entry["choices"], entry["choices_expr"]) == (["full", "breakable", "disabled"], None)


def test_choices_given_by_a_comprehension_over_a_literal_list_are_resolved(
    mini: dict[str, dict[str, Any]],
) -> None:
    assert mini["--attention-backend"]["choices"] == ["fa3", "flashinfer"]


def test_choices_given_by_a_comprehension_over_an_enum_are_resolved(mini: dict[str, dict[str, Any]]) -> None:
    assert mini["--kv-canary-real-data"]["choices"] == ["none", "partial", "all"]


def test_choices_given_by_a_module_constant_and_its_later_extensions_are_complete(
    mini: dict[str, dict[str, Any]],
) -> None:
    assert mini["--load-format"]["choices"] == ["auto", "pt", "safetensors"]
    assert mini["--grammar-backend"]["choices"] == ["xgrammar", "outlines", "none"]  # += [...]
    sampling = mini["--sampling-backend"]
    # `.add("ascend")` unconditionally, `.add("token_oracle")` under an `if`: both are
    # choices, and the conditional one says under which condition.
    assert sampling["choices"] == ["flashinfer", "pytorch", "ascend", "token_oracle"]
    assert sampling["choices_conditional"] == {"token_oracle": "envs.SGLANG_ENABLE_TOKEN_ORACLE.get()"}
    assert mini["--load-format"]["choices_conditional"] is None


def test_choices_no_static_reading_can_know_are_marked_unknown_not_any_value(
    mini: dict[str, dict[str, Any]],
) -> None:
    device = mini["--device"]
    assert (device["choices"], device["choices_expr"]) == (None, "detected_devices()")
    spec = load_manifest_from(mini_entries=[device]).lookup("--device")
    assert spec is not None and spec.choices is None and spec.choices_expr == "detected_devices()"


def test_nargs_is_read_from_field_metadata(mini: dict[str, dict[str, Any]]) -> None:
    arity = {flag: (mini[flag]["nargs"], mini[flag]["type"]) for flag in mini}
    assert arity["--lora-paths"] == ("*", "str")  # custom action: nargs from action_kwargs
    assert arity["--cuda-graph-bs"] == ("*", "int")  # List with Arg(nargs="*")
    assert arity["--bucket-latency"] == ("+", "float")  # List without: "+"
    assert arity["--model-checksum"] == ("?", "str")  # scalar with Arg(nargs="?")
    assert arity["--tp-size"] == (None, "int")


def test_literal_none_choices_are_typed_str_as_arg_utils_infers(mini: dict[str, dict[str, Any]]) -> None:
    entry = mini["--elastic-ep-backend"]
    assert (entry["type"], entry["choices"]) == ("str", ["none", "mooncake", "nixl"])


def test_the_mini_wheel_has_exactly_its_flags(mini: dict[str, dict[str, Any]]) -> None:
    assert sorted(mini) == [
        "--attention-backend",
        "--bucket-latency",
        "--cuda-graph-backend",
        "--cuda-graph-bs",
        "--device",
        "--elastic-ep-backend",
        "--enable-metrics",
        "--grammar-backend",
        "--hicache-write-policy",
        "--kv-canary-real-data",
        "--load-format",
        "--lora-paths",
        "--model-checksum",
        "--model-path",
        "--old-metrics",
        "--reasoning-parser",
        "--sampling-backend",
        "--tp-size",
    ]


# -- the second extraction path: the wheel's own argparse parser -------------------------


@pytest.fixture(scope="module")
def mini_probe(mini_wheel: Path) -> dict[str, Any]:
    # The one subprocess of this entry point: probe.py in a clean interpreter, with the
    # fixture's `import torch` stubbed.
    return runtime_parser(mini_wheel, {"SGLANG_ENABLE_TOKEN_ORACLE": "1"})


def test_the_probe_builds_the_real_parser_with_heavy_imports_stubbed(mini_probe: dict[str, Any]) -> None:
    assert "torch" in mini_probe["stubbed"]
    assert mini_probe["failed"] == {}
    by_flag = {action["option_strings"][0]: action for action in mini_probe["actions"]}
    assert by_flag["--lora-paths"]["nargs"] == "*"
    assert sorted(by_flag["--sampling-backend"]["choices"]) == [
        "ascend",
        "flashinfer",
        "pytorch",
        "token_oracle",
    ]


def test_crosscheck_agrees_with_the_static_manifest_except_where_it_says_unknown(
    mini_wheel: Path, mini_probe: dict[str, Any]
) -> None:
    report = compare(extract_wheel(mini_wheel), mini_probe)
    assert report.compared == 18
    # The one flag the static reading cannot resolve is named, with what the parser says.
    assert report.differences == [
        Difference("--device", "choices", "unknown (detected_devices())", "[cuda, cpu]")
    ]


def test_crosscheck_accepts_a_conditional_choice_missing_without_its_condition(
    mini_wheel: Path, mini_probe: dict[str, Any]
) -> None:
    without = json.loads(json.dumps(mini_probe))
    for action in without["actions"]:
        if action["option_strings"] == ["--sampling-backend"]:
            action["choices"].remove("token_oracle")
    assert [d.flag for d in compare(extract_wheel(mini_wheel), without).differences] == ["--device"]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ("--lora-paths", "nargs", None, "takes_value", True),
            Difference("--lora-paths", "nargs", "nargs '*'", "one value"),
        ),
        (("--tp-size", "type", "float", None, None), Difference("--tp-size", "type", "int", "float")),
        (
            ("--load-format", "choices", ["auto", "pt"], None, None),
            Difference("--load-format", "choices", "[auto, pt, safetensors]", "[auto, pt]"),
        ),
        (
            ("--model-path", "option_strings", ["--model-path"], None, None),
            Difference("--model-path", "spellings", "['--model', '--model-path']", "['--model-path']"),
        ),
    ],
)
def test_crosscheck_names_each_kind_of_disagreement(
    mini_wheel: Path, mini_probe: dict[str, Any], edit: tuple[Any, ...], expected: Difference
) -> None:
    flag, key, value, other_key, other_value = edit
    probe = json.loads(json.dumps(mini_probe))
    for action in probe["actions"]:
        if action["option_strings"][0] == flag:
            action[key] = value
            if other_key:
                action[other_key] = other_value
    found = [d for d in compare(extract_wheel(mini_wheel), probe).differences if d.flag != "--device"]
    assert found == [expected]


def test_crosscheck_names_a_flag_only_one_side_has(mini_wheel: Path, mini_probe: dict[str, Any]) -> None:
    probe = json.loads(json.dumps(mini_probe))
    probe["actions"] = [a for a in probe["actions"] if a["option_strings"][0] != "--old-metrics"]
    probe["actions"].append({**probe["actions"][0], "option_strings": ["--brand-new"]})
    found = [d for d in compare(extract_wheel(mini_wheel), probe).differences if d.flag != "--device"]
    assert found == [
        Difference("--old-metrics", "exists", "yes", "no"),
        Difference("--brand-new", "exists", "no", "yes"),
    ]


def test_crosscheck_cli_exits_1_on_a_difference_and_prints_it(
    mini_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    assert manifest_main(["extract", str(mini_wheel), "-o", str(out)]) == 0
    capsys.readouterr()
    assert manifest_main(["crosscheck", str(mini_wheel), "--manifest", str(out)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "--device: choices: manifest unknown (detected_devices()), runtime parser [cuda, cpu]"
    assert lines[-1].startswith(f"{out}: 18 flags compared with the runtime parser (")
    assert lines[-1].endswith("third-party modules stubbed): 1 differences")
    assert manifest_main(["crosscheck", str(mini_wheel), "--env", "nonsense"]) == 2


# -- engine-flags reads the new manifest fields -----------------------------------------


def load_manifest_from(mini_entries: list[dict[str, Any]]) -> Manifest:
    flags = {}
    for entry in mini_entries:
        spec = spec_of(entry)
        for spelling in (spec.flag, *spec.aliases):
            flags[spelling] = spec
    return Manifest(Path("x.json"), "sglang", "0.0.1", "0" * 64, flags)


def engine_findings(text: str, ctx: Context | None = None) -> list[tuple[int, str, str]]:
    doc = parse(text.encode(), BASE)
    assert isinstance(doc, Document)
    return [(f.line, f.level.value, f.message) for f in engine_flags.check(build(doc), ctx or load_context())]


def with_spec(flag: str, **changes: Any) -> Context:
    ctx = load_context()
    old = next(build for build in ctx.builds if build.contract.engine == "sglang")
    spec = old.manifest.lookup(flag)
    assert spec is not None
    new = dataclasses.replace(spec, **changes)
    flags = {spelling: (new if found is spec else found) for spelling, found in old.manifest.flags.items()}
    changed = dataclasses.replace(old, manifest=dataclasses.replace(old.manifest, flags=flags))
    return dataclasses.replace(ctx, builds=tuple(changed if b is old else b for b in ctx.builds))


def test_a_value_of_a_flag_with_unknown_choices_is_a_warning_not_accepted_silently() -> None:
    text = prod_text(BASE)
    ctx = with_spec("--kv-cache-dtype", choices=None, choices_expr="detect_kv_dtypes()")
    assert engine_findings(text, ctx) == [
        (
            line_of(text, "      - bfloat16", nth),
            "warning",
            f"model-sg-glm53-w4afp8-tp4-r{nth} flag --kv-cache-dtype value 'bfloat16' cannot be checked: the manifest "
            "could not resolve this flag's choices (detect_kv_dtypes()); check the value against the build, "
            "or teach the extractor",
        )
        for nth in (1, 2)
    ]


def test_a_choice_the_build_accepts_only_under_a_condition_is_a_warning() -> None:
    text, line = replace_nth(
        prod_text(BASE),
        "      - --enable-metrics\n",
        "      - --enable-metrics\n      - --sampling-backend\n      - token_oracle\n",
    )
    assert engine_findings(text) == [
        (
            line + 2,
            "warning",
            "model-sg-glm53-w4afp8-tp4-r1 flag --sampling-backend value 'token_oracle' is a choice only when "
            "envs.SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE.get() holds at startup; otherwise argparse refuses it",
        )
    ]
    assert engine_findings(text.replace("token_oracle", "pytorch")) == []


def test_lora_paths_takes_several_values_as_the_manifest_now_says() -> None:
    text, line = replace_nth(
        prod_text(BASE),
        "      - --enable-metrics\n",
        "      - --enable-metrics\n      - --lora-paths\n      - a=/l/a\n      - b=/l/b\n",
    )
    assert engine_findings(text) == []
    # With the manifest's old reading (one value), the second path was a stray token.
    old = with_spec("--lora-paths", nargs=None)
    assert engine_findings(text, old) == [
        (line + 3, "error", "model-sg-glm53-w4afp8-tp4-r1 argv has 'b=/l/b' where a flag was expected")
    ]


def test_the_committed_manifest_has_the_0_5_16_facts_issue_10_names() -> None:
    spec = load_manifest(COMMITTED).lookup
    sampling = spec("--sampling-backend")
    assert sampling is not None and sampling.choices is not None and "token_oracle" in sampling.choices
    assert sampling.condition("token_oracle") == "envs.SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE.get()"
    lora = spec("--lora-paths")
    assert lora is not None and lora.nargs == "*"
    assert [s.flag for s in set(load_manifest(COMMITTED).flags.values()) if s.choices_expr] == []
