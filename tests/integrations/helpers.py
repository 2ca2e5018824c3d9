"""Helpers of the integration tests: a tiny CPU Trainer, a fake NVML, doc snippets."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


def snippet(doc: str, name: str) -> str:
    """The fenced code block after ``<!-- snippet: NAME -->`` in ``docs/DOC``."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    m = re.search(rf"<!-- snippet: {re.escape(name)} -->\s*```[a-z]*\n(.*?)```", text, re.S)
    assert m, f"no snippet {name!r} in docs/{doc}"
    return m.group(1)


GOOD_GRPO = (
    "model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\nnum_generations: 4\n"
    "per_device_train_batch_size: 4\nuse_vllm: true\nvllm_mode: server\n"
    "learning_rate: 1.0e-6\n"
)
BAD_GRPO = "num_generations: 1\nper_device_train_batch_size: 4\nlearning_rate: 1.0e-6\n"
ACCELERATE = (
    "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
    "num_processes: 3\nmixed_precision: bf16\n"
)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@dataclass
class FakeProc:
    pid: int
    usedGpuMemory: int | None = None  # noqa: N815 - NVML's field name


@dataclass
class FakeMem:
    total: int
    free: int

    @property
    def used(self) -> int:
        return self.total - self.free


@dataclass
class FakeNvml:
    """NVML's calls the monitor uses; tests set ``procs`` and ``free`` per GPU index."""

    count: int = 2
    total_mib: int = 81920
    free: dict[int, int] = field(default_factory=dict)  # MiB
    procs: dict[int, list[FakeProc]] = field(default_factory=dict)
    calls: int = 0

    def nvmlInit(self):  # noqa: N802
        pass

    def nvmlShutdown(self):  # noqa: N802
        pass

    def nvmlDeviceGetCount(self):  # noqa: N802
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):  # noqa: N802
        if i >= self.count:
            raise ValueError("invalid index")
        return i

    def nvmlDeviceGetMemoryInfo(self, h):  # noqa: N802
        self.calls += 1
        return FakeMem(self.total_mib * MIB, self.free.get(h, self.total_mib) * MIB)

    def nvmlDeviceGetComputeRunningProcesses(self, h):  # noqa: N802
        return list(self.procs.get(h, []))

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):  # noqa: N802
        return []


class TinyRegression:
    """A model and data for transformers.Trainer on the CPU in well under a second."""

    @staticmethod
    def model():
        import torch
        from torch import nn

        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 1)

            def forward(self, x, labels=None):
                out = self.lin(x).squeeze(-1)
                return {"loss": ((out - labels) ** 2).mean(), "logits": out}

        torch.manual_seed(0)
        return Tiny()

    @staticmethod
    def dataset(n: int = 16):
        import torch

        class Data(torch.utils.data.Dataset):
            def __len__(self):
                return n

            def __getitem__(self, i):
                return {"x": torch.full((4,), float(i) / n), "labels": torch.tensor(1.0)}

        return Data()

    @staticmethod
    def args(out: Path, **kw):
        from transformers import TrainingArguments

        base = dict(
            output_dir=str(out),
            use_cpu=True,
            max_steps=3,
            per_device_train_batch_size=4,
            report_to=[],
            save_strategy="no",
            disable_tqdm=True,
            logging_strategy="no",
        )
        base.update(kw)
        return TrainingArguments(**base)


def user_repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository with these files staged, as a user's repository before a commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    return path


def pre_commit(
    *args: str, cwd: Path, home: Path | None = None, path_first: str | None = None
) -> subprocess.CompletedProcess:
    """The real pre-commit (this interpreter's), in ``cwd``; NO_COLOR for plain output."""
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    env.update(
        NO_COLOR="1",
        PRE_COMMIT_COLOR="never",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    if home is not None:
        env["PRE_COMMIT_HOME"] = str(home)
    if path_first:
        env["PATH"] = path_first + os.pathsep + env.get("PATH", "")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def run_workflow_steps(workflow: dict, cwd: Path) -> subprocess.CompletedProcess:
    """A GitHub Actions job's `run:` steps in bash, as the runner would (envdoctor already
    installed: `pip install` steps are left out)."""
    import os
    import sys

    (job,) = workflow["jobs"].values()
    lines = [s["run"] for s in job["steps"] if "run" in s and "pip install" not in s["run"]]
    env = dict(
        os.environ, NO_COLOR="1", PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    )
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", "\n".join(lines)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


PROMPTS = ["a b c", "b c d", "c d e", "d e f"]


def tiny_grpo(out: Path) -> dict:
    """What the callback snippet needs for a real GRPOTrainer step on the CPU, no download: a
    word-level tokenizer, a 2-layer random Qwen2, a 4-prompt dataset, a reward, the config."""
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    vocab.update({w: i + 3 for i, w in enumerate("abcdef")})
    raw = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", padding_side="left"
    )
    config = Qwen2Config(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
        tie_word_embeddings=True,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = 0, 1
    args = GRPOConfig(
        output_dir=str(out),
        use_cpu=True,
        bf16=False,
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=4,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        logging_strategy="no",
        activation_checkpointing=False,
    )
    return {
        "GRPOTrainer": GRPOTrainer,
        "model": model,
        "tokenizer": tokenizer,
        "training_args": args,
        "dataset": Dataset.from_dict({"prompt": PROMPTS}),
        "reward_fn": lambda completions, **kw: [float(len(c)) for c in completions],
    }
