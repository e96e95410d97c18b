"""Each kind of change reads the way a reviewer would write it, on our files and hand-written ones."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from rollout.diff.changes import Aspect, Op
from tests.rollout.diffkit import R1, R2, file_change, fixture, prod_text, text_lines
from tierops.yamlio import roundtrip


def edited(text: str, edit: Callable[[Any], None]) -> str:
    """`text` loaded round-trip, edited, dumped: the file keeps its style, one thing changes."""
    yaml = roundtrip()
    document = yaml.load(text)
    edit(document)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def ours(edit: Callable[[Any], None]) -> list[str]:
    """The text report's lines for one edit of the long-context production file."""
    original = prod_text()
    return text_lines(original, edited(original, edit))[1:]


def handwritten(edit: Callable[[Any], None]) -> list[str]:
    original = fixture("handwritten.yaml")
    return text_lines(original, edited(original, edit))[1:]


def test_an_image_change_names_both_images() -> None:
    def edit(doc: Any) -> None:
        doc["services"][R1]["image"] = "docker.io/nearaidev/sglang@sha256:" + "1" * 64

    old = "docker.io/nearaidev/sglang@sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb"
    assert ours(edit) == [f"  {R1}: image: {old} -> docker.io/nearaidev/sglang@sha256:{'1' * 64}"]


def test_env_vars_are_compared_by_key() -> None:
    def edit(doc: Any) -> None:
        env = doc["services"][R2]["environment"]
        env["NCCL_DEBUG"] = "INFO"
        del env["HF_HUB_OFFLINE"]
        env["SGLANG_NEW"] = "1"

    assert ours(edit) == [
        f"  {R2}: - env HF_HUB_OFFLINE=1",
        f"  {R2}: env NCCL_DEBUG: WARN -> INFO",
        f"  {R2}: + env SGLANG_NEW=1",
    ]


def test_env_as_a_list_or_a_mapping_is_the_same_environment() -> None:
    def edit(doc: Any) -> None:
        doc["services"]["router"]["environment"] = ["BACKENDS=http://vllm-a:8000,http://vllm-b:8000"]

    assert handwritten(edit) == []


def test_an_env_var_taken_from_the_host_says_so() -> None:
    def edit(doc: Any) -> None:
        doc["x-engine"]["environment"] = ["HF_HUB_OFFLINE=1", "HUGGING_FACE_HUB_TOKEN", "CUDA_HOME"]

    assert handwritten(edit) == [
        "  vllm-a, vllm-b: + env CUDA_HOME (from the host)",
        "  vllm-a, vllm-b: note: changed through x-engine (merged into this service)",
    ]


def test_labels_are_compared_by_key_in_either_spelling() -> None:
    def edit(doc: Any) -> None:
        doc["services"]["vllm-b"]["labels"] = {"team": "inference", "replica": "2", "canary": "true"}

    assert handwritten(edit) == ["  vllm-b: + label canary=true"]


def test_a_gpu_reassignment_lists_both_sets() -> None:
    def edit(doc: Any) -> None:
        devices = doc["services"][R1]["deploy"]["resources"]["reservations"]["devices"]
        devices[0]["device_ids"] = ["4", "5", "6", "7"]

    assert ours(edit) == [f"  {R1}: GPUs: 0,1,2,3 -> 4,5,6,7"]
    (change,) = file_change(prod_text(), edited(prod_text(), edit)).services[0].changes
    assert change.aspect is Aspect.GPUS


def test_ports_and_volumes_are_items() -> None:
    def edit(doc: Any) -> None:
        doc["services"]["nginx"]["ports"].append("9000:9000")
        doc["services"]["proxy-glm53"]["volumes"].pop(0)

    assert ours(edit) == [
        "  proxy-glm53: - volume /var/run/tappd.sock:/var/run/tappd.sock",
        "  nginx: + port 9000:9000",
    ]


def test_short_and_long_depends_on_are_the_same_and_a_condition_change_is_named() -> None:
    def long_form(doc: Any) -> None:
        doc["services"]["vllm-a"]["depends_on"] = {"fetch-weights": {"condition": "service_started"}}

    assert handwritten(long_form) == []

    def completed(doc: Any) -> None:
        doc["services"]["vllm-a"]["depends_on"] = {
            "fetch-weights": {"condition": "service_completed_successfully"}
        }

    # the base wrote the short form (its condition is Compose's default): quoted as written
    assert handwritten(completed) == [
        "  vllm-a: depends_on fetch-weights: (service_started) -> (service_completed_successfully)"
        " (written: fetch-weights -> {condition: service_completed_successfully})"
    ]


def test_healthcheck_keys_are_named_and_its_test_reads_as_a_command() -> None:
    def edit(doc: Any) -> None:
        check = doc["services"]["proxy-glm53"]["healthcheck"]
        check["interval"] = "5s"
        check["test"][-1] = "http://localhost:8000/ready"

    assert ours(edit) == [
        "  proxy-glm53: healthcheck.interval: 10s -> 5s",
        "  proxy-glm53: healthcheck.test: CMD curl -fsS --max-time 3 http://localhost:8000/health"
        " -> CMD curl -fsS --max-time 3 http://localhost:8000/ready",
    ]


def test_other_keys_go_through_deepdiff_with_readable_paths() -> None:
    def edit(doc: Any) -> None:
        doc["services"][R1]["ulimits"]["memlock"] = 0
        doc["services"]["dcgm-glm53"]["cap_add"].append("NET_ADMIN")
        doc["services"][R1]["shm_size"] = "64gb"

    assert ours(edit) == [
        f"  {R1}: shm_size: 32gb -> 64gb",
        f"  {R1}: ulimits.memlock: -1 -> 0",
        "  dcgm-glm53: + cap_add[1]: NET_ADMIN",
    ]


def test_a_change_to_an_x_block_shows_at_the_services_it_reaches_and_names_the_block() -> None:
    def edit(doc: Any) -> None:
        doc["x-engine"]["image"] = "vllm/vllm-openai:v0.11.1"

    # Never also as the raw block: Compose runs nothing from `x-engine` itself.
    assert handwritten(edit) == [
        "  vllm-a, vllm-b: image: vllm/vllm-openai:v0.11.0 -> vllm/vllm-openai:v0.11.1",
        "  vllm-a, vllm-b: note: changed through x-engine (merged into this service)",
    ]


def test_an_x_block_change_a_service_overrides_reaches_only_the_others() -> None:
    def edit(doc: Any) -> None:
        doc["x-engine"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] = ["4", "5"]

    # vllm-b writes its own deploy block: only vllm-a gets the new GPUs.
    assert handwritten(edit) == [
        "  vllm-a: GPUs: 0,1 -> 4,5",
        "  vllm-a: note: changed through x-engine (merged into this service)",
    ]


def test_an_x_block_no_service_uses_is_no_change() -> None:
    def edit(doc: Any) -> None:
        doc["x-unused"] = {"image": "nothing:1"}

    assert handwritten(edit) == []


def test_an_added_and_a_removed_service_are_one_line_each() -> None:
    def edit(doc: Any) -> None:
        doc["services"]["cache"] = {"image": "redis:7", "command": ["redis-server", "--save", ""]}
        del doc["services"]["edge"]

    assert handwritten(edit) == [
        "  cache: + service: image redis:7; command redis-server with 1 arguments",
        "  edge: - service: image traefik:v3.1",
    ]
    file = file_change(fixture("handwritten.yaml"), edited(fixture("handwritten.yaml"), edit))
    assert [(service.name, service.status.value, service.role) for service in file.services] == [
        ("cache", "added", "other"),
        ("edge", "removed", "front door"),
    ]


def test_top_level_keys_are_diffed_too() -> None:
    def edit(doc: Any) -> None:
        doc["name"] = "glm53-next"
        doc["networks"]["glm53"] = {"driver": "bridge"}

    assert ours(edit) == [
        "  top-level name: glm53 -> glm53-next",
        "  top-level + networks.glm53.driver: bridge",
    ]


def test_a_list_of_mappings_that_gains_items_and_changes_inside_is_one_whole_value_change() -> None:
    old = "services:\n  s:\n    image: x\n    extra: [{a: 1, b: 2}, {a: 3}]\n"
    new = "services:\n  s:\n    image: x\n    extra: [{z: 0}, {a: 1, b: 5}, {a: 3, c: 4}]\n"
    (change,) = file_change(old, new).services[0].changes
    assert (change.op, change.path, change.subject) == (Op.CHANGED, ("services", "s", "extra"), "extra")
    assert text_lines(old, new)[1:] == [
        '  s: extra: [{"a": 1, "b": 2}, {"a": 3}] -> [{"z": 0}, {"a": 1, "b": 5}, {"a": 3, "c": 4}]'
    ]


def test_numbers_deepdiff_takes_for_equal_in_a_list_are_one_whole_value_change() -> None:
    # DeepDiff aligns lists of scalars with ==, for which 1 and true are one value.
    old = "services:\n  s:\n    image: x\n    extra: [1, a]\n"
    new = "services:\n  s:\n    image: x\n    extra: [true, b]\n"
    (change,) = file_change(old, new).services[0].changes
    assert (change.op, change.path, change.old, change.new) == (
        Op.CHANGED,
        ("services", "s", "extra"),
        [1, "a"],
        [True, "b"],
    )


def test_an_item_removed_and_one_added_at_the_same_index_stay_two_edits() -> None:
    # Index 2 is a base position for the removal and a head position for the addition:
    # one "changed" value there (DeepDiff's merge) would not be the head.
    old = "services:\n  s:\n    image: x\n    extra: [a, a, a, b, c]\n"
    new = "services:\n  s:\n    image: x\n    extra: [b, c, d]\n"
    changes = file_change(old, new).services[0].changes
    assert [(change.op, change.path[2:]) for change in changes] == [
        (Op.REMOVED, ("extra", 0)),
        (Op.REMOVED, ("extra", 1)),
        (Op.REMOVED, ("extra", 2)),
        (Op.ADDED, ("extra", 2)),
    ]


def test_a_gpu_change_beside_a_deploy_change_shown_whole_is_one_whole_deploy_change() -> None:
    devices = "{resources: {reservations: {devices: [{driver: nvidia, device_ids: ['%s']}]}}, x: %s}"
    old = "services:\n  s:\n    image: x\n    deploy: " + devices % ("0", "[{a: 1}]") + "\n"
    new = "services:\n  s:\n    image: x\n    deploy: " + devices % ("1", "[{z: 0}, {a: 2}]") + "\n"
    # The rest of deploy cascades (one whole change): a GPU line beside it would be undone.
    (change,) = file_change(old, new).services[0].changes
    assert (change.aspect, change.op, change.path) == (Aspect.OTHER, Op.CHANGED, ("services", "s", "deploy"))


def test_a_file_mode_reads_in_octal() -> None:
    old = "services:\n  exporter:\n    image: x\n    configs: [{source: csv, target: /c.csv, mode: 0o444}]\n"
    new = old.replace("0o444", "0o440")
    # the line reads the mode in octal; what the author wrote follows, as it reads otherwise
    assert text_lines(old, new)[1:] == ["  exporter: configs[0].mode: 0444 -> 0440 (written: 0o444 -> 0o440)"]
