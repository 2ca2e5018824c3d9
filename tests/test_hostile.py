"""Hostile input (issue 19): every subcommand × output format fed canary secrets and control
characters, plus inputs built to exhaust time or memory.

Each run is the real CLI in a new process, in a scratch folder with its own HOME and TMPDIR,
under a 1.5 GiB address-space limit and a generous wall-clock limit (a hang or a blow-up fails
the test; nothing here times anything). Asserted for every run: no traceback, the documented
exit code, no canary and no raw control character in stdout or stderr, JUnit that parses, and
nothing written but the requested output.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT, snapshot

HF = "hf_CANARYhfa1B2c3D4e5F6g7H8i9J0k1L2m3N4"
GH = "ghp_CANARYgh" + "x" * 30
AWS = "AKIACANARYAWS1234567"
OPENAI = "sk-proj-CANARYoa" + "z" * 24
NUMERIC = "98765432123456"  # a numeric-looking secret
CANARIES = ("CANARY", NUMERIC)
ESC = "\x1b]0;PWNED\x07\x1b[2J"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
LIMIT_AS = 1536 * 1024 * 1024


def _limits() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Path:
    """A folder holding every hostile input; commands run in ``work/``."""
    root = tmp_path_factory.mktemp("hostile")
    work, home, tmp = root / "work", root / "home", root / "tmp"
    for folder in (work, home, tmp):
        folder.mkdir()
    snap = snapshot(2)
    snap["hostname"] = f"node{ESC}"
    snap["gpus"][0]["name"] = f"NVIDIA H100{ESC}"
    snap["packages"]["peft"] = {"version": f"0.17.0{ESC}"}
    snap["env"] = {
        "HF_TOKEN": HF,
        "NCCL_DEBUG_FILE": GH,
        "HF_ENDPOINT": "https://bob:CANARY/pw@hub.example/x",
        "VLLM_URL": "https://hub.example/x?token=CANARYquery&page=1",
        "HF_HUB_URL": "https://:CANARYempty@hub.example",
        "TRL_MIRROR": "https://CANARYusertoken@hub.example",
        "NCCL_SOCKET_IFNAME": f"eth0{ESC}",
    }
    (work / "bad.json").write_text(json.dumps(snap))
    (work / "good.json").write_text(json.dumps(snapshot(2)))
    (work / "grpo.yaml").write_text(
        f"use_vllm: true\nvllm_mode: server\nnum_generations: 3\n"
        f"per_device_train_batch_size: 4\nhub_token: {OPENAI}\n"
        f"env:\n  WANDB_API_KEY: {AWS}\n"
        f"vllm_server_base_url: https://bob:CANARYpw@127.0.0.1:1\n"
        f'"bad{ESC}key": 1\n"output_dir": "{ESC}"\n'.replace("\x07", "\\a").replace("\x1b", "\\e")
    )
    (work / "train.log").write_text(
        f"HF_TOKEN={HF} python train.py --hub_token {NUMERIC}\n{ESC}\n"
        f"Authorization: Bearer CANARYbearer123456\nrequests to https://:CANARYempty@h/x\n"
        + (ROOT / "tests/triage/logs/dataparallel_refusal.log").read_text()
        + f"\nValueError: token={GH} {ESC}\n"
    )
    return root


def _launch() -> list[str]:
    return [
        f"HF_TOKEN={HF}",
        "HF_ENDPOINT=https://:CANARYempty@hub.example",
        "torchrun",
        "--nproc_per_node",
        "1",
        f"tr{ESC}ain.py",
        "--hub_token",
        NUMERIC,
        "extra.yaml",
        "--api_key",
        "CANARY quoted value",
    ]


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def run(
    place: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 90
) -> subprocess.CompletedProcess:
    """The CLI in ``place/work`` with HOME/TMPDIR inside ``place``; nothing else is written."""
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CUDA_", "PYTORCH_", "HF_", "NCCL_", "VLLM_", "TRL_"))
    }
    full.update(
        NO_COLOR="1",
        HOME=str(place / "home"),
        TMPDIR=str(place / "tmp"),
        XDG_CACHE_HOME=str(place / "home/.cache"),
        **(env or {}),
    )
    before = _tree(place)
    proc = subprocess.run(
        [sys.executable, "-m", "envdoctor", *args],
        capture_output=True,
        cwd=place / "work",
        env=full,
        timeout=timeout,
        preexec_fn=_limits,
    )
    out = subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )
    assert _tree(place) == before, "something was written"
    return out


def assert_clean(proc: subprocess.CompletedProcess, codes: tuple[int, ...], fmt: str = "text"):
    both = proc.stdout + proc.stderr
    assert proc.returncode in codes, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in both, both[-2000:]
    for canary in CANARIES:
        assert canary not in both, both[max(0, both.find(canary) - 300) : both.find(canary) + 100]
    assert not RAW_CONTROL.search(both), repr(both[RAW_CONTROL.search(both).start() - 80 :][:160])
    if fmt == "json" and proc.stdout:
        json.loads(proc.stdout)
    if fmt == "junit" and proc.stdout:
        ET.fromstring(proc.stdout.encode())


FORMATS = ("text", "json", "junit")


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_with_secrets_and_control_characters(place, fmt):
    for verbose in ((), ("-v",)):
        proc = run(
            place,
            "check",
            "--facts",
            "bad.json",
            "--config",
            "grpo.yaml",
            "--no-network",
            "--format",
            fmt,
            *verbose,
            "--",
            *_launch(),
        )
        assert_clean(proc, (0, 1), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_diff_triage_and_hook(place, fmt):
    assert_clean(run(place, "diff", "good.json", "bad.json", "--format", fmt, "-v"), (0, 1), fmt)
    assert_clean(
        run(
            place,
            "triage",
            "train.log",
            "--facts",
            "bad.json",
            "--format",
            fmt,
            "-v",
            "--launch",
            " ".join(_launch()[:3] + ["t.py"]),
        ),
        (1,),
        fmt,
    )
    assert_clean(run(place, "hook", "grpo.yaml", "--format", fmt, "-v", "--ignore", "PKG"), (0, 1), fmt)


def test_collect_masks_every_secret_form(place):
    env = {
        "HF_TOKEN": HF,
        "NCCL_DEBUG_FILE": GH,
        "HF_ENDPOINT": "https://bob:CANARY/pw@h/x",
        "VLLM_URL": "https://h/x?token=CANARYquery&page=1",
        "HF_MIRROR": "https://:CANARYe@h",
        "TRL_MIRROR": "https://CANARYusertoken@h",
        "NCCL_X": f"x{ESC}",
    }
    proc = run(place, "collect", "--no-gpu", env=env)
    assert_clean(proc, (0,), "json")
    assert json.loads(proc.stdout)["env"]["HF_TOKEN"] == "****"


def test_bad_input_errors_carry_no_secret(place):
    """Unbalanced quotes, bad options, unknown rules: exit 2, the input named, nothing leaked."""
    for args in (
        ("check", "--facts", "good.json", "--launch", f'HF_TOKEN={HF} torchrun "t.py'),
        ("check", "--facts", "good.json", "--launch", f"torchrun --hub_token '{NUMERIC} t.py"),
        ("explain", f"{HF}{ESC}"),
        ("rules", "--area", f"{GH}{ESC}"),
        ("probe", "--timeout", "-1"),
        ("probe", "--timeout", "nan"),
        ("check", "--facts", "good.json", "--probe", "--probe-timeout", "inf"),
        ("collect", "--bogus", HF),
    ):
        assert_clean(run(place, *args), (2,))


def test_broken_pipe_exits_quietly(place):
    """`envdoctor rules | head -1`: the reader leaves early; no error, 0 or 141, never 1."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from envdoctor.cli import main; "
            "sys.argv = ['envdoctor', 'check', '--facts', 'bad.json', '-v', "
            "'--format', 'json']; main()",
        ],
        cwd=place / "work",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in (0, 141) and "Error" not in err and "Traceback" not in err


# ---------------------------------------------------------------- exhausting time and memory
def _laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\nnum_generations: 4\n"


def _deep_aliases() -> str:
    return "x0: &x0 [1]\n" + "".join(f"x{i}: &x{i} [*x{i - 1}]\n" for i in range(1, 5000))


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("laughs.yaml", _laughs(), "aliases (*"),
        ("chain.yaml", _deep_aliases(), "aliases nest more than"),
        ("digits.yaml", "per_device_train_batch_size: " + "7" * 1_000_000 + "\n", "a number of"),
        (
            "odd.yaml",
            "num_generations: 7\nper_device_train_batch_size: 123456789012345\n",
            "larger than any real run",
        ),
        (
            "exp.yaml",
            "num_generations: 8\nper_device_train_batch_size: 1.0e+18\n",
            "larger than any real run",
        ),
        ("port.yaml", "use_vllm: true\nvllm_server_port: abc\n", "not a TCP port"),
        ("url.yaml", "use_vllm: true\nvllm_server_base_url: 12345\n", "not a URL"),
        ("inf.yaml", "vllm_gpu_memory_utilization: .inf\n", "not a finite number"),
    ],
)
def test_hostile_configs_exit_2_naming_file_and_problem(place, name, content, problem):
    (place / "work" / name).write_text(content)
    try:
        for cmd in (("check", "--facts", "good.json", "--config", name), ("hook", name)):
            proc = run(place, *cmd)
            assert_clean(proc, (2,))
            assert name in proc.stderr and problem in proc.stderr, proc.stderr
    finally:
        (place / "work" / name).unlink()


def _snap(change) -> dict:
    snap = snapshot(2)
    change(snap)
    return snap


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda s: s.update(extra=int("9" * 4000)), "digits"),
        (lambda s: s.update(hostname="h" * 2_000_000), "hostname': 2,000,000 characters"),
        (lambda s: s["gpus"][1].update(memory_total_mib=0), "memory_total_mib': 0"),
        (lambda s: s["gpus"][1].update(compute_capability="nine"), "expected MAJOR.MINOR"),
        (
            lambda s: s["packages"].update(
                vllm={"version": "0.30.0", "requires": ["torch==2.9; python_version > ("]}
            ),
            "requires[0]",
        ),
        (lambda s: s["packages"].update(vllm={"version": "1." + "9" * 5000}), "characters"),
    ],
)
def test_hostile_snapshots_exit_2_naming_the_key(place, change, problem):
    path = place / "work" / "h.json"
    path.write_text(json.dumps(_snap(change)))
    try:
        for cmd in (("check", "--facts", "h.json"), ("diff", "good.json", "h.json")):
            proc = run(place, *cmd)
            assert_clean(proc, (2,))
            assert problem in proc.stderr, proc.stderr
    finally:
        path.unlink()


def test_large_but_valid_inputs_stay_bounded(place):
    """30,000 GPUs load linearly; a 7 MiB config value and a 60 KB allocator setting are cut
    in the output; one rule reports at most 50 findings and says how many it left out."""
    work = place / "work"
    snap = snapshot(1)
    gpu = snap["gpus"][0]
    snap["gpus"] = [dict(gpu, index=i, uuid=f"GPU-{i}") for i in range(30_000)]
    snap["env"] = {"PYTORCH_CUDA_ALLOC_CONF": "bad:1," * 10_000}
    (work / "many.json").write_text(json.dumps(snap))
    (work / "long.yaml").write_text(
        "output_dir: "
        + "d" * (7 * 1024 * 1024)
        + "\n"
        + "".join(f"unknown_key_{i}: 1\n" for i in range(2000))
    )
    try:
        proc = run(
            place,
            "check",
            "--facts",
            "many.json",
            "--config",
            "long.yaml",
            "--no-network",
            "--format",
            "json",
            "--",
            "torchrun",
            "--nproc_per_node",
            "8",
            "t.py",
        )
        assert_clean(proc, (0, 1), "json")
        found = json.loads(proc.stdout)["findings"]
        typos = [f for f in found if f["rule"] == "CFG004"]
        assert len(typos) <= 51 and len(proc.stdout) < 20_000_000
        text = run(
            place,
            "check",
            "--facts",
            "many.json",
            "--config",
            "long.yaml",
            "-v",
            "--no-network",
            "--",
            "torchrun",
            "--nproc_per_node",
            "8",
            "t.py",
        )
        assert_clean(text, (0, 1))
        assert "characters in all)" in text.stdout or "characters)" in text.stdout
    finally:
        (work / "many.json").unlink()
        (work / "long.yaml").unlink()


def test_special_files_are_refused(place, tmp_path):
    fifo = place / "work" / "fifo.yaml"
    os.mkfifo(fifo)
    try:
        for path in ("/dev/zero", "/proc/self/pagemap", "/proc/kmsg", "fifo.yaml"):
            for cmd in (
                ("check", "--config", path, "--facts", "good.json"),
                ("triage", path, "--facts", "good.json"),
                ("hook", path),
            ):
                proc = run(place, *cmd, timeout=60)
                assert_clean(proc, (2,))
    finally:
        fifo.unlink()
    from envdoctor.cluster.override import read_override
    from envdoctor.errors import InputError

    with pytest.raises(InputError, match="not a regular file|kernel file"):
        read_override("/dev/zero")


def test_oversized_and_odd_pyproject(place):
    """A huge pyproject.toml in the working folder is refused unread, naming it; a bool where
    a number of seconds belongs is an input error, not 1 s."""
    py = place / "work" / "pyproject.toml"
    for text, problem in (
        ("#" * (5 * 1024 * 1024), "larger than 4 MiB"),
        ("[tool.envdoctor]\nprobe-timeout = true\n", "wrong type"),
        ("[tool.envdoctor]\nprobe-timeout = nan\n", "above 0"),
        ("[tool.envdoctor]\nprobe-timeout = -1\n", "above 0"),
    ):
        py.write_text(text)
        try:
            proc = run(place, "check", "--facts", "good.json")
            assert_clean(proc, (2,))
            assert "pyproject.toml" in proc.stderr and problem in proc.stderr, proc.stderr
        finally:
            py.unlink()
