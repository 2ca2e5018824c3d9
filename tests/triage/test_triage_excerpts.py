"""Each signature on a realistic log excerpt (tests/triage/logs/, written from the public texts)."""

from __future__ import annotations

import pytest
import yaml

from envdoctor.findings import Severity
from envdoctor.triage.signatures import own_signatures
from tests.triage.helpers import LOGS, findings, scan_bytes, scan_log

#: excerpt -> (the signature it shows, the rule of the one finding, the severity)
EXCERPTS = {
    "device_mismatch.log": ("device-mismatch", "PKG002", "error"),
    "device_mismatch_newer.log": ("device-mismatch", "PKG002", "error"),
    # the cause is vLLM older than 0.7.2 and the log shows no version: likely, a warning (#36 item 5)
    "rotary.log": ("rotary-size-mismatch", "PKG002", "warning"),
    "vllm_device_unavailable.log": ("vllm-device-unavailable", "LAY002", "error"),
    "dataparallel_refusal.log": ("dataparallel-refusal", "LAY003", "error"),
    "oom_training.log": ("cuda-oom", "TRI001", "error"),
    "oom_fragmentation_old.log": ("cuda-oom", "TRI001", "error"),
    "oom_vllm_kv_cache.log": ("cuda-oom", "MEM001", "error"),
    "vllm_no_cache_memory.log": ("vllm-no-cache-memory", "MEM001", "error"),
    "vllm_kv_cache_too_small.log": ("vllm-kv-cache-too-small", "MEM001", "error"),
    "vllm_kv_cache_too_small_v0.log": ("vllm-kv-cache-too-small", "MEM001", "error"),
    "vllm_free_memory.log": ("vllm-free-memory-below-utilization", "MEM001", "error"),
    "vllm_server_unreachable.log": ("vllm-server-unreachable", "LAY008", "error"),
    "nccl_timeout.log": ("nccl-timeout", "TRI002", "error"),
    "nccl_watchdog.log": ("nccl-watchdog-hang", "TRI002", "error"),
    "nccl_error.log": ("nccl-error", "TRI002", "error"),
    "alloc_conf_old.log": ("alloc-conf-unrecognized", "ALC001", "error"),
    "alloc_conf_new.log": ("alloc-conf-unrecognized", "ALC001", "error"),
    "vllm_abi.log": ("extension-abi-mismatch", "TRI005", "error"),
    "cuda_toolkit_mismatch.log": ("cuda-toolkit-mismatch", "TRI023", "error"),
    "batch_global.log": ("batch-not-divisible", "CFG002", "error"),
    "batch_effective.log": ("batch-not-divisible", "CFG002", "error"),
    "generation_batch.log": ("generation-batch-not-divisible", "CFG002", "error"),
    "num_generations.log": ("num-generations-too-small", "CFG003", "error"),
    "unused_arguments.log": ("unused-arguments", "CFG001", "error"),
    "unknown_failure.log": ("unrecognized-exception", "TRI003", "warning"),
    "quoted_exception.log": ("quoted-exception", "TRI003", "warning"),
    "api_drift_attribute.log": ("api-drift-attribute", "TRI009", "error"),
    "locale_codec.log": ("legacy-locale-codec", "TRI040", "error"),
    # yuvalkirstain/PickScore#2: the accelerate default config's DeepSpeed fields beside a JSON
    "accelerate_ds_fields.log": ("accelerate-fields-beside-deepspeed-json", "LAY025", "error"),
}


def test_every_signature_has_an_excerpt_and_every_excerpt_a_test():
    real = set()
    for path in (LOGS.parent / "real").glob("*.yaml"):
        log = yaml.safe_load(path.read_text(encoding="utf-8"))["log"]
        real |= {m.signature.id for m in scan_bytes(log).matches}
    # hints: tests/triage/test_triage_classes.py; vllm-in-process: tests/triage/test_triage_oom.py
    hints = {
        "vllm-server-up",
        "vllm-version",
        "vllm-in-process",
        "package-version",
        "trl-weight-sync-client",
        "vllm-dp-engine",
    }
    shown = {sig for sig, _, _ in EXCERPTS.values()} | {"vllm-device-shared-warning"} | real
    own = {s.id for s in own_signatures()}  # the catalogue's: tests/triage/test_triage_catalogue.py
    assert own <= shown | hints
    assert all(s in own or s.startswith("known-") for s in shown | hints)
    on_disk = {p.name for p in LOGS.glob("*.log")}
    assert set(EXCERPTS) <= on_disk
    assert on_disk - set(EXCERPTS) == {
        "vllm_device_shared.log",
        "device_mismatch_cpu.log",
        "size_mismatch_other.log",
        "healthy.log",
        # TRI038's reach logs: tests/triage/test_triage_artifacts.py
        "tri038-openarc-132.log",
        "tri038-hunyuan-video-jupyter-3.log",
    }


@pytest.mark.parametrize("name", sorted(EXCERPTS))
def test_excerpt(name):
    sig_id, rule, severity = EXCERPTS[name]
    result = scan_log(name)
    assert sig_id in {m.signature.id for m in result.matches}
    (finding,) = findings(result)
    assert (finding.rule, finding.severity.value) == (rule, severity)
    assert finding.fix and finding.evidence["signature"] == sig_id
    last_line = (LOGS / name).read_bytes().count(b"\n")
    assert 1 <= finding.evidence["line"] <= last_line


def test_the_shared_vllm_gpu_warning_and_the_oom_it_led_to():
    result = scan_log("vllm_device_shared.log")
    (warning, oom) = sorted(findings(result), key=lambda f: f.severity.rank)
    assert (warning.rule, warning.severity) == ("LAY006", Severity.WARNING)
    assert warning.evidence["device"] == "cuda:1"
    # the traceback shows nn.DataParallel: the trap, although no layout was given
    assert oom.rule == "LAY003" and oom.evidence["cause"] == "shared"
    assert "DataParallel trap" in oom.message and "torchrun" in oom.fix


@pytest.mark.parametrize("name", ["device_mismatch_cpu.log", "size_mismatch_other.log"])
def test_the_same_error_texts_with_another_cause_are_not_diagnosed_as_vllm(name):
    (finding,) = findings(name)
    assert finding.rule == "TRI003" and finding.severity == Severity.WARNING
    assert "no known failure" in finding.message


def test_a_healthy_run_gives_no_diagnosis():
    result = scan_log("healthy.log")
    assert result.matches == [] and findings(result) == []
    assert result.lines == (LOGS / "healthy.log").read_bytes().count(b"\n")


def test_numbers_from_the_messages_reach_the_evidence():
    (f,) = findings("vllm_device_unavailable.log")
    assert f.evidence["device"] == "cuda:4" and "--num_processes 3" in f.fix
    (f,) = findings("batch_global.log")
    assert f.evidence["num_generations"] == "8" and "[2, 3, 4, 6, 12]" in f.fix
    assert "per_device_train_batch_size 8" in f.fix  # 3 processes x 8 = 24, divisible by 8
    (f,) = findings("batch_effective.log")
    assert "per_device_train_batch_size 2 or 4" in f.fix  # 2 x 2 x 1 = 4, 2 x 4 x 1 = 8
    (f,) = findings("generation_batch.log")
    assert "generation_batch_size 16" in f.fix
    (f,) = findings("vllm_kv_cache_too_small.log")
    assert f.evidence["estimated_max_len"] == "5088" and "at most 5088" in f.fix
    (f,) = findings("vllm_kv_cache_too_small_v0.log")
    assert "at most 20544" in f.fix
    (f,) = findings("vllm_free_memory.log")
    assert "from 0.95 to 0.15" in f.fix  # 13.91 / 79.33 = 0.175, less a margin
    (f,) = findings("nccl_timeout.log")
    assert f.evidence["op"] == "ALLREDUCE" and "1800 s" in f.message
    assert "ranks 1, 2" in f.message and "ddp_timeout" in f.fix
    (f,) = findings("alloc_conf_new.log")
    assert f.evidence["option"] == "expandable_segment" and "'expandable_segments'" in f.fix
    (f,) = findings("vllm_abi.log")
    assert f.evidence["symbol"] == "_ZN3c104cuda9SetDeviceEi"


def test_a_traceback_source_line_quoting_the_message_is_not_the_message():
    result = scan_log("vllm_no_cache_memory.log")
    (match,) = [m for m in result.matches if m.signature.id == "vllm-no-cache-memory"]
    assert match.text.endswith("when initializing the engine.") and match.line_no == 7


def test_a_version_bound_signature_is_an_error_only_where_the_log_shows_the_old_release():
    """Severity by certainty: a generic message (a size off by one) is vLLM < 0.7.2's rotary bug
    for certain only where the log shows such a vLLM; with no version it is likely (a Unsloth run
    with max_seq_length below prompt + completion gives the same message)."""
    line = (
        "RuntimeError: The size of tensor a (1024) must match the size of tensor b (1025) at "
        "non-singleton dimension 1\n"
    )
    (bare,) = findings(scan_bytes(line))
    assert (bare.rule, bare.severity.value) == ("PKG002", "warning")
    (old,) = findings(scan_bytes("vllm==0.7.1\n" + line))
    assert (old.rule, old.severity.value) == ("PKG002", "error")
