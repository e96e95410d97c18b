"""A source or targets file that would double a feature's flag, or misuse features, is refused.

Each refusal: exit 2, one line per problem naming the file:line, the service and the
flag or feature, no traceback, and nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generators.cli import main
from tests.conftest import PROD


def _run(source: Path, targets: Path, prod: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["--write", "--source", str(source), "--targets-file", str(targets), "--prod-dir", str(prod)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, captured.err


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def _assert_untouched(prod: Path) -> None:
    for path in PROD.glob("*.yaml"):
        assert (prod / path.name).read_bytes() == path.read_bytes()
    assert sorted(p.name for p in prod.iterdir()) == sorted(p.name for p in PROD.glob("*.yaml"))


def test_a_source_already_carrying_the_ingestion_flag_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(
        source,
        "    - --enable-cache-report\n",
        "    - --enable-cache-report\n    - --enable-dynamic-batch-tokenizer\n",
    )
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    line = _line_of(source, "- --enable-dynamic-batch-tokenizer")
    assert err.splitlines() == [
        f"{source}:{line}:7: refused: model-sg-glm53-w4afp8-tp4-r1 (GLM-5.3-Flash-SGL-TP4-W4AFP8): "
        "the source already carries --enable-dynamic-batch-tokenizer, which feature 'dyntok' adds; "
        "remove it from engine.argv and list 'dyntok' for the replicas that need it"
    ]
    _assert_untouched(prod_copy)


def test_a_source_carrying_a_feature_flag_as_flag_equals_value_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(
        source,
        "    - --enable-cache-report\n",
        "    - --enable-cache-report\n    - --hicache-write-policy=write_back\n",
    )
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    assert "already carries --hicache-write-policy, which feature 'hicache' adds" in err
    _assert_untouched(prod_copy)


def test_a_source_carrying_a_feature_env_var_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(source, "    NCCL_DEBUG: WARN\n", '    NCCL_DEBUG: WARN\n    SGLANG_DSA_INDEXER_QSPLIT: "1"\n')
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    line = _line_of(source, "SGLANG_DSA_INDEXER_QSPLIT")
    assert err.startswith(f"{source}:{line}:5: refused: model-sg-glm53-w4afp8-tp4-r1")
    assert "already carries env SGLANG_DSA_INDEXER_QSPLIT, which feature 'qsplit' adds" in err
    _assert_untouched(prod_copy)


def test_a_feature_listed_twice_for_a_replica_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    text = targets.read_text()
    head, tail = text.rsplit("      - dyntok\n", 1)
    targets.write_text(head + "      - dyntok\n      - dyntok\n" + tail)
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1
    second = len((head + "      - dyntok\n").splitlines()) + 1
    assert lines[0] == (
        f"{targets}:{second}:9: refused: feature 'dyntok' listed twice for "
        f"model-sg-glm53-w4afp8-tp4-r2 (GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext), first at line {second - 1}; "
        "list each feature once"
    )
    _assert_untouched(prod_copy)


def test_an_unknown_feature_is_refused_naming_the_known_ones(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    text = targets.read_text()
    head, tail = text.rsplit("      - dyntok\n", 1)
    targets.write_text(head + "      - dyntk\n" + tail)
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    line = len(head.splitlines()) + 1
    assert err.splitlines() == [
        f"{targets}:{line}:9: refused: unknown feature 'dyntk' for model-sg-glm53-w4afp8-tp4-r2 "
        "(GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext); known features: chunk, qsplit, hicache, pdi, dyntok"
    ]
    _assert_untouched(prod_copy)


def test_a_replica_without_a_required_feature_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(targets, "    r1:\n      - chunk: 4096\n      - pdi: 1\n", "    r1:\n      - chunk: 4096\n")
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    assert "model-sg-glm53-w4afp8-tp4-r1 (GLM-5.3-Flash-SGL-TP4-W4AFP8) lacks required feature 'pdi'" in err
    _assert_untouched(prod_copy)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("      - chunk: 8192\n", "      - chunk: big\n", "feature 'chunk' of model-sg-glm53-w4afp8-tp4-r1"),
        ("      - qsplit\n", "      - qsplit: 2\n", "feature 'qsplit' of model-sg-glm53-w4afp8-tp4-r1"),
        ("          ram_budget:", "          ram_budgte:", "unknown option(s) ram_budgte"),
        (
            "    r2:\n      - chunk: 4096\n      - pdi: 1\n",
            "    r3:\n      - chunk: 4096\n      - pdi: 1\n",
            "unknown replica 'r3'",
        ),
        ("  tier: base\n", "  tier: bass\n", "tier must be one of base, canary, long-context, not 'bass'"),
    ],
)
def test_malformed_feature_lists_are_refused_with_their_position(
    source_copy: tuple[Path, Path],
    prod_copy: Path,
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    message: str,
) -> None:
    source, targets = source_copy
    _replace(targets, old, new)
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    assert message in err
    assert err.startswith(f"{targets}:")
    _assert_untouched(prod_copy)


def test_malformed_yaml_in_the_source_is_one_line_with_its_position(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(source, "project: glm53\n", "project: [glm53\n")
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith(f"{source}:") and "invalid YAML" in err
    _assert_untouched(prod_copy)


def test_a_duplicate_key_in_the_source_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(source, "project: glm53\n", "project: glm53\nproject: glm54\n")
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    assert err.startswith(f"{source}:") and "duplicate key" in err
    _assert_untouched(prod_copy)


def test_an_unpinned_image_in_the_catalogue_is_refused(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    text = source.read_text()
    start = text.index("  nginx: docker.io/library/nginx:1.27-alpine@sha256:")
    end = text.index("\n", start)
    source.write_text(text[:start] + "  nginx: docker.io/library/nginx:1.27-alpine" + text[end:])
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    assert "image 'nginx' must be pinned as name@sha256:<64 hex>" in err
    _assert_untouched(prod_copy)


def test_an_unknown_or_doubled_role_is_refused_at_its_line(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(source, "    role: proxy\n", "    role: proxxy\n")
    _replace(source, "    role: registrar\n", "    role: front-door\n")
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    typo = _line_of(source, "role: proxxy")
    doubled = [n for n, line in enumerate(source.read_text().splitlines(), 1) if "role: front-door" in line][
        1
    ]
    roles = "downloader, proxy, front-door, registrar, metrics-exporter, collector"
    lines = err.splitlines()
    assert f"{source}:{typo}:5: proxy-glm53: unknown role 'proxxy' (roles: {roles})" in lines
    assert (
        f"{source}:{doubled}:5: model-proxy-registrar: role 'front-door' is already nginx's; one service per role"
        in lines
    )
    _assert_untouched(prod_copy)


def test_a_misspelt_key_of_the_stack_data_is_refused_with_the_key_it_is_a_near_miss_of(
    source_copy: tuple[Path, Path], prod_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, targets = source_copy
    _replace(source, "  required_features:", "  required_featurs:")
    _replace(targets, "\n  tier:", "\n  teir:")
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    # a misspelt key would be ignored silently, and its default is not what was meant
    assert (
        f"{source}:{_line_of(source, 'required_featurs')}:3: engine: unknown key 'required_featurs'; did you mean 'required_features'?"
        in err
    )
    _assert_untouched(prod_copy)
    _replace(source, "  required_featurs:", "  required_features:")
    code, err = _run(source, targets, prod_copy, capsys)
    assert code == 2
    assert "unknown key 'teir'; did you mean 'tier'?" in err
    _assert_untouched(prod_copy)
