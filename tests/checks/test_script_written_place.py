"""A config file's value the script replaces before it hands it on is not what GRPOConfig gets
(``if gen["max_prompt_length"] == "auto": gen["max_prompt_length"] = computed``): no CFG005 on the
file's ``auto``, and no fix that removes the key the script reads (a KeyError) or its keyword.

Reach, rv19c: a public Unsloth GRPO script "modified to use YAML configuration file" (the Gemma3
GRPO notebook's code; its llama3_1_8b_train.yaml sets ``max_prompt_length: auto``) drew two CFG005
errors, and ``fix`` removed both keys from the file and both keywords from the call."""

from __future__ import annotations

from tests.conftest import findings, snapshot

STACK = {"trl": "0.15.2", "vllm": "0.7.2", "torch": "2.5.1", "transformers": "4.49.0"}

SCRIPT = """\
import yaml
from trl import GRPOConfig, GRPOTrainer

with open("c.yaml") as f:
    config = yaml.safe_load(f)
gen = config["training"]["generation"]
if gen["max_prompt_length"] == "auto":
    gen["max_prompt_length"] = 256
args = GRPOConfig(
    output_dir="o",
    num_generations=gen["num_generations"],
    max_prompt_length=gen["max_prompt_length"],
    max_completion_length=gen["max_completion_length"],
)
GRPOTrainer(model="m", reward_funcs=[], args=args).train()
"""


def test_a_place_the_script_sets_itself_is_not_the_files_value(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    config = {
        "training": {
            "generation": {"num_generations": 4, "max_prompt_length": "auto", "max_completion_length": "x"}
        }
    }
    got = findings(snapshot(1, packages=STACK), config=config, launch=f"python {script}")
    cfg005 = [f for f in got if f.rule == "CFG005"]
    # max_completion_length: the script never replaces it, so the file's "x" is still judged
    assert len(cfg005) == 1 and "max_completion_length" in cfg005[0].message
