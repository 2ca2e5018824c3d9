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
from envdoctor.report import FORMATS, render, renderer
from envdoctor.report.interface import Area, Report

EXAMPLES = 200
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Secret values: letters and digits (numeric-looking too) and URL-safe punctuation.
secrets = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.~", min_size=6, max_size=40
).map(lambda s: "Q" + s + "Z")
url_secrets = st.text(alphabet="abcdefXYZ0123456789/-_.~!$%", min_size=4, max_size=30).map(
    lambda s: "Q" + s + "Z"
)
#: Text around the secret: anything printable, quotes, separators and newlines included.
around = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)

FORMS = [
    "HF_TOKEN={s}",
    "export WANDB_API_KEY={s}",
    "--hub_token {s}",
    "--hub-token={s}",
    "--api_key {s} extra.yaml",
    "hub_token: {s}",
    '"api_key": "{s}"',
    "'HF_TOKEN': '{s}'",
    'HF_TOKEN="{s}',
    "AWS_SECRET_ACCESS_KEY='{s} more words'",
    "password: {s}",
    "Authorization: Bearer {s}",
]
URL_FORMS = [
    "https://{s}@host/x",
    "https://user:{s}@host/x",
    "https://:{s}@host",
    "http://h/x?token={s}&page=1",
    "s3://h/?X-Amz-Signature={s}",
    "git+https://bob:{s}@github.com/o/r.git",
]


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


@pytest.mark.parametrize(
    "token",
    [
        "hf_" + "aB3" * 12,
        "ghp_" + "x1" * 18,
        "github_pat_" + "A_b" * 20,
        "AKIAIOSFODNN7EXAMPLE",
        "sk-proj-" + "k9" * 15,
        "xoxb-1234567890-abcdef",
        "local-" + "0a" * 20,
    ],
)
@settings(max_examples=30, deadline=None)
@given(before=around, after=around)
def test_known_token_shapes_are_masked_anywhere(token, before, after):
    assert token not in redact(f"{before} {token} {after}")
    assert token not in redact(f"NCCL_DEBUG_FILE=/tmp/{token}")  # value of a harmless name


def test_short_secret_is_masked_where_it_stands_not_everywhere():
    """A secret `vllm` hides after its name; the fix mentioning `vllm serve` stays right."""
    out = redact("--hub_token vllm extra.yaml; run `trl vllm-serve` then vllm serve M", known={"vllm"})
    assert out == ("--hub_token **** extra.yaml; run `trl vllm-serve` then vllm serve M")
    long = "a-long-secret-value"
    assert long not in redact(f"{long} appears here without its name", known={long})


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("max_num_batched_tokens: 8192", True),
        ("--max-tokens 512", True),
        ("pad_token: <|endoftext|>", True),
        ("eos_token_id=2", True),
        ("key 'gpus[0].index': expected int", True),
        ("TOKENIZERS_PARALLELISM=false", True),
        ("https://host:8000/v1/models", True),
        ("signature: dataparallel", True),
    ],
)
def test_ordinary_settings_are_not_masked(text, kept):
    assert (redact(text) == text) is kept


def test_secret_names():
    for name in (
        "HF_TOKEN",
        "hub_token",
        "WANDB_API_KEY",
        "apiKey",
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "password",
        "HUGGING_FACE_HUB_TOKEN",
        "db-password",
    ):
        assert is_secret(name), name
    for name in (
        "max_tokens",
        "pad_token",
        "NCCL_SOCKET_IFNAME",
        "key",
        "TOKENIZERS_PARALLELISM",
        "bos_token_id",
        "num_tokens",
    ):
        assert not is_secret(name), name


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=80))
def test_escape_leaves_no_raw_control_character(text):
    out = escape_controls(text)
    assert not RAW_CONTROL.search(out.replace("\n", "").replace("\t", ""))
    out.encode("utf-8")  # lone surrogates escaped too: encoding cannot fail


def _report(text: str, secret: str) -> Report:
    finding = Finding(
        "CFG004",
        Severity.ERROR,
        f"key {text!s} --hub_token {secret}",
        fix=f"remove {text}",
        evidence={text: text, "hub_token": secret},
    )
    area = Area(
        key="config",
        title=f"GRPO {text}",
        summary=text,
        findings=[finding],
        ran=["CFG004"],
        skipped={"CFG001": text},
    )
    return Report(
        areas=[area],
        subject=text,
        layout=[{"gpu": 0, "model": text, "free": "1", "role": text}],
        layout_summary=text,
        extra={"tables": [{"title": text, "columns": [text], "rows": [[text]]}]},
    )


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
    crash = Finding(
        "PKG001", Severity.ERROR, "rule PKG001 failed internally: KeyError", evidence={"internal": True}
    )
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
    config = {
        "num_generations": 3,
        "per_device_train_batch_size": 4,
        "hub_token": "CANARY-42",
        "vllm_server_base_url": "https://u:CANARYurl@h:8000",
    }
    launch = f"HF_TOKEN={token} torchrun --nproc_per_node 2 train.py --hub_token {token}"
    with pytest.raises(PreflightError) as caught:
        preflight(config=config, launch=launch, facts=facts, network=False)
    text = str(caught.value) + json.dumps(renderer("json")(caught.value.report))
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


# ------------------------------------------------------------------ issue 30: every form
#: (form, secret): each form a secret is written in (issue 30's "Secrets printed"); the secret
#: is what must never come out. ``{s}`` is the secret.
HF_SHAPED = "hf_CANARYrepr" + "b" * 30
SECRET_FORMS = [
    ("vllm serve Qwen --api-key {s} --port 8000", "CANARYapikey1"),
    ("vllm serve Qwen --api-key={s}", "CANARYapikey2"),
    ("PGPASSWORD={s} psql -h db", "CANARYpgpw"),
    ("MYSQL_PWD={s} mysql -h db", "CANARYmypwd"),
    ("aws_secret_access_key = {s}", "CANARYawsspaced"),
    ("Authorization: token {s}", "CANARYauthtoken"),
    ("curl -H 'Authorization: token {s}' https://h/x", "CANARYcurlauth"),
    ("HF_TOKEN= {s}", "CANARYhfspace"),
    ("wandb: Currently logged in with key {s}", "CANARY0a1b2c3d4e5f"),
    ("wandb login {s}", "CANARY9f8e7d6c5b4a"),
    ("mysql -h db -uroot -p{s} train", "CANARYmysqlp"),
    ("rsync from //bob:{s}@host/x", "CANARYschemerel"),
    ("postgres at bob:{s}@10.0.0.1:5432", "CANARYnoscheme"),
    ("GET /app;jsessionid={s} HTTP/1.1", "CANARYjsession"),
    ("token = {s}", "CANARYtokenspaced"),
    ("python train.py --hub_token 'ab'\"'\"'{s}' x.yaml", "CANARYshlexjoin"),  # shlex.join
    ("ValueError: bad name 'x\\x1b{s}'", HF_SHAPED),  # a repr()-escaped control first
    ("https://bob:{s}@hub.example/x", "CANARYurlpw"),
    ('{{"api_key": "{s}"}}', "CANARYjsonkey"),
]
#: Measurements and tokenizer settings named like secrets: shown as they are.
NOT_SECRETS = [
    "kv_bytes_per_token: 57344",
    "max_tokens=512",
    "num_tokens: 3",
    "prompt_tokens=7",
    "tokens: 12",
    "--max-tokens 512",
    "pad_token: <pad>",
    "sort_keys=True",
    "PWD=/home/u",
    "image nvcr.io/nvidia/pytorch:24.01-py3@sha256:ab",
    '"num_key_value_heads": 8',
    'if area.key == "layout":',
    "script_keys = [f for f in x]",
]


@pytest.mark.parametrize(("form", "secret"), SECRET_FORMS)
@settings(max_examples=25, deadline=None)
@given(before=around, after=around)
def test_every_form_of_issue_30_is_masked_anywhere(form, secret, before, after):
    text = form.format(s=secret)
    assert secret not in redact(text)
    assert secret not in redact(f"{before}\n{text}\n{after}")
    assert secret not in redact(f"{before} {text} {after}")


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_measurements_named_like_secrets_stay_visible(text):
    assert redact(text) == text


def test_secret_names_are_precise():
    for name in (
        "api-key",
        "--api-key",
        "PGPASSWORD",
        "MYSQL_PWD",
        "jsessionid",
        "PHPSESSID",
        "aws_secret_access_key",
        "authToken",
        "X-Api-Key",
        "Proxy-Authorization",
    ):
        assert is_secret(name), name
    for name in (
        "kv_bytes_per_token",
        "tokens",
        "max_tokens",
        "num_tokens",
        "prompt_tokens",
        "max_new_tokens",
        "tokens_per_second",
        "token_count",
        "PWD",
        "OLDPWD",
        "sort_keys",
        "HF_TOKEN_PATH",
    ):
        assert not is_secret(name), name


def test_a_secret_is_masked_before_quoting_or_escaping_can_split_it():
    """``shlex.join`` quotes ``ab'SECRET`` in three pieces; repr() puts ``\\x07`` right before a
    token: the whole word is masked either way, and masking never leaves half a quote open."""
    import shlex

    line = shlex.join(["vllm", "serve", "M", "--api-key", "ab'CANARYq", "--port", "8000"])
    assert redact(line) == "vllm serve M --api-key **** --port 8000"
    assert redact(repr("bad \x07" + HF_SHAPED)) == "'bad \\x07****'"


# ------------------------------------------------------------- every command × format
CLI_FORMATS = ("text", "json", "junit", "sarif")
ALLOC = "expandable_segments:True --api-key CANARYalloc"
SHORT_KEY = "Ck3y"  # shorter than MIN_GLOBAL: masked where it stands, not everywhere


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Inputs carrying every form: a log, snapshots (variables, GPU process command lines), a
    config, a requirements file with a ``token = …`` line, a vLLM server line with --api-key."""
    from tests.conftest import snapshot

    root = tmp_path_factory.mktemp("redact")
    lines = [form.format(s=secret) for form, secret in SECRET_FORMS]
    log = "\n".join(lines) + (
        '\nTraceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        f"ValueError: invalid --api-key CANARYexc1 for //bob:CANARYexc2@h and '\\x07{HF_SHAPED}'\n"
    )
    (root / "train.log").write_text(log)
    snap = snapshot(2)
    snap["env"] = {
        "PYTORCH_CUDA_ALLOC_CONF": ALLOC,
        **{f"VLLM_NOTE_{i}": line for i, line in enumerate(lines)},
    }
    snap["gpus"][0]["processes"] = [
        {"pid": 7, "name": "vllm serve Qwen --api-key CANARYproc", "used_mib": 1000}
    ]
    (root / "a.json").write_text(json.dumps(snap))
    (root / "b.json").write_text(json.dumps(snapshot(2)))
    (root / "grpo.yaml").write_text("use_vllm: true\nvllm_mode: server\n")
    (root / "requirements.txt").write_text("trl==1.16.0\ntoken = CANARYreqline\n")
    return root


def _canaries(text: str) -> list[str]:
    return re.findall(r"CANARY\w{0,12}|" + SHORT_KEY, text)


def _assert_clean(proc, out_file=None, fmt="text"):
    texts = {"stdout": proc.stdout, "stderr": proc.stderr}
    if out_file is not None and out_file.exists():
        texts[str(out_file.name)] = out_file.read_text()
    for where, text in texts.items():
        # envdoctor's own traceback (a log's quoted one, in triage's issue draft, is content)
        assert not re.search(r'File "[^"]*envdoctor/[^"]*", line \d+', text), text[-2000:]
        assert not _canaries(text), (where, _canaries(text))
        assert not RAW_CONTROL.search(text.replace("\n", "").replace("\t", "")), where
    body = texts.get(str(out_file.name)) if out_file is not None else None
    if body and fmt in ("json", "sarif"):
        json.loads(body)
    if body and fmt == "junit":
        ET.fromstring(body.encode())


def _commands() -> dict[str, list[str]]:
    server = f"CUDA_VISIBLE_DEVICES=1 vllm serve Qwen/Qwen2.5-0.5B --api-key {SHORT_KEY}"
    return {
        "check": [
            "check",
            "--facts",
            "a.json",
            "--config",
            "grpo.yaml",
            "--no-network",
            "-v",
            "--launch",
            "accelerate launch --num_processes 1 train.py",
            "--launch",
            server,
        ],
        "triage": ["triage", "train.log", "--facts", "a.json", "-v", "--launch", server],
        "diff": ["diff", "b.json", "a.json", "-v"],
        "hook": ["hook", "grpo.yaml", "requirements.txt", "-v"],
    }


@pytest.mark.parametrize("fmt", CLI_FORMATS)
@pytest.mark.parametrize("command", ["check", "triage", "diff", "hook"])
def test_no_secret_in_any_command_or_format(hostile, command, fmt):
    """ALC001's echo of PYTORCH_CUDA_ALLOC_CONF, LAY012's fix with --api-key, triage's context
    and exception lines, diff's variables and process command lines, the hook's -v notes:
    every form, every format, stdout, stderr and the written report."""
    from tests.conftest import run_cli

    out = hostile / f"{command}.{fmt}"
    proc = run_cli(*_commands()[command], "--format", fmt, "-o", str(out), cwd=hostile)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    _assert_clean(proc, out, fmt)
    if fmt == "text":  # and straight to the terminal
        _assert_clean(run_cli(*_commands()[command], cwd=hostile))


def test_no_secret_in_snapshots_collect_writes(hostile, tmp_path):
    """A snapshot holds variables and GPU process command lines (from /proc): a node whose
    server runs with --api-key, a variable holding any form."""
    from envdoctor.facts.snapshot import dumps, from_dict
    from envdoctor.redact import output_text
    from tests.conftest import run_cli

    facts = from_dict(json.loads((hostile / "a.json").read_text()), "a.json")
    text = output_text(dumps(facts))
    assert not _canaries(text) and "****" in json.loads(text)["gpus"][0]["processes"][0]["name"]
    env = {f"VLLM_NOTE_{i}": form.format(s=secret) for i, (form, secret) in enumerate(SECRET_FORMS)}
    out = tmp_path / "node.json"
    proc = run_cli("collect", "--no-gpu", "-o", str(out), env={**env, "PYTORCH_CUDA_ALLOC_CONF": ALLOC})
    assert proc.returncode == 0, proc.stderr
    _assert_clean(proc, out, "json")


def test_plan_memory_shows_measurements_named_like_secrets(tmp_path):
    from tests.conftest import run_cli, snapshot

    facts = tmp_path / "f.json"
    facts.write_text(json.dumps(snapshot(2)))
    proc = run_cli(
        "plan-memory",
        "--facts",
        str(facts),
        "--model-params",
        "7B",
        "--format",
        "json",
        "--",
        "accelerate",
        "launch",
        "--num_processes",
        "2",
        "train.py",
    )
    model = json.loads(proc.stdout)["model"]
    assert isinstance(model["kv_bytes_per_token"], int) and model["kv_bytes_per_token"] > 0


def test_error_paths_carry_no_secret(hostile):
    """--select echoes what it was given; repr() escapes a control character right before the
    token."""
    from tests.conftest import run_cli

    for args in (
        ("check", "--facts", "b.json", "--select", f"\x07{HF_SHAPED}"),
        ("check", "--facts", "b.json", "--ignore", f"x,--api-key={SHORT_KEY}"),
        ("explain", f"\x1b{HF_SHAPED}"),
    ):
        proc = run_cli(*args, cwd=hostile)
        assert proc.returncode == 2
        _assert_clean(proc)


# --------------------------------------------------------------------------- escaping
HOSTILE_NAMES = ["g\x1b]0;PWNED\x07\u202eeulav.yaml", "x\n✓ No issues found.\ny.yaml", "a b%#?&.yaml"]


@pytest.fixture
def hostile_names(tmp_path):
    for name in HOSTILE_NAMES:
        (tmp_path / name).write_text(
            "use_vllm: true\nvllm_mode: server\nnum_generations: 1\nper_device_train_batch_size: 4\n"
        )
    (tmp_path / "requirements.txt").write_text("trl==1.16.0\n")
    return tmp_path


def test_hook_junit_with_hostile_file_names_is_well_formed(hostile_names):
    from tests.conftest import run_cli

    proc = run_cli("hook", *HOSTILE_NAMES, "--format", "junit", cwd=hostile_names)
    assert proc.returncode in (0, 1), proc.stderr
    root = ET.fromstring(proc.stdout.encode())
    names = [s.get("name") for s in root.iter("testsuite")]
    assert any("g\\x1b]0;PWNED\\x07\\u202eeulav.yaml" in n for n in names), names
    assert any("x\\n✓ No issues found.\\ny.yaml" in n for n in names), names
    for case in root.iter("testcase"):
        assert not RAW_CONTROL.search(case.get("classname")) and "\n" not in case.get("classname")
    assert not RAW_CONTROL.search(proc.stdout.replace("\n", "")) and "\u202e" not in proc.stdout


def test_a_path_never_starts_a_line_of_its_own(hostile_names):
    """A file named ``x\\n✓ No issues found.\\ny.yaml`` cannot print a forged verdict: the text
    report and the hook's header show it escaped, on the line it belongs to."""
    from tests.conftest import run_cli

    proc = run_cli("hook", *HOSTILE_NAMES, "--format", "text", "-v", cwd=hostile_names)
    lines = proc.stdout.splitlines()
    assert not any(line.startswith("✓ No issues found.") and "y.yaml" not in line for line in lines[:-1]), (
        proc.stdout
    )
    assert "── x\\n✓ No issues found.\\ny.yaml ──" in lines
    assert "\u202e" not in proc.stdout + proc.stderr
    from tests.conftest import snapshot

    (hostile_names / "f.json").write_text(json.dumps(snapshot(2)))
    for name, where in (
        ("x\n✓ No issues found.\ny.yaml", "stdout"),  # the report's header
        ("missing\n✓ No issues found.\n.yaml", "stderr"),
    ):  # the error
        check = run_cli("check", "--config", name, "--no-network", "--facts", "f.json", cwd=hostile_names)
        shown = getattr(check, where)
        assert name.replace("\n", "\\n") in shown, shown
        assert not any(line.startswith("✓ No issues found.") for line in shown.splitlines())


def test_sarif_uri_is_percent_encoded(hostile_names):
    from urllib.parse import unquote

    from tests.conftest import run_cli

    proc = run_cli("hook", *HOSTILE_NAMES, "--format", "sarif", "-v", cwd=hostile_names)
    log = json.loads(proc.stdout)
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
        for loc in r["locations"]
    }
    assert "a%20b%25%23%3F%26.yaml" in uris
    for uri in uris:
        assert re.fullmatch(r"[A-Za-z0-9._~/%-]+", uri), uri
    assert {unquote(u) for u in uris} >= {n for n in HOSTILE_NAMES}


def test_every_format_escapes_the_same_way():
    """ESC, BEL and U+202E are shown as the same escapes in text, JSON, JUnit and SARIF; a
    newline starts no line in text, JUnit or SARIF."""
    path = "c\x1b[31m\x07\u202e\nforged.yaml"
    finding = Finding("CFG004", Severity.ERROR, f"bad key in {path}", evidence={"file": path})
    report = Report(
        areas=[Area(key="config", title="GRPO config", summary=path, findings=[finding], ran=["CFG004"])],
        subject=path,
    )
    shown = "c\\x1b[31m\\x07\\u202e\\nforged.yaml"
    assert shown in render(report, "text")
    assert json.loads(render(report, "json"))["subject"] == "c\\x1b[31m\\x07\\u202e\nforged.yaml"
    assert (
        ET.fromstring(render(report, "junit").encode()).find(".//failure").get("message")
        == f"bad key in {shown}"
    )
    sarif = json.loads(render(report, "sarif"))["runs"][0]["results"][0]
    assert sarif["message"]["text"] == f"bad key in {shown}"
    assert (
        sarif["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        == "c%1B%5B31m%07%E2%80%AE%0Aforged.yaml"
    )


def test_the_last_pass_makes_any_xml_well_formed():
    """XML built elsewhere than the JUnit renderer (the hook merges documents): a raw control
    character in an attribute, a secret, a newline in a name; the last pass cleans it."""
    from envdoctor.redact import output_text

    raw = (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="x\x1b[2J'
        '\u202e.yaml" tests="1"><testcase classname="a" name="--api-key CANARYxml"/>'
        "</testsuite></testsuites>\n"
    )
    out = output_text(raw)
    suite = ET.fromstring(out.encode()).find("testsuite")
    assert suite.get("name") == "x\\x1b[2J\\u202e.yaml" and "CANARY" not in out
    fine = (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="a&#10;'
        '&#10;✓ No issues found.&#10;y.yaml" /></testsuites>\n'
    )
    assert (
        ET.fromstring(output_text(fine).encode()).find("testsuite").get("name")
        == "a\\n\\n✓ No issues found.\\ny.yaml"
    )


def test_a_secret_option_value_with_a_space_is_masked_word_by_word(tmp_path, monkeypatch):
    """collect reads GPU processes' command lines from /proc and joins the words: a value
    holding a space (`--api-key 'a b'`) must lose both words, not only the first."""
    import subprocess
    import sys

    from envdoctor.facts.gpus import process_name
    from envdoctor.redact import mask_argv

    assert mask_argv(["vllm", "serve", "--api-key", "s3cr3t part2", "--port", "8000"]) == [
        "vllm",
        "serve",
        "--api-key",
        "****",
        "--port",
        "8000",
    ]
    assert mask_argv(["x", "--hub_token=ab cd"]) == ["x", "--hub_token=****"]
    assert mask_argv(["x", "--max_tokens", "512"]) == ["x", "--max_tokens", "512"]
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "--api-key", "topsecret secondword"]
    )
    try:
        import time
        from pathlib import Path

        for _ in range(200):  # until the child has exec'd its own command line
            if b"--api-key" in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
                break
            time.sleep(0.05)
        name = process_name(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert "topsecret" not in name and "secondword" not in name and "--api-key ****" in name


def test_printable_text_holds_no_character_to_escape():
    """escape_controls returns a printable text as it is (str.isprintable, without compiling its
    pattern): every character it escapes is one Python deems not printable."""
    from envdoctor.redact import _CONTROL_NL, escape_controls

    escaped = [chr(c) for c in range(0x110000) if _CONTROL_NL.fullmatch(chr(c))]
    assert len(escaped) > 2000  # C0, C1, bidi marks, surrogates, non-characters
    assert not any(c.isprintable() for c in escaped)
    assert escape_controls("plain text, é ü 中文") == "plain text, é ü 中文"


def test_token_hints_name_every_token_start():
    """redact runs the token pattern only on a text holding one of its starts: each token shape
    starts with one (a token that does not would go unmasked)."""
    from envdoctor.redact import _TOKEN_HINTS, redact

    for token in (
        "hf_" + "a" * 34,
        "api_org_" + "b" * 34,
        "ghp_" + "c" * 36,
        "gho_" + "c" * 36,
        "ghu_" + "c" * 36,
        "ghs_" + "c" * 36,
        "ghr_" + "c" * 36,
        "github_pat_" + "d" * 40,
        "AKIA" + "E" * 16,
        "ASIA" + "E" * 16,
        "AGPA" + "E" * 16,
        "AIDA" + "E" * 16,
        "AROA" + "E" * 16,
        "ANPA" + "E" * 16,
        "sk-" + "f" * 30,
        "xoxb-" + "1" * 12,
        "local-" + "0" * 40,
        "wandb_v1_" + "g" * 24,
    ):
        assert any(token.startswith(h) for h in _TOKEN_HINTS), token
        assert token not in redact(f"see {token} here"), token
