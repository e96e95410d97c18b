"""ci/check-matrix.schema.json is a valid 2020-12 schema, and ci/record_schema.py agrees with `jsonschema`.

The comment workflow validates with the stdlib validator (nothing is installed in a
job that holds a write token), so it must say what the authority says: a record is
valid for both or invalid for both.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ci import record_schema
from tests.ci.matrix_records import many_files, sample_record

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "ci" / "check-matrix.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def authority(instance: Any) -> list[str]:
    return [error.message for error in jsonschema.Draft202012Validator(SCHEMA).iter_errors(instance)]


def test_the_schema_is_a_valid_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["format"] == {"const": 1}


def test_a_record_as_ci_record_builds_it_is_valid_for_both() -> None:
    for record in (sample_record(), many_files(50)):
        assert authority(record) == []
        assert record_schema.validate(record, SCHEMA) == []


def _stage(record: dict[str, Any], name: str) -> dict[str, Any]:
    return next(stage for stage in record["stages"] if stage["name"] == name)


MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "format 2": lambda r: r.update(format=2),
    "format as a string": lambda r: r.update(format="1"),
    "an unknown verdict": lambda r: r.update(verdict="green"),
    "a missing section": lambda r: r.pop("tools"),
    "an extra top-level key": lambda r: r.update(comment="hello"),
    "a row outside prod/": lambda r: r["files"].append("../etc/passwd"),
    "a row with markup": lambda r: r["files"].append("prod/<img src=x>.yaml"),
    "a cell verdict outside the enum": lambda r: _stage(r, "validate")["files"].update(
        {r["files"][0]: {"verdict": "ok", "counts": {}}}
    ),
    "a negative count": lambda r: _stage(r, "lint")["repository"]["counts"].update({"ruff-check": -1}),
    "a boolean count": lambda r: _stage(r, "lint")["repository"]["counts"].update({"ruff-check": True}),
    "a count key with a pipe": lambda r: _stage(r, "lint")["repository"]["counts"].update({"a|b": 1}),
    "a count key with markup": lambda r: _stage(r, "lint")["repository"]["counts"].update({"<b>x</b>": 1}),
    "a note too long": lambda r: _stage(r, "collector").update(note="x" * 201),
    "an exit code of 256": lambda r: _stage(r, "lint").update(exit_code=256),
    "a negative duration": lambda r: _stage(r, "lint").update(duration_s=-1),
    "a stage without its repository cell": lambda r: _stage(r, "plan").pop("repository"),
    "a short commit": lambda r: r["commits"].update(head="abc123"),
    "a digest without its prefix": lambda r: r["inputs"].update(digest="0" * 64),
    "an input hash that is not hex": lambda r: r["inputs"]["prod"].update({r["files"][0]: "z" * 64}),
    "an unknown compose origin": lambda r: r["tools"]["compose"].update(origin="podman"),
    "a package without its pin field": lambda r: r["tools"]["packages"][0].pop("pin"),
    "a scope outside the enum": lambda r: _stage(r, "diff").update(scope="everything"),
    "1001 rows": lambda r: r.update(files=[f"prod/f{index}.yaml" for index in range(1001)]),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_a_broken_record_is_invalid_for_both(name: str) -> None:
    record = copy.deepcopy(sample_record())
    MUTATIONS[name](record)
    assert authority(record) != [], name
    assert record_schema.validate(record, SCHEMA) != [], name


def test_null_where_the_schema_allows_it_is_valid_for_both() -> None:
    record = copy.deepcopy(sample_record())
    record["tools"]["compose"] = None
    record["commits"].update(head=None, dirty=None, base=None)
    _stage(record, "lint").update(exit_code=None, duration_s=None)
    assert authority(record) == []
    assert record_schema.validate(record, SCHEMA) == []


def test_an_integer_written_with_a_zero_fraction_is_valid_for_both() -> None:
    record = copy.deepcopy(sample_record())
    _stage(record, "lint").update(exit_code=1.0)
    assert authority(record) == []
    assert record_schema.validate(record, SCHEMA) == []
    _stage(record, "lint").update(exit_code=1.5)
    assert authority(record) != []
    assert record_schema.validate(record, SCHEMA) != []


def test_errors_say_where() -> None:
    record = copy.deepcopy(sample_record())
    record["commits"]["head"] = "abc"
    (problem,) = record_schema.validate(record, SCHEMA)
    assert problem.startswith("$.commits.head: ")


def test_a_keyword_the_validator_does_not_implement_is_an_error_not_ignored() -> None:
    schema = {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}
    with pytest.raises(record_schema.SchemaError, match="patternProperties"):
        record_schema.validate({"x": "1"}, schema)


def test_an_unresolvable_reference_is_an_error() -> None:
    with pytest.raises(record_schema.SchemaError, match="unresolvable"):
        record_schema.validate(1, {"$ref": "#/$defs/nothing"})
