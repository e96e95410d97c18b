"""pytest's JUnit XML report, read for the tests stage: counts and the failing ids."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

JUNIT = "tests.junit.xml"  # in build/check/, beside the stage results
MAX_FAILURES_SHOWN = 3  # test ids named in the note; the rest counted


@dataclass(frozen=True)
class JunitReport:
    """What pytest's JUnit XML says: the counts and the ids of the tests that did not pass."""

    passed: int
    failed: int
    errors: int
    skipped: int
    failing: tuple[str, ...]  # failed and errored tests, in report order

    def counts(self) -> dict[str, int]:
        every = {"passed": self.passed, "failed": self.failed, "errors": self.errors, "skipped": self.skipped}
        return {key: number for key, number in every.items() if number}

    def summary(self) -> str:
        """`3 failed, 1 error`: the words of the headline."""
        parts = [f"{self.failed} failed"] if self.failed else []
        if self.errors:
            parts.append(f"{self.errors} error{'s' if self.errors != 1 else ''}")
        return ", ".join(parts)

    def note(self, limit: int = 200) -> str:
        """The summary and the first failing ids that fit in `limit` characters, the rest counted."""
        shown: list[str] = []
        for test_id in self.failing[:MAX_FAILURES_SHOWN]:
            if len(self._note([*shown, test_id])) > limit:
                break
            shown.append(test_id)
        return self._note(shown)[:limit]

    def _note(self, shown: Sequence[str]) -> str:
        if not shown:
            return self.summary()
        rest = len(self.failing) - len(shown)
        return f"{self.summary()}: {', '.join(shown)}" + (f" and {rest} more" if rest else "")


def read_junit(path: Path, root: Path) -> JunitReport:
    """Parse pytest's `--junitxml` report; ValueError when it is not one.

    A testcase with a <failure> failed, with an <error> errored (a fixture or collection
    error), with a <skipped> was skipped; any other testcase passed. Test ids are
    pytest's node ids where the class name maps to a file under `root`."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as error:
        raise ValueError(f"unreadable JUnit report {path.name}: {error}") from None
    top = tree.getroot()
    if top.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"{path.name} is not a JUnit report (root <{top.tag}>)")
    passed = failed = errors = skipped = 0
    failing: list[str] = []
    for case in top.iter("testcase"):
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            failed += 1
            failing.append(_test_id(case, root))
        elif "error" in kinds:
            errors += 1
            failing.append(_test_id(case, root))
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
    return JunitReport(passed, failed, errors, skipped, tuple(failing))


def _test_id(case: ET.Element, root: Path) -> str:
    """`tests/ci/test_x.py::TestY::test_z` from pytest's dotted class name, where a prefix
    of it is a file under `root`; else the dotted name and the test's."""
    dotted = case.get("classname", "").split(".") if case.get("classname") else []
    name = case.get("name", "?")
    for cut in range(len(dotted), 0, -1):
        module = Path(*dotted[:cut]).with_suffix(".py")
        if (root / module).is_file():
            return "::".join([module.as_posix(), *dotted[cut:], name])
    return "::".join([".".join(dotted), name]) if dotted else name
