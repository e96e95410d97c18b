"""The vLLM flag manifest: the extractor on a small vLLM wheel built here, and engine-flags
judging a vLLM engine by a fixture build made from that manifest."""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.validators.conftest import ROOT
from tierops.errors import InputError
from tools.flag_manifest.cli import main as manifest_main
from tools.flag_manifest.extract import extract as extract_wheel
from validators.context import Context, load_context
from validators.loader import Document, parse
from validators.manifest import load_manifest
from validators.model import build
from validators.rules import engine_flags

# make_arg_parser as vLLM writes it: a positional, explicit flags, then the frontend
# dataclasses (every field, after _customize_cli_kwargs) and the engine args.
CLI_ARGS = """
import argparse
import json
from dataclasses import field
from typing import Any, Literal

from vllm.config import config
from vllm.engine.arg_utils import AsyncEngineArgs, optional_type
from vllm.utils.argparse_utils import FlexibleArgumentParser


class LoRAParserAction(argparse.Action):
    pass


@config
class BaseFrontendArgs:
    lora_modules: list[str] | None = None
    chat_template_content_format: Literal["auto", "string", "openai"] = "auto"
    enable_auto_tool_choice: bool = False
    tool_call_parser: str | None = None

    @classmethod
    def _customize_cli_kwargs(cls, frontend_kwargs):
        frontend_kwargs["lora_modules"]["type"] = optional_type(str)
        frontend_kwargs["lora_modules"]["action"] = LoRAParserAction
        return frontend_kwargs

    @classmethod
    def add_cli_args(cls, parser):
        from vllm.engine.arg_utils import get_kwargs

        frontend_kwargs = get_kwargs(cls)
        frontend_kwargs = cls._customize_cli_kwargs(frontend_kwargs)
        group = parser.add_argument_group(title=cls.__name__)
        for key, value in frontend_kwargs.items():
            extra_flags = value.pop("flags", [])
            group.add_argument(*extra_flags, f"--{key.replace('_', '-')}", **value)
        return parser


@config
class FrontendArgs(BaseFrontendArgs):
    host: str | None = None
    port: int = 8000
    allowed_origins: list[str] = field(default_factory=lambda: ["*"])
    middleware: list[str] = field(default_factory=lambda: [])

    @classmethod
    def _customize_cli_kwargs(cls, frontend_kwargs):
        frontend_kwargs = super()._customize_cli_kwargs(frontend_kwargs)
        frontend_kwargs["allowed_origins"]["type"] = json.loads
        del frontend_kwargs["allowed_origins"]["nargs"]
        frontend_kwargs["middleware"]["action"] = "append"
        if "nargs" in frontend_kwargs["middleware"]:
            del frontend_kwargs["middleware"]["nargs"]
        return frontend_kwargs


def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?", help="The model.")
    parser.add_argument("--headless", action="store_true", default=False)
    parser.add_argument("--api-server-count", "-asc", type=int, default=None)
    parser = FrontendArgs.add_cli_args(parser)
    parser = AsyncEngineArgs.add_cli_args(parser)
    return parser
"""

ARG_UTILS = """
import argparse
import sys

from vllm.config import CompilationConfig, ModelConfig, ParallelConfig, VllmConfig
from vllm.config.model import TraceModules


def optional_type(return_type):
    return return_type


def get_kwargs(cls):
    return {}


class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        model_kwargs = get_kwargs(ModelConfig)
        group = parser.add_argument_group(title="ModelConfig")
        if not ("serve" in sys.argv[1:] and "--help" in sys.argv[1:]):
            group.add_argument("--model", **model_kwargs["model"])
        group.add_argument("--dtype", **model_kwargs["dtype"])
        group.add_argument("--tokenizer-mode", **model_kwargs["tokenizer_mode"])
        group.add_argument("--hf-token", **model_kwargs["hf_token"])
        group.add_argument("--max-model-len", **model_kwargs["max_model_len"])
        group.add_argument("--served-model-name", **model_kwargs["served_model_name"])
        group.add_argument("--kv-cache-dtype", **model_kwargs["kv_cache_dtype"])
        group.add_argument("--enable-prefix-caching", **{**model_kwargs["enable_prefix_caching"], "default": None})
        group.add_argument("--mystery", **model_kwargs["mystery"])
        group.add_argument("--override-generation-config", **model_kwargs["override_generation_config"])
        group.add_argument("--collect-traces", **model_kwargs["collect_traces"])
        model_kwargs["collect_traces"]["choices"] += [",".join(p) for p in permutations(TraceModules, r=2)]
        group.add_argument("--collect-detailed-traces", **model_kwargs["collect_traces"])
        parallel_kwargs = get_kwargs(ParallelConfig)
        group.add_argument("--tensor-parallel-size", "-tp", **parallel_kwargs["tensor_parallel_size"])
        group.add_argument("--enable-expert-parallel", "-ep", **parallel_kwargs["enable_expert_parallel"])
        backend_kwargs = parallel_kwargs["backend"]
        backend_kwargs["type"] = lambda s: s.lower().replace("-", "_")
        group.add_argument("--backend", **backend_kwargs)
        vllm_kwargs = get_kwargs(VllmConfig)
        group.add_argument("--compilation-config", "-cc", **vllm_kwargs["compilation_config"])
        group.add_argument("--optimization-level", **vllm_kwargs["optimization_level"])
        parser.add_argument("--disable-log-stats", action="store_true")
        parser.add_argument("--gdn-prefill-backend", choices=["flashinfer", "triton"], default=None)
        return parser


class AsyncEngineArgs(EngineArgs):
    @staticmethod
    def add_cli_args(parser, async_args_only=False):
        if not async_args_only:
            parser = EngineArgs.add_cli_args(parser)
        parser.add_argument("--enable-log-requests", action=argparse.BooleanOptionalAction, default=False)
        return parser
"""

CONFIG_INIT = """
from vllm.config.model import ModelConfig
from vllm.config.parallel import ParallelConfig
from vllm.config.utils import config
from vllm.config.vllm import CompilationConfig, VllmConfig
"""

CONFIG_UTILS = """
def config(cls):
    return cls
"""

MODEL = """
from typing import Any, Literal, Optional

import torch
from pydantic import Field

from .utils import config

RunnerType = Literal["generate", "pooling"]
ModelDType = Literal["auto", "half", "bfloat16", RunnerType]
TokenizerMode = Literal["auto", "slow"]
CacheDType = Literal["auto", "fp8"]
TraceModules = Literal["model", "worker"]

if TYPE_CHECKING:
    from transformers import PretrainedConfig
else:
    PretrainedConfig = Any


@config
class ModelConfig:
    model: str = "Qwen/Qwen3-0.6B"
    dtype: ModelDType | torch.dtype = "auto"
    tokenizer_mode: TokenizerMode | str = "auto"
    hf_token: bool | str | None = None
    max_model_len: int = Field(default=None, ge=-1)
    served_model_name: str | list[str] | None = None
    kv_cache_dtype: Optional[CacheDType] = "auto"
    enable_prefix_caching: bool = True
    mystery: NotDefinedAnywhere = None
    override_generation_config: dict[str, Any] = Field(default_factory=dict)
    collect_traces: Optional[list[TraceModules]] = None
    hf_config: PretrainedConfig = None
"""

PARALLEL = """
from typing import Literal

from vllm.config.utils import config

Backend = Literal["auto", "flashinfer_cutlass", "triton"]


@config
class ParallelConfig:
    tensor_parallel_size: int = 1
    enable_expert_parallel: bool = False
    backend: Backend = "auto"
"""

VLLM_CONFIG = """
from enum import IntEnum

from pydantic import Field

from .utils import config


class OptimizationLevel(IntEnum):
    O0 = 0
    O2 = 2


@config
class CompilationConfig:
    mode: int = 0


@config
class VllmConfig:
    compilation_config: CompilationConfig = Field(default_factory=CompilationConfig)
    optimization_level: OptimizationLevel = OptimizationLevel.O2
"""

SOURCES = {
    "vllm/entrypoints/openai/cli_args.py": CLI_ARGS,
    "vllm/engine/arg_utils.py": ARG_UTILS,
    "vllm/config/__init__.py": CONFIG_INIT,
    "vllm/config/utils.py": CONFIG_UTILS,
    "vllm/config/model.py": MODEL,
    "vllm/config/parallel.py": PARALLEL,
    "vllm/config/vllm.py": VLLM_CONFIG,
    "vllm-0.0.1.dist-info/METADATA": "Name: vllm\nVersion: 0.0.1\n",
}


def make_wheel(folder: Path, files: dict[str, str] = SOURCES) -> Path:
    path = folder / "vllm-0.0.1-2-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_wheel(tmp_path_factory.mktemp("vllm-wheel"))


@pytest.fixture(scope="module")
def manifest(wheel: Path) -> dict[str, Any]:
    return extract_wheel(wheel)


@pytest.fixture(scope="module")
def flags(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["flag"]: entry for entry in manifest["flags"]}


def test_every_flag_of_make_arg_parser_and_only_those(flags: dict[str, dict[str, Any]]) -> None:
    assert sorted(flags) == [
        "--allowed-origins",
        "--api-server-count",
        "--backend",
        "--chat-template-content-format",
        "--collect-detailed-traces",
        "--collect-traces",
        "--compilation-config",
        "--disable-log-stats",
        "--dtype",
        "--enable-auto-tool-choice",
        "--enable-expert-parallel",
        "--enable-log-requests",
        "--enable-prefix-caching",
        "--gdn-prefill-backend",
        "--headless",
        "--hf-token",
        "--host",
        "--kv-cache-dtype",
        "--lora-modules",
        "--max-model-len",
        "--middleware",
        "--model",
        "--mystery",
        "--optimization-level",
        "--override-generation-config",
        "--port",
        "--served-model-name",
        "--tensor-parallel-size",
        "--tokenizer-mode",
        "--tool-call-parser",
    ]


def test_the_model_tag_is_the_one_positional(manifest: dict[str, Any]) -> None:
    assert manifest["positionals"] == [{"dest": "model_tag", "nargs": "?"}]


def test_booleans_are_boolean_optional_actions_with_their_no_forms(flags: dict[str, dict[str, Any]]) -> None:
    ep = flags["--enable-expert-parallel"]
    # A short alias gets no --no- form; argparse adds one for each long spelling only.
    assert (ep["action"], ep["aliases"], ep["takes_value"]) == (
        "BooleanOptionalAction",
        ["-ep", "--no-enable-expert-parallel"],
        False,
    )
    assert flags["--enable-prefix-caching"]["default"] is None  # {**kwargs, "default": None}
    assert flags["--enable-log-requests"]["aliases"] == ["--no-enable-log-requests"]
    assert flags["--headless"]["action"] == "store_true"


def test_literals_are_sorted_choices_unless_str_is_allowed_too(flags: dict[str, dict[str, Any]]) -> None:
    # A nested Literal alias is flattened; torch.dtype beside it is not str.
    assert flags["--dtype"]["choices"] == ["auto", "bfloat16", "generate", "half", "pooling"]
    assert (flags["--tokenizer-mode"]["choices"], flags["--tokenizer-mode"]["type"]) == (None, "str")
    # Optional: the type is wrapped and "None" is a choice.
    kv = flags["--kv-cache-dtype"]
    assert (kv["choices"], kv["type"]) == (["auto", "fp8", "None"], "optional_type(str)")
    assert flags["--chat-template-content-format"]["choices"] == ["auto", "openai", "string"]


def test_types_nargs_and_defaults_mirror_compute_kwargs(flags: dict[str, dict[str, Any]]) -> None:
    shape = {flag: (entry["type"], entry["nargs"]) for flag, entry in flags.items()}
    assert shape["--tensor-parallel-size"] == ("int", None)
    assert shape["--hf-token"] == ("str", "?")  # bool | str | None: a bare flag or a value
    assert shape["--max-model-len"] == ("human_readable_int_or_auto", None)
    assert shape["--served-model-name"] == ("optional_type(str)", "+")
    assert shape["--override-generation-config"] == ("parse_type(json.loads)", None)
    assert shape["--compilation-config"] == ("parse_dataclass(CompilationConfig)", None)
    assert shape["--optimization-level"] == ("str", None)  # an IntEnum is not a builtin
    assert flags["--optimization-level"]["default"] == 2
    assert flags["--tensor-parallel-size"]["aliases"] == ["-tp"]
    assert flags["--api-server-count"]["aliases"] == ["-asc"]
    assert flags["--override-generation-config"]["default"] == {}


def test_the_frontend_customisations_apply_base_class_first(flags: dict[str, dict[str, Any]]) -> None:
    origins = flags["--allowed-origins"]
    assert (origins["type"], origins["nargs"], origins["default"]) == ("json.loads", None, ["*"])
    middleware = flags["--middleware"]
    assert (middleware["action"], middleware["nargs"]) == ("append", None)
    lora = flags["--lora-modules"]
    assert (lora["action"], lora["type"], lora["nargs"]) == ("LoRAParserAction", "optional_type(str)", "+")


def test_a_converter_the_source_assigns_is_recorded_as_written(flags: dict[str, dict[str, Any]]) -> None:
    backend = flags["--backend"]
    assert backend["type"] == "lambda s: s.lower().replace('-', '_')"
    assert backend["choices"] == ["auto", "flashinfer_cutlass", "triton"]


def test_what_no_static_reading_resolves_is_unknown_not_guessed(flags: dict[str, dict[str, Any]]) -> None:
    traced = flags["--collect-detailed-traces"]
    assert traced["choices"] is None
    assert traced["choices_expr"] is not None and "permutations" in traced["choices_expr"]
    # Before the `+=`, the same kwargs had their Literal's choices.
    assert flags["--collect-traces"]["choices"] == ["model", "worker", "None"]
    mystery = flags["--mystery"]
    assert (mystery["choices"], mystery["choices_expr"]) == (None, "NotDefinedAnywhere")
    assert mystery["type"] == "unknown: NotDefinedAnywhere"


def test_the_manifest_names_its_wheel_and_files_and_is_byte_stable(wheel: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert manifest_main(["extract", str(wheel), "-o", str(first)]) == 0
    assert manifest_main(["extract", str(wheel), "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    source = json.loads(first.read_text(encoding="utf-8"))["source"]
    assert source["package"] == "vllm" and source["version"] == "0.0.1"
    assert source["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert source["files"] == ["vllm/entrypoints/openai/cli_args.py", "vllm/engine/arg_utils.py"]
    assert "vllm/config/model.py" in source["resolved_from"]
    assert not any(name == "vllm" or name.startswith("vllm.") for name in sys.modules)


def test_a_vllm_wheel_whose_parser_cannot_be_followed_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = make_wheel(tmp_path, {**SOURCES, "vllm/entrypoints/openai/cli_args.py": "x = 1\n"})
    assert manifest_main(["extract", str(broken), "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot follow make_arg_parser" in err
    assert not (tmp_path / "m.json").exists()


# -- engine-flags on a vLLM engine of a fixture build -----------------------------------

IMAGE = "docker.io/vllm/vllm-openai@sha256:" + "a" * 64
OTHER = "docker.io/vllm/vllm-openai@sha256:" + "b" * 64


@pytest.fixture(scope="module")
def ctx(manifest: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Context:
    folder = tmp_path_factory.mktemp("vllm-build")
    path = folder / "vllm-0.0.1.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    contract = folder / "engine-build.yaml"
    contract.write_text(
        f"builds:\n  - name: fixture\n    engine: vllm\n    manifest: {path}\n    images: [{IMAGE}]\n",
        encoding="utf-8",
    )
    return load_context(contracts=[], build=contract)


def judge(ctx: Context, *commands: str, image: str = IMAGE) -> list[tuple[int, str, str]]:
    text = "services:\n" + "".join(
        f"  engine{n}:\n    image: {image}\n    command: {command}\n" for n, command in enumerate(commands)
    )
    doc = parse(text.encode(), "fixture.yaml")
    assert isinstance(doc, Document)
    return [(f.line, f.level.value, f.message) for f in engine_flags.check(build(doc), ctx)]


def test_a_clean_vllm_argv_in_every_spelling_vllm_reads_passes(ctx: Context) -> None:
    assert (
        judge(
            ctx,
            "[org/model, -tp, '8', --enable-expert-parallel, --kv-cache-dtype=fp8, --max-model-len, 200k]",
            "[vllm, serve, --model, /m, --no-enable-prefix-caching, --max_model_len, auto, -O3]",
            "[--compilation-config.mode, '3', --hf-token, --port, '8000', --tool-call-parser, None]",
            "['--override-generation-config', '{\"temperature\": 0.6}', --served-model-name, a, b]",
        )
        == []
    )


def test_a_misspelt_vllm_flag_says_which_flag_it_meant(ctx: Context) -> None:
    found = judge(ctx, "[--model, /m, --enable-prefix-cachng]")
    assert found == [
        (
            4,
            "error",
            "engine0 flag --enable-prefix-cachng does not exist in vllm 0.0.1 (build fixture) and is not a "
            "declared patch flag (validators/contracts/engine-build.yaml); did you mean --enable-prefix-caching?",
        )
    ]


def test_vllm_values_are_checked_by_their_type_and_choices(ctx: Context) -> None:
    found = judge(
        ctx,
        "[-tp, eight, --kv-cache-dtype, fp7, --no-enable-expert-parallel=yes, --max-model-len, lots,"
        " --override-generation-config, '{oops', --backend, FLASHINFER-CUTLASS]",
    )
    assert [message.split(" ", 1)[1] for _line, _level, message in found] == [
        "flag -tp value 'eight' is not an integer",
        "flag --kv-cache-dtype value 'fp7' is not one of: auto, fp8, None",
        "flag --no-enable-expert-parallel is a switch (BooleanOptionalAction) and takes no value, got 'yes'",
        "flag --max-model-len value 'lots' is not an integer or auto (suffixes k, m, g, t and K, M, G, T allowed)",
        "flag --override-generation-config value '{oops' is not JSON",
        "flag --backend value 'FLASHINFER-CUTLASS' is not written as one of: auto, flashinfer_cutlass, triton; "
        "the engine converts it first (lambda s: s.lower().replace('-', '_')), check the converted value",
    ]
    assert [level for _line, level, _message in found] == ["error"] * 5 + ["warning"]


def test_a_key_of_a_flag_that_is_not_json_is_an_error(ctx: Context) -> None:
    (found,) = judge(ctx, "[--port.number, '8000']")
    assert found[1:] == (
        "error",
        "engine0 flag --port.number sets a key of --port, which takes int, not JSON",
    )


def test_a_flag_with_unknown_choices_warns_on_every_use(ctx: Context) -> None:
    (found,) = judge(ctx, "[--collect-detailed-traces, model]")
    assert found[1] == "warning" and "cannot be checked" in found[2]


def test_an_unknown_image_warns_once_naming_every_engine_on_it(ctx: Context) -> None:
    found = judge(ctx, "[--no-such-flag]", "[--another]", image=OTHER)
    assert found == [
        (
            3,
            "warning",
            f"flags of engine0, engine1 not checked: no flag manifest for the vllm build of {OTHER}; "
            "the known builds are fixture (vllm) (validators/contracts/engine-build.yaml, `images:`)",
        )
    ]


def test_an_sglang_engine_on_a_vllm_build_image_is_not_judged_by_vllm_flags(ctx: Context) -> None:
    (found,) = judge(ctx, "[sglang, serve, --tp-size, '4']")
    assert found[1] == "warning" and "no flag manifest for the sglang build of" in found[2]


# -- engine-build.yaml lists builds -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("build: fc91d24\nmanifest: x.json\n", "no `builds:` list"),
        (
            "builds:\n  - name: a\n    engine: tgi\n    manifest: x.json\n",
            "engine 'tgi' is not one of sglang, vllm",
        ),
        (
            f"builds:\n  - name: a\n    engine: vllm\n    manifest: x.json\n    images: [{IMAGE}]\n"
            f"  - name: b\n    engine: vllm\n    manifest: y.json\n    images: [{IMAGE}]\n",
            "is already the image of a",
        ),
        ("builds:\n  - engine: vllm\n    manifest: x.json\n", "malformed near builds[0]"),
    ],
)
def test_a_bad_build_list_is_refused_with_what_to_fix(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "engine-build.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_context(contracts=[], build=path)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_the_fixture_fleet_builds_and_the_committed_manifests_load() -> None:
    ctx = load_context()
    assert [build.contract.engine for build in ctx.builds] == ["sglang", "vllm"]
    assert all(build.manifest.flags for build in ctx.builds)
    for path in sorted((ROOT / "validators" / "manifest").glob("*.json")):
        assert load_manifest(path).flags
