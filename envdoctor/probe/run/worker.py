"""Runs inside each rank of the probe: one tiny real GRPO step with TRL's own GRPOTrainer.

Started by the runner as ``<launcher> worker.py SPEC.json``; imports only the stdlib and the
training stack (it runs under the user's interpreter and launcher). Writes
``rank<R>.started.json`` at once and ``rank<R>.json`` at the end, whatever happens.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import json
import math
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

for _key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_key] = "1"  # nothing is ever downloaded, even when run by hand
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
RANK = int(os.environ.get("RANK", "0"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", "1"))
PROMPTS = [
    "the cat sat on the",
    "a dog ran to the",
    "one two three four",
    "red green blue",
    "hello world how are",
    "tiny models learn fast",
    "ping pong ping",
    "up down left",
]


def _write(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, default=str)
    os.replace(tmp, path)


def _phase(result: dict, name: str, start: float) -> float:
    now = time.perf_counter()
    result["phases"][name] = round(now - start, 4)
    print(f"ENVDOCTOR_PHASE rank={RANK} {name}", file=sys.stderr, flush=True)
    return now


def _tokenizer():
    return word_tokenizer(sorted({w for p in PROMPTS for w in p.split()}))


def word_tokenizer(words: list[str]):
    """A word-level fast tokenizer made in-process (nothing downloaded): <pad> 0, <eos> 1,
    <unk> 2, then ``words``; pads on the left, as GRPO's generation wants."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    fast.padding_side = "left"
    return fast


def _model(family: str, tok):
    import transformers

    name = {"llama": "Llama", "qwen2": "Qwen2"}.get(family, "Qwen2")
    config_cls = getattr(transformers, f"{name}Config")
    model_cls = getattr(transformers, f"{name}ForCausalLM")
    config = config_cls(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
        tie_word_embeddings=True,
    )
    model = model_cls(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model


def _pretrained(model_dir: str, faithful: bool = False, cuda: bool = False):
    """The probe model written by the runner (what vLLM loads too). The generic tiny model
    trains in fp32; one of the user's shape in its checkpoint's dtype on a GPU (what TRL's own
    loading does since transformers 5), fp32 on the CPU."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    dtype: object = "auto" if faithful and cuda else torch.float32
    arch = (getattr(AutoConfig.from_pretrained(model_dir), "architectures", None) or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    loader = cls if cls is not None and hasattr(cls, "from_pretrained") else AutoModelForCausalLM
    try:
        model = loader.from_pretrained(model_dir, dtype=dtype)
    except TypeError:  # transformers 4
        model = loader.from_pretrained(model_dir, torch_dtype=dtype)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return tok, model


def _interface_of(ip: str | None) -> str | None:
    """The network interface that holds ``ip`` (stdlib ioctl), or None."""
    if not ip:
        return None
    try:
        import fcntl
        import socket
        import struct

        for _index, name in socket.if_nameindex():
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                try:
                    raw = fcntl.ioctl(
                        sock.fileno(),
                        0x8915,  # SIOCGIFADDR
                        struct.pack("256s", name[:15].encode()),
                    )
                except OSError:
                    continue
            if socket.inet_ntoa(raw[20:24]) == ip:
                return name
    except Exception:
        return None
    return None


def _sync_address(result: dict) -> None:
    """Where the trainer opens the NCCL weight-sync group (server mode): vLLM's get_ip()."""
    try:
        from vllm.utils.network_utils import get_ip
    except Exception:
        try:
            from vllm.utils import get_ip  # older vLLM
        except Exception:
            return
    try:
        ip = get_ip()
    except Exception:
        return
    result["sync_address"] = ip
    result["sync_interface"] = os.environ.get("NCCL_SOCKET_IFNAME") or _interface_of(ip)


def _timed(result: dict, owner, attr: str, name: str, announce: bool) -> None:
    """Wrap ``owner.attr`` to add its wall time to ``result['phases'][name]`` (and count it)."""
    inner = getattr(owner, attr, None)
    if inner is None:
        return

    def wrapper(*args, **kwargs):
        if announce:
            print(f"ENVDOCTOR_PHASE rank={RANK} {name}_start", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            phases = result["phases"]
            phases[name] = round(phases.get(name, 0.0) + time.perf_counter() - t0, 4)
            result[f"{name}_calls"] = result.get(f"{name}_calls", 0) + 1
            if announce:
                print(f"ENVDOCTOR_PHASE rank={RANK} {name}_done", file=sys.stderr, flush=True)

    setattr(owner, attr, wrapper)


def _watch_vllm(result: dict, trainer) -> None:
    """Time the weight syncs and vLLM generations of TRL's vLLM path, whichever TRL it is."""
    gen = getattr(trainer, "vllm_generation", None)
    if gen is not None:  # TRL >= 1.0
        _timed(result, gen, "sync_weights", "sync", True)
        _timed(result, gen, "generate", "vllm_generate", False)
    else:  # TRL 0.14 - 0.2x
        _timed(result, trainer, "_move_model_to_vllm", "sync", True)
        llm = getattr(trainer, "llm", None) or getattr(trainer, "vllm_client", None)
        if llm is not None:
            _timed(result, llm, "generate", "vllm_generate", False)


def _reward(completions, **kwargs):
    return [float(len(str(c))) / 10.0 for c in completions]


def _config(spec: dict, out_dir: str, cuda: bool):
    import torch
    from trl import GRPOConfig

    fields = set(inspect.signature(GRPOConfig.__init__).parameters)
    bf16 = spec.get("bf16")
    if bf16 is None:  # TRL's own default where the GPU has bf16, unless the config asks for fp16
        bf16 = bool(cuda and torch.cuda.is_bf16_supported()) and not spec.get("fp16")
    kwargs = {
        "output_dir": out_dir,
        "max_steps": int(spec.get("steps", 1)),
        "per_device_train_batch_size": int(spec.get("per_device_train_batch_size", 2)),
        "num_generations": int(spec.get("num_generations", 2)),
        "learning_rate": 1e-4,
        "gradient_accumulation_steps": int(spec.get("gradient_accumulation_steps", 1)),
        "max_completion_length": 8,
        "max_prompt_length": 16,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "seed": 0,
        "bf16": bool(bf16),
        "fp16": bool(spec.get("fp16") or False),
        "use_vllm": bool(spec.get("use_vllm")),
        "dataloader_num_workers": 0,
    }
    if spec.get("use_vllm") and spec.get("vllm_mode"):
        kwargs["vllm_mode"] = spec["vllm_mode"]  # TRL with the colocate/server split only
    if spec.get("use_vllm"):
        kwargs.update(spec.get("vllm") or {})  # GRPOConfig's own names, kept where it has them
    if spec.get("gradient_checkpointing"):
        kwargs["gradient_checkpointing"] = True
    if (spec.get("user_data") or {}).get("remove_unused_columns"):
        kwargs["remove_unused_columns"] = True  # the user's: it drops the columns rewards take
    if not cuda:
        kwargs.update(use_cpu=True, bf16=False, fp16=False)
    return GRPOConfig(**{k: v for k, v in kwargs.items() if k in fields}), sorted(
        k for k in (spec.get("vllm") or {}) if k not in fields
    )


def _name(device) -> str:
    """``cpu:0`` and ``cpu`` are the same device; CUDA devices keep their index."""
    text = str(device)
    return "cpu" if text.startswith("cpu") else text


def _devices(tensors) -> list[str]:
    return sorted({_name(t.device) for t in tensors})


def _gpu_uuid(device) -> str | None:
    import torch

    if getattr(device, "type", None) != "cuda":
        return None
    try:
        props = torch.cuda.get_device_properties(device)
        uuid = str(getattr(props, "uuid", ""))
        return uuid if uuid.startswith("GPU-") or not uuid else f"GPU-{uuid}"
    except Exception:
        return None


def _oom() -> None:
    """A real CUDA OOM where there is a GPU; the same message raised on CPU."""
    import torch

    if torch.cuda.is_available():
        torch.empty(1 << 50, dtype=torch.uint8, device="cuda")  # 1 PiB: fails, allocates nothing
    raise RuntimeError(
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 79.19 GiB of which 1.06 GiB is free. Process 4242 has 78.12 GiB memory "
        "in use. (envdoctor probe: injected OOM)"
    )


def _fault(spec: dict, where: str) -> None:
    fault = spec.get("fault")
    if not fault or spec.get("fault_at", "start") != where:
        return
    if fault == "crash":
        raise RuntimeError("envdoctor probe: injected crash")
    if fault == "hang":
        time.sleep(3600)
    if fault == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == "exit":
        os._exit(3)
    if fault == "oom":
        _oom()
    if fault == "hang_collective":
        import torch.distributed as dist

        dist.init_process_group("gloo")
        if dist.get_rank() == 0:
            time.sleep(3600)
        dist.barrier()


#: what TRL passes to vLLM's LLM() that the report shows (probe.vllm)
_ENGINE_KEYS = (
    "max_model_len",
    "max_num_seqs",
    "tensor_parallel_size",
    "enable_sleep_mode",
    "gpu_memory_utilization",
    "model_impl",
    "dtype",
    "max_num_batched_tokens",
    "distributed_executor_backend",
    "enforce_eager",
)


def eager_vllm(result: dict) -> None:
    """Make the trainer's in-process vLLM (colocate, legacy ``vllm_device``) run eager: TRL builds
    ``LLM()`` without ``enforce_eager``, so vLLM would torch.compile the probe's tiny model and
    capture CUDA graphs for it — most of a colocate probe's time (69-79 s of 100-111 s on an H100)
    and a source of faults that belong to the tiny model (PRB018). The probe's vLLM server runs
    with ``--enforce_eager`` for the same reason. A vLLM that does not import is left to TRL,
    which says so in its own words."""
    try:
        import vllm
    except Exception:
        return
    base = getattr(vllm, "LLM", None)
    if not isinstance(base, type):
        return

    class EagerLLM(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("enforce_eager", True)
            result["vllm_enforce_eager"] = bool(kwargs["enforce_eager"])
            result["vllm_engine"] = {k: kwargs.get(k) for k in _ENGINE_KEYS if k in kwargs}
            super().__init__(*args, **kwargs)

    EagerLLM.__name__, EagerLLM.__qualname__ = base.__name__, base.__qualname__
    EagerLLM.__module__ = base.__module__
    vllm.LLM = EagerLLM


#: what the probe imports: every one missing is named at once (PRB009), not the first alone
STACK = ("torch", "transformers", "trl", "accelerate", "datasets")
MISSING_MARK = "envdoctor-probe missing modules:"


def check_stack() -> None:
    """Raise one ModuleNotFoundError naming every module of ``STACK`` this interpreter lacks."""
    import importlib.util

    missing = []
    for name in STACK:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise ModuleNotFoundError(
            f"No module named '{missing[0]}' ({MISSING_MARK} {', '.join(missing)})", name=missing[0]
        )


def run(spec: dict, result: dict) -> None:
    t = time.perf_counter()
    _fault(spec, "start")
    check_stack()
    if spec.get("use_vllm") and spec.get("vllm_mode") != "server":
        eager_vllm(result)  # before TRL imports vLLM's LLM into its own namespace
    import datasets
    import torch
    import transformers
    import trl
    from trl import GRPOTrainer

    result["versions"] = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "datasets": datasets.__version__,
    }
    t = _phase(result, "imports", t)
    _fault(spec, "imports")
    cuda = torch.cuda.is_available()
    result["cuda_device_count"] = torch.cuda.device_count() if cuda else 0
    t = _phase(result, "cuda_init", t)
    _await_model(spec)
    if spec.get("model_dir"):
        tok, model = _pretrained(spec["model_dir"], bool(spec.get("model_faithful")), cuda)
    else:
        tok = _tokenizer()
        model = _model(spec.get("model_family", "qwen2"), tok)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    # enough prompts for every rank's batches of the user's shape (TRL repeats each prompt
    # num_generations times within a batch)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    need = (
        int(spec.get("per_device_train_batch_size", 2))
        * world
        * int(spec.get("gradient_accumulation_steps", 1))
        * int(spec.get("steps", 1))
    )
    t = _phase(result, "model_build", t)
    user = _user_module()  # the user's first batch and reward functions (user_rewards.py)
    user_tok = bool((spec.get("user_data") or {}).get("user_tokenizer")) and bool(spec.get("model_faithful"))
    rows = user.prepare(spec.get("user_data") or {}, tok, user_tok, result.setdefault("data", {}))
    dataset = user.dataset(datasets, rows, need, result["data"]) if rows else None
    used = dataset is not None
    if dataset is None:
        dataset = datasets.Dataset.from_dict({"prompt": PROMPTS * max(1, -(-need // len(PROMPTS)))})
    reward_funcs = user.rewards(spec.get("user_rewards") or {}, used, result.setdefault("rewards", {}))
    t = _phase(result, "user_inputs", t)
    args, ignored = _config(spec, tempfile.mkdtemp(prefix="out-", dir=spec["out_dir"]), cuda)
    if ignored:
        result["vllm_settings_ignored"] = ignored  # this TRL has no such GRPOConfig field
    if spec.get("use_vllm"):
        with contextlib.suppress(Exception):
            result["versions"]["vllm"] = importlib.metadata.version("vllm")
        if spec.get("vllm_mode") == "server":
            _sync_address(result)
    result["n_gpu"] = int(args.n_gpu)
    result["device"] = _name(args.device)
    params = inspect.signature(GRPOTrainer.__init__).parameters
    kwargs = {"model": model, "reward_funcs": reward_funcs or _reward, "args": args, "train_dataset": dataset}
    kwargs["processing_class" if "processing_class" in params else "tokenizer"] = tok
    if spec.get("peft"):  # the user's LoRA, as TRL's scripts build it (an ImportError is theirs)
        from peft import LoraConfig

        kwargs["peft_config"] = LoraConfig(task_type="CAUSAL_LM", **spec["peft"])
        result["peft"] = dict(spec["peft"])
    trainer = GRPOTrainer(**kwargs)
    grad_devices: set[str] = set()
    for p in trainer.model.parameters():  # after TRL wrapped it (LoRA: the adapters train)
        if p.requires_grad:
            p.register_hook(lambda g: grad_devices.add(_name(g.device)))
    t = _phase(result, "trainer_init", t)
    if spec.get("use_vllm"):
        _watch_vllm(result, trainer)
    _fault(spec, "trainer_init")
    if cuda:
        torch.cuda.reset_peak_memory_stats(args.device)
        free_before = torch.cuda.mem_get_info(args.device)[0]  # after vLLM took its share
    step_start = time.perf_counter()
    trainer.train()
    result["step_s"] = round(time.perf_counter() - step_start, 4)
    if cuda:  # what the real model's step would have to live in, beside vLLM's reservation
        free_after, total = torch.cuda.mem_get_info(args.device)
        result["gpu_free_mib"] = round(min(free_before, free_after) / 2**20)
        result["gpu_total_mib"] = round(total / 2**20)
    t = _phase(result, "steps", t)
    wrapped = getattr(trainer, "model_wrapped", trainer.model)
    result["wrapper"] = type(wrapped).__name__
    result["data_parallel"] = any(
        isinstance(m, torch.nn.DataParallel) for root in (wrapped, trainer.model) for m in root.modules()
    )
    result["param_devices"] = _devices(trainer.model.parameters())
    result["grad_devices"] = sorted(grad_devices)
    opt = getattr(trainer.optimizer, "optimizer", trainer.optimizer)
    state = [
        v
        for s in getattr(opt, "state", {}).values()
        for v in s.values()
        if isinstance(v, torch.Tensor) and v.dim() > 0
    ]
    result["optimizer_state_devices"] = _devices(state)
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    result["loss"] = losses[-1] if losses else None
    result["loss_finite"] = bool(losses) and all(math.isfinite(x) for x in losses)
    expected = (spec.get("expected_device") or {}).get(str(RANK))
    if expected:
        result["expected_device"] = expected
        seen = set(
            result["param_devices"]
            + result["grad_devices"]
            + result["optimizer_state_devices"]
            + [result["device"]]
        )
        result["off_device"] = sorted(seen - {_name(expected)})
    result["uuid"] = _gpu_uuid(args.device)
    if cuda:
        result["peak_allocated_mib"] = round(torch.cuda.max_memory_allocated(args.device) / 2**20, 1)
        result["peak_reserved_mib"] = round(torch.cuda.max_memory_reserved(args.device) / 2**20, 1)
    result["ok"] = True
    t = time.perf_counter()
    result["weight_sync"] = _weight_sync(spec, trainer, tok)
    _phase(result, "weight_sync_proof", t)


def _user_module():
    """``user_rewards.py`` beside this script, found by path (envdoctor may not be installed)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import user_rewards  # type: ignore[import-not-found]

    return user_rewards


def _await_model(spec: dict) -> None:
    """The runner writes the model of the user's shape while this rank imports: wait for its
    word (``model.ready.json``), which may switch to the generic model and its vLLM settings."""
    ready = spec.get("model_ready")
    if not ready:
        return
    print(f"ENVDOCTOR_PHASE rank={RANK} model_wait", file=sys.stderr, flush=True)
    while not os.path.exists(ready):
        time.sleep(0.1)  # the runner's limit ends this process if it never comes
    with open(ready) as fh:
        word = json.load(fh)
    spec["model_dir"], spec["model_faithful"] = word.get("model_dir"), bool(word.get("faithful"))
    if word.get("vllm"):
        spec.setdefault("vllm", {}).update(word["vllm"])


def _weight_sync(spec: dict, trainer, tok) -> dict:
    """The weight-sync proof (sync_proof.py beside this file), never raising."""
    if not spec.get("use_vllm"):
        return {
            "checked": False,
            "reason": "needs vLLM: the probe generated with the trainer's "
            "own generate() (use_vllm is off, or no vLLM path was probed)",
        }
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import sync_proof  # type: ignore[import-not-found]  # beside this script, found by path

        return sync_proof.prove(trainer, tok, spec.get("fault"))
    except Exception as exc:  # the judge reports it as not checked, with vLLM's / TRL's words
        return {
            "checked": False,
            "reason": f"the proof failed: {type(exc).__name__}: {str(exc)[:500]}",
            "traceback": traceback.format_exc()[-3000:],
        }


def main() -> int:
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    out = spec["out_dir"]
    base = {
        "rank": RANK,
        "local_rank": LOCAL_RANK,
        "world_size": WORLD_SIZE,
        "pid": os.getpid(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "t_start": time.time(),
    }
    _write(os.path.join(out, f"rank{RANK}.started.json"), base)
    print(f"ENVDOCTOR_PHASE rank={RANK} started", file=sys.stderr, flush=True)
    result: dict[str, Any] = {**base, "ok": False, "phases": {}}
    start = time.perf_counter()
    try:
        run(spec, result)
    except BaseException as exc:  # every failure becomes data for the runner
        lines = traceback.format_exc().splitlines()[-60:]
        result["error"] = {
            "type": type(exc).__name__,
            "message": str(exc)[:4000],
            "traceback": "\n".join(lines)[-8000:],
        }
    result["phases"]["total"] = round(time.perf_counter() - start, 4)
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["t_end"] = time.time()
    _write(os.path.join(out, f"rank{RANK}.json"), result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the interpreter's slow teardown of torch; the result is written
