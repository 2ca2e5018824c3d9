"""Fault injection on the static path: broken metadata, huge or hostile input, no driver."""

from __future__ import annotations

import json
import sys

import pytest

from envdoctor.facts import packages as pk
from tests.conftest import ROOT, run_cli, snapshot


def test_corrupt_metadata_of_an_installed_distribution(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "vllm-0.8.5.dist-info").mkdir(parents=True)
    (site / "vllm-0.8.5.dist-info" / "METADATA").write_bytes(b"\xff\xfe garbage\n\n")
    (site / "trl-1.0.0.dist-info").mkdir()  # METADATA missing altogether
    monkeypatch.setattr(sys, "path", [str(site)])
    found = pk.collect_packages(("vllm", "trl"))
    assert found["vllm"].version.startswith("<unreadable")
    assert found["trl"].version.startswith("<unreadable")


def test_unreadable_versions_become_a_warning_not_a_crash(write_json):
    snap = snapshot(2, packages={"trl": "<unreadable: no Version field>", "torch": "2.6.0"})
    proc = run_cli("check", "--facts", str(write_json(snap)), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert any(f["rule"] == "PKG005" for f in json.loads(proc.stdout)["findings"])


def test_huge_snapshot_lists(write_json):
    snap = snapshot(1)
    snap["gpus"][0]["processes"] = [{"pid": i, "name": "p", "used_mib": 1} for i in range(100_000)]
    snap["packages"].update({f"pkg{i}": {"version": "1.0"} for i in range(100_000)})
    proc = run_cli(
        "check", "--facts", str(write_json(snap)), "--", "torchrun", "--nproc_per_node", "1", "t.py"
    )
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr


def test_huge_config_list(tmp_path):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("reward_weights: [" + ", ".join("1.0" for _ in range(100_000)) + "]\n")
    proc = run_cli("check", "--config", str(cfg))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["", "-1", "0,0", "GPU-nope", "MIG-x", "a,b", "99", " , "])
def test_impossible_visible_devices_are_findings(write_json, value):
    snap = snapshot(2, env={"CUDA_VISIBLE_DEVICES": value})
    proc = run_cli(
        "check",
        "--facts",
        str(write_json(snap)),
        "--format",
        "json",
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "t.py",
    )
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr
    rules = {f["rule"] for f in json.loads(proc.stdout)["findings"]}
    if value.strip() not in ("",):
        assert "GPU002" in rules


@pytest.mark.parametrize(
    "value",
    [
        "expandable_segments",
        "::",
        "x:y,z",
        "max_split_size_mb:abc",
        "backend:cudaMallocAsync,expandable_segments:True",
        "\x00",
    ],
)
def test_broken_alloc_conf_is_a_finding_naming_the_variable(write_json, value):
    snap = snapshot(1, env={"PYTORCH_CUDA_ALLOC_CONF": value})
    proc = run_cli("check", "--facts", str(write_json(snap)), "--format", "json")
    found = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "ALC001"]
    assert found and "PYTORCH_CUDA_ALLOC_CONF" in found[0]["message"]


def test_unknown_launch_flags_are_tolerated(write_json):
    proc = run_cli(
        "check",
        "--facts",
        str(write_json(snapshot(2))),
        "--",
        "accelerate",
        "launch",
        "--frobnicate",
        "7",
        "--num_processes",
        "2",
        "t.py",
    )
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr


def test_secrets_never_reach_a_snapshot_or_report(tmp_path):
    out = tmp_path / "f.json"
    env = {"HF_TOKEN": "hf_SECRET1", "NCCL_SOCKET_IFNAME": "eth0", "VLLM_API_KEY": "SECRET2"}
    run_cli("collect", "-o", str(out), env=env)
    text = out.read_text()
    assert "SECRET" not in text and "eth0" in text
    report = run_cli("check", "--format", "json", "-v", env=env)
    assert "SECRET" not in report.stdout


def test_missing_driver_is_a_clear_fact():
    proc = run_cli("check", "--format", "json")
    data = json.loads(proc.stdout)
    gpu_area = next(a for a in data["areas"] if a["key"] == "gpus")
    assert "none:" in gpu_area["summary"]


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "{b: " * 50_000 + "1" + "}" * 50_000,  # libyaml's composer would overflow the C stack
        "a: " + "[" * 50_000 + "]" * 50_000,
        "a:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(150)) + "  " * 151 + "1\n",
    ],
)
def test_deeply_nested_config_exits_2_naming_the_file(tmp_path, text):
    """Whichever side stops the nesting first (envdoctor's own limit, or the libyaml binding of
    PyYAML 6.0.4: "exceeded maximum nesting depth"), the user gets exit 2, one error line that
    names the file and says why, and no traceback."""
    cfg = tmp_path / "deep.yaml"
    cfg.write_text(text)
    proc = run_cli("check", "--config", str(cfg), "--no-network")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert str(cfg) in line and "nest" in line.lower(), line


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"num_generations: 8\nlearning_rate: \xff\xfe\n", "not UTF-8 text (byte 34)"),
        (b'{"num_generations": 8, "use_v', "invalid JSON at line 1"),
    ],
)
def test_not_utf8_and_truncated_configs_exit_2(tmp_path, content, message):
    cfg = tmp_path / ("g.json" if content.startswith(b"{") else "g.yaml")
    cfg.write_bytes(content)
    proc = run_cli("check", "--config", str(cfg), "--no-network")
    assert proc.returncode == 2 and cfg.name in proc.stderr and message in proc.stderr, proc.stderr


def test_wrong_typed_config_values_are_findings(tmp_path):
    cfg = tmp_path / "g.yaml"
    cfg.write_text(
        'num_generations: "eight"\nper_device_train_batch_size: [1]\nuse_vllm: maybe\n'
        "learning_rate: 1e-5\nbf16: yes\n"
    )
    proc = run_cli("check", "--config", str(cfg), "--no-network", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    flagged = {f["evidence"]["key"] for f in json.loads(proc.stdout)["findings"] if f["rule"] == "CFG005"}
    assert flagged == {"num_generations", "per_device_train_batch_size", "use_vllm"}


def test_deeply_nested_pyproject_and_override_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.envdoctor]\nselect = " + "[" * 100_000 + "]" * 100_000 + "\n"
    )
    proc = run_cli("check", "--no-network", cwd=tmp_path)
    assert proc.returncode == 2 and "pyproject.toml" in proc.stderr and "nested too deeply" in proc.stderr

    from envdoctor.cluster.override import read_override
    from envdoctor.errors import InputError

    deep = tmp_path / "o.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_override(str(deep))


def _tree(*roots):
    return {
        (str(p), p.stat().st_size, p.stat().st_mtime_ns) for root in roots for p in sorted(root.rglob("*"))
    }


def test_check_writes_nothing(tmp_path):
    """`envdoctor check` (and `rules`, `explain`) leave the working folder, HOME and TMPDIR
    exactly as they were: no cache, no log, no lock file."""
    work, home, tmp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for d in (work, home, tmp):
        d.mkdir()
    (work / "grpo.yaml").write_text("num_generations: 4\nper_device_train_batch_size: 4\n")
    (work / "pyproject.toml").write_text("[tool.envdoctor]\nignore = ['GPU001']\n")
    before = _tree(work, home, tmp)
    env = {"HOME": str(home), "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(home / ".cache")}
    for args in (
        ("check", "--config", "grpo.yaml", "-v", "--", "torchrun", "--nproc_per_node", "2", "train.py"),
        ("check", "--format", "junit"),
        ("rules",),
        ("explain", "LAY003"),
    ):
        proc = run_cli(*args, cwd=work, env=env)
        assert proc.returncode in (0, 1), proc.stderr
    assert _tree(work, home, tmp) == before


SEED = "examples/seed-000/facts.json"


@pytest.mark.parametrize(
    "launch",
    [
        "torchrun --nproc_per_node 99999999999 t.py",
        "accelerate launch --num_processes 99999999999 t.py",
        "deepspeed --num_gpus 99999999999 t.py",
        "torchrun --nnodes 999999999 t.py",
    ],
)
def test_absurd_process_counts_exit_2_at_once(launch):
    proc = run_cli("check", "--facts", str(ROOT / SEED), "--launch", launch)
    assert proc.returncode == 2 and "more than any GRPO job runs" in proc.stderr, proc.stderr


def test_many_unknown_config_keys_stay_fast_and_bounded(tmp_path):
    cfg = tmp_path / "k.yaml"
    cfg.write_text("\n".join(f"k{i}: {i}" for i in range(80_000)) + "\n")
    proc = run_cli("check", "--facts", str(ROOT / SEED), "--config", str(cfg), "--format", "json")
    typos = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "CFG004"]
    assert proc.returncode in (0, 1) and len(typos) <= 200  # checked for at most 200 keys


@pytest.mark.parametrize(
    "cmd",
    [("check", "--config", "{p}"), ("check", "--facts", "{p}"), ("triage", "{p}"), ("hook", "{p}", "-v")],
)
def test_a_fifo_is_refused_not_waited_on(tmp_path, cmd):
    import os

    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    proc = run_cli(*(c.format(p=fifo) for c in cmd))
    assert "not a regular file" in proc.stderr and proc.returncode == 2


def test_secrets_in_launch_lines_and_script_args_are_masked():
    launch = "HF_TOKEN=hf_SECRETVALUE1 torchrun --nproc_per_node 2 t.py --hub_token hf_SECRETVALUE2"
    for fmt in ("text", "json", "junit"):
        proc = run_cli(
            "check",
            "--facts",
            str(ROOT / SEED),
            "--config",
            str(ROOT / "examples/seed-000/grpo.yaml"),
            "--format",
            fmt,
            "--launch",
            launch,
        )
        assert proc.returncode == 1 and "SECRETVALUE" not in proc.stdout
    assert (
        "HF_TOKEN=****"
        in run_cli(
            "check",
            "--facts",
            str(ROOT / SEED),
            "--config",
            str(ROOT / "examples/seed-000/grpo.yaml"),
            "--launch",
            launch,
        ).stdout
    )


@pytest.mark.parametrize(
    ("content", "name", "problem"),
    [
        ("num_generations: " + "9" * 5000 + "\n", "d.yaml", "a number of 5,000 characters"),
        ("num_generations: " + "9" * 3_000_000 + "\n", "m.yaml", "a number of 3,000,000 characters"),
        ('{"num_generations": ' + "9" * 3_000_000 + "}", "m.json", "a number of 3,000,000 digits"),
        ('{"num_generations": 1e999, "per_device_train_batch_size": 4}', "i.json", "not a finite"),
        ("vllm_gpu_memory_utilization: .nan\n", "n.yaml", "not a finite number"),
    ],
)
def test_huge_and_infinite_numbers_exit_2_naming_the_key(tmp_path, content, name, problem):
    (tmp_path / name).write_text(content)
    proc = run_cli(
        "check",
        "--facts",
        str(ROOT / SEED),
        "--config",
        str(tmp_path / name),
        "--format",
        "json",
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "t.py",
    )
    assert proc.returncode == 2 and problem in proc.stderr and name in proc.stderr, proc.stderr
    assert "internal" not in proc.stderr


def test_snapshot_numbers_out_of_range_and_lone_surrogates(tmp_path):
    snap = json.loads((ROOT / SEED).read_text())
    snap["gpus"][0]["memory_total_mib"] = 10**400
    (tmp_path / "big.json").write_text(json.dumps(snap))
    proc = run_cli("check", "--facts", str(tmp_path / "big.json"))
    assert proc.returncode == 2 and "a number of 401 digits" in proc.stderr
    snap = json.loads((ROOT / SEED).read_text())
    snap["gpus"][0]["name"] = "A\ud800"
    (tmp_path / "sur.json").write_text(json.dumps(snap))
    for fmt in ("text", "junit", "json"):
        proc = run_cli("check", "--facts", str(tmp_path / "sur.json"), "--format", fmt)
        assert proc.returncode == 0 and "internal" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("text", "problem"), [("tool = 5\n", None), ("[tool.envdoctor]\nselect = [1, 2]\n", "has the wrong type")]
)
def test_odd_pyproject_tables(tmp_path, text, problem):
    (tmp_path / "pyproject.toml").write_text(text)
    proc = run_cli("check", "--no-network", cwd=tmp_path)
    assert (proc.returncode == 2 and problem in proc.stderr) if problem else proc.returncode == 0


def test_select_that_matches_no_rule_exits_2():
    proc = run_cli("check", "--facts", str(ROOT / SEED), "--select", "LAY003,NOPE")
    assert proc.returncode == 2 and "'NOPE' matches no rule" in proc.stderr


@pytest.mark.parametrize(
    "kwargs",
    [{"config": "/nope.yaml"}, {"launch": 5}, {"launch": b"x"}, {"launch": ["torchrun", 2]}, {"select": [1]}],
)
def test_preflight_raises_only_preflight_error(kwargs):
    import envdoctor

    with pytest.raises(envdoctor.PreflightError, match="cannot check"):
        envdoctor.preflight(facts=str(ROOT / SEED), **kwargs)


def test_impossible_snapshots_exit_2(tmp_path):
    snap = json.loads((ROOT / SEED).read_text())
    snap["gpus"][1]["index"] = 0
    (tmp_path / "dup.json").write_text(json.dumps(snap))
    proc = run_cli("check", "--facts", str(tmp_path / "dup.json"))
    assert proc.returncode == 2 and "GPU 0 is listed twice" in proc.stderr
    snap["gpus"][1]["index"] = -1
    (tmp_path / "neg.json").write_text(json.dumps(snap))
    proc = run_cli("check", "--facts", str(tmp_path / "neg.json"))
    assert proc.returncode == 2 and "gpus[1].index': negative" in proc.stderr


def test_hook_assume_needs_a_version(tmp_path):
    (tmp_path / "g.yaml").write_text("num_generations: 4\n")
    proc = run_cli("hook", "--assume", "trl==abc", "g.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "'abc' is not a version" in proc.stderr


def test_passwords_in_urls_are_masked():
    from envdoctor.facts.environment import mask

    assert mask({"HF_ENDPOINT": "https://me:pa55word@hub.local/x"}) == {
        "HF_ENDPOINT": "https://****@hub.local/x"
    }


@pytest.mark.parametrize(
    "launch",
    [
        "torchrun --nproc_per_node 0 t.py",
        "torchrun --nproc_per_node -1 t.py",
        "accelerate launch --num_processes 0 t.py",
        "deepspeed --num_gpus 0 t.py",
    ],
)
def test_no_process_at_all_exits_2(launch):
    proc = run_cli("check", "--facts", str(ROOT / SEED), "--launch", launch)
    assert proc.returncode == 2 and "at least 1 process is needed" in proc.stderr


def test_deepspeed_num_gpus_minus_one_means_every_gpu():
    proc = run_cli("check", "--facts", str(ROOT / SEED), "--launch", "deepspeed --num_gpus -1 t.py")
    assert proc.returncode in (0, 1) and "rank 0→GPU 0, rank 1→GPU 1" in proc.stdout
