"""A prod file respelled as Compose reads it the same gets no contract finding.

Each respelling is applied to the long-context file, and the real Compose binary
renders the result: identically for a spelling, or differing only in the one key
whose rendering changes but whose container runs the same (image `docker.io/`,
`CAP_` prefix, memlock as soft/hard). The validators then report no error; the only
finding allowed is the `style` family's warning, which says it is style.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tierops import oracle
from tests.validators.conftest import LONG, PROD, run_cli

DUMMY = dict(
    line.split("=", 1)
    for line in (PROD.parent / "ci" / "dummy.env").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)
ENGINE = "model-sg-glm53-w4afp8-tp4-r1"

# (name, old text, new text, keys whose rendering may change although nothing runs differently)
RESPELLINGS: list[tuple[str, str, str, set[str]]] = [
    (
        "dollar-without-braces",
        "      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n      HF_HUB_OFFLINE",
        "      HF_TOKEN: $HUGGING_FACE_HUB_TOKEN\n      HF_HUB_OFFLINE",
        set(),
    ),
    ("duration-in-seconds", "    stop_grace_period: 5m\n", "    stop_grace_period: 300s\n", set()),
    ("start-period-in-seconds", "      start_period: 40m\n", "      start_period: 2400s\n", set()),
    ("port-with-protocol", '      - "8000:8000"\n', "      - 8000:8000/tcp\n", set()),
    (
        "port-long-syntax",
        '      - "8444:443"\n',
        "      - {target: 443, published: 8444, protocol: tcp}\n",
        set(),
    ),
    ("shm-size-in-bytes", "    shm_size: 32gb\n", '    shm_size: "34359738368"\n', set()),
    ("quoted-boolean", "    init: true\n", '    init: "true"\n', set()),
    (
        "env-as-list",
        '      HF_TOKEN: ${HUGGING_FACE_HUB_TOKEN}\n      HF_HUB_OFFLINE: "1"\n',
        "      - HF_TOKEN=${HUGGING_FACE_HUB_TOKEN}\n      - HF_HUB_OFFLINE=1\n",
        set(),
    ),
    (
        "depends-on-required-spelled-out",
        "        condition: service_completed_successfully\n",
        "        condition: service_completed_successfully\n        required: true\n",
        set(),
    ),
    (
        "healthcheck-string",
        '      test: [CMD-SHELL, test -n "$$(find /tmp/heartbeat -mmin -2 2>/dev/null)"]\n',
        '      test: test -n "$$(find /tmp/heartbeat -mmin -2 2>/dev/null)"\n',
        set(),
    ),
    ("capability-prefix", "      - SYS_ADMIN\n", "      - CAP_SYS_ADMIN\n", {"cap_add"}),
    ("memlock-soft-hard", "      memlock: -1\n", "      memlock: {soft: -1, hard: -1}\n", {"ulimits"}),
    (
        "image-without-registry",
        "    image: docker.io/nearaidev/sglang@sha256:",
        "    image: nearaidev/sglang@sha256:",
        {"image"},
    ),
]


def _respelled(name: str, old: str, new: str, text: str) -> str:
    assert old in text, name
    if name == "env-as-list":
        # the whole environment block of r1 as a list: the two first entries, then the rest
        start = text.index(old)
        end = text.index("    deploy:", start)
        block = text[start:end]
        lines = [line.strip() for line in block.splitlines()]
        listed = "".join(
            f"      - {key}={value.strip().strip(chr(34))}\n"
            for key, _, value in (line.partition(": ") for line in lines)
        )
        return text[:start] + listed + text[end:]
    return text.replace(old, new, 1)


@pytest.mark.parametrize(("name", "old", "new", "runtime_only"), RESPELLINGS, ids=[r[0] for r in RESPELLINGS])
def test_a_respelling_compose_reads_the_same_gets_no_contract_finding(
    name: str, old: str, new: str, runtime_only: set[str], write_prod: Any
) -> None:
    original = (PROD / LONG).read_text(encoding="utf-8")
    text = _respelled(name, old, new, original)
    before, after = oracle.render(original, DUMMY), oracle.render(text, DUMMY)
    assert before.model is not None and after.model is not None, after.error
    changed = {
        (service, key)
        for service, body in after.model["services"].items()
        for key in {*body, *before.model["services"][service]}
        if body.get(key) != before.model["services"][service].get(key)
    }
    # The binary's verdict: the same rendering, or a change only where nothing runs differently.
    assert {key for _service, key in changed} <= runtime_only
    assert bool(changed) == bool(runtime_only)
    result = run_cli("--format", "json", write_prod(LONG, text))
    assert result.code == 0, result.out
    assert [row for row in result.findings() if row["rule"] != "style"] == []


def test_every_respelling_at_once_still_gets_no_contract_finding(write_prod: Any) -> None:
    text = (PROD / LONG).read_text(encoding="utf-8")
    for name, old, new, _runtime in RESPELLINGS:
        text = _respelled(name, old, new, text)
    result = run_cli("--format", "json", write_prod(LONG, text))
    assert result.code == 0, result.out
    assert [row for row in result.findings() if row["rule"] != "style"] == []


def test_a_change_of_meaning_in_the_same_place_is_still_found(write_prod: Any) -> None:
    """The respellings above are not blind spots: a real change there is an error."""
    text = (
        (PROD / LONG)
        .read_text(encoding="utf-8")
        .replace("    stop_grace_period: 5m\n", "    stop_grace_period: 301s\n", 1)
    )
    result = run_cli("--format", "json", "--rule", "prod-config", write_prod(LONG, text))
    assert result.code == 1
    messages = [row["message"] for row in result.findings()]
    assert (
        f"{ENGINE} stop_grace_period is 301s; the contract says 5m (validators/contracts/glm53.yaml)"
        in messages
    )
    assert any(message.startswith("replica parity:") and "has 301s" in message for message in messages)


def test_the_file_as_committed_is_the_reference(tmp_path: Path) -> None:
    assert oracle.render((PROD / LONG).read_text(encoding="utf-8"), DUMMY).model is not None
