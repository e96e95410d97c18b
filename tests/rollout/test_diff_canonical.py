"""The diff compares what Compose sees.

A spelling Compose renders identically is no change and never a plan step; a rendering
Compose prints differently but Docker runs the same is reported with one note; roles
follow what a service runs; JSON-valued labels are diffed per item.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from rollout.diff.changes import Aspect, Op, Status
from rollout.diff.document import diff_document
from rollout.diff.forms import read
from tests.rollout.diffkit import R1, file_change, fixture, new_repo, prod_text, run_cli, text_lines, write
from tests.tierops.spellings import FAMILIES, family_file
from tierops.errors import InputError

SERVICE = """\
services:
  web:
    image: nginx:1.27
{body}"""


def service(body: str) -> str:
    return SERVICE.format(body=body)


SPELLINGS = [
    pytest.param('    shm_size: "64"\n', "    shm_size: 64\n", id="shm_size quoted or not"),
    pytest.param('    ports: ["8000"]\n', "    ports: [8000]\n", id="port quoted or not"),
    pytest.param(
        "    ports: ['8000:8000']\n",
        "    ports:\n      - target: 8000\n        published: '8000'\n        protocol: tcp\n",
        id="short and long port syntax",
    ),
    pytest.param("    ports: ['8000:8000']\n", "    ports: ['8000:8000/tcp']\n", id="port with /tcp"),
    pytest.param(
        "    healthcheck:\n      test: curl -f http://localhost/\n",
        "    healthcheck:\n      test: [CMD-SHELL, curl -f http://localhost/]\n",
        id="healthcheck string or CMD-SHELL list",
    ),
    pytest.param(
        "    environment:\n      A: $VAR\n", "    environment:\n      A: ${VAR}\n", id="$VAR or ${VAR}"
    ),
    pytest.param("    stop_grace_period: 300s\n", "    stop_grace_period: 5m\n", id="300s or 5m"),
    pytest.param(
        "    environment: [A=1, B]\n", "    environment:\n      A: 1\n      B:\n", id="env list or mapping"
    ),
    pytest.param("    init: true\n", '    init: "true"\n', id="a quoted boolean"),
    pytest.param(
        "    depends_on: [db]\n  db:\n    image: postgres:16\n",
        "    depends_on:\n      db:\n        condition: service_started\n  db:\n    image: postgres:16\n",
        id="short or long depends_on",
    ),
    pytest.param(
        "    command: \"sh -c 'echo hi'\"\n", "    command: [sh, -c, echo hi]\n", id="string or list command"
    ),
]


@pytest.mark.parametrize(("old", "new"), SPELLINGS)
def test_a_spelling_compose_renders_identically_is_no_change(old: str, new: str) -> None:
    file = file_change(service(old), service(new))
    assert (file.status, file.services) == (Status.UNCHANGED, ())


def test_a_real_change_behind_a_spelling_change_is_still_reported() -> None:
    old = service('    shm_size: "64"\n    stop_grace_period: 300s\n')
    new = service("    shm_size: 1gb\n    stop_grace_period: 5m\n")
    assert text_lines(old, new)[1:] == ["  web: shm_size: 64 -> 1gb"]


def test_documents_are_compared_as_compose_merges_them() -> None:
    old = service("    environment: {A: '1'}\n")
    new = "services:\n  web:\n    image: nginx:1.27\n---\nservices:\n  web:\n    environment: [A=1]\n"
    assert file_change(old, new).status is Status.UNCHANGED
    changed = new.replace("A=1", "A=2")
    assert text_lines(old, changed)[1:] == ["  web: env A: 1 -> 2"]


RUNTIME_SAME = [
    pytest.param("image: nearaidev/x:1", "image: docker.io/nearaidev/x:1", id="docker.io prefix"),
    pytest.param("cap_add: [SYS_ADMIN]", "cap_add: [CAP_SYS_ADMIN]", id="CAP_ prefix"),
    pytest.param(
        "ulimits: {memlock: -1}",
        "ulimits: {memlock: {soft: -1, hard: -1}}",
        id="memlock one value or soft/hard",
    ),
]


@pytest.mark.parametrize(("old", "new"), RUNTIME_SAME)
def test_a_rendering_that_runs_the_same_is_reported_with_one_note(old: str, new: str) -> None:
    text = "services:\n  app:\n    image: nearaidev/x:1\n    {line}\n"
    before = text.format(line=old).replace("image: nearaidev/x:1\n    image: ", "image: ")
    after = text.format(line=new).replace("image: nearaidev/x:1\n    image: ", "image: ")
    (changed,) = file_change(before, after).services
    notes = [change for change in changed.changes if change.op is Op.NOTE]
    assert [note.subject for note in notes] == [
        "Compose recreates the container, although nothing changes at runtime"
    ]
    assert len(changed.changes) > len(notes), "the rendering change itself is still shown"


def test_a_runtime_change_gets_no_runtime_note() -> None:
    (changed,) = file_change(service(""), service("    cap_add: [NET_ADMIN]\n")).services
    assert all(change.op is not Op.NOTE for change in changed.changes)


def test_an_engine_is_recognised_by_what_it_runs_even_when_built_locally() -> None:
    text = """\
services:
  llm:
    build: ./engine
    image: local-llm:dev
    command: python -m sglang.launch_server --model-path /m --port 8000
  gateway:
    image: example/gateway:2
    environment:
      UPSTREAM: http://llm:8000
"""
    file = file_change(text, text.replace("--port 8000", "--port 8001").replace("llm:8000", "llm:8001"))
    assert file.roles == {"llm": "engine", "gateway": "proxy"}


def test_the_proxy_of_a_locally_built_engine_is_flagged_as_interrupting_traffic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """\
services:
  llm:
    build: ./engine
    image: local-llm:dev
    command: [vllm, serve, /m, --port, "8000"]
  gateway:
    image: example/gateway:2
    environment:
      UPSTREAM: http://llm:8000
      MODE: a
"""
    repo = new_repo(tmp_path, {"prod/x.yaml": text})
    write(repo, {"prod/x.yaml": text.replace("MODE: a", "MODE: b")})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan", "--format", "json"])
    assert (code, err) == (0, "")
    (stage,) = json.loads(out)["files"][0]["stages"]
    assert (stage["service"], stage["role"], stage["interrupts_traffic"]) == ("gateway", "proxy", True)


def test_a_spelling_change_gets_no_plan_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = prod_text()
    new = old.replace("stop_grace_period: 5m", "stop_grace_period: 300s")
    assert new != old
    repo = new_repo(tmp_path, {"prod/x.yaml": old})
    write(repo, {"prod/x.yaml": new})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan", "--format", "json"])
    assert (code, err) == (0, "")
    assert json.loads(out)["files"] == []


DATADOG = "com.datadoghq.ad.tags"


def labelled(tags: list[str] | dict[str, Any]) -> str:
    return service(f"    labels:\n      {DATADOG}: '{json.dumps(tags)}'\n")


def test_a_json_valued_label_is_diffed_per_list_item() -> None:
    old = labelled(["env:prod", "team:llm", "tier:base"])
    new = labelled(["env:prod", "team:inference", "tier:base"])
    assert text_lines(old, new)[1:] == [f'  web: label {DATADOG} (JSON): - "team:llm"; + "team:inference"']


def test_a_json_valued_label_is_diffed_per_key() -> None:
    old = labelled({"nginx": {"init_config": {}, "instances": [{"url": "a"}]}})
    new = labelled({"nginx": {"init_config": {}, "instances": [{"url": "b"}]}, "extra": 1})
    assert text_lines(old, new)[1:] == [
        f'  web: label {DATADOG} (JSON): nginx.instances: - {{"url":"a"}}; nginx.instances: + {{"url":"b"}}; '
        "+ extra: 1"
    ]


def test_a_json_value_in_the_environment_is_diffed_per_item_too() -> None:
    old = service('    environment:\n      DD_TAGS: \'["a", "b"]\'\n')
    new = service('    environment:\n      DD_TAGS: \'["a", "c"]\'\n')
    assert text_lines(old, new)[1:] == ['  web: env DD_TAGS (JSON): - "b"; + "c"']


def test_a_note_is_never_applied_and_the_model_stays_complete() -> None:
    old = fixture("handwritten.yaml")
    new = old.replace("image: vllm/vllm-openai:v0.11.0", "image: docker.io/vllm/vllm-openai:v0.11.0")
    file = file_change(old, new)
    notes = [change for change in file.all_changes() if change.op is Op.NOTE]
    assert {note.path for note in notes} == {("services", "vllm-a"), ("services", "vllm-b")}
    assert {note.aspect for note in notes} == {Aspect.NOTE}


def test_our_own_engines_keep_their_role() -> None:
    text = prod_text()
    file = file_change(text, text.replace('"0.80"', '"0.85"'))
    assert file.roles[R1] == "engine"
    assert file.roles["proxy-glm53"] == "proxy"


def test_each_change_points_at_where_the_author_wrote_it_on_both_sides() -> None:
    old = fixture("handwritten.yaml")
    new = old.replace("vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.11.1").replace(
        "--max-model-len 32768 --port=8000\n    labels:\n      - team=inference\n      - replica=2",
        "--max-model-len 65536 --port=8000\n    labels:\n      - team=inference\n      - replica=2",
    )
    file = file_change(old, new)
    placed = {
        (service.name, change.subject): change.at
        for service in file.services
        for change in service.changes
        if change.op is not Op.NOTE
    }
    # The image comes from `x-engine` (line 4); the flag is in vllm-b's own command.
    assert placed == {
        ("vllm-a", "image"): ("4:3", "4:3"),
        ("vllm-b", "image"): ("4:3", "4:3"),
        ("vllm-b", "--max-model-len"): ("33:14", "33:14"),
    }
    assert file.services[1].changes[0].to_json()["at"] == ["4:3", "4:3"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_spelling_variant_pair_is_a_change_exactly_when_compose_renders_it_differently(
    family: str,
) -> None:
    # tests/tierops/test_equivalence.py proves, with the real binary, that two variants
    # have equal canonical fields exactly when Compose renders them equal; here the diff
    # must agree with those fields on every pair: no change, or at least one line.
    documents = []
    for body in FAMILIES[family]:
        text, _ = family_file([body])
        try:
            documents.append(read(text.encode(), where="prod/x.yaml"))
        except InputError:
            continue  # a spelling Compose refuses: the diff reports it as an error
    checked = 0
    for base, head in itertools.permutations(documents, 2):
        old, new = base.service("v0"), head.service("v0")
        assert old is not None and new is not None
        changed = [service.name for service in diff_document(base, head, path="prod/x.yaml").services]
        assert ("v0" in changed) is (old.fields != new.fields), (old.raw, new.raw)
        checked += 1
    assert checked >= 2
