"""Recurring failures of GRPO / RL post-training around the trainer and vLLM (catalogue entries of
rules/knowledge/known_failures/), each with a text where it fires and a near miss where it stays
quiet.

The firing texts are the dev logs' (docs/validation/heldout-2026-11-29i/logs17a, logs17c;
heldout-2026-11-28c/logs/049) or the cited threads' (huggingface/transformers#47254,
deepspeedai/DeepSpeed#8072, NVIDIA-NeMo/RL#564).
"""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes


def _entry(log: str, entry: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f"({entry})" in f.message]


# -- vLLM >= 0.19's piecewise compile on a LoRA engine ----------------------------------------------

SIZE_NODE = "vllm-0.19-piecewise-compile-lora-size-node"
ERASE = (
    "RuntimeError: Tried to erase Node size_1 but it still had 2 users in the graph: "
    "{getitem_3: None, getitem_4: None}!\n"
)
ERASE_TRACE = (  # heldout-2026-11-29i/logs17c/002 (a Colab T4, Unsloth 2026.4.8), cut
    "INFO 05-05 06:20:50 [core.py:105] Initializing a V1 LLM engine (v0.19.1) with config: "
    "model='unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit', enforce_eager=False\n"
    "/usr/local/lib/python3.12/dist-packages/vllm/compilation/backends.py in split_graph(graph,"
    " splitting_ops)\n"
    "    533 ) -> tuple[fx.GraphModule, list[SplitItem]]:\n"
    "--> 534     _decompose_size_nodes(graph)\n"
    "/usr/local/lib/python3.12/dist-packages/vllm/compilation/backends.py in _decompose_size_nodes(graph)\n"
    "    527             user.args = tuple(new_args)\n"
    "--> 528         graph.graph.erase_node(node)\n"
    "/usr/local/lib/python3.12/dist-packages/torch/fx/graph.py in erase_node(self, to_erase)\n"
    "   1443         if len(to_erase.users) > 0:\n"
    "-> 1444             raise RuntimeError(\n" + ERASE
)


@pytest.mark.parametrize("log", [ERASE, ERASE_TRACE])
def test_the_size_node_pass_on_a_lora_engine_is_an_error_to_patch_or_skip_the_compile(log):
    found = _entry(log, SIZE_NODE)
    assert found and found[0].rule == "TRI011" and found[0].severity.value == "error"
    assert "unsloth-zoo>=2026.7.1" in found[0].fix and "enforce_eager=True" in found[0].fix
    assert "fast_inference=False" in found[0].fix


def test_a_release_before_the_pass_is_not_this_entry():
    log = "INFO 03-02 10:00:00 [core.py:61] Initializing a V1 LLM engine (v0.18.1) with config: x\n" + ERASE
    assert not _entry(log, SIZE_NODE)


def test_another_compile_pass_erasing_a_node_is_not_this_entry():
    """torch's own passes erase nodes too (pytorch/pytorch#133942): another node, other frames."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/torch/_inductor/fx_passes/post_grad.py", line 90,'
        " in post_grad_passes\n"
        "    gm.graph.erase_node(node)\n"
        '  File "/usr/local/lib/python3.10/dist-packages/torch/fx/graph.py", line 1030, in erase_node\n'
        "    raise RuntimeError(f'Tried to erase Node {to_erase} but it still had {len(to_erase.users)} '\n"
        "RuntimeError: Tried to erase Node add_3 but it still had 1 users in the graph: {mul_2: None}!\n"
    )
    assert not _entry(log, SIZE_NODE)


# -- non-reentrant checkpointing over ZeRO-3 / FSDP partitioned parameters -------------------------

RECOMPUTE = "sharded-params-non-reentrant-checkpoint-recompute"
CKPT_MESSAGE = (
    "[rank0]: torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: Recomputed values for the "
    "following tensors have different metadata than during the forward pass.\n"
    "[rank0]: tensor at position 4:\n"
    "[rank0]: saved metadata: {'shape': torch.Size([1024]), 'dtype': torch.bfloat16, 'device': "
    "device(type='cuda', index=0)}\n"
    "[rank0]: recomputed metadata: {'shape': torch.Size([0]), 'dtype': torch.bfloat16, 'device': "
    "device(type='cuda', index=0)}\n"
)
CKPT_ZERO3 = (  # the backward of a ZeRO-3 engine (huggingface/transformers#47254's shape)
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 2298,'
    " in backward\n"
    "[rank0]:     self.optimizer.backward(loss, retain_graph=retain_graph)\n"
    '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/deepspeed/runtime/zero/stage3.py", line 2259,'
    " in backward\n"
    "[rank0]:     self.loss_scaler.backward(loss.float(), retain_graph=retain_graph)\n"
    '[rank0]:   File "/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py", line 1129,'
    " in unpack_hook\n"
    "[rank0]:     frame.check_recomputed_tensors_match(gid)\n" + CKPT_MESSAGE
)
CKPT_PARAPHRASE = (  # heldout-2026-11-29i/logs17a/011 (an OpenRLHF run's notes, ZeRO-3 offload)
    "torch.utils.checkpoint.CheckpointError\n"
    "Recomputed values for tensors have different metadata than during forward pass\n"
    "saved: shape=[2880], recomputed: shape=[0]\n"
)


def test_zero3_frames_before_the_checkpoint_error_make_it_an_error_for_reentrant_checkpointing():
    found = _entry(CKPT_ZERO3, RECOMPUTE)
    assert found and found[0].severity.value == "error"
    assert "use_reentrant" in found[0].fix and "deepspeed/runtime/zero/stage3.py" in found[0].message


@pytest.mark.parametrize("log", [CKPT_MESSAGE, CKPT_PARAPHRASE])
def test_a_recomputed_shape_0_after_the_message_makes_it_an_error(log):
    # torch prints the metadata on the lines after its message: the recomputed [0] (a partitioned
    # parameter, the entry's certain_with) is read there too (issue 36 item 5)
    found = _entry(log, RECOMPUTE)
    assert found and found[0].severity.value == "error"
    assert "shape" in found[0].message and "[0]" in found[0].message.split("settles it")[-1]
    assert "use_reentrant" in found[0].fix


@pytest.mark.parametrize(
    "log",
    [
        "torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: Recomputed values for the "
        "following tensors have different metadata than during the forward pass.\n",
        # a [0] on a later message of its own, not this one's: not read as its metadata
        "torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: Recomputed values for the "
        "following tensors have different metadata than during the forward pass.\n\n"
        "recomputed: shape=[0]\n",
    ],
)
def test_the_checkpoint_error_without_a_recomputed_0_is_a_warning_naming_the_partitioned_parameters(log):
    found = _entry(log, RECOMPUTE)
    assert found and found[0].severity.value == "warning"
    assert "use_reentrant" in found[0].fix


def test_a_recomputed_tensor_shown_without_a_0_rules_the_partitioned_parameters_out():
    """The recomputed metadata is shown and differs otherwise than a partitioned [0]: the entry's
    evidence is absent (its ``ruled_out_by``; set 22 f006's wrong warning, mended in session 24)."""
    log = CKPT_MESSAGE.replace(
        "torch.Size([0]), 'dtype': torch.bfloat16", "torch.Size([1024]), 'dtype': torch.float32"
    )
    assert _entry(log, RECOMPUTE) == []


def test_another_checkpoint_error_is_not_this_entry():
    log = (
        "torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: A different number of tensors "
        "was saved during the original forward and recomputation.\n"
        "Number of tensors saved during forward: 12\n"
        "Number of tensors saved during recomputation: 10\n"
    )
    assert not _entry(log, RECOMPUTE)


# -- ZeRO-3 parameters of two dtypes ----------------------------------------------------------------

MIXED = "deepspeed-zero3-mixed-dtype-parameters-allgather"
MIXED_LINE = "TypeError: output tensor must have the same type as input tensor\n"  # logs17a/013
MIXED_TRACE = (  # deepspeedai/DeepSpeed#8072's shape
    "- DeepSpeed version: 0.18.6\n"
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/usr/local/lib/python3.12/site-packages/deepspeed/runtime/zero/'
    'partition_parameters.py", line 1943, in _allgather_params_coalesced\n'
    "[rank0]:     h = dist.all_gather_into_tensor(allgather_params[param_idx],\n"
    '[rank0]:   File "/usr/local/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py",'
    " line 4017, in all_gather_into_tensor\n"
    "[rank0]:     work = group._allgather_base(output_tensor, input_tensor, opts)\n"
    "[rank0]: " + MIXED_LINE
)


def test_mixed_dtypes_in_a_deepspeed_release_before_the_fix_are_an_error():
    found = _entry(MIXED_TRACE, MIXED)
    assert found and found[0].severity.value == "error"
    assert "deepspeed>=0.19.3" in found[0].fix and "torch.bfloat16" in found[0].fix


def test_the_message_alone_is_a_warning_with_the_cast_and_the_release():
    found = [f for f in findings(scan_bytes(MIXED_LINE)) if f.severity.value != "info"]
    assert found and f"({MIXED})" in found[0].message and found[0].severity.value == "warning"


def test_a_deepspeed_release_with_the_fix_is_not_this_entry():
    assert not _entry("- DeepSpeed version: 0.19.4\n" + MIXED_LINE, MIXED)
    assert _entry("- DeepSpeed version: 0.18.6\n" + MIXED_LINE, MIXED)


def test_an_all_gather_of_two_dtypes_outside_deepspeed_is_not_this_entry():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 88, in gather_stats\n'
        "    dist.all_gather_into_tensor(out, local)\n"
        '  File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4017,'
        " in all_gather_into_tensor\n"
        "    work = group._allgather_base(output_tensor, input_tensor, opts)\n" + MIXED_LINE
    )
    assert not _entry(log, MIXED)


# -- vLLM's PyNccl communicator: NCCL's own CUDA / system call failed ------------------------------

PYNCCL = "vllm-pynccl-unhandled-cuda-system-error-transport"
PYNCCL_LINE = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
PYNCCL_P2P = (  # NVIDIA-NeMo/RL#564's trace (NCCL 2.26.2, NCCL_CUMEM_ENABLE=0 from vLLM)
    "node-1:3120:3120 [0] NCCL INFO NCCL_CUMEM_ENABLE set by environment to 0.\n"
    "node-1:3120:3188 [0] transport/p2p.cc:298 NCCL WARN Cuda failure 'invalid argument'\n"
    "node-1:3120:3188 [0] NCCL INFO transport/p2p.cc:441 -> 1\n"
    '  File "/opt/nemo_rl_venv/lib/python3.12/site-packages/vllm/distributed/device_communicators/'
    'pynccl_wrapper.py", line 291, in NCCL_CHECK\n'
    '    raise RuntimeError(f"NCCL error: {error_str}")\n' + PYNCCL_LINE
)


@pytest.mark.parametrize(
    "log",
    [PYNCCL_LINE, "NCCL error: unhandled cuda error\n"],  # the second: logs17a/009, a note's words
)
def test_a_pynccl_unhandled_error_is_a_warning_naming_cumem_and_p2p(log):
    found = _entry(log, PYNCCL)
    assert found and found[0].severity.value == "warning"
    assert "NCCL_CUMEM_ENABLE" in found[0].fix and "NCCL_P2P_DISABLE=1" in found[0].fix


def test_the_cumem_lever_matches_vllms_value_in_the_trainer_as_well_as_unsetting_it():
    """vLLM sets NCCL_CUMEM_ENABLE=0 in its workers: a trainer joining its group with cuMem on is
    fixed by setting 0 there too (NovaSky-AI/SkyRL#143), not only by unsetting it everywhere."""
    (f,) = _entry(PYNCCL_LINE, PYNCCL)
    assert "one value in every process" in f.fix and "NCCL_CUMEM_ENABLE=0 in the trainer" in " ".join(
        f.fix.split()
    )


def test_nccls_legacy_ipc_warning_before_it_settles_the_transport():
    found = _entry(PYNCCL_P2P, PYNCCL)
    assert found and found[0].severity.value == "error"
    assert "settles" in found[0].message


@pytest.mark.parametrize(
    "log",
    [
        # torch's own wording is TRI002's line (its handler reads NCCL's "Last error:")
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275,"
        " unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n",
        # two ranks on one GPU: another entry's words
        "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=INFO for details)\n",
    ],
)
def test_other_nccl_errors_are_not_this_entry(log):
    assert not _entry(log, PYNCCL)


# -- a Ray collective NCCL group whose ranks never met ------------------------------------------------

RAY_MEET = "ray-collective-nccl-rendezvous-store-not-met"


def test_ray_collectives_rendezvous_failure_is_a_warning_naming_timing_and_namespace():
    log = (  # heldout-2026-11-29i/logs17a/012 (OpenRLHF --vllm_sync_with_ray, vLLM V1)
        "RuntimeError: Unable to meet other processes at the rendezvous store. If you are using P2P "
        "communication, please check if tensors are put in the correct GPU.\n"
    )
    found = _entry(log, RAY_MEET)
    assert found and found[0].severity.value == "warning"
    assert "namespace" in found[0].fix and "--vllm_sync_with_ray" in found[0].fix


def test_another_ray_collective_error_is_not_this_entry():
    log = "ValueError: Rendezvous store is not setup.\n"
    assert not _entry(log, RAY_MEET)
