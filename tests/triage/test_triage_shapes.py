"""The failing line is found in every shape people paste it (issue 26: 10 of 26 real logs got
nothing at all because their failing line was not shaped ``SomethingError: message``)."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

NOISE = "Step 3 | loss 0.41 | reward 0.2\n"


@pytest.mark.parametrize(
    "line, quoted",
    [
        ("> ValueError: num_generations must divide the batch", "ValueError: num_generations"),
        (">> RuntimeError: CUDA driver initialization failed", "RuntimeError: CUDA driver"),
        ("      KeyError: 'prompt'", "KeyError: 'prompt'"),
        ("NotImplementedError", "NotImplementedError"),
        ("[rank3]: NotImplementedError", "NotImplementedError"),
        (
            "trl: error: argument command: invalid choice: 'vllm-serve' (choose from 'chat', 'dpo', 'env',"
            " 'kto', 'sft')",
            "invalid choice: 'vllm-serve'",
        ),
        ("Error: No such command 'vllm-serve'.", "No such command"),
        ("Failed to import vllm.sampling_params", "Failed to import vllm"),
        ("No module named 'vllm'", "No module named 'vllm'"),
        (
            "('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))",
            "Connection aborted",
        ),
        (
            "http.client.RemoteDisconnected: Remote end closed connection without response",
            "RemoteDisconnected",
        ),
        ("[Errno 111] Connection refused", "Connection refused"),
        ("RuntimeError: HIP error: invalid device function", "HIP error"),
        (
            "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
            "hipErrorNoBinaryForGpu",
        ),
        ("EZ9999: Inner Error!", "EZ9999"),
        (
            "[ERROR] 2024-05-23-10:58:56 (PID:123, Device:0, RankID:-1) ERR99999 UNKNOWN application "
            "exception",
            "ERR99999",
        ),
        (
            "(EngineCore pid=4242) ERROR 05-14 21:20:46 [core.py:396] ValueError: bad max_model_len",
            "ValueError: bad",
        ),
        ("(EngineCore_DP0 pid=7) ERROR 05-14 21:20:46 [core.py:396] AssertionError", "AssertionError"),
        (
            "(VllmWorker rank=1 pid=3) ERROR 05-14 21:20:46 [multiproc_executor.py:1] TypeError: x",
            "TypeError: x",
        ),
        (
            "  0%|          | 0/200 [00:00<?, ?it/s]\r 10%|█         | 20/200 [00:03<00:30]TypeError: "
            "reward() got 2 arguments",
            "TypeError: reward()",
        ),
    ],
)
def test_the_failing_line_is_named_whatever_its_shape(line, quoted):
    found = findings(scan_bytes(NOISE * 3 + line + "\n" + NOISE))
    assert found, line
    first = found[0]
    assert first.evidence["line"] == 4 and quoted in first.message, first.message
    # a check's refusal that names its option (TRI012), a stack package not installed (TRI013), a
    # GPU without the build's code object (TRI025): the line's grammar says more than "not recognised"
    said_more = ("TRI010", "TRI012", "TRI013", "TRI025")
    assert "no known failure recognised" in first.message or first.rule in said_more


def test_an_abbreviated_nccl_watchdog_line_is_the_timeout():
    for line in (
        "[rank2]:[E ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, …) ran for 1800082 "
        "milliseconds before timing out.",
        "[Rank 0] Watchdog caught collective operation timeout",
        "[rank0]:[E ProcessGroupNCCL.cpp:577] [Rank 0] Some NCCL operations have failed or "
        "timed out. Due to the asynchronous nature of CUDA kernels, …",
    ):
        f = findings(scan_bytes(line + "\n"))[0]
        assert f.rule == "TRI002" and "timed out" in f.message, f.message


def test_a_warning_does_not_hide_the_real_failure_after_it():
    log = (
        "WARNING 05-02 10:00:00 [__init__.py:1] Failed to import from vllm._C with "
        "ModuleNotFoundError(\"No module named 'vllm._C'\")\nTraceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 9, in f\n'
        "ZeroDivisionError: division by zero\n"
    )
    f = findings(scan_bytes(log))[0]
    assert "ZeroDivisionError" in f.message and "raised in trl" in f.message


def test_trl_without_vllm_serve_is_told_its_release():
    log = (
        "- TRL version: 0.15.2\n"
        "usage: trl [-h] {chat,dpo,env,kto,sft} ...\n"
        "trl: error: argument command: invalid choice: 'vllm-serve' (choose from 'chat', 'dpo', "
        "'env', 'kto', 'sft')\n"
    )
    f = findings(scan_bytes(log))[0]
    assert f.rule == "TRI010" and "TRL 0.15.2" in f.message and "0.16.0" in f.message
    assert "trl[vllm]>=0.16" in f.fix


def test_a_log_with_only_healthy_lines_gets_nothing():
    assert findings(scan_bytes(NOISE * 10 + "Error rate: 0.0\n")) == []
