"""Triage on realistic log excerpts (written from the public error texts), messy logs and bad input."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.checks.context import Context
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.triage.diagnose import diagnose
from envdoctor.triage.oom import parse_oom
from envdoctor.triage.scanner import scan
from envdoctor.triage.signatures import SignatureError, parse, signatures
from tests.conftest import LEGACY, RTX3090, run_cli, snapshot

EXCERPTS = {
    "device-mismatch": "[rank0]: RuntimeError: Expected all tensors to be on the same device, but "
                       "found at least two devices, cuda:1 and cuda:0! (when checking argument for "
                       "argument index in method wrapper_CUDA__index_select)",
    "rotary-size-mismatch": "RuntimeError: The size of tensor a (1034) must match the size of "
                            "tensor b (1035) at non-singleton dimension 2",
    "vllm-device-unavailable": "ValueError: The requested device for vllm (cuda:4) is not "
                               "available. You are likely using vLLM without restricting the "
                               "number of GPUs for training.",
    "dataparallel-refusal": "ValueError: GRPOTrainer does not support `nn.DataParallel`, which "
                            "`Trainer` uses when several GPUs are visible to a single process.",
    "cuda-oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
                "a total capacity of 79.10 GiB of which 1.06 GiB is free.",
    "vllm-no-cache-memory": "ValueError: No available memory for the cache blocks. Try increasing "
                            "`gpu_memory_utilization` when initializing the engine.",
    "vllm-free-memory-below-utilization": "ValueError: Free memory on device cuda:0 (3.25/23.43 "
                                          "GiB) on startup is less than desired GPU memory "
                                          "utilization (0.9, 21.09 GiB). Decrease GPU memory "
                                          "utilization or reduce GPU memory used by other "
                                          "processes.",
    "vllm-kv-cache-too-small": "ValueError: The model's max seq len (32768) is larger than the "
                               "maximum number of tokens that can be stored in KV cache (20544). "
                               "Try increasing `gpu_memory_utilization` or decreasing "
                               "`max_model_len` when initializing the engine.",
    "nccl-timeout": "[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog "
                    "caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, "
                    "NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 "
                    "milliseconds before timing out.",
    "nccl-error": "torch.distributed.DistBackendError: NCCL error in: "
                  "../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error",
    "alloc-conf-unrecognized": "RuntimeError: Unrecognized CachingAllocator option: "
                               "expandable_segment",
    "alloc-conf-unrecognized-key": "ValueError: Unrecognized key 'expandable_segment' in CUDA "
                                   "allocator config.",
    "vllm-abi-mismatch": "ImportError: /opt/venv/lib/python3.11/site-packages/vllm/_C.abi3.so: "
                         "undefined symbol: _ZN3c106detail14torchCheckFailEPKcS2_jRKSs",
    "batch-not-divisible": "ValueError: The global train batch size (4 x 3) must be evenly "
                           "divisible by the number of generations per prompt (8). Given the "
                           "current train batch size, the valid values for the number of "
                           "generations are: [2, 3, 4, 6, 12].",
    "generation-batch-not-divisible": "ValueError: generation_batch_size (12) must be divisible "
                                      "by num_generations (8).",
    "num-generations-too-small": "ValueError: GRPO requires at least 2 generations per prompt to "
                                 "calculate the advantages. You provided 1, which is less than "
                                 "the minimum required.",
    "unused-arguments": "ValueError: Some specified arguments are not used by the HfArgumentParser:"
                        " ['--vllm_device', 'auto']",
}


def _scan(text: str | bytes):
    data = text.encode() if isinstance(text, str) else text
    return scan(io.BytesIO(data))


def test_every_signature_has_an_excerpt():
    assert {s.id for s in signatures()} == set(EXCERPTS)


@pytest.mark.parametrize("sig_id", sorted(EXCERPTS))
def test_each_signature_on_its_excerpt(sig_id):
    log = f"step 1/100\n{EXCERPTS[sig_id]}\nexiting\n"
    result = _scan(log)
    assert [m.signature.id for m in result.matches] == [sig_id]
    assert result.matches[0].line_no == 2
    findings = diagnose(result)
    assert len(findings) == 1 and findings[0].fix


def test_messy_multi_rank_log():
    ansi = "\x1b[31m"
    tqdm = "".join(f"\r  {i}%|##   | {i}/100 [00:0{i % 9}<00:10]" for i in range(0, 100, 7))
    log = (
        f"{ansi}[2026-11-01 10:00:00] INFO starting\x1b[0m\n"
        f"{tqdm}\n"
        "[rank0]: Traceback (most recent call last):\n"
        "[rank1]: Traceback (most recent call last):\n"
        f"[rank0]: {ansi}{EXCERPTS['device-mismatch']}\x1b[0m\n"
        f"Generating: {tqdm}\r[rank1]: {EXCERPTS['device-mismatch']}\n"
        "[rank1]:[W ProcessGroupNCCL.cpp:1234] Warning: destroying process group\n"
        f"{EXCERPTS['nccl-timeout']}\n"
        "E1101 10:05:00 torch/distributed/elastic/multiprocessing/api.py failed (exitcode: 1)\n"
    )
    result = _scan(log)
    assert result.counts["device-mismatch"] == 2
    assert result.ranks["device-mismatch"] == {0, 1}
    assert "RuntimeError: Expected all tensors" in result.matches[0].text
    assert "\x1b" not in result.matches[0].text
    found = diagnose(result)
    assert [f.rule for f in found] == ["PKG002", "TRI002"]
    assert "ranks 0, 1, 2 times" in found[0].message


def test_a_log_without_known_failures():
    log = "\n".join(f"{{'loss': {i / 10}, 'reward': 0.5}}" for i in range(1000))
    log += "\nTraceback (most recent call last):\nKeyError: 'prompt'\n"
    assert diagnose(_scan(log)) == []


def test_chunk_boundaries_and_no_trailing_newline():
    from envdoctor.triage import scanner

    line = EXCERPTS["cuda-oom"].encode()
    data = b"x" * (scanner.CHUNK - 10) + b"\n" + line
    result = scan(io.BytesIO(data))
    assert [m.signature.id for m in result.matches] == ["cuda-oom"] and result.lines == 2


@pytest.mark.parametrize("text, gpu, want, free, unalloc", [
    ("CUDA out of memory. Tried to allocate 780.00 MiB. GPU 3 has a total capacity of 23.69 GiB of "
     "which 698.00 MiB is free. Process 11 has 22.99 GiB memory in use. Of the allocated memory "
     "18.20 GiB is allocated by PyTorch, and 4.31 GiB is reserved by PyTorch but unallocated.",
     3, 780, 698, 4413.44),
    ("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.51 GiB "
     "already allocated; 3.19 MiB free; 14.71 GiB reserved in total by PyTorch)",
     0, 20, 3.19, 204.8),
])
def test_oom_numbers(text, gpu, want, free, unalloc):
    oom = parse_oom(text)
    assert oom.gpu == gpu and oom.want_mib == pytest.approx(want)
    assert oom.free_mib == pytest.approx(free)
    assert oom.unallocated_mib == pytest.approx(unalloc, rel=1e-3)


def _ctx(snap, config=None, launch=None):
    return Context(facts=from_dict(snap, "t"), plan=build_plan(config_dict=config, launch=launch,
                                                               live=False), network=False)


OOM_SMALL_FRAG = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 "
                  "has a total capacity of 23.69 GiB of which 100.00 MiB is free. Of the allocated "
                  "memory 22.90 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch"
                  " but unallocated.")


def _cause(log: str, ctx=None) -> str:
    (finding,) = diagnose(_scan(log), ctx)
    return finding.evidence["cause"]


def test_oom_causes():
    frag = EXCERPTS["cuda-oom"].replace("is free.", "is free. Of the allocated memory 70.00 GiB is "
                                        "allocated by PyTorch, and 6.00 GiB is reserved by PyTorch "
                                        "but unallocated.")
    assert _cause(frag) == "fragmentation"
    assert _cause(OOM_SMALL_FRAG) == "capacity"
    busy = {1: [{"pid": 999, "name": "python other.py", "used_mib": 20000}]}
    ctx = _ctx(snapshot(2, RTX3090, LEGACY, processes=busy),
               launch="torchrun --nproc_per_node 2 train.py")
    assert _cause(OOM_SMALL_FRAG, ctx) == "other-process"
    shared = _ctx(snapshot(2, RTX3090, LEGACY),
                  config={"use_vllm": True, "vllm_device": "cuda:1"}, launch="python train.py")
    (f,) = diagnose(_scan(OOM_SMALL_FRAG), shared)
    assert f.evidence["cause"] == "shared" and "torchrun" in f.fix
    vllm = OOM_SMALL_FRAG + "\nINFO vllm engine: initializing KV cache\n"
    assert "gpu_memory_utilization" in diagnose(
        _scan(vllm + EXCERPTS["vllm-no-cache-memory"]))[0].fix


def test_machine_facts_confirm_a_signature():
    ctx = _ctx(snapshot(2, packages={**LEGACY, "vllm": "0.7.1"}))
    (f,) = diagnose(_scan(EXCERPTS["rotary-size-mismatch"]), ctx)
    assert "confirmed: installed vLLM 0.7.1" in f.message and f.fix == "pip install 'vllm>=0.7.2'"


def test_cli_end_to_end(tmp_path, write_json):
    log = tmp_path / "train.log"
    log.write_text(f"loading\n{EXCERPTS['vllm-device-unavailable']}\n")
    facts = write_json(snapshot(4, packages=LEGACY))
    proc = run_cli("triage", str(log), "--facts", str(facts), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    (f,) = data["findings"]
    assert f["rule"] == "LAY002" and f["area"] == "triage" and "--num_processes 3" in f["fix"]
    clean = run_cli("triage", "-", stdin="all fine\n")
    assert clean.returncode == 0 and "no known failures" in clean.stdout


def test_non_utf8_and_missing_files(tmp_path):
    log = tmp_path / "bin.log"
    log.write_bytes(b"\xff\xfe\x00garbage\n" + EXCERPTS["cuda-oom"].encode("latin-1") + b"\n")
    proc = run_cli("triage", str(log))
    assert proc.returncode == 1 and "TRI001" in proc.stdout
    missing = run_cli("triage", str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_signature_schema_is_enforced():
    good = {"id": "a", "rule": "TRI001", "keyword": "x", "pattern": "x", "summary": "s",
            "references": ["r"]}
    assert parse({"schema": "envdoctor.signatures/1", "signatures": [good]})
    with pytest.raises(SignatureError, match="keys"):
        parse({"schema": "envdoctor.signatures/1", "signatures": [{**good, "extra": 1}]})
    with pytest.raises(SignatureError, match="bad pattern"):
        parse({"schema": "envdoctor.signatures/1", "signatures": [{**good, "pattern": "("}]})


def test_every_signature_points_to_a_documented_rule():
    from envdoctor.checks.docs import rule_docs

    assert {s.rule for s in signatures()} <= set(rule_docs())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_scanner_never_raises(data):
    result = scan(io.BytesIO(data))
    diagnose(result)
    assert result.bytes_read == len(data)
