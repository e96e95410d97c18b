"""No secret value appears anywhere, in any format of the diff or the plan.

Masking is by value: a value under a secret-like key on either side is masked wherever
it is printed, and credential shapes are masked wherever they are printed.
test_masking_property.py plants random secrets; these tests pin each rule by name.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollout.diff.boundary import boundary
from rollout.diff.secret_values import fingerprint, mask_text, secret_key
from tests.rollout.diffkit import commit, new_repo, run_cli

# Assembled at run time so the repository's own token-shapes hook never sees a literal.
SECRETS = {
    "hf": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "password": "correct horse battery staple",
    "apikey": "sk-live-0123456789abcdefABCDEF",
    "label": "Zq8Rk2Lm9Xv4Tn7Pb3Hw6Jd1Fs5Gc0Ya",
    "jwt": "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "yaml": "hunter2-but-longer",
    "default": "s3cr3t-default-value",
}
FINGERPRINT = r"<secret sha256:([0-9a-f]{8})>"


def compose(version: str) -> str:
    """A file whose secrets all change between version "old" and "new"."""
    s = {name: f"{value}{version}" for name, value in SECRETS.items()}
    return textwrap.dedent(
        f"""\
        services:
          engine:
            image: lmsysorg/sglang:v0.5.16
            command: [sglang, serve, --served-model-name, m, --api-key, "{s["apikey"]}", --port, "8000"]
            environment:
              HF_TOKEN: {s["hf"]}
              DB_PASSWORD: "{s["password"]}"
              GATEWAY_TOKEN: ${{GATEWAY_TOKEN:-{s["default"]}}}
              PROXY_API_TOKEN: ${{PROXY_API_TOKEN:?required{version}}}
            labels:
              com.example.build: {s["label"]}
            configs: [collector, notes]
            deploy:
              resources:
                reservations:
                  devices: [{{driver: nvidia, device_ids: ["0"], capabilities: [gpu]}}]
        configs:
          collector:
            content: |
              receivers: {{otlp: {{}}}}
              exporters:
                gateway:
                  password: {s["yaml"]}
          notes:
            content: |
              curl -fsS -H 'Authorization: Bearer {s["jwt"]}' https://gateway.invalid/v1/ping
        """
    )


def outputs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    old: str | None = None,
    new: str | None = None,
) -> str:
    """diff and plan, every format, between a commit of `old` and one of `new`."""
    repo = new_repo(tmp_path, {"prod/x.yaml": compose("old") if old is None else old})
    commit(repo, {"prod/x.yaml": compose("new") if new is None else new}, "head")
    texts = []
    for command in ("diff", "plan"):
        for fmt in ("text", "markdown", "json"):
            code, out, err = run_cli(
                monkeypatch, capsys, repo, [command, "--base", "HEAD~1", "--format", fmt]
            )
            assert code == 0, err
            texts.append(out + err)
    return "\n".join(texts)


def engine(environment: str, *, command: str = "[sglang, serve]", extra: str = "") -> str:
    return (
        "services:\n  engine:\n    image: lmsysorg/sglang:v0.5.16\n"
        f"    command: {command}\n    environment:\n"
        + textwrap.indent(textwrap.dedent(environment), "      ")
        + extra
    )


def test_no_secret_value_appears_in_any_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(tmp_path, monkeypatch, capsys)
    for name, value in SECRETS.items():
        for version in ("old", "new"):
            assert f"{value}{version}" not in everything, name
        assert value not in everything, name


def test_a_changed_secret_shows_two_fingerprints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(tmp_path, monkeypatch, capsys)
    match = re.search(rf"engine: env DB_PASSWORD: {FINGERPRINT} -> {FINGERPRINT}", everything)
    assert match is not None
    assert match.group(1) != match.group(2)


def test_a_renamed_key_keeps_its_value_masked_with_the_same_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The issue's first case: MY_TOKEN -> MY_TOKEN2 printed the literal value.
    everything = outputs(
        tmp_path,
        monkeypatch,
        capsys,
        engine("MY_TOKEN: plain-value-of-my-token\n"),
        engine("MY_TOKEN2: plain-value-of-my-token\n"),
    )
    assert "plain-value-of-my-token" not in everything
    removed = re.search(rf"- env MY_TOKEN={FINGERPRINT}", everything)
    added = re.search(rf"\+ env MY_TOKEN2={FINGERPRINT}", everything)
    assert removed is not None and added is not None
    assert removed.group(1) == added.group(1)  # unchanged value, visibly


def test_a_value_secret_on_one_side_is_masked_under_an_innocent_key_on_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(
        tmp_path,
        monkeypatch,
        capsys,
        engine("DB_PASSWORD: moved-away-password\n"),
        engine("DB_SETTING: moved-away-password\n", extra="    labels: {note: moved-away-password}\n"),
    )
    assert "moved-away-password" not in everything
    assert re.search(rf"\+ env DB_SETTING={FINGERPRINT}", everything)


@pytest.mark.parametrize(
    "key", ["PGPASSWORD", "apiToken", "accessToken", "DB_PASS", "ENCRYPTION_KEY", "TOKEN2"]
)
def test_the_keys_the_issue_names_are_secret_in_every_format(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(
        tmp_path,
        monkeypatch,
        capsys,
        engine(f"{key}: first-value-xyz\n"),
        engine(f"{key}: second-value-xyz\n"),
    )
    assert "first-value-xyz" not in everything
    assert "second-value-xyz" not in everything


def test_hex_bearer_tokens_are_masked_in_argv_healthchecks_and_inline_configs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def file(digit: str) -> str:
        token = "0123456789abcdef0123456789abcde" + digit
        return engine(
            "A: b\n",
            command=f'[proxy, --header, "Authorization: Bearer {token}a"]',
            extra=(
                "    healthcheck:\n"
                f'      test: [CMD, curl, -H, "Authorization: Bearer {token}b", "http://localhost"]\n'
                "configs:\n  nginx:\n    content: |\n"
                f'      proxy_set_header Authorization "Bearer {token}c";\n'
            ),
        )

    everything = outputs(tmp_path, monkeypatch, capsys, file("1"), file("2"))
    assert "0123456789abcdef0123456789abcde" not in everything


def test_a_count_under_a_secret_like_flag_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `tokens` makes --max-prefill-tokens secret-like by the shared definition; a
    # number is not a credential, and a reviewer must see it.
    everything = outputs(
        tmp_path,
        monkeypatch,
        capsys,
        engine("A: b\n", command='[sglang, serve, --max-prefill-tokens, "32768"]'),
        engine("A: b\n", command='[sglang, serve, --max-prefill-tokens, "65536"]'),
    )
    assert "--max-prefill-tokens: 32768 -> 65536" in everything


def test_a_reference_to_a_secret_is_shown_because_it_is_not_the_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(tmp_path, monkeypatch, capsys)
    assert (
        "engine: env PROXY_API_TOKEN: ${PROXY_API_TOKEN:?requiredold} -> ${PROXY_API_TOKEN:?requirednew}"
        in everything
    )


def test_a_soft_default_is_masked_and_its_reference_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = outputs(tmp_path, monkeypatch, capsys)
    assert re.search(r"\$\{GATEWAY_TOKEN:-" + FINGERPRINT + r"\}", everything)


def test_fingerprints_are_salted_for_the_run_and_stable_within_it() -> None:
    value = "correct horse battery staple"
    plain = hashlib.sha256(value.encode()).hexdigest()[:8]
    assert fingerprint(value) == fingerprint(value)
    assert fingerprint(value) != f"<secret sha256:{plain}>"
    assert fingerprint(value) != fingerprint(value + "!")


def test_everything_printed_inside_the_boundary_is_masked_even_a_line_written_in_pieces(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with boundary() as masker:
        masker.add_value("pieces-of-a-secret")
        sys.stdout.write("a report: pieces-of-")
        sys.stdout.write("a-secret\n")
        print("error: pieces-of-a-secret", file=sys.stderr)
        sys.stdout.write("no newline at the end: pieces-of-a-secret")
    out, err = capsys.readouterr()
    assert "pieces-of-a-secret" not in out + err
    assert out.count("<secret sha256:") == 2
    assert err.startswith("error: <secret sha256:")


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("HF_TOKEN", True),
        ("PROXY_API_TOKEN", True),
        ("MY_TOKEN2", True),
        ("PGPASSWORD", True),
        ("apiToken", True),
        ("accessToken", True),
        ("DB_PASS", True),
        ("ENCRYPTION_KEY", True),
        ("TOKEN2", True),
        ("--api-key", True),
        ("Authorization", True),
        ("db.password", True),
        ("SIGNING_KEY_PATH", False),
        ("--enable-dynamic-batch-tokenizer", False),
        ("tierops.otel.config_variant", False),
    ],
)
def test_secret_looking_keys(key: str, secret: bool) -> None:
    assert secret_key(key) is secret


def test_token_shaped_text_is_masked_and_ordinary_text_is_not() -> None:
    shaped = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123"  # assembled: the token-shapes hook
    assert mask_text(f"token {shaped} here").startswith("token <secret sha256:")
    assert "s3cr3tcred" not in mask_text("-H 'Authorization: Basic s3cr3tcred'")
    assert mask_text("Authorization: Bearer ${PROXY_API_TOKEN}") == "Authorization: Bearer ${PROXY_API_TOKEN}"
    ordinary = (
        "model-sg-glm53-w4afp8-tp4-r1 "
        "fc91d24-long-context-w4afp8-c8192-qsplit-hicache-pdi1-h200-tp4-ep4-dyntok "
        "/root/.cache/huggingface/hub/models--graphistry--GLM-5.3-Flash-W4AFP8/snapshots/"
        "99f1fa70408c52b007d4fd69e02e5a522422e755 sha256:47aff791090003a37f893e998c44794c410d3f7bdfc7fdd2dfab5eb5592b30bb"
    )
    assert mask_text(ordinary) == ordinary


def _diff_in_a_new_process(repo: Path, salt: str | None) -> str:
    """`python -m rollout diff` as an operator runs it: a process (and a salt) of its own."""
    import os
    import subprocess

    env = {key: value for key, value in os.environ.items() if key != "TIEROPS_MASK_SALT"}
    if salt is not None:
        env["TIEROPS_MASK_SALT"] = salt
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(
        [sys.executable, "-m", "rollout", "diff", "--base", "HEAD"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert SECRETS["password"] not in proc.stdout + proc.stderr
    return proc.stdout


def test_a_salt_the_operator_holds_makes_fingerprints_the_same_from_run_to_run(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": compose("old")}, origin=False)
    (repo / "prod" / "x.yaml").write_text(compose("new"), encoding="utf-8")
    held = [_diff_in_a_new_process(repo, "a-ci-secret-of-the-operators") for _ in range(2)]
    assert re.findall(FINGERPRINT, held[0])  # something was masked, and the same way twice
    assert held[0] == held[1]
    other = _diff_in_a_new_process(repo, "another-secret")
    assert re.findall(FINGERPRINT, other) != re.findall(FINGERPRINT, held[0])
    # without one, each run draws its own: the same value, other fingerprints
    assert re.findall(FINGERPRINT, _diff_in_a_new_process(repo, None)) != re.findall(FINGERPRINT, held[0])


@pytest.mark.parametrize(
    ("secret", "printed"),
    [
        # `$$` is compose's literal `$`: the whole password is one literal
        ("Xk9$$mQ2vLp7", "password: Xk9$$mQ2vLp7"),
        # a default inside a default is still a literal
        ("${X:-${Y:-s3cretpw}}", "copied elsewhere: s3cretpw"),
    ],
    ids=["escaped-dollar", "nested-default"],
)
def test_literal_parts_around_escapes_and_nested_defaults_are_masked(
    secret: str, printed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with boundary() as masker:
        masker.add_document({"environment": {"DB_PASSWORD": secret}})
        print(printed)
    out = capsys.readouterr().out
    for literal in ("mQ2vLp7", "s3cretpw"):
        assert literal not in out


def test_overlapping_secrets_leave_no_tail_visible(capsys: pytest.CaptureFixture[str]) -> None:
    with boundary() as masker:
        masker.add_value("abcdefgh")
        masker.add_value("efghijklmn")
        print("x abcdefghijklmn y")
    out = capsys.readouterr().out
    assert "ijklmn" not in out and "abcd" not in out
    assert re.fullmatch(r"x " + FINGERPRINT + r" y\n", out)


def test_a_copied_secret_with_quote_and_pipe_is_masked_in_markdown_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = 'hunter2"pa|ss\\wd'
    body = "services:\n  app:\n    image: app:1\n    environment:\n      DB_PASSWORD: {}\n    labels:\n      note: {}\n"
    quoted = "'" + secret + "'"
    repo = new_repo(tmp_path, {"prod/x.yaml": body.format(quoted, '"old"')}, origin=False)
    (repo / "prod" / "x.yaml").write_text(body.format(quoted, quoted), encoding="utf-8")
    for fmt in ("text", "markdown", "json"):
        code, out, err = run_cli(monkeypatch, capsys, repo, ["diff", "--base", "HEAD", "--format", fmt])
        assert code == 0, err
        assert "note" in out
        assert "hunter2" not in out + err, fmt


@pytest.mark.parametrize("command", ["diff", "plan"])
def test_the_markdown_written_beside_json_is_the_markdown_report_and_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """`--markdown-to` (one run gives CI both formats) writes what `--format markdown` prints."""
    repo = new_repo(tmp_path, {"prod/x.yaml": compose("old")})
    commit(repo, {"prod/x.yaml": compose("new")}, "head")
    salt = "a-fixed-salt-for-this-comparison"
    monkeypatch.setenv("TIEROPS_MASK_SALT", salt)
    target = tmp_path / "report.md"
    args = [command, "--base", "HEAD~1"]
    code, data, err = run_cli(
        monkeypatch, capsys, repo, [*args, "--format", "json", "--markdown-to", str(target)]
    )
    assert code == 0, err
    code, markdown, err = run_cli(monkeypatch, capsys, repo, [*args, "--format", "markdown"])
    assert code == 0, err
    written = target.read_text(encoding="utf-8")
    assert written == markdown
    if command == "diff":  # the diff shows the changed secrets, masked (the plan names no values)
        assert re.search(FINGERPRINT, written)
    for value in SECRETS.values():
        assert value not in written
    assert data.lstrip().startswith("{")  # stdout stays the JSON


def test_every_secret_word_and_header_name_holds_a_part_the_line_filter_looks_for() -> None:
    """The boundary skips a line with none of SECRET_WORD_PARTS in it: that is
    only safe while every word that makes a key secret, and every header name, holds one."""
    from rollout.diff.masking import SECRET_WORD_PARTS
    from tierops import secrets

    words = {*secrets.SECRET_WORDS, *secrets._SECRET_ENDINGS}
    headers = {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-auth-token",
        "private-token",
    }
    for word in sorted(words | headers | {"bearer", "basic"}):
        assert any(part in word for part in SECRET_WORD_PARTS), word


LINES = [
    "    image: lmsysorg/sglang:v0.5.16",
    '      - "--option-05"',
    "      DB_PASSWORD: hunter2-but-longer",
    "      dbPass=s3cretvalue9",
    "      HF_TOKEN: " + "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "    proxy_set_header X-Api-Key abcdef123456;",
    "    curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' http://x",
    "      ba\u017fic dXNlcjpwYXNz and \u212aEY=longvalue1",  # Unicode folds U+017F with s, U+212A with k
    "      AKIA" + "ABCDEFGHIJKLMNOP and xox" + "b-0123456789-abc",
    "      note: Zq8Rk2Lm9Xv4Tn7Pb3Hw6Jd1Fs5Gc0Ya",
    "      digest: 0123456789abcdef0123456789abcdef0123",
    "      --max-prefill-tokens 32768 --api-key=sk-" + "a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q",
    "      path: /etc/nginx/tls/privkey.pem",
]


@pytest.mark.parametrize("line", LINES)
def test_the_line_filter_never_skips_a_line_the_full_reading_collects_from(
    line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rollout.diff import masking

    filtered = masking.Masker()
    filtered.add_text(line)
    monkeypatch.setattr(masking, "worth_reading", list)
    full = masking.Masker()
    full.add_text(line)
    assert filtered._shown == full._shown


def _line_by_line(lines: list[str]) -> list[str]:
    """The filter's rule, one line at a time (what the one-text scans must agree with)."""
    from rollout.diff.masking import _RUN_24, _WORD_PART
    from tierops.secrets import SHAPES as _SHAPES

    return [
        line
        for line in lines
        if not line.isascii()
        or _WORD_PART.search(line.lower())
        or _RUN_24.search(line)
        or _SHAPES.search(line)
    ]


def test_the_one_text_scans_mark_the_lines_a_search_a_line_marks() -> None:
    from rollout.diff.masking import worth_reading

    plain = [
        "",
        "x" * 23,
        "x" * 24,
        "a" * 23 + "-" + "b" * 23,
        "to",
        "ken and more",  # a word part cut by the line break: neither line holds it
        "ghp_",
        "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "-----BEGIN EC " + "PRIVATE KEY-----",
        "PASSWORD passwd pass",
    ]
    lines = LINES[:7] + plain + LINES[9:]  # LINES[7:9]: not ASCII, read line by line
    assert [line.isascii() for line in lines].count(False) == 0
    assert worth_reading(lines) == _line_by_line(lines)
    assert worth_reading(LINES) == _line_by_line(LINES)  # with non-ASCII lines: the per-line path
    assert worth_reading(["x" * 24, "y"]) == ["x" * 24]
    assert worth_reading(["to", "ken"]) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(alphabet=st.sampled_from("aAkKeEyYtTo0129+=_-. :/hfgpsx\\"), max_size=40)
        | st.sampled_from([*LINES, "hf_" + "a" * 30, "sk-" + "b" * 32, "token", "Key"]),
        max_size=12,
    )
)
def test_the_one_text_scans_agree_with_a_search_a_line_on_any_lines(lines: list[str]) -> None:
    from rollout.diff.masking import worth_reading

    assert worth_reading(lines) == _line_by_line(lines)


@pytest.mark.parametrize(
    "words",
    [
        ["sglang", "serve", "--option-05", "value-1", "--port", "8000"],
        ["sglang", "serve", "--api-key", "k3y-value-1", "--port", "8000"],
        ["curl", "--pass=hunter2hunter2"],
        ["env", "DB_PASSWORD=hunter2-but-longer", "run"],
        ["tool", "--\u212aey", "value-of-a-folded-key"],  # U+212A folds with k
        ["0", "1", "2", "3"],
    ],
)
def test_the_argv_filter_never_skips_a_list_the_full_reading_collects_from(
    words: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rollout.diff import masking

    filtered = masking.Masker()
    filtered.add_document({"command": words})
    monkeypatch.setattr(masking, "holds_a_word_part", lambda _text: True)
    full = masking.Masker()
    full.add_document({"command": words})
    assert filtered._shown == full._shown


TEXTS = [
    '{\n  "a": "hunter2-but-longer",\n  "b": "hunter2-but-longer"\n}\n',
    "Authorization:\n  s3cr3tcredential\n",  # a header's spaces span the line break
    "curl -H 'Authorization: Basic s3cr3tcred'\nnext line\n",
    "token " + "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345" + "\nsame\nsame\n",
    "-----BEGIN RSA "
    + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA "
    + "PRIVATE KEY-----\n",  # assembled: the hook
    "multi line1-of-secret\nline2-of-secret end\n",
    "caf\u00e9 hunter2-but-longer\n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_masking_line_by_line_gives_what_masking_the_whole_text_gives(text: str) -> None:
    """`Masker.mask` masks each distinct line once when nothing can match across a line
    break; the result must be the whole text's masking, byte for byte."""
    from rollout.diff.masking import Masker

    for secrets in (["hunter2-but-longer"], ["hunter2-but-longer", "line1-of-secret\nline2-of-secret"]):
        masker = Masker()
        for secret in secrets:
            masker.add_value(secret)
        twice = text * 2
        assert masker.mask(twice) == masker._mask_whole(twice)
        assert masker.mask(twice) == masker.mask(twice)  # the kept lines give the same again
    assert masker._multiline and not Masker()._multiline


@pytest.mark.parametrize("text", TEXTS)
def test_shapes_masked_line_by_line_are_the_shapes_of_the_whole_text(text: str) -> None:
    from rollout.diff.secret_values import _mask_shapes

    twice = text * 2
    assert mask_text(twice) == _mask_shapes(twice)


def test_a_secret_added_after_a_line_was_masked_is_masked_in_that_line_too() -> None:
    from rollout.diff.masking import Masker

    masker = Masker()
    text = "a: added-later-value\nb: other\n"
    assert masker.mask(text) == text
    masker.add_value("added-later-value")
    assert "added-later-value" not in masker.mask(text)


@pytest.mark.parametrize(
    "place",
    [
        '    labels:\n      com.example.note: "DB_PASSWORD=s3cr\\x65t-longvalue{v}"\n',
        '    command: ["sh", "-c", "export API_TOKEN=t0k\\u0065n-longvalue{v} && exec app"]\n',
        '    healthcheck:\n      test: ["CMD-SHELL", "curl -H \\"X-Api-Key: p\\x61ss-longvalue{v}\\" http://x/"]\n',
        '    environment:\n      - "NOTE=DB_PASS=p\\x61ss-longvalue{v}"\n',
    ],
    ids=["label", "command", "healthcheck", "assignment-in-a-value"],
)
def test_a_secret_assignment_escaped_in_the_file_is_masked_as_it_is_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], place: str
) -> None:
    """The file's line holds `\\x65`, the diff prints `e`: the one-line scalar itself is read."""
    head = "services:\n  s:\n    image: busybox\n"
    everything = outputs(
        tmp_path, monkeypatch, capsys, head + place.format(v="1"), head + place.format(v="2")
    )
    for printed in ("s3cret-longvalue", "t0ken-longvalue", "pass-longvalue"):
        assert printed not in everything
    assert re.search(FINGERPRINT, everything)


@pytest.mark.parametrize("command", ["diff", "plan"])
def test_a_markdown_target_that_cannot_be_written_is_one_line_and_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": compose("old")})
    commit(repo, {"prod/x.yaml": compose("new")}, "head")
    args = [command, "--base", "HEAD~1", "--format", "json", "--markdown-to"]
    folder = tmp_path / "reports"
    folder.mkdir()
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    kept = tmp_path / "kept.md"
    kept.write_text("the user's own file\n", encoding="utf-8")
    link = tmp_path / "link.md"
    link.symlink_to(kept)
    for target, kind in ((folder, "a directory"), (fifo, "a FIFO"), (link, "a symbolic link")):
        code, _out, err = run_cli(monkeypatch, capsys, repo, [*args, str(target)])
        assert (code, err) == (
            2,
            f"{target}: exists and is {kind}; writing replaces the target, so nothing was written; "
            "name a regular file or a new path\n",
        )
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and link.is_symlink()
    assert kept.read_text(encoding="utf-8") == "the user's own file\n"
    for parent, why in ((tmp_path / "no-such-dir", "does not exist"), (kept, "is not a directory")):
        code, _out, err = run_cli(monkeypatch, capsys, repo, [*args, str(parent / "report.md")])
        assert (code, err.split(";")[0]) == (
            2,
            f"{parent / 'report.md'}: no directory to write into: {parent} {why}",
        )
        assert "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "no-such-dir").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    code, _out, err = run_cli(monkeypatch, capsys, repo, [*args, "-"])
    assert (code, err) == (2, "--markdown-to - names no file; print the report with --format markdown\n")
    assert not (repo / "-").exists()


def _walked_mappings(masker: object, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The mappings `masker`'s walks list the children of, from now on."""
    from rollout.diff.masking import Masker

    seen: list[object] = []
    children = Masker._children

    def spy(self: Masker, node: object, secret: bool) -> object:
        seen.append(node)
        return children(self, node, secret)  # type: ignore[arg-type]

    monkeypatch.setattr(Masker, "_children", spy)
    return seen


def test_a_service_equal_to_one_walked_before_is_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Base and head share most services: the head's equal ones are skipped,
    a changed one is walked and its new secret found."""
    from rollout.diff.masking import Masker
    from tierops.yamlload import load_bytes

    base = b"services:\n  a: {command: [x, --api-key, k3y-of-a-1]}\n  b: {environment: {X: '1'}}\n"
    head = base.replace(b"X: '1'", b"API_TOKEN: t0ken-of-b-2")
    masker = Masker()
    masker.add_document(load_bytes(base, "base").documents[0])
    walked = _walked_mappings(masker, monkeypatch)
    masker.add_document(load_bytes(head, "head").documents[0])
    assert {"command": ["x", "--api-key", "k3y-of-a-1"]} not in walked
    assert {"environment": {"API_TOKEN": "t0ken-of-b-2"}} in walked
    shown = masker.mask("k3y-of-a-1 t0ken-of-b-2")
    assert "k3y-of-a-1" not in shown and "t0ken-of-b-2" not in shown


def test_an_equal_entry_under_another_secret_ness_is_walked_again() -> None:
    from rollout.diff.masking import Masker

    document = {"x-notes": {"first": {"note": "plain-looking-value"}}}
    masker = Masker()
    masker.add_document(document)
    assert masker.mask("plain-looking-value") == "plain-looking-value"
    masker.add_document(document, secret=True)
    assert masker.mask("plain-looking-value") == fingerprint("plain-looking-value")
