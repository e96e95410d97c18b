"""tierops.canonical agrees with the real Compose binary on what every spelling means.

Two checks, both against the sha256-verified Docker Compose v2.40.3 binary:

- emulation: with an environment substituted, our model of each service equals the
  JSON `docker compose config --format json` prints for it;
- partition: with variables kept symbolic, two services are canonically equal exactly
  when compose renders them equal in every judged environment (each variable distinct,
  all empty, all unset, each alone unset or empty).

Checked on every prod file, on a corpus of hand-written files in other teams' style,
and on generated spelling variants of each modelled field; a deliberately broken
normaliser is shown to fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FLEET
from tests.tierops import oracle
from tests.tierops.spellings import FAMILIES, REFUSED, family_file
from tierops.canonical import Project
from tierops.yamlload import LoadError

ROOT = Path(__file__).resolve().parents[2]
PROD = sorted((FLEET / "prod").glob("*.yaml"))
CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.yaml"))
DUMMY = dict(
    line.split("=", 1)
    for line in (FLEET / "ci" / "dummy.env").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)


@pytest.mark.parametrize("path", PROD, ids=lambda path: path.stem)
def test_every_prod_file_is_modelled_as_compose_renders_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    theirs = oracle.render(text, DUMMY)
    assert theirs.model is not None, theirs.error
    mine = oracle.ours(text, DUMMY)
    assert set(mine.services) == set(theirs.model["services"])
    for name, rendered in theirs.model["services"].items():
        assert oracle.fields(mine, name) == oracle.normal(rendered), name


@pytest.mark.parametrize("path", CORPUS, ids=lambda path: path.stem)
def test_hand_written_files_are_modelled_as_compose_renders_them(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert oracle.emulation_mismatches(text, envs=("distinct", "empty", "unset")) == []


@pytest.mark.parametrize("path", CORPUS, ids=lambda path: path.stem)
def test_hand_written_services_are_equal_exactly_when_compose_renders_them_equal(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    names = sorted(oracle.ours(text).services)
    assert oracle.partition_mismatches(text, names, per_variable=False) == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_spellings_are_modelled_as_compose_renders_them(family: str) -> None:
    text, _names = family_file(FAMILIES[family])
    assert oracle.emulation_mismatches(text, envs=("distinct",)) == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_spellings_are_equal_exactly_when_compose_renders_them_equal(family: str) -> None:
    text, names = family_file(FAMILIES[family])
    assert oracle.partition_mismatches(text, names) == []


def test_the_families_hold_both_verdicts() -> None:
    """The families hold equal and different pairs, so neither verdict is vacuous."""
    text, names = family_file([body for bodies in FAMILIES.values() for body in bodies])
    project = oracle.ours(text)
    forms = [repr(oracle.fields(project, name)) for name in names]
    assert len(set(forms)) < len(forms)  # some spellings collapse
    assert len(set(forms)) > len(FAMILIES)  # and some do not


@pytest.mark.parametrize("body", REFUSED)
def test_a_spelling_compose_refuses_is_a_problem_in_the_model(body: str) -> None:
    text, _names = family_file([body])
    theirs = oracle.render(text, oracle.environments(text)["distinct"])
    assert theirs.model is None  # the binary refuses it...
    try:
        project = oracle.ours(text)
    except LoadError:
        return  # ...and so does the loader
    problems = [*project.problems, *project.services["v0"].problems]
    assert problems, f"compose refuses {body!r} ({theirs.error}); the model says nothing"


# --- the property would catch a broken normaliser -------------------------------------


def _without_duration_normalisation(project: Project, name: str) -> Any:
    """A normaliser that forgets compose reads `300s` as `5m0s`: compares the raw text."""
    fields = dict(oracle.fields(project, name))
    service = project.services[name]
    if "stop_grace_period" in service.raw:
        fields["stop_grace_period"] = service.raw["stop_grace_period"]
    return fields


def _without_brace_normalisation(project: Project, name: str) -> Any:
    """A normaliser that takes `$TOKEN` and `${TOKEN}` for different values."""
    fields = dict(oracle.fields(project, name))
    raw = project.services[name].raw.get("environment")
    fields["environment"] = repr(raw)
    return fields


@pytest.mark.parametrize(
    ("family", "broken"),
    [("durations", _without_duration_normalisation), ("environment-variables", _without_brace_normalisation)],
)
def test_the_property_fails_on_a_deliberately_broken_normaliser(family: str, broken: oracle.Canon) -> None:
    text, names = family_file(FAMILIES[family])
    found = oracle.partition_mismatches(text, names, canon=broken)
    assert found, "the broken normaliser passed: the property cannot tell"
    assert all("we say different, compose says equal" in line for line in found)


# --- random combinations of spellings ------------------------------------------------

# Families that spell different keys, so one service can carry one variant of each.
_COMBINABLE = [
    "command",
    "environment",
    "labels",
    "ports",
    "durations",
    "healthcheck",
    "sizes",
    "volumes",
    "ulimits",
]


@settings(max_examples=4, deadline=None)
@given(
    st.lists(
        st.tuples(*(st.sampled_from(FAMILIES[family]) for family in _COMBINABLE)),
        min_size=4,
        max_size=12,
    )
)
def test_random_combinations_of_spellings_are_modelled_as_compose_renders_them(
    services: list[tuple[str, ...]],
) -> None:
    text, names = family_file(["\n".join(parts) for parts in services])
    assert oracle.emulation_mismatches(text, envs=("distinct",)) == []
    assert oracle.partition_mismatches(text, names, per_variable=False) == []
