"""Unsloth's GRPOConfig changes per_device_train_batch_size to num_generations when the batch is
not a multiple of it and neither generation_batch_size nor steps_per_generation is set
(unslothai/unsloth unsloth/models/rl.py: "We will change the batch size of … to the
`num_generations` of …"): TRL never refuses that batch, so CFG002 is not an error for a script
that imports Unsloth; it says the batch the run really trains with (info). Without Unsloth, or
with a generation batch set (Unsloth leaves it alone), TRL refuses, as before."""

from __future__ import annotations

from tests.conftest import findings, snapshot

STACK = {
    "trl": "0.22.2",
    "vllm": "0.10.1.1",
    "torch": "2.7.1",
    "transformers": "4.56.2",
    "accelerate": "1.10.0",
}
SCRIPT = """\
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

model, tokenizer = FastLanguageModel.from_pretrained("unsloth/gemma-3-1b-it", fast_inference=True)
args = GRPOConfig(output_dir="out", per_device_train_batch_size=1, num_generations=6)
"""


def _cfg002(tmp_path, body: str, config: dict | None = None):
    script = tmp_path / "train.py"
    script.write_text(body)
    snap = snapshot(1, packages={**STACK, "unsloth": "2025.9.1"})
    return [f for f in findings(snap, config=config, launch=f"python {script}") if f.rule == "CFG002"]


def test_a_batch_unsloth_rewrites_is_said_at_info_with_the_batch_the_run_trains(tmp_path):
    (f,) = _cfg002(tmp_path, SCRIPT)
    assert f.severity.value == "info"
    assert "imports Unsloth" in f.message and "trains 6 completions per device, not 1" in f.message


def test_without_unsloth_or_with_a_generation_batch_set_trl_refuses_it(tmp_path):
    plain = "\n".join(line for line in SCRIPT.splitlines() if "unsloth" not in line.lower()) + "\n"
    (f,) = _cfg002(tmp_path, plain)
    assert f.severity.value == "error"
    set_batch = SCRIPT.replace("num_generations=6)", "num_generations=6, generation_batch_size=3)")
    (g,) = _cfg002(tmp_path, set_batch)
    assert g.severity.value == "error"


def test_unsloth_in_the_stack_with_the_script_unread_makes_the_refusal_advice(tmp_path):
    """A notebook's cells saved as a .py with their shell lines (not Python): whether the code
    imports Unsloth was not seen, so TRL's refusal rests on a script envdoctor could not read:
    advice (issue #35; ROCm's gpt-oss workshop notebook trained 1 x 1 vs 2 through Unsloth)."""
    (f,) = _cfg002(
        tmp_path,
        "apt-get install -y git\n" + SCRIPT,  # a shell line no IPython magic runs
        config={"per_device_train_batch_size": 1, "num_generations": 6},
    )
    assert f.severity.value == "info" and "unless the training code imports Unsloth" in f.message
    assert "not read" in f.message
