"""Severity by certainty (issue 36 item 5): an error where the log's failure is the cause's own
message and nothing the log does not show decides it; a warning where it hinges on what the log
does not show. Real lines from the dev sets (docs/validation/heldout-2026-11-2*/)."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

# -- a shipped signature's message pasted without its exception's name --------------------------

#: heldout-2026-11-29/logs/013 (vLLM 0.2.7's V0 engine: the paster left out "ValueError: ")
KV_PROSE = (
    "The model's max seq len (8192) is larger than the maximum number of tokens that can be stored in "
    "KV cache (4512). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
    "initializing the engine.\n"
)


def test_an_own_message_without_its_exception_name_is_said_by_its_own_rule():
    found = [f for f in findings(scan_bytes(KV_PROSE)) if f.severity.value != "info"]
    assert [f.rule for f in found] == ["MEM001"] and found[0].severity.value == "error"
    assert "8192" in found[0].message and "4512" in found[0].fix  # its numbers, not an entry's release


def test_the_same_message_with_its_exception_name_is_unchanged():
    found = [f for f in findings(scan_bytes("ValueError: " + KV_PROSE)) if f.severity.value != "info"]
    assert [f.rule for f in found] == ["MEM001"] and found[0].severity.value == "error"


@pytest.mark.parametrize(
    "log",
    [
        # the words in a sentence that is no such message: the pattern, not the keyword, decides
        "we raised gpu_memory_utilization; now the maximum number of tokens that can be stored in KV "
        "cache is fine\n",
        # a failure named by the scan already: the prose pass is not tried
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + KV_PROSE,
    ],
)
def test_prose_without_the_message_or_after_a_named_failure_gets_no_memory_finding(log):
    assert not any(f.rule == "MEM001" for f in findings(scan_bytes(log)))


#: a run that trained on after the quoted words: they did not end it
STEPS = "{'loss': 0.53, 'grad_norm': 1.2, 'epoch': 0.1}\n{'train_runtime': 100.0, 'train_loss': 0.47}\n"


@pytest.mark.parametrize(
    "log",
    [
        KV_PROSE + STEPS,  # read by head_symptoms' prose pass (a catalogue entry's words on the line)
        'a colleague said "CUDA error: out of memory" happened with batch 64; my log:\n' + STEPS,
        "# from our wiki: when you see \"The model's max seq len (32768) is larger than the maximum number "
        'of tokens that can be stored in KV cache (4512)" lower the length\n' + STEPS,
    ],
)
def test_an_own_message_in_prose_that_training_went_on_after_is_no_failure(log):
    assert [f for f in findings(scan_bytes(log)) if f.severity.value != "info"] == []


# -- a settling line after the symptom: the rest of its message --------------------------------


def test_the_settling_line_is_read_in_the_messages_continuation_not_past_a_blank_line():
    import re
    from types import SimpleNamespace

    from envdoctor.knowledge.failures import Symptom
    from envdoctor.triage.classes import _settled_by_context
    from envdoctor.triage.draft import Log
    from envdoctor.triage.interface import Match, Signature

    entry = SimpleNamespace(certain_with=(Symptom("re:recomputed(?: metadata)?: shape=\\[0\\]", "test"),))
    sig = Signature(
        id="x", rule="TRI011", summary="", keywords=(b"x",), pattern=re.compile("x"), references=()
    )
    m = Match(
        sig, 2, "Recomputed values for tensors have different metadata than during forward pass", {}, None
    )
    head = "torch.utils.checkpoint.CheckpointError\nRecomputed values ...\n"
    goes_on = (head + "saved: shape=[2880], recomputed: shape=[0]\n").encode()
    apart = (head + "\nrecomputed: shape=[0]\n").encode()
    assert (
        _settled_by_context(entry, m, Log({}, {}, None, head=goes_on))
        == "saved: shape=[2880], recomputed: shape=[0]"
    )
    assert _settled_by_context(entry, m, Log({}, {}, None, head=apart)) == ""
    assert _settled_by_context(entry, m) == ""  # no head: only the lines before it and its own


# -- the entry's own frame settles a cause that hinges on no release ----------------------------

ASCEND = "vllm-ascend-pyhccl-device-none"
#: heldout-2026-11-28c/logs/003 (modelscope/ms-swift#6011: trl vllm-serve on vllm-ascend)
ASCEND_LOG = (
    "(Worker_TP2 pid=3549) ERROR 09-26 15:11:03 [multiproc_executor.py:654] Traceback "
    "(most recent call last):\n"
    '(Worker_TP2 pid=3549) ERROR 09-26 15:11:03 [multiproc_executor.py:654]   File "/home/ma-user/anaconda3/'
    'envs/swift/lib/python3.10/site-packages/trl/scripts/vllm_serve.py", line 108, in init_communicator\n'
    "(Worker_TP2 pid=3549) ERROR 09-26 15:11:03 [multiproc_executor.py:654]     self.pynccl_comm = "
    "PyNcclCommunicator(pg, device=self.device)\n"
    '(Worker_TP2 pid=3549) ERROR 09-26 15:11:03 [multiproc_executor.py:654]   File "/home/ma-user/anaconda3/'
    'envs/vllm-ascend/vllm_ascend/distributed/device_communicators/pyhccl.py", line 90, in __init__\n'
    "(Worker_TP2 pid=3549) ERROR 09-26 15:11:03 [multiproc_executor.py:654]     assert isinstance(device, "
    "torch.device)\n"
    "(Worker_TP2 pid=3549) ERROR 09-26 15:11:03 [multiproc_executor.py:654] AssertionError\n"
)


def _ascend(log: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f.evidence.get("known_failure") == ASCEND]


def test_vllm_ascends_frame_makes_the_pyhccl_assertion_an_error():
    found = _ascend(ASCEND_LOG)
    assert found and found[0].severity.value == "error"
    assert "vllm-ascend (distributed/device_communicators/pyhccl.py:90" in found[0].message


def test_the_same_assertion_in_vllms_own_pynccl_is_not_vllm_ascends():
    log = ASCEND_LOG.replace(
        "envs/vllm-ascend/vllm_ascend/distributed/device_communicators/pyhccl.py",
        "envs/swift/lib/python3.10/site-packages/vllm/distributed/device_communicators/pynccl.py",
    )
    assert _ascend(log) == []


def test_the_assertion_without_its_frame_stays_a_warning():
    found = _ascend("    assert isinstance(device, torch.device)\nAssertionError\n")
    assert [f.severity.value for f in found] == ["warning"]


# -- a symptom that shows the pairing itself ------------------------------------------------------

SEED = "trl-seed-worker-transformers-4.52"
#: heldout-2026-11-28/logs/072 (trl 0.17.0 with transformers 4.56.1)
SEED_LINE = "TypeError: seed_worker() missing 2 required positional arguments: 'num_workers' and 'rank'\n"


def _seed(log: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f.evidence.get("known_failure") == SEED]


def test_seed_workers_missing_arguments_are_an_error_without_versions():
    found = _seed(SEED_LINE)
    assert [f.severity.value for f in found] == ["error"] and "trl>=0.18.2" in found[0].fix


def test_a_log_whose_trl_is_past_the_fix_gets_no_seed_worker_finding():
    assert _seed("- TRL version: 0.19.0\n" + SEED_LINE) == []


def test_vllm_load_weights_keyerror_without_vllms_frame_stays_a_warning():
    # heldout-2026-11-28b/logs2/134's line without its frame: the frame, not the words, settles it
    found = [
        f
        for f in findings(scan_bytes("KeyError: 'layers.0.mlp.gate_up_proj.weight'\n"))
        if f.evidence.get("known_failure") == "vllm-load-weights-stacked-name-keyerror"
    ]
    assert [f.severity.value for f in found] == ["warning"]


# -- the entry's own frame does not settle an entry whose fix is another release -----------------

#: vllm-project/vllm#9937 (vLLM 0.6.3.post1, Phi-3 loaded with bitsandbytes: the loader's packed
#: names, another cause than the entry's; the engine's release is not in these lines). The entry's
#: fix asks for a vLLM with vllm-project/vllm#39935 in words, so vLLM's load_weights frame shows
#: the code ran, not a release without the fix: a warning, as without the frame
LOAD_WEIGHTS_BNB = (
    "INFO 11-01 17:09:42 loader.py:1051] Loading weights with BitsAndBytes quantization.  "
    "May take a while ...\n"
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/opt/conda/lib/python3.10/site-packages/vllm/model_executor/model_loader/loader.py", '
    "line 1063, in _load_weights\n"
    "[rank0]:     model.load_weights(qweight_iterator)\n"
    '[rank0]:   File "/opt/conda/lib/python3.10/site-packages/vllm/model_executor/models/llama.py", '
    "line 362, in load_weights\n"
    "[rank0]:     param = params_dict[name]\n"
    "[rank0]: KeyError: 'layers.21.mlp.gate_up_proj.weight'\n"
)

#: TRL's NaN-logprob crash: bounded to TRL 0.29-1.9 and fixed by "upgrade TRL past 1.9" (in words)
NAN_LOGPROB = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/train_grpo.py", line 80, in <module>\n'
    "    trainer.train()\n"
    '  File "/usr/local/lib/python3.11/site-packages/transformers/trainer.py", line 2240, in train\n'
    "    return inner_training_loop(\n"
    '  File "/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1402, in '
    "_prepare_inputs\n"
    "    generation_batch = self._generate_and_score_completions(generation_batch)\n"
    '  File "/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1770, in '
    "_generate_and_score_completions\n"
    "    sampling_per_token_logps = torch.tensor(sampling_per_token_logps_list, device=device)\n"
    "RuntimeError: Could not infer dtype of NoneType\n"
)


@pytest.mark.parametrize(
    ("log", "entry"),
    [
        (LOAD_WEIGHTS_BNB, "vllm-load-weights-stacked-name-keyerror"),
        (NAN_LOGPROB, "trl-vllm-nan-logprob-none-crash"),
    ],
)
def test_an_entrys_frame_does_not_settle_a_fix_that_is_another_release(log, entry):
    found = [f for f in findings(scan_bytes(log)) if f.evidence.get("known_failure") == entry]
    assert [f.severity.value for f in found] == ["warning"]
    assert "settled_by" not in found[0].evidence


def test_an_upgrade_in_words_or_a_bounded_range_is_a_release_fix():
    from types import SimpleNamespace as E

    from envdoctor.triage.classes import _fix_is_a_release

    assert _fix_is_a_release(E(fix="upgrade vLLM to a release with vllm-project/vllm#39935", packages={}))
    assert _fix_is_a_release(E(fix="find why the logits are NaN", packages={"trl": ">=0.29.0,<1.10.0"}))
    ascend = E(fix="apply vllm-project/vllm-ascend#7254, or use colocate mode", packages={})
    assert not _fix_is_a_release(ascend)
