"""The config rules against the real parser: for the TRL and transformers installed here, a key
envdoctor calls an error (CFG001) is one TRL's TrlParser refuses, a key it lets pass is one
TrlParser accepts, and a key of no release is named as one the script must declare (CFG004).
Each key is parsed for real in one subprocess (no GPU, no model)."""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys

import pytest

from tests.conftest import findings, snapshot

pytest.importorskip("trl")

#: Keys of open-r1's recipes and TRL's docs, old and new: some removed, some live, one bogus.
KEYS = {
    "warmup_ratio": 0.1,
    "overwrite_output_dir": True,
    "max_prompt_length": 512,
    "gradient_checkpointing_kwargs": {"use_reentrant": False},
    "per_device_eval_batch_size": 4,
    "vllm_gpu_memory_utilization": 0.3,
    "vllm_mode": "colocate",
    "learning_rate": 1.0e-6,
    "num_generations": 4,
    "bogus_key_of_no_release": 3,
}

PARSE = """
import json, sys, warnings
warnings.simplefilter("ignore")
from trl import GRPOConfig, TrlParser
keys, folder = json.loads(sys.argv[1]), sys.argv[2]
out = {}
for key, value in keys.items():
    path = f"{folder}/{key}.yaml"
    with open(path, "w") as fh:
        json.dump({"output_dir": folder, "use_cpu": True, "bf16": False, key: value}, fh)
    sys.argv = ["train.py", "--config", path]
    try:
        TrlParser((GRPOConfig,)).parse_args_and_config()
        out[key] = "accepted"
    except (ValueError, SystemExit) as exc:
        out[key] = "refused: " + str(exc)[:200]
print(json.dumps(out))
"""


def test_cfg001_errors_are_exactly_what_trl_parser_refuses(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", PARSE, json.dumps(KEYS), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    real = json.loads(proc.stdout.strip().splitlines()[-1])
    stack = {
        "trl": md.version("trl"),
        "transformers": md.version("transformers"),
        "torch": md.version("torch"),
        "accelerate": md.version("accelerate"),
    }
    for key, value in KEYS.items():
        found = findings(snapshot(1, packages=stack), config={key: value})
        named = [f for f in found if f"`{key}`" in f.message]
        errors = [f for f in named if f.severity.value == "error"]
        script_keys = [f for f in named if f.rule == "CFG004"]  # no TRL release knows it: the
        # training script's own dataclasses may (as open-r1's do), so it is said, not an error
        if real[key].startswith("refused"):
            assert errors or (script_keys and key == "bogus_key_of_no_release"), (key, real[key])
        else:
            assert not errors and not script_keys, (key, [f.message for f in named])
