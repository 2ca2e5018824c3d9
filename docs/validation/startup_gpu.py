"""EnvDoctorCallback on real GPUs with a tiny transformers.Trainer (no TRL, no download).

    python3 startup_gpu.py trap            # one process sees 2 GPUs: the DataParallel trap
    torchrun --nproc_per_node 1 startup_gpu.py watch   # the process spills onto GPU 1, which
                                           # then fills up: RUN005 and RUN006 during training
    torchrun --nproc_per_node 2 startup_gpu.py ranks   # NCCL job: passes; then every rank on
                                           # cuda:0 (a hard-coded device): all ranks raise
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile

import torch
from torch import nn
from transformers import Trainer, TrainerCallback, TrainingArguments

from envdoctor import PreflightError
from envdoctor.integrations.callback import EnvDoctorCallback

logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 1)

    def forward(self, x, labels=None):
        out = self.lin(x).squeeze(-1)
        return {"loss": ((out - labels) ** 2).mean(), "logits": out}


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        return {"x": torch.randn(64), "labels": torch.tensor(1.0)}


def args(steps: int) -> TrainingArguments:
    return TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=steps, report_to=[],
                             per_device_train_batch_size=4, save_strategy="no",
                             disable_tqdm=True, logging_strategy="no")


def trap() -> None:
    try:
        Trainer(model=Tiny(), args=args(1), train_dataset=Data(),
                callbacks=[EnvDoctorCallback(network=False)])
        print("NOT RAISED")
    except PreflightError as exc:
        print(f"PreflightError raised at Trainer init:\n{exc}")


class Spill(TrainerCallback):
    """From step 3 on, a stray tensor on GPU 1, growing by 8 GiB a step."""

    held: list = []

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= 3:
            self.held.append(torch.empty(8 * 2**30, dtype=torch.uint8, device="cuda:1"))


def watch() -> None:
    cb = EnvDoctorCallback(generation_gpus=[1], every_n_steps=1, network=False)
    trainer = Trainer(model=Tiny(), args=args(8), train_dataset=Data(), callbacks=[Spill(), cb])
    trainer.train()
    print("steps:", trainer.state.global_step, "| conditions warned:",
          sorted(cb.monitor.warned) if cb.monitor else cb.monitor)


class HardCoded:
    """What the callback reads of TrainingArguments, for a script that puts every rank on
    cuda:0 by hand."""

    device = torch.device("cuda:0")
    use_cpu = False


def ranks() -> None:
    import torch.distributed as dist

    cb = EnvDoctorCallback(network=False)
    trainer = Trainer(model=Tiny(), args=args(2), train_dataset=Data(), callbacks=[cb])
    trainer.train()
    rank = dist.get_rank()
    print(f"rank {rank}: clean job trained {trainer.state.global_step} steps on {trainer.args.device}",
          flush=True)
    dist.barrier()
    try:
        EnvDoctorCallback(network=False).on_init_end(HardCoded(), None, None)
        print(f"rank {rank}: NOT RAISED", flush=True)
    except PreflightError as exc:
        print(f"rank {rank}: PreflightError raised:\n{exc}" if rank == 0
              else f"rank {rank}: PreflightError raised: {exc}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    print(f"== {sys.argv[1]} (pid {os.getpid()}, RANK={os.environ.get('RANK')})", flush=True)
    {"trap": trap, "watch": watch, "ranks": ranks}[sys.argv[1]]()
