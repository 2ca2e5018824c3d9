"""The probe's vLLM server orchestration on CPU, with real processes (no vLLM needed): the server
line, ports, /health, a server that is healthy / crashes with vLLM's own text / hangs / ignores
SIGTERM, a server of the user's that is only read, and teardown of every process group."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from envdoctor.plan.interface import Launch
from envdoctor.plan.launch import parse_launch, parse_script_args
from envdoctor.probe.plan.tinymodel import write_tiny_model
from envdoctor.probe.run.runner import ProbeSpec, free_port, run_probe
from envdoctor.probe.stage.server import health, probe_server_line

HERE = Path(__file__).parent
FAKE_SERVER = str(HERE / "fake_vllm_server.py")
FAKE_TRAINER = [sys.executable, str(HERE / "fake_trainer.py")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _fake_launch(flags: str, env: dict[str, str] | None = None) -> Launch:
    args = flags.split()
    return Launch(
        raw=f"trl vllm-serve {flags}",
        launcher="trl-vllm-serve",
        env=dict(env or {}),
        program=[sys.executable, FAKE_SERVER, "vllm-serve"],
        options=parse_script_args(args),
        script_args=args,
    )


def _spec(record: Path, mode: str, monkeypatch, timeout_s: float = 30.0, **kw) -> ProbeSpec:
    monkeypatch.setenv("FAKE_VLLM", mode)
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(record))
    flags = kw.pop("flags", "--model Qwen/Qwen2.5-7B --gpu_memory_utilization 0.3 --port 8000")
    kw.setdefault("rank_gpus", {0: None})
    kw.setdefault("server_visible", [3])
    return ProbeSpec(
        launcher=FAKE_TRAINER,
        timeout_s=timeout_s,
        use_vllm=True,
        vllm_mode="server",
        vllm={"vllm_group_port": 51216},
        server_launch=_fake_launch(flags, {"CUDA_VISIBLE_DEVICES": "3"}),
        **kw,
    )


def _servers(record: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(record.glob("server-*.json"))]


def _rules(result) -> set[str]:
    return {f.rule for f in result.findings}


# --- the server line ---------------------------------------------------------------------------


def test_trl_line_keeps_the_users_gpus_sizes_dtype_and_fraction_with_the_probes_model_and_port():
    launch = parse_launch(
        "CUDA_VISIBLE_DEVICES=1,2 trl vllm-serve --model Qwen/Qwen2.5-7B "
        "--tensor-parallel-size 2 --data_parallel_size 1 --gpu-memory-utilization"
        " 0.5 --dtype bfloat16 --port 8000 --host 0.0.0.0 --max_model_len 8192 "
        "--revision abc123 --enable_prefix_caching true"
    )
    line = probe_server_line(launch, "/tmp/tiny", 40123, base_env={})
    argv = line.argv
    assert argv[1:4] == ["vllm-serve", "--model", "/tmp/tiny"]
    pairs = dict(zip(argv[2::2], argv[3::2], strict=False))
    assert pairs["--tensor_parallel_size"] == "2" and pairs["--data_parallel_size"] == "1"
    assert pairs["--gpu_memory_utilization"] == "0.5" and pairs["--dtype"] == "bfloat16"
    assert pairs["--port"] == "40123" and pairs["--host"] == "127.0.0.1"
    assert pairs["--enforce_eager"] == "true" and pairs["--max_model_len"] == "2048"
    assert pairs["--enable_prefix_caching"] == "true"
    assert "Qwen/Qwen2.5-7B" not in argv and "8192" not in argv and "8000" not in argv
    assert line.env["CUDA_VISIBLE_DEVICES"] == "1,2" and line.visible == "1,2"
    assert line.dropped == ["revision"] and (line.tensor_parallel_size, line.fraction) == (2, 0.5)


def test_a_model_of_the_users_shape_keeps_the_users_context_length():
    launch = parse_launch(
        "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen2.5-7B --max_model_len 8192"
    )
    pairs = dict(
        zip(
            *[iter(probe_server_line(launch, "/tmp/m", 1, base_env={}, faithful=True).argv[2:])] * 2,
            strict=False,
        )
    )
    assert pairs["--max_model_len"] == "8192"  # the generic model is capped at its 2048
    plain = parse_launch("CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen2.5-7B")
    argv = probe_server_line(plain, "/tmp/m", 1, base_env={}, faithful=True).argv
    assert "--max_model_len" not in argv  # vLLM's default: the model's own positions


def test_vllm_serve_line_keeps_weight_transfer_and_dashes():
    launch = parse_launch(
        "VLLM_SERVER_DEV_MODE=1 CUDA_VISIBLE_DEVICES=2 vllm serve Qwen/Qwen3-0.6B "
        "--gpu-memory-utilization 0.4 --tensor-parallel-size 1 "
        '--weight-transfer-config \'{"backend": "nccl"}\' --enforce-eager'
    )
    line = probe_server_line(launch, "/tmp/tiny", 40124, fraction=0.06, base_env={})
    argv = line.argv
    assert argv[:3] == [argv[0], "serve", "/tmp/tiny"] and "Qwen/Qwen3-0.6B" not in argv
    at = argv.index("--weight-transfer-config")
    assert argv[at + 1] == '{"backend": "nccl"}'
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.06"  # beside a running one
    assert argv.count("--enforce-eager") == 1 and argv[argv.index("--max-model-len") + 1] == "2048"
    assert line.env["VLLM_SERVER_DEV_MODE"] == "1" and line.env["CUDA_VISIBLE_DEVICES"] == "2"


def test_a_none_value_is_left_to_the_launchers_default():
    line = probe_server_line(parse_launch("trl vllm-serve --model m --dtype none"), "/m", 1, base_env={})
    assert "--dtype" not in line.argv and "None" not in line.argv


def test_default_fraction_is_vllms_and_a_bad_one_does_not_crash():
    line = probe_server_line(parse_launch("trl vllm-serve --model m"), "/m", 1, base_env={})
    assert line.fraction == 0.9
    bad = probe_server_line(
        parse_launch("trl vllm-serve --model m --gpu_memory_utilization x"), "/m", 1, base_env={}
    )
    assert bad.fraction == 0.9


# --- /health -----------------------------------------------------------------------------------


def test_health_reads_a_loopback_server_and_refuses_other_hosts():
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200 if self.path == "/health" else 500)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    try:
        assert health("127.0.0.1", port) == 200 and health("0.0.0.0", port) == 200
        assert health("10.1.2.3", port) is None  # never leaves loopback
    finally:
        srv.shutdown()
        srv.server_close()
    assert health("127.0.0.1", port, timeout_s=0.5) is None  # nothing listens any more


def test_the_tiny_model_is_written_without_torch_and_reads_back(tmp_path):
    out = write_tiny_model(tmp_path / "m")
    cfg = json.loads((out / "config.json").read_text())
    raw = (out / "model.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    shapes = {k: v["shape"] for k, v in header.items() if k != "__metadata__"}
    size = sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__")
    assert len(raw) == 8 + n + size
    assert shapes["model.embed_tokens.weight"] == [cfg["vocab_size"], cfg["hidden_size"]]
    assert len([k for k in shapes if k.endswith("q_proj.weight")]) == cfg["num_hidden_layers"]
    kv_bytes = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    assert kv_bytes >= 8 * 1024  # a fraction of a GPU holds millions of tokens, not tens
    vocab = json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocab) == 256 and cfg["vocab_size"] == 258


def test_the_tiny_model_loads_in_transformers(tmp_path):
    pytest.importorskip("transformers")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = write_tiny_model(tmp_path / "m")
    tok = AutoTokenizer.from_pretrained(out)
    ids = tok("the cat sat")["input_ids"]
    assert len(ids) == len("the cat sat") and tok.decode(ids) == "the cat sat"
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits
    assert logits.shape[-1] == 258 and bool(torch.isfinite(logits).all())


# --- the runner with a probe server ------------------------------------------------------------


def test_healthy_server_and_trainer_start_together_and_end_together(tmp_path, monkeypatch):
    r = run_probe(_spec(tmp_path, "healthy", monkeypatch))
    assert r.status == "pass", (r.findings, r.log_tail, r.server.get("log_tail"))
    (srv,) = _servers(tmp_path)
    argv = srv["argv"]
    port = int(argv[argv.index("--port") + 1])
    assert srv["env_cvd"] == "3" and srv["pgid"] == srv["pid"]  # own process group
    used = r.ranks[0]["spec_vllm"]
    assert used["vllm_server_port"] == port and used["vllm_server_host"] == "127.0.0.1"
    assert used["vllm_group_port"] not in (port, 51216)  # a free one, not the config's
    assert r.server["group_port"] == used["vllm_group_port"]
    ev = r.events
    assert ev["server_start"] <= ev["trainer_start"] < ev["server_healthy"] < ev["end"]
    assert r.timings["server_start"] > 0 and "teardown" in r.timings
    assert any(line.startswith("server start → /health") for line in r.phase_lines)
    assert not _alive(srv["pid"]) and r.leftover_pids == [] and r.temp_dir_removed
    assert "probe vLLM server" in r.generation


def test_server_refusing_memory_names_the_physical_gpu_and_ends_the_trainer(tmp_path, monkeypatch):
    start = time.monotonic()
    r = run_probe(_spec(tmp_path, "free_memory", monkeypatch))
    assert time.monotonic() - start < 25  # the trainer is not left waiting for the server
    assert r.status == "fail"
    (f,) = [x for x in r.findings if x.rule == "PRB013"]
    assert "GPU 3" in f.message and "cuda:0 of CUDA_VISIBLE_DEVICES=3" in f.message
    assert "125.82 GiB" in f.message and "28.77 of 139.8 GiB" in f.message
    assert f.evidence["gpu"] == 3
    assert not any(x.rule == "PRB001" and x.severity.name == "ERROR" for x in r.findings)
    assert r.leftover_pids == [] and not _alive(_servers(tmp_path)[0]["pid"])


def test_missing_flashinfer_is_an_error_naming_the_package(tmp_path, monkeypatch):
    r = run_probe(_spec(tmp_path, "flashinfer", monkeypatch))
    (f,) = [x for x in r.findings if x.rule == "PRB014"]
    assert "flashinfer-python" in f.message and f.fix == "pip install flashinfer-python"
    assert r.status == "fail" and r.leftover_pids == []


def test_server_that_never_answers_times_out_at_server_starting(tmp_path, monkeypatch):
    r = run_probe(_spec(tmp_path, "hang", monkeypatch, timeout_s=3))
    assert r.status == "timeout" and r.phase == "server starting" and "PRB006" in _rules(r)
    assert not _alive(_servers(tmp_path)[0]["pid"]) and r.leftover_pids == []


def test_server_ignoring_sigterm_is_killed_with_its_child(tmp_path, monkeypatch):
    monkeypatch.setattr("envdoctor.probe.run.runner.GRACE_S", 0.5)
    r = run_probe(_spec(tmp_path, "stubborn", monkeypatch))
    srv = _servers(tmp_path)[0]
    assert r.status == "pass", (r.findings, r.server.get("log_tail"))
    assert not _alive(srv["pid"]) and not _alive(srv["child"]) and r.leftover_pids == []


def test_weight_sync_that_never_forms_names_port_and_interface(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TRAINER", "hang")
    r = run_probe(_spec(tmp_path, "healthy", monkeypatch, timeout_s=6))
    assert r.status == "timeout" and r.phase == "weight sync"
    (f,) = [x for x in r.findings if x.rule == "PRB015"]
    assert f"port {r.server['group_port']}" in f.message and "51216" in f.message
    assert "network interface" in f.message and r.leftover_pids == []


def test_trainer_on_the_servers_gpu_is_named_as_soon_as_nccl_refuses_the_group(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TRAINER", "hang")  # as seen on one H100: the trainer's init hangs
    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    start = time.monotonic()
    r = run_probe(_spec(tmp_path, "duplicate", monkeypatch, timeout_s=60, rank_gpus={0: 3}))
    assert time.monotonic() - start < 30  # not the whole limit
    assert r.status == "fail"
    (f,) = [x for x in r.findings if x.rule == "PRB015"]
    assert "share GPU 3" in f.message and "colocate" in f.fix
    errors = [x.rule for x in r.findings if x.severity.name == "ERROR"]
    assert errors == ["PRB015"]  # the ended rank is an info, NCCL's warning not a second error
    assert "NCCL_DEBUG=WARN" in r.server["log_tail"]  # set for the server, so NCCL says why
    assert r.leftover_pids == [] and not _alive(_servers(tmp_path)[0]["pid"])


def test_sigterm_to_envdoctor_ends_server_and_trainer(tmp_path):
    code = (
        "import json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_server import _fake_launch, FAKE_TRAINER\n"
        "from envdoctor.probe.run.runner import ProbeSpec, run_probe\n"
        "r = run_probe(ProbeSpec(launcher=FAKE_TRAINER, rank_gpus={0: None}, timeout_s=120,"
        " use_vllm=True, vllm_mode='server', server_launch=_fake_launch('--port 1')))\n"
        "print(json.dumps({'status': r.status, 'left': r.leftover_pids}))\n"
    )
    env = {
        **os.environ,
        "FAKE_VLLM": "hang",
        "FAKE_VLLM_RECORD": str(tmp_path),
        "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(HERE)], env=env, stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("server-*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    data = json.loads(out.strip().splitlines()[-1])
    assert data == {"status": "interrupted", "left": []}
    assert not _alive(_servers(tmp_path)[0]["pid"])


@contextlib.contextmanager
def _user_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, int, Path]]:
    """A fake user's vLLM server, healthy, recording its requests; killed (group) at the end."""
    user_record = tmp_path / "user"
    user_record.mkdir()
    port = free_port()
    user = subprocess.Popen(
        [sys.executable, FAKE_SERVER, "--port", str(port)],
        env={
            **os.environ,
            "FAKE_VLLM": "healthy",
            "FAKE_VLLM_DELAY": "0",
            "FAKE_VLLM_RECORD": str(user_record),
        },
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while health("127.0.0.1", port) != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        yield user, port, user_record
    finally:
        os.killpg(user.pid, signal.SIGKILL)
        user.wait()


def test_a_running_user_server_is_only_read_and_the_probe_server_starts_beside(tmp_path, monkeypatch):
    with _user_server(tmp_path) as (user, port, user_record):
        probe_record = tmp_path / "probe"
        probe_record.mkdir()
        r = run_probe(
            _spec(
                probe_record,
                "healthy",
                monkeypatch,
                user_server=("127.0.0.1", port),
                flags=f"--model big --gpu_memory_utilization 0.9 --port {port}",
            )
        )
        assert r.status == "pass", (r.findings, r.server.get("log_tail"))
        requests = (user_record / f"requests-{user.pid}.txt").read_text().splitlines()
        # one by this test's wait above, then the probe's before and after: GETs of /health only
        assert requests == ["GET /health"] * 3
        assert r.user_server["health_before"] == r.user_server["health_after"] == 200
        (probe_srv,) = _servers(probe_record)
        argv = probe_srv["argv"]
        assert argv[argv.index("--port") + 1] != str(port)
        assert float(argv[argv.index("--gpu_memory_utilization") + 1]) < 0.9
        assert _alive(user.pid)  # the user's server still runs
        assert any(f.rule == "PRB012" and "only read" in f.message for f in r.findings)


def test_no_server_line_in_server_mode_says_what_was_not_probed(monkeypatch):
    spec = ProbeSpec(
        launcher=[sys.executable], rank_gpus={0: None}, use_vllm=True, vllm_mode="server", fault="exit"
    )
    r = run_probe(spec)
    (f,) = [x for x in r.findings if x.rule == "PRB016"]
    assert "trl vllm-serve" in f.message and r.generation == "the trainer's own generate()"


class _FakeNvml:
    """NVML with one GPU of ``total`` MiB, ``free`` MiB free, and the given (pid, MiB) on it."""

    def __init__(self, procs: list[tuple[int, int]], free: int, total: int = 81079) -> None:
        self.procs, self.free, self.total = procs, free, total

    def nvmlInit(self) -> None:  # noqa: N802 - NVML's names
        pass

    def nvmlShutdown(self) -> None:  # noqa: N802
        pass

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:  # noqa: N802
        return i

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list:  # noqa: N802
        from types import SimpleNamespace

        return [SimpleNamespace(pid=p, usedGpuMemory=m * 2**20) for p, m in self.procs]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> list:  # noqa: N802
        return []

    def nvmlDeviceGetMemoryInfo(self, h: int):  # noqa: N802
        from types import SimpleNamespace

        return SimpleNamespace(free=self.free * 2**20, total=self.total * 2**20)


def test_holders_are_named_without_their_arguments(tmp_path, monkeypatch):
    from envdoctor.probe.observe.watcher import GpuWatch

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    script = subprocess.Popen(
        [sys.executable, FAKE_SERVER, "--port", "1", "--token=s3cret"],
        env={**os.environ, "FAKE_VLLM": "hang", "FAKE_VLLM_RECORD": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.3)
        nvml = _FakeNvml([(holder.pid, 68264), (script.pid, 100)], free=10960)
        monkeypatch.setattr("envdoctor.probe.observe.watcher.load_nvml", lambda: (nvml, None))
        watch = GpuWatch(pgid=-1).start()
        try:
            rows = {pid: (name, mib) for pid, name, mib in watch.others(set())[0]}
            assert watch.memory() == {0: (10960, 81079)}
        finally:
            watch.close()
        exe = Path(sys.executable).name
        assert rows[holder.pid] == (f"{exe} -c …", 68264)
        assert rows[script.pid][0] == f"{exe} {FAKE_SERVER}"[:60]  # no flag, no value
    finally:
        for p in (holder, script):
            p.kill()
            p.wait()


def test_a_running_user_server_without_room_beside_it_is_not_probed_and_not_touched(tmp_path, monkeypatch):
    with _user_server(tmp_path) as (user, port, user_record):
        nvml = _FakeNvml([(user.pid, 72000)], free=2000)
        monkeypatch.setattr("envdoctor.probe.observe.watcher.load_nvml", lambda: (nvml, None))
        probe_record = tmp_path / "probe"
        probe_record.mkdir()
        spec = _spec(
            probe_record,
            "healthy",
            monkeypatch,
            user_server=("127.0.0.1", port),
            server_visible=[0],
            fault="exit",
        )
        spec.launcher = [sys.executable]  # the real worker: it generates with its own generate()
        r = run_probe(spec)
        (f,) = [x for x in r.findings if x.rule == "PRB016"]
        assert "not probed" in f.message and "GPU 0 has 2.0 GiB free" in f.message
        assert f.severity.name == "WARNING" and not _servers(probe_record)
        assert r.generation == "the trainer's own generate()"
        requests = (user_record / f"requests-{user.pid}.txt").read_text().splitlines()
        assert requests == ["GET /health"] * 3  # this test's wait, the probe's before and after
        assert r.user_server["processes_before"] == [(user.pid, 0, 72000)]


@pytest.mark.parametrize(
    "host, reached",
    [
        ("0.0.0.0", "127.0.0.1"),
        ("::", "::1"),
        ("", "127.0.0.1"),
        ("localhost", "127.0.0.1"),
        ("127.0.0.2", "127.0.0.2"),
        ("::1", "::1"),
        ("10.0.0.5", None),
        ("example.com", None),
    ],
)
def test_only_loopback_is_ever_reached(host, reached):
    from envdoctor.net_policy import LOOPBACK_ONLY
    from envdoctor.probe.stage.server import health

    assert LOOPBACK_ONLY.target(host).address == reached
    if reached is None:
        assert health(host, 8000, timeout_s=0.1) is None  # refused without a connection attempt


def test_the_reported_engine_of_a_server_is_the_probe_servers_line():
    from envdoctor.probe.interface import ProbeSpec
    from envdoctor.probe.plan.vllm_engine import engine_settings

    launch = parse_launch(
        "CUDA_VISIBLE_DEVICES=1,2 trl vllm-serve --model Qwen/Qwen2.5-7B "
        "--tensor_parallel_size 2 --gpu_memory_utilization 0.4 "
        "--max_model_len 4096"
    )
    line = probe_server_line(launch, "/tmp/m", 1, base_env={}, faithful=True)
    out = engine_settings(ProbeSpec(launcher=["python"], vllm_mode="server"), {}, True, line)
    assert (out["tensor_parallel_size"], out["gpu_memory_utilization"], out["max_model_len"]) == (
        2,
        0.4,
        4096,
    )
