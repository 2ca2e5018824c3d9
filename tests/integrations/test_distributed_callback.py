"""EnvDoctorCallback under torchrun: 2 CPU processes over gloo, a real tiny Trainer each."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.integrations.helpers import ROOT

pytestmark = pytest.mark.distributed

JOB = """
import json, os, sys
sys.path.insert(0, {root!r})
import torch.distributed as dist
from transformers import Trainer
from envdoctor import PreflightError
from envdoctor.integrations.callback import EnvDoctorCallback
from tests.integrations.helpers import TinyRegression as tiny

out = sys.argv[1]
rank = int(os.environ["RANK"])
args = tiny.args(os.path.join(out, "run"), max_steps=2, per_device_train_batch_size=2)
result = {{"rank": rank, "pid": os.getpid()}}

def build(**kw):
    return Trainer(model=tiny.model(), args=args, train_dataset=tiny.dataset(),
                   callbacks=[EnvDoctorCallback(network=False, **kw)])

# 1. clean on every rank: both train
trainer = build()
trainer.train()
result["clean_steps"] = trainer.state.global_step
# 2. only rank 1 has an error; 3. only rank 1 cannot be checked at all
for name, kw in (("config_error", {{"config": {{"num_generations": 1 if rank == 1 else 2}}}}),
                 ("input_error", {{"config": "/nonexistent/grpo.yaml"}} if rank == 1 else {{}})):
    try:
        build(**kw)
        result[name] = None
    except PreflightError as exc:
        result[name] = {{"message": str(exc), "rules": [f.rule for f in exc.report.findings]}}
    dist.barrier()  # both ranks reached here: nobody was left waiting in a collective
with open(os.path.join(out, f"rank{{rank}}.json"), "w") as fh:
    json.dump(result, fh)
dist.destroy_process_group()
"""


def test_two_ranks_check_together_and_stop_together(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB.format(root=str(ROOT)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    env.update(NO_COLOR="1", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(script),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{i}.json").read_text()) for i in (0, 1))
    host = socket.gethostname()

    # clean: both trained; rank 0 alone printed the one job report
    assert r0["clean_steps"] == r1["clean_steps"] == 2
    assert proc.stdout.count("envdoctor 0.1.0 — ") == 1
    assert "2 ranks on 1 host" in proc.stdout

    # rank 1's config error stops both ranks; rank 0 holds the combined report
    e0, e1 = r0["config_error"], r1["config_error"]
    assert e0 and e1, "both ranks must raise"
    assert f"rank 1 on {host}: num_generations is 1" in e0["message"]
    assert e0["message"].count("envdoctor 0.1.0 — ") == 1
    assert "rank 0 has the report" in e1["message"] and "CFG003" in e1["rules"]

    # rank 1 could not even read its config: reported, and still nobody hangs
    i0, i1 = r0["input_error"], r1["input_error"]
    assert i0 and i1
    assert "RUN004" in i0["rules"] and "could not check rank 1" in i0["message"]
