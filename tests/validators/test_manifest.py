"""The flag manifest: the extractor on a small wheel built here, and the committed 0.5.16 manifest."""

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
from validators.manifest import load_manifest
from validators.manifest.cli import main as manifest_main

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
