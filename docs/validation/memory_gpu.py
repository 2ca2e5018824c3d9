"""Measure the trainer's peak GPU memory in real GRPO steps, one shape after another, in one process.

Random-weight models built from real configs (Qwen2.5-0.5B / -1.5B values, no download), a
word-level tokenizer made in-process, TRL's GRPOTrainer with use_vllm false on one GPU, two
optimizer steps per shape (the second holds the optimizer states). For each shape it records
torch.cuda.max_memory_allocated / max_memory_reserved and the peak NVML reading for this process
(or the device's used memory when NVML lists no process), or the OOM.

    python docs/validation/memory_gpu.py OUT.jsonl [SHAPE_NAME ...]
    torchrun --nproc_per_node 2 docs/validation/memory_gpu.py OUT.jsonl d1   (rank r: OUT.rank<r>)
    accelerate launch --config_file fsdp.yaml docs/validation/memory_gpu.py OUT.jsonl d2
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import threading
import time

QWEN25_05B = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
              "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
              "vocab_size": 151936, "tie_word_embeddings": True,
              "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1e6}
QWEN25_15B = {**QWEN25_05B, "hidden_size": 1536, "intermediate_size": 8960,
              "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2}
#: a vision-language model: Qwen2.5-0.5B's decoder under Qwen2.5-VL's real vision tower (32
#: blocks of 1280, 0.66 B parameters with its merger): the tower is most of the model, so the
#: plan's count of it shows
QWEN25_VL_SMALL = {**QWEN25_05B, "model_type": "qwen2_5_vl",  # mrope over head dim 64:
                   "rope_scaling": {"type": "mrope", "rope_type": "default",
                                    "mrope_section": [8, 12, 12]},
                   "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280,
                                     "intermediate_size": 3420, "num_heads": 16, "in_chans": 3,
                                     "out_hidden_size": 896, "patch_size": 14,
                                     "spatial_merge_size": 2, "temporal_patch_size": 2,
                                     "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}}
#: an MoE: Qwen3-30B-A3B's layer (hidden 2048, 128 experts of 768, top 8, 32 heads, 4 KV heads)
#: at 4 layers
QWEN3_MOE_SMALL = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                   "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
                   "decoder_sparse_step": 1, "norm_topk_prob": True, "num_hidden_layers": 4,
                   "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                   "vocab_size": 151936, "tie_word_embeddings": False,
                   "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1e6}
#: the seventh run (issue #38, 4): the sizes users train (Qwen2.5-3B: tied embeddings;
#: Qwen2.5-7B: untied, 152064 vocabulary)
QWEN25_3B = {**QWEN25_05B, "hidden_size": 2048, "intermediate_size": 11008,
             "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2}
QWEN25_7B = {**QWEN25_05B, "hidden_size": 3584, "intermediate_size": 18944,
             "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
             "vocab_size": 152064, "tie_word_embeddings": False}
MODELS = {"qwen2.5-0.5b": QWEN25_05B, "qwen2.5-3b": QWEN25_3B, "qwen2.5-7b": QWEN25_7B, "qwen2.5-1.5b": QWEN25_15B,
          "qwen2.5-vl-small": QWEN25_VL_SMALL, "qwen3-moe-small": QWEN3_MOE_SMALL}

# name: model, per_device_train_batch_size, prompt tokens, max_completion_length,
# gradient_checkpointing, weight dtype
SHAPES = {
    "s1": ("qwen2.5-0.5b", 8, 128, 256, False, "float32"),
    "s2": ("qwen2.5-0.5b", 8, 128, 256, True, "float32"),
    "s3": ("qwen2.5-0.5b", 16, 128, 512, False, "float32"),
    "s4": ("qwen2.5-0.5b", 16, 128, 512, True, "float32"),
    "s5": ("qwen2.5-1.5b", 8, 128, 256, False, "float32"),
    "s6": ("qwen2.5-1.5b", 8, 128, 256, True, "float32"),
    "s7": ("qwen2.5-1.5b", 16, 128, 512, False, "bfloat16"),
    "s8": ("qwen2.5-1.5b", 32, 256, 1024, False, "float32"),
    "s9": ("qwen2.5-1.5b", 16, 128, 768, False, "float32"),
    "s10": ("qwen2.5-1.5b", 16, 128, 1024, False, "float32"),  # alloc fits, process does not
    "s11": ("qwen2.5-1.5b", 24, 128, 768, False, "float32"),
    # the 7th field holds the rest: "lora" (r, target modules), "optim", "quant" ("4bit": QLoRA's
    # NF4 base), "vllm" (colocate at that fraction), "launch" ("ddp" / "fsdp": 2 ranks, see
    # memory_gpu.sh). The third run's shapes (d*, o1, q1, c1) were predicted before it ran.
    "l1": ("qwen2.5-1.5b", 16, 128, 512, False, "bfloat16", {"lora": (16, ("all-linear",))}),
    "l2": ("qwen2.5-1.5b", 8, 128, 256, True, "float32", {"lora": (64, ("q_proj", "v_proj"))}),
    "d1": ("qwen2.5-1.5b", 8, 128, 256, False, "float32", {"launch": "ddp"}),
    "d2": ("qwen2.5-1.5b", 8, 128, 256, False, "float32", {"launch": "fsdp"}),
    "d3": ("qwen2.5-1.5b", 16, 128, 512, True, "float32", {"launch": "fsdp"}),
    "o1": ("qwen2.5-1.5b", 8, 128, 256, True, "float32", {"optim": "adamw_bnb_8bit"}),
    "q1": ("qwen2.5-1.5b", 8, 128, 256, True, "bfloat16",
           {"quant": "4bit", "lora": (16, ("all-linear",))}),
    "c1": ("qwen2.5-0.5b", 8, 128, 256, False, "float32", {"vllm": 0.3}),
    # next run: why the colocated step at 0.6 fit where s9 alone took 72.5 GiB (memory.md).
    # s9n: s9 with EOS banned (every completion full length: no padding in the batch);
    # c2: s9's shape beside vLLM colocated at 0.3 (its allocations less vLLM's are the trainer's)
    "s9n": ("qwen2.5-1.5b", 16, 128, 768, False, "float32", {"no_eos": True}),
    "c2": ("qwen2.5-1.5b", 16, 128, 768, False, "float32", {"vllm": 0.3}),
    # DeepSpeed ZeRO-2 / ZeRO-3 on 2 ranks (open-r1's zero2.yaml / zero3.yaml at 2 processes)
    "z2": ("qwen2.5-1.5b", 8, 128, 256, False, "float32", {"launch": "zero2"}),
    "z3": ("qwen2.5-1.5b", 8, 128, 256, False, "float32", {"launch": "zero3"}),
    # the fifth run: a reference model (beta > 0, the model given by path as TRL then needs) and
    # ZeRO-1 on 2 ranks
    "b1": ("qwen2.5-1.5b", 8, 128, 256, False, "float32", {"beta": 0.04}),
    "z1": ("qwen2.5-1.5b", 8, 128, 256, False, "float32", {"launch": "zero1"}),
    # the sixth run (issue #28, 5 and 9): TRL 1.x as its users run it (bf16 weights, gradient
    # checkpointing on, the fused log-prob path), a vision-language model and an MoE; every shape
    # records each step's peaks, so the allocator's slack is read at step 2
    "t1": ("qwen2.5-0.5b", 8, 128, 256, True, "bfloat16"),
    "t2": ("qwen2.5-1.5b", 16, 128, 512, True, "bfloat16"),
    "t3": ("qwen2.5-1.5b", 32, 256, 1024, True, "bfloat16"),
    "t4": ("qwen2.5-1.5b", 8, 128, 256, True, "float32"),
    "vl1": ("qwen2.5-vl-small", 8, 128, 256, True, "bfloat16"),
    "vl2": ("qwen2.5-vl-small", 8, 128, 256, False, "float32"),
    "m1": ("qwen3-moe-small", 8, 128, 256, True, "bfloat16"),
    "m2": ("qwen3-moe-small", 8, 128, 256, False, "bfloat16"),
    # the seventh run (issue #38, 4), on H200s: 3B and 7B, full fine-tune where it fits (bf16
    # weights as TRL 1.x users load them; fp32 where the plan says it fits or is the edge),
    # LoRA, and ZeRO-3 on two ranks; predicted before the run (memory-predicted-before-run.md)
    "k1": ("qwen2.5-3b", 8, 128, 256, True, "bfloat16"),
    "k2": ("qwen2.5-3b", 8, 128, 256, True, "float32"),
    "k3": ("qwen2.5-3b", 16, 128, 512, True, "bfloat16", {"lora": (16, ("all-linear",))}),
    "k4": ("qwen2.5-3b", 8, 128, 256, True, "bfloat16", {"launch": "zero3"}),
    "k5": ("qwen2.5-7b", 8, 128, 256, True, "bfloat16"),
    "k6": ("qwen2.5-7b", 4, 128, 256, True, "float32"),
    "k7": ("qwen2.5-7b", 16, 128, 512, True, "bfloat16", {"lora": (16, ("all-linear",))}),
    "k8": ("qwen2.5-7b", 8, 128, 256, True, "bfloat16", {"launch": "zero3"}),
}
#: accelerate config of the "fsdp" shapes (open-r1's recipes/accelerate_configs/fsdp.yaml at
#: 2 processes, without the settings that need from_pretrained on every rank)
FSDP = {"distributed_type": "FSDP", "mixed_precision": "bf16", "num_processes": 2,
        "fsdp_config": {"fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                        "fsdp_backward_prefetch": "BACKWARD_PRE", "fsdp_forward_prefetch": True,
                        "fsdp_offload_params": False, "fsdp_sharding_strategy": "FULL_SHARD",
                        "fsdp_state_dict_type": "FULL_STATE_DICT", "fsdp_cpu_ram_efficient_loading": False,
                        "fsdp_sync_module_states": False, "fsdp_use_orig_params": True}}
DDP = {"distributed_type": "MULTI_GPU", "mixed_precision": "bf16", "num_processes": 2}


def zero(stage: int) -> dict:
    """accelerate config of the "zero2" / "zero3" shapes (open-r1's recipes, 2 processes)."""
    return {"distributed_type": "DEEPSPEED", "mixed_precision": "bf16", "num_processes": 2,
            "deepspeed_config": {"zero_stage": stage, "offload_optimizer_device": "none",
                                 "offload_param_device": "none", "zero3_init_flag": False,
                                 "deepspeed_multinode_launcher": "standard"}}


LAUNCH = {"ddp": DDP, "fsdp": FSDP, "zero1": zero(1), "zero2": zero(2), "zero3": zero(3)}
WORDS = [f"w{i}" for i in range(200)]
DRY = os.environ.get("MEMORY_GPU_DRY") == "1"
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
RANK = int(os.environ.get("RANK", "0"))
EAGER = os.environ.get("MEMORY_GPU_EAGER") == "1"
WORK = os.path.join(tempfile.gettempdir(), "memory-grpo")  # checkpoints and trainer output


def tokenizer(size: int = 0):
    """Word-level tokenizer of WORDS; ``size`` fills it up to the model's vocabulary (vLLM
    detokenizes every sampled id), keeping the ids of WORDS."""
    from envdoctor.probe.run.worker import word_tokenizer

    return word_tokenizer(WORDS + [f"x{i}" for i in range(max(size - 3 - len(WORDS), 0))])


class Nvml:
    """Peak memory of this process (or of the device) while a shape runs."""

    def __init__(self) -> None:
        self.peak_proc = self.peak_dev = 0
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        if DRY:
            return
        import pynvml

        pynvml.nvmlInit()
        self.nv = pynvml
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")  # NVML counts all GPUs
        index = int(visible[LOCAL_RANK]) if len(visible) > LOCAL_RANK and visible[LOCAL_RANK] \
            else LOCAL_RANK
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)

    def name(self) -> str:
        return str(self.nv.nvmlDeviceGetName(self.handle)) if not DRY else "cpu"

    def sample(self) -> None:
        if DRY:
            return
        try:
            procs = self.nv.nvmlDeviceGetComputeRunningProcesses(self.handle)
            mine = [p.usedGpuMemory for p in procs if p.pid == os.getpid() and p.usedGpuMemory]
            if mine:
                self.peak_proc = max(self.peak_proc, max(mine))
        except self.nv.NVMLError:
            pass
        used = self.nv.nvmlDeviceGetMemoryInfo(self.handle).used
        self.peak_dev = max(self.peak_dev, used)

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.02)

    def start(self) -> None:
        self.peak_proc = self.peak_dev = 0
        self.stop.clear()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        if self.thread:
            self.thread.join()
        self.sample()


def _save(config, dtype: str, tok, folder: str) -> str:
    """A random-weight checkpoint on disk (what vLLM and bitsandbytes load from)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = 0, 1
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    del model
    return folder


def _split_peaks(trainer, cuda, base: int, phases: dict) -> None:
    """Keep two peaks apart: inside ``_generate_and_score_completions`` (generation, rewards and
    the no-grad log-probs) and outside it (model load, training forward / backward, optimizer)."""
    inner = trainer._generate_and_score_completions

    def measured(*args, **kwargs):
        phases["train"] = max(phases["train"], cuda.max_memory_allocated() - base)
        phases["reserved"] = max(phases["reserved"], cuda.max_memory_reserved())
        cuda.reset_peak_memory_stats()
        try:
            return inner(*args, **kwargs)
        finally:
            phases["generate"] = max(phases["generate"], cuda.max_memory_allocated() - base)
            phases["reserved"] = max(phases["reserved"], cuda.max_memory_reserved())
            cuda.reset_peak_memory_stats()

    trainer._generate_and_score_completions = measured


def _step_peaks(cuda, base: int, steps: list) -> object:
    """A TrainerCallback recording each optimizer step's peaks since the last reset (the
    generation phase resets them: so the training phase of that step) and what stays reserved."""
    from transformers import TrainerCallback

    class StepPeaks(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if cuda:
                steps.append({"step": state.global_step,
                              "max_allocated": cuda.max_memory_allocated() - base,
                              "max_reserved": cuda.max_memory_reserved(),
                              "reserved": cuda.memory_reserved(),
                              "allocated": cuda.memory_allocated() - base})

    return StepPeaks()


def run_shape(name: str, nvml: Nvml, tok, out_dir: str) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    model_name, batch, prompt_len, comp, gc_on, dtype, *rest = SHAPES[name]
    opts = rest[0] if rest else {}
    lora, launch = opts.get("lora"), opts.get("launch")
    result = {"shape": name, "model": model_name, "batch": batch, "prompt_len": prompt_len,
              "completion_len": comp, "gradient_checkpointing": gc_on, "dtype": dtype,
              "lora": list(lora) if lora else None, "rank": RANK, "launch": launch,
              "quant": opts.get("quant"), "vllm": opts.get("vllm"),
              "no_eos": bool(opts.get("no_eos")), "beta": opts.get("beta", 0.0)}
    if launch:
        result["accelerate"] = LAUNCH[launch]
    cfg = dict(MODELS[model_name])
    if DRY:  # a CPU rehearsal of the script: same code path, a tiny model
        cfg.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16)
        if "vision_config" in cfg:
            cfg["vision_config"] = {**cfg["vision_config"], "depth": 2, "hidden_size": 32,
                                    "intermediate_size": 64, "num_heads": 2,
                                    "out_hidden_size": 64, "fullatt_block_indexes": [1]}
            cfg["rope_scaling"] = {**cfg["rope_scaling"], "mrope_section": [2, 3, 3]}
        if "num_experts" in cfg:
            cfg.update(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32)
        batch, comp = 4, 8
    config = AutoConfig.for_model(**cfg, pad_token_id=0, eos_token_id=1, bos_token_id=1)
    cuda = torch.cuda if not DRY else None
    if cuda:
        cuda.set_device(LOCAL_RANK)
        cuda.empty_cache()
        cuda.reset_peak_memory_stats()
    base_alloc = cuda.memory_allocated() if cuda else 0
    nvml.start()
    t0 = time.time()
    trainer = model = None
    phases = {"generate": 0, "train": 0, "reserved": 0}
    extra: dict = {"use_vllm": False}
    try:
        init_kwargs = None
        if opts.get("vllm") or opts.get("quant") or opts.get("beta"):
            if opts.get("vllm"):
                tok = tokenizer(cfg["vocab_size"])
            model = _save(config, dtype, tok, f"{out_dir}/model-{name}")
            if opts.get("quant"):
                from transformers import BitsAndBytesConfig

                model = AutoModelForCausalLM.from_pretrained(
                    model, dtype=torch.bfloat16, device_map={"": LOCAL_RANK},
                    quantization_config=BitsAndBytesConfig(
                        load_in_4bit=True, bnb_4bit_quant_type="nf4",
                        bnb_4bit_compute_dtype=torch.bfloat16))
            else:
                init_kwargs = {"dtype": dtype}
        else:
            # several ranks: built on the CPU, the trainer / accelerate places (or shards) it;
            # under ZeRO-3 on each rank's own GPU (a 7B model's random init on the CPU took longer
            # than a device call): DeepSpeed partitions it and frees the full copy before step 1
            where = "cpu" if DRY or (launch and launch != "zero3") else "cuda"
            auto = AutoModelForCausalLM
            if "vision_config" in cfg:  # a vision-language model: its own auto class
                from transformers import AutoModelForImageTextToText as auto
            with torch.device(where):
                model = auto.from_config(config, dtype=getattr(torch, dtype))
        if not isinstance(model, str):
            result["parameters"] = sum(p.numel() for p in model.parameters())
            model.generation_config.pad_token_id = 0
            model.generation_config.eos_token_id = 1
            model.generation_config.suppress_tokens = None
        prompt = " ".join(WORDS[i % len(WORDS)] for i in range(prompt_len))
        result["prompt_tokens"] = len(tok(prompt)["input_ids"])
        data = Dataset.from_dict({"prompt": [prompt] * 64})
        if opts.get("no_eos"):
            extra["generation_kwargs"] = {"bad_words_ids": [[1]]}  # EOS (id 1) never sampled
        if opts.get("vllm"):
            extra = {"use_vllm": True, "vllm_mode": "colocate",
                     "vllm_gpu_memory_utilization": opts["vllm"], "model_init_kwargs": init_kwargs}
        if opts.get("beta"):  # TRL builds the reference model from the policy's path
            extra.update(beta=opts["beta"], model_init_kwargs=init_kwargs)
        args = GRPOConfig(
            output_dir=out_dir, max_steps=2, per_device_train_batch_size=batch,
            num_generations=4, max_completion_length=comp, learning_rate=1e-6,
            gradient_checkpointing=gc_on, bf16=not DRY, use_cpu=DRY, logging_steps=1, save_strategy="no",
            report_to="none", disable_tqdm=True, seed=0,
            dataloader_num_workers=0, temperature=1.0,
            **({"optim": opts["optim"]} if "optim" in opts else {}), **extra)
        peft_config = None
        if lora:
            from peft import LoraConfig

            targets = lora[1][0] if tuple(lora[1]) == ("all-linear",) else list(lora[1])
            peft_config = LoraConfig(r=lora[0], lora_alpha=2 * lora[0], target_modules=targets,
                                     task_type="CAUSAL_LM")
        trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **kw:
                              [float(len(c)) for c in completions], args=args,
                              train_dataset=data, processing_class=tok, peft_config=peft_config)
        result["optimizer"] = args.optim
        steps: list = []
        result["steps"] = steps
        trainer.add_callback(_step_peaks(cuda, base_alloc, steps))
        if cuda:
            _split_peaks(trainer, cuda, base_alloc, phases)
        trainer.train()
        result["wrapped"] = type(trainer.model_wrapped).__name__
        result["status"] = "ok"
        hist = [h for h in trainer.state.log_history if "completions/mean_length" in h]
        if hist:
            result["mean_completion_len"] = hist[-1]["completions/mean_length"]
    except torch.OutOfMemoryError as exc:
        result["status"] = "oom"
        result["error"] = str(exc).splitlines()[0][:400]
    except Exception as exc:  # noqa: BLE001 - a shape that cannot run is recorded, not fatal
        result["status"] = "error"
        result["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
    finally:
        nvml.finish()
        result["seconds"] = round(time.time() - t0, 1)
        if cuda:
            phases["train"] = max(phases["train"], cuda.max_memory_allocated() - base_alloc)
            result["max_allocated"] = max(phases["generate"], phases["train"])
            result["peak_generate"], result["peak_train"] = phases["generate"], phases["train"]
            result["max_reserved"] = max(phases["reserved"], cuda.max_memory_reserved())
            result["total_memory"] = cuda.get_device_properties(LOCAL_RANK).total_memory
        result["nvml_process_peak"] = nvml.peak_proc
        result["nvml_device_peak"] = nvml.peak_dev
        trainer = model = None  # noqa: F841
        gc.collect()
        if cuda:
            cuda.empty_cache()
    return result


#: vLLM alone, as a server holds it (the third run): model, gpu_memory_utilization,
#: max_model_len (None: the config's 32768). v3 is MEM103's case: one 131072-token sequence
#: needs 3.5 GiB of KV cache that 0.035 of the GPU does not leave.
VLLM_SHAPES = {"v1": ("qwen2.5-0.5b", 0.3, None), "v2": ("qwen2.5-1.5b", 0.3, None),
               "v3": ("qwen2.5-1.5b", 0.035, 131072)}


def run_vllm(name: str, nvml: Nvml, out_dir: str) -> dict:
    """Start vLLM's LLM on a random-weight checkpoint; its log (kept by memory_gpu.sh) gives
    the parts: weights, peak activation, non-torch, CUDA graphs, KV cache."""
    from transformers import AutoConfig

    model_name, util, mml = VLLM_SHAPES[name]
    cfg = dict(MODELS[model_name], max_position_embeddings=mml or 32768)
    result = {"shape": name, "model": model_name, "vllm_util": util, "max_model_len": mml,
              "server": True, "enforce_eager": EAGER}
    folder = _save(AutoConfig.for_model(**cfg, pad_token_id=0, eos_token_id=1, bos_token_id=1),
                   "bfloat16", tokenizer(cfg["vocab_size"]), f"{out_dir}/vllm-{name}")
    nvml.start()
    t0 = time.time()
    try:
        from vllm import LLM, SamplingParams

        # eager: the first try with CUDA graphs (v1, v2) hung after the graph capture
        llm = LLM(model=folder, gpu_memory_utilization=util, max_model_len=mml,
                  enforce_eager=EAGER)
        out = llm.generate([" ".join(WORDS[:16])] * 4, SamplingParams(max_tokens=32))
        result["status"] = "ok"
        result["generated"] = sum(len(o.outputs[0].token_ids) for o in out)
    except Exception as exc:  # noqa: BLE001 - vLLM's refusal is the measurement for v3
        result["status"] = "error"
        result["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
    finally:
        nvml.finish()
        result["seconds"] = round(time.time() - t0, 1)
        result["nvml_device_peak"] = nvml.peak_dev
        result["total_memory"] = nvml.nv.nvmlDeviceGetMemoryInfo(nvml.handle).total
    return result


def main() -> None:
    import torch
    import transformers
    import trl

    if sys.argv[1] == "--accelerate-config":  # the launch's config file, as JSON
        print(json.dumps(LAUNCH[sys.argv[2]]))
        return
    out = sys.argv[1] if RANK == 0 else f"{sys.argv[1]}.rank{RANK}"
    names = sys.argv[2:] or list(SHAPES)
    nvml = Nvml()
    nvml.sample()
    idle = nvml.peak_dev
    # vLLM alone: CUDA stays uninitialized here, else vLLM starts its engine with `spawn` (the
    # third run's v1 / v2 hung after that switch)
    vllm_only = all(n in VLLM_SHAPES for n in names)
    if not DRY and not vllm_only:
        torch.cuda.init()
    tok = tokenizer()
    fresh = not os.path.exists(out)
    with open(out, "a") as fh:
        if fresh:
            fh.write(json.dumps({"versions": {"torch": torch.__version__,
                                              "transformers": transformers.__version__,
                                              "trl": trl.__version__},
                                 "gpu": "cpu (dry run)" if DRY else nvml.name(),
                                 "device_used_before": idle}) + "\n")
        for name in names:
            if name in VLLM_SHAPES:
                result = run_vllm(name, nvml, WORK)
            else:
                result = run_shape(name, nvml, tok, WORK)
            result["device_used_before"] = idle
            print(json.dumps(result), flush=True)
            fh.write(json.dumps(result) + "\n")
            fh.flush()


if __name__ == "__main__":
    main()
