"""Known failures behind misses of held-out sets 24 and 25 (issue 36), each settled by a public fix
read at the packages' tags: peft 0.18.0 importing GradientCheckpointingLayer, peft's prompt-learning
4D mask before 0.16.0, Gemma 3's token_type_ids check in transformers 5.0-5.5, accelerate's
StatefulDataLoader prefetch keys before 1.13.0, FSDP1's uniform-dtype flatten, vLLM's custom
all-reduce CUDA error, DeepSpeed's PDSH launcher before 0.14.1, TRL's SFTTrainer popping
push_to_hub_token on transformers 5 (before 0.27.2), TRL's activation-offloading tracker (before
0.24.0). Each fires on its log's shape (a synthetic log and the real dev log) and stays quiet on a
near log (another release, another frame, another wording of another failure); the cut-traceback
reader offers the peft entry where a log stopped inside peft's import chain.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.helpers import findings, scan_bytes

DEV = Path(__file__).resolve().parents[2] / "docs" / "validation"


def _dev(rel: str) -> str:
    return (DEV / rel).read_text(encoding="utf-8")


def _entry(log: str, entry: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f"({entry})" in f.message]


def _one(log: str, entry: str, severity: str):
    got = _entry(log, entry)
    assert got, log
    assert got[0].rule == "TRI011" and got[0].severity.value == severity
    return got[0]


def _frames(*frames: tuple[str, int, str, str]) -> str:
    return "Traceback (most recent call last):\n" + "".join(
        f'  File "{path}", line {line}, in {fn}\n    {code}\n' for path, line, fn, code in frames
    )


SITE = "/app/.venv/lib/python3.11/site-packages"

# -- peft 0.18.0 importing GradientCheckpointingLayer --------------------------------------------

GCL = "peft-0.18.0-imports-gradient-checkpointing-layer"
PEFT_IMPORT = [
    ("/app/train.py", 3, "<module>", "from peft import LoraConfig"),
    (f"{SITE}/peft/__init__.py", 17, "<module>", "from .auto import ("),
    (f"{SITE}/peft/tuners/lora/__init__.py", 23, "<module>", "from .model import LoraModel"),
]
GCL_FRAME = (
    f"{SITE}/peft/tuners/lora/model.py",
    26,
    "<module>",
    "from transformers.modeling_layers import GradientCheckpointingLayer",
)
GCL_TRACE = (
    _frames(*PEFT_IMPORT, GCL_FRAME) + "ModuleNotFoundError: No module named 'transformers.modeling_layers'\n"
)


def test_peft_0_18_0_with_an_older_transformers_is_an_error_to_upgrade_transformers():
    f = _one("peft==0.18.0\ntransformers==4.51.3\n" + GCL_TRACE, GCL, "error")
    assert f.fix.startswith("pip install 'transformers>=4.52'") and "'peft>=0.18.1'" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        GCL_TRACE,  # no versions shown
        # another wording: a transformers with the module but not the class
        GCL_TRACE.replace(
            "ModuleNotFoundError: No module named 'transformers.modeling_layers'",
            "ImportError: cannot import name 'GradientCheckpointingLayer'"
            " from 'transformers.modeling_layers'",
        ),
        _dev("heldout-2026-11-30h/logs25a/logs/003.log"),  # prose quoting the import's source line
    ],
)
def test_the_import_without_versions_is_a_warning(log):
    _one(log, GCL, "warning")


@pytest.mark.parametrize(
    "log",
    [
        "peft==0.18.1\ntransformers==4.51.3\n" + GCL_TRACE,  # another release of peft
        "peft==0.18.0\ntransformers==4.57.1\n" + GCL_TRACE,  # a transformers that has it
        # a remote-code model importing the module: frames, none of them peft's
        _frames(
            ("/app/train.py", 9, "<module>", "model = AutoModelForCausalLM.from_pretrained(path)"),
            (
                "/root/.cache/huggingface/modules/transformers_modules/org/m/modeling_m.py",
                12,
                "<module>",
                "from transformers.modeling_layers import GenericForTokenClassification",
            ),
        )
        + "ModuleNotFoundError: No module named 'transformers.modeling_layers'\n",
    ],
)
def test_other_releases_and_other_importers_are_not_peft_0_18_0(log):
    assert _entry(log, GCL) == []


def test_a_log_cut_inside_peft_s_import_chain_is_offered_the_peft_entry():
    """heldout-2026-11-30h/logs25a/001: stops at peft's adalora/__init__ importing its config."""
    (f,) = findings(scan_bytes(_dev("heldout-2026-11-30h/logs25a/logs/001.log")))
    assert f.rule == "TRI003" and f.severity.value == "warning"
    assert f.evidence["candidates"] == [GCL]
    assert "while peft was being imported" in f.message
    assert f.fix.startswith(f"if it is {GCL}: pip install 'transformers>=4.52'")


@pytest.mark.parametrize(
    "log",
    [
        # the versions rule it out
        "peft==0.17.1\n" + _frames(*PEFT_IMPORT),
        # a cut inside another package's import chain
        _frames(
            ("/app/train.py", 3, "<module>", "import vllm"),
            (f"{SITE}/vllm/__init__.py", 12, "<module>", "from vllm.engine.arg_utils import EngineArgs"),
        ),
        # peft's own code, but not its import: a call at run time
        _frames(
            ("/app/train.py", 30, "<module>", "model = get_peft_model(model, config)"),
            (f"{SITE}/peft/mapping_func.py", 120, "get_peft_model", "return PeftModel(model, peft_config)"),
        ),
    ],
)
def test_a_cut_elsewhere_is_not_offered_the_peft_entry(log):
    (f,) = findings(scan_bytes(log))
    assert f.rule == "TRI003" and GCL not in f.evidence.get("candidates", [])


# -- peft's prompt-learning mask on a 4D attention mask ------------------------------------------

MASK = "peft-prompt-learning-4d-attention-mask-before-0.16"
MASK_TRACE = (
    _frames(
        ("/work/gen.py", 40, "<module>", "out = model.generate(**batch, max_new_tokens=64)"),
        (
            f"{SITE}/peft/peft_model.py",
            1921,
            "prepare_inputs_for_generation",
            'model_kwargs["attention_mask"] = torch.cat(',
        ),
    )
    + "RuntimeError: Tensors must have same number of dimensions: got 2 and 4\n"
)


@pytest.mark.parametrize(
    "log",
    [
        "peft==0.15.2\n" + MASK_TRACE,
        _dev("heldout-2026-11-30h/logs25a/logs/009.log"),  # peft#2452: its frames place peft 0.15
    ],
)
def test_prompt_learning_on_a_4d_mask_is_an_error_to_upgrade_peft(log):
    f = _one(log, MASK, "error")
    assert f.fix.startswith("pip install 'peft>=0.16.0'")


@pytest.mark.parametrize(
    "log",
    [
        "peft==0.16.0\n" + MASK_TRACE,  # the fixed release
        # the same torch.cat message from the user's own code
        _frames(("/work/model.py", 88, "forward", "h = torch.cat((mask, extended), dim=1)"))
        + "RuntimeError: Tensors must have same number of dimensions: got 2 and 4\n",
    ],
)
def test_other_concats_are_not_peft_s_prompt_mask(log):
    assert _entry(log, MASK) == []


# -- Gemma 3's token_type_ids in transformers 5.0-5.5 --------------------------------------------

GEMMA = "gemma3-token-type-ids-required-training-5.0"


def _gemma(path: str, fn: str, name: str = "token_type_ids") -> str:
    return (
        _frames(
            ("/work/sft.py", 50, "<module>", "trainer.train()"),
            (f"{SITE}/transformers/models/{path}", 754, fn, f'raise ValueError("`{name}` is required ...")'),
        )
        + f"ValueError: `{name}` is required as a model input when training\n"
    )


@pytest.mark.parametrize(
    "log, severity",
    [
        (
            "transformers==5.2.0\n" + _gemma("gemma3/modeling_gemma3.py", "create_causal_mask_mapping"),
            "error",
        ),
        (_dev("heldout-2026-11-30h/logs25a/logs/004.log"), "warning"),  # trl#5807: no transformers shown
        # another wording: the message pasted without its backticks
        ("ValueError: token_type_ids is required as a model input when training\n", "warning"),
    ],
)
def test_gemma3_training_without_token_type_ids_names_transformers_5_6(log, severity):
    f = _one(log, GEMMA, severity)
    assert f.fix.startswith("pip install 'transformers>=5.6.0'") and "zeros" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        "transformers==5.6.0\n" + _gemma("gemma3/modeling_gemma3.py", "create_causal_mask_mapping"),
        # PaliGemma requires them for its own prefix: another model's frame
        _gemma("paligemma/modeling_paligemma.py", "create_causal_mask_mapping"),
        # Gemma 4's input of another name
        "ValueError: `mm_token_type_ids` is required as a model input when training\n",
    ],
)
def test_other_models_and_releases_are_not_gemma3_s_check(log):
    assert _entry(log, GEMMA) == []


# -- accelerate's StatefulDataLoader prefetch keys -----------------------------------------------

STATEFUL = "accelerate-stateful-dataloader-multiworker-keyerror"
STATEFUL_TRACE = (
    _frames(
        (f"{SITE}/accelerate/data_loader.py", 575, "__iter__", "self._update_state_dict()"),
        (
            f"{SITE}/accelerate/data_loader.py",
            495,
            "_update_state_dict",
            "self.adjust_state_dict_for_prefetch()",
        ),
        (
            f"{SITE}/accelerate/data_loader.py",
            475,
            "adjust_state_dict_for_prefetch",
            'if self.dl_state_dict["_sampler_iter_yielded"] > 0:',
        ),
    )
    + "KeyError: '_sampler_iter_yielded'\n"
)


@pytest.mark.parametrize(
    "log, severity",
    [
        ("accelerate==1.12.0\n" + STATEFUL_TRACE, "error"),
        (_dev("heldout-2026-11-30h/logs25a/logs/013.log"), "warning"),  # no frame, no version
    ],
)
def test_the_missing_prefetch_key_is_accelerate_before_1_13(log, severity):
    f = _one(log, STATEFUL, severity)
    assert f.fix.startswith("pip install 'accelerate>=1.13.0'") and "num_workers=0" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        "accelerate==1.13.0\n" + STATEFUL_TRACE,
        # torchdata's own load_state_dict (a state saved with another num_workers)
        _frames(
            (
                f"{SITE}/torchdata/stateful_dataloader/stateful_dataloader.py",
                620,
                "load_state_dict",
                "self._num_yielded = state_dict[self._SAMPLER_ITER_YIELDED]",
            ),
        )
        + "KeyError: '_sampler_iter_yielded'\n",
    ],
)
def test_the_key_elsewhere_is_not_accelerate_s_prefetch(log):
    assert _entry(log, STATEFUL) == []


# -- FSDP1 flattening mixed dtypes ---------------------------------------------------------------

FSDP = "fsdp1-flatten-mixed-dtype-parameters"


@pytest.mark.parametrize(
    "log",
    [
        _frames(
            (
                f"{SITE}/torch/distributed/fsdp/_flat_param.py",
                785,
                "_validate_tensors_to_flatten",
                "raise ValueError(",
            ),
        )
        + "ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.uint8\n",
        _dev("heldout-2026-11-30h/logs25d/logs/007.log"),  # axolotl#1559: QLoRA + FSDP DPO upcast
    ],
)
def test_fsdp_mixed_dtypes_is_an_error_to_give_every_parameter_one_dtype(log):
    f = _one(log, FSDP, "error")
    assert "bnb_4bit_quant_storage=torch.bfloat16" in f.fix and "p.data.to(torch.bfloat16)" in f.fix


def test_fsdp_s_other_flatten_refusal_is_not_the_dtype():
    log = "ValueError: Must flatten tensors with uniform `requires_grad` when `use_orig_params=False`\n"
    assert _entry(log, FSDP) == []


# -- vLLM's custom all-reduce --------------------------------------------------------------------

CAR = "vllm-custom-all-reduce-cuda-error"


@pytest.mark.parametrize(
    "log",
    [
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:368 'operation not supported'\n"
        "Worker proc VllmWorker-1 died unexpectedly, shutting down executor.\n",
        _dev("heldout-2026-11-30h/logs25c/logs/013.log"),  # vllm#42583: TP=4 with --enable-lora
    ],
)
def test_a_custom_all_reduce_cuda_error_is_a_warning_to_disable_it(log):
    f = _one(log, CAR, "warning")
    assert "--disable-custom-all-reduce" in f.fix and "disable_custom_all_reduce=True" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        "Failed: Cuda error /src/my_kernels/fused_norm.cu:57 'invalid argument'\n",  # another kernel
        # the GPUs refuse peer access: TRI025's (hostenv), which names the same switch
        "Failed: Cuda error /build/csrc/custom_all_reduce.cuh:312 'peer access is not supported between"
        " these two devices'\n",
    ],
)
def test_another_kernel_or_refused_peer_access_is_not_this_entry(log):
    assert _entry(log, CAR) == []


# -- DeepSpeed's PDSH launcher -------------------------------------------------------------------

PDSH = "deepspeed-pdsh-ssh-port-keyerror"
PDSH_TRACE = (
    _frames(
        (f"{SITE}/deepspeed/launcher/runner.py", 557, "main", "cmd = runner.get_cmd(env, active_resources)"),
        (
            f"{SITE}/deepspeed/launcher/multinode_runner.py",
            77,
            "get_cmd",
            'environment["PDSH_SSH_ARGS_APPEND"] += f" -p {self.args.ssh_port}"',
        ),
    )
    + "KeyError: 'PDSH_SSH_ARGS_APPEND'\n"
)


@pytest.mark.parametrize(
    "log", [PDSH_TRACE, "deepspeed==0.13.1\n" + PDSH_TRACE, _dev("heldout-2026-11-30g/logs24e/logs/006.log")]
)
def test_the_pdsh_ssh_port_keyerror_is_an_error_to_upgrade_or_export(log):
    f = _one(log, PDSH, "error")
    assert "deepspeed>=0.14.1" in f.fix and 'export PDSH_SSH_ARGS_APPEND=""' in f.fix


@pytest.mark.parametrize(
    "log",
    [
        "deepspeed==0.14.1\n" + PDSH_TRACE,  # the fixed release
        "KeyError: 'PDSH_RCMD_TYPE'\n",  # another variable
    ],
)
def test_other_releases_and_keys_are_not_the_pdsh_bug(log):
    assert _entry(log, PDSH) == []


# -- TRL's SFTTrainer popping push_to_hub_token on transformers 5 --------------------------------

PUSH = "trl-sft-trainingarguments-push-to-hub-token-transformers-5"
PUSH_TRACE = (
    _frames(
        ("/work/sft.py", 30, "<module>", "trainer = SFTTrainer(model=model, args=training_args)"),
        (f"{SITE}/trl/trainer/sft_trainer.py", 601, "__init__", 'dict_args.pop("push_to_hub_token")'),
    )
    + "KeyError: 'push_to_hub_token'\n"
)


@pytest.mark.parametrize(
    "log, severity",
    [
        ("trl==0.26.2\ntransformers==5.0.0\n" + PUSH_TRACE, "error"),
        (_dev("heldout-2026-11-30h/logs25a/logs/012.log"), "warning"),  # a PR sentence, no versions
    ],
)
def test_sft_trainer_popping_push_to_hub_token_says_pass_an_sft_config(log, severity):
    f = _one(log, PUSH, severity)
    assert f.fix.startswith("pass an SFTConfig") and "'trl>=0.27.2'" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        "trl==0.26.2\ntransformers==4.57.3\n" + PUSH_TRACE,  # transformers 4 still has the field
        "trl==0.27.2\ntransformers==5.0.0\n" + PUSH_TRACE,  # the fixed TRL
        # the same key read by the user's own code
        _frames(("/work/sft.py", 12, "<module>", 'token = cfg["push_to_hub_token"]'))
        + "KeyError: 'push_to_hub_token'\n",
    ],
)
def test_other_releases_and_readers_of_the_key_are_not_trl_s_pop(log):
    assert _entry(log, PUSH) == []


# -- TRL's activation offloading tracker ---------------------------------------------------------

OFFLOAD = "trl-activation-offloading-tracker-not-cleared-before-0.24"


def _offload(path: str) -> str:
    return (
        _frames(
            (f"{SITE}/torch/utils/checkpoint.py", 1120, "recompute_fn", "fn(*args, **kwargs)"),
            (
                path,
                137,
                "pack_tensor",
                'raise ValueError("Backward pass should have cleared tracker of all tensors")',
            ),
        )
        + "ValueError: Backward pass should have cleared tracker of all tensors\n"
    )


@pytest.mark.parametrize(
    "log, severity",
    [
        ("trl==0.23.1\n" + _offload(f"{SITE}/trl/models/activation_offloading.py"), "error"),
        (_dev("heldout-2026-11-30g/logs24a/logs/005.log"), "warning"),  # trl#4236: TRL's slow CI, no versions
    ],
)
def test_activation_offloading_tracker_is_trl_before_0_24(log, severity):
    f = _one(log, OFFLOAD, severity)
    assert f.fix.startswith("pip install 'trl>=0.24.0'") and "activation_offloading=False" in f.fix


@pytest.mark.parametrize(
    "log",
    [
        "trl==0.24.0\n" + _offload(f"{SITE}/trl/models/activation_offloading.py"),  # the fixed release
        _offload(f"{SITE}/torchtune/training/_activation_offloading.py"),  # torchtune's own class
    ],
)
def test_the_tracker_message_elsewhere_is_not_trl_s(log):
    assert _entry(log, OFFLOAD) == []


def test_an_entry_raising_another_exception_at_import_is_not_offered_for_an_import_chain():
    """heldout-2026-11-28e/logs5/004: cut inside verl's import chain (a verl module missing from the
    checkout); verl's vendored-vLLM refusal is a ValueError at verl's import, not an import failing."""
    (f,) = findings(scan_bytes(_dev("heldout-2026-11-28e/logs5/004.log")))
    assert f.rule == "TRI003" and "candidates" not in f.evidence


def test_only_the_import_statement_of_an_entry_becomes_an_anchor():
    """The peft entry's import line is a symptom of its own (a report quotes it alone), but its
    exception keywords ("No module named ", "cannot import name ") stay on the exception's line:
    heldout-2026-11-30d/logs21d/004 keeps its drift answer for a torch symbol."""
    from envdoctor.triage import catalogue
    from envdoctor.triage.signatures import own_anchors

    sigs, _, entries = catalogue.catalogue()
    extra = catalogue.extra_anchors(own_anchors(), sigs, entries)
    assert b"from transformers.modeling_layers import GradientCheckpointingLayer" in extra
    assert not any(kw.startswith((b"No module named", b"cannot import name")) for kw in extra)
    fs = findings(scan_bytes(_dev("heldout-2026-11-30d/logs21d/logs/004.log")))
    assert fs[0].rule == "TRI009"
