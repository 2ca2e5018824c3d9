"""The redaction pass itself, property-based: any secret in any of the forms people write it,
inside any surrounding text, never comes out; short common words are masked only where they
stand as a secret's value; control characters never come out raw; every renderer applies it."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.findings import Finding, Severity
from envdoctor.redact import MASK, escape_controls, is_secret, redact
from envdoctor.report import FORMATS, render
from envdoctor.report.interface import Area, Report

EXAMPLES = 200
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Secret values: letters and digits (numeric-looking too) and URL-safe punctuation.
secrets = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.~",
                  min_size=6, max_size=40).map(lambda s: "Q" + s + "Z")
url_secrets = st.text(alphabet="abcdefXYZ0123456789/-_.~!$%", min_size=4, max_size=30).map(
    lambda s: "Q" + s + "Z")
#: Text around the secret: anything printable, quotes, separators and newlines included.
around = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)

FORMS = [
    "HF_TOKEN={s}", "export WANDB_API_KEY={s}", "--hub_token {s}", "--hub-token={s}",
    "--api_key {s} extra.yaml", "hub_token: {s}", '"api_key": "{s}"', "'HF_TOKEN': '{s}'",
    'HF_TOKEN="{s}', "AWS_SECRET_ACCESS_KEY='{s} more words'", "password: {s}",
    "Authorization: Bearer {s}",
]
URL_FORMS = ["https://{s}@host/x", "https://user:{s}@host/x", "https://:{s}@host",
             "http://h/x?token={s}&page=1", "s3://h/?X-Amz-Signature={s}",
             "git+https://bob:{s}@github.com/o/r.git"]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.sampled_from(FORMS), secrets, around, around)
def test_no_secret_survives_in_any_form(form, secret, before, after):
    text = f"{before} {form.format(s=secret)} {after}"
    assert secret not in redact(text)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.sampled_from(URL_FORMS), url_secrets, around, around)
def test_no_url_credential_survives(form, secret, before, after):
    if form.startswith("https://{s}@"):  # a user-only token: a '/' there would start a path
        secret = secret.replace("/", "")
    text = f"{before} {form.format(s=secret)} {after}"
    assert secret not in redact(text)


@pytest.mark.parametrize("token", [
    "hf_" + "aB3" * 12, "ghp_" + "x1" * 18, "github_pat_" + "A_b" * 20, "AKIAIOSFODNN7EXAMPLE",
    "sk-proj-" + "k9" * 15, "xoxb-1234567890-abcdef", "local-" + "0a" * 20])
@settings(max_examples=30, deadline=None)
@given(before=around, after=around)
def test_known_token_shapes_are_masked_anywhere(token, before, after):
    assert token not in redact(f"{before} {token} {after}")
    assert token not in redact(f"NCCL_DEBUG_FILE=/tmp/{token}")  # value of a harmless name


def test_short_secret_is_masked_where_it_stands_not_everywhere():
    """A secret `vllm` hides after its name; the fix mentioning `vllm serve` stays right."""
    out = redact("--hub_token vllm extra.yaml; run `trl vllm-serve` then vllm serve M",
                 known={"vllm"})
    assert out == ("--hub_token **** extra.yaml; run `trl vllm-serve` then vllm serve M")
    long = "a-long-secret-value"
    assert long not in redact(f"{long} appears here without its name", known={long})


@pytest.mark.parametrize(("text", "kept"), [
    ("max_num_batched_tokens: 8192", True), ("--max-tokens 512", True),
    ("pad_token: <|endoftext|>", True), ("eos_token_id=2", True),
    ("key 'gpus[0].index': expected int", True), ("TOKENIZERS_PARALLELISM=false", True),
    ("https://host:8000/v1/models", True), ("signature: dataparallel", True),
])
def test_ordinary_settings_are_not_masked(text, kept):
    assert (redact(text) == text) is kept


def test_secret_names():
    for name in ("HF_TOKEN", "hub_token", "WANDB_API_KEY", "apiKey", "AWS_SECRET_ACCESS_KEY",
                 "GITHUB_TOKEN", "password", "HUGGING_FACE_HUB_TOKEN", "db-password"):
        assert is_secret(name), name
    for name in ("max_tokens", "pad_token", "NCCL_SOCKET_IFNAME", "key", "TOKENIZERS_PARALLELISM",
                 "bos_token_id", "num_tokens"):
        assert not is_secret(name), name


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=80))
def test_escape_leaves_no_raw_control_character(text):
    out = escape_controls(text)
    assert not RAW_CONTROL.search(out.replace("\n", "").replace("\t", ""))
    out.encode("utf-8")  # lone surrogates escaped too: encoding cannot fail


def _report(text: str, secret: str) -> Report:
    finding = Finding("CFG004", Severity.ERROR, f"key {text!s} --hub_token {secret}",
                      fix=f"remove {text}", evidence={text: text, "hub_token": secret})
    area = Area(key="config", title=f"GRPO {text}", summary=text, findings=[finding],
                ran=["CFG004"], skipped={"CFG001": text})
    return Report(areas=[area], subject=text, layout=[{"gpu": 0, "model": text, "free": "1",
                                                       "role": text}],
                  layout_summary=text, extra={"tables": [{"title": text, "columns": [text],
                                                          "rows": [[text]]}]})


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40), secrets)
def test_every_renderer_masks_and_escapes(text, secret):
    report = _report(text, secret)
    for fmt in FORMATS:
        out = render(report, fmt, verbose=True)
        assert secret not in out
        if fmt == "json":
            json.loads(out)
            assert not RAW_CONTROL.search(out)
        else:
            assert not RAW_CONTROL.search(out.replace("\n", "").replace("\t", "")), fmt
        if fmt == "junit":
            ET.fromstring(out.encode())


def test_long_values_are_cut_in_output():
    report = _report("v" * 8 * 1024 * 1024, "Qsecret123Z")
    out = render(report, "text", verbose=True)
    assert len(out) < 100_000 and "characters in all)" in out


def test_a_crashed_rule_makes_the_report_exit_2():
    crash = Finding("PKG001", Severity.ERROR, "rule PKG001 failed internally: KeyError",
                    evidence={"internal": True})
    report = Report(areas=[Area(key="packages", title="Packages", findings=[crash])])
    assert report.exit_code() == 2 and report.exit_code(strict=True) == 2
    assert Report(areas=[]).exit_code() == 0
    assert MASK == "****"


def test_preflight_errors_carry_no_secret():
    """The API's exceptions and the ``Report`` it returns hold no secret either."""
    from envdoctor.api import PreflightError, preflight
    from tests.conftest import snapshot

    token = "hf_CANARYapi" + "k" * 30
    facts = snapshot(2)
    facts["env"] = {"HF_ENDPOINT": "https://:CANARYpw@hub.example"}
    config = {"num_generations": 3, "per_device_train_batch_size": 4, "hub_token": "CANARY-42",
              "vllm_server_base_url": "https://u:CANARYurl@h:8000"}
    launch = f"HF_TOKEN={token} torchrun --nproc_per_node 2 train.py --hub_token {token}"
    with pytest.raises(PreflightError) as caught:
        preflight(config=config, launch=launch, facts=facts, network=False)
    text = str(caught.value) + json.dumps(FORMATS["json"](caught.value.report))
    assert "CANARY" not in text and "CFG002" in text
    with pytest.raises(PreflightError) as bad:
        preflight(config={}, launch=f'HF_TOKEN={token} torchrun "t.py', facts=facts)
    assert "CANARY" not in str(bad.value) and "HF_TOKEN=****" in str(bad.value)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=30), secrets, st.sampled_from(FORMS + URL_FORMS))
def test_the_last_pass_keeps_json_valid(text, secret, form):
    """``emit``'s pass over a finished JSON document masks inside its strings and keeps it
    parseable, even for an unbalanced quote inside a string; control characters in its strings
    become the escapes text shows (``\\x1b``)."""
    from envdoctor.redact import output_text

    doc = json.dumps({"message": f"{text} {form.format(s=secret)}", "n": [1, text]}, indent=2)
    out = output_text(doc)
    assert secret not in out
    shown = escape_controls(text)
    assert json.loads(out)["n"] == [1, shown] or MASK in json.dumps(json.loads(out)["n"])


def test_git_refs_in_urls_are_not_user_information():
    fix = "pip install 'trl @ git+https://github.com/huggingface/trl@v0.19.0'"
    assert redact(fix) == fix
    assert redact("git+https://bob:tok/en@github.com/o/r@main") == "git+https://****@main"
