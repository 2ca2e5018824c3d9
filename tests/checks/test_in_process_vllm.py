"""A trainer that starts vLLM inside the training process by design (Unsloth's
``FastLanguageModel.from_pretrained(..., fast_inference=True)``: unslothai/unsloth
unsloth/models/llama.py sets ``model.vllm_engine``, its patched GRPOTrainer generates with it and
sets ``vllm_mode='colocate'``, unsloth/models/rl.py) is colocated: the GPU-split rules do not call
its shared GPU an error (heldout-2026-11-28b: LAY006 on two Unsloth setups). Where the script is
not read and Unsloth is installed, the sharing is said at info with what was not seen."""

from __future__ import annotations

import pytest

from tests.conftest import findings, snapshot

TRL_015 = {
    "trl": "0.15.2",
    "vllm": "0.7.2",
    "torch": "2.5.1",
    "transformers": "4.49.0",
    "accelerate": "1.4.0",
}
UNSLOTH = {**TRL_015, "unsloth": "2025.3.19", "unsloth-zoo": "2025.3.17"}
CONFIG = {"use_vllm": True}

SCRIPT = """\
from unsloth import FastLanguageModel, PatchFastRL
PatchFastRL("GRPO", FastLanguageModel)
from trl import GRPOConfig, GRPOTrainer

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name="Qwen/Qwen2.5-3B-Instruct", max_seq_length=1024, load_in_4bit=True,
    fast_inference={value}, max_lora_rank=32, gpu_memory_utilization=0.6,
)
"""

ARGPARSE = """\
import argparse
from unsloth import FastLanguageModel
p = argparse.ArgumentParser()
p.add_argument("--fast_inference", action="store_true")
args = p.parse_args()
model, tok = FastLanguageModel.from_pretrained("m", fast_inference=args.fast_inference)
"""

PLAIN_TRL = """\
from trl import GRPOConfig, GRPOTrainer
trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B", args=GRPOConfig(output_dir="o"))
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _lay(packages: dict, launch: str, n: int = 1) -> list:
    return [
        f
        for f in findings(snapshot(n, packages=packages), config=CONFIG, launch=launch)
        if f.rule.startswith("LAY")
    ]


def test_unsloth_fast_inference_in_the_script_is_colocate(here):
    (here / "train.py").write_text(SCRIPT.format(value="True"))
    got = _lay(UNSLOTH, "python train.py")
    assert [f.rule for f in got] == []  # before: LAY006 error (TRL 0.15 shares GPU 0)


def test_plain_trl_sharing_one_gpu_is_still_lay006(here):
    (here / "train.py").write_text(PLAIN_TRL)
    got = _lay(TRL_015, "python train.py")
    assert [(f.rule, f.severity.value) for f in got] == [("LAY006", "error")]


def test_unsloth_script_with_fast_inference_off_is_judged_as_trl(here):
    (here / "train.py").write_text(SCRIPT.format(value="False"))
    got = _lay(UNSLOTH, "python train.py")
    assert [(f.rule, f.severity.value) for f in got] == [("LAY006", "error")]


@pytest.mark.parametrize(("args", "error"), [("--fast_inference", False), ("", True)])
def test_fast_inference_from_the_scripts_own_flag(here, args, error):
    (here / "train.py").write_text(ARGPARSE)
    got = _lay(UNSLOTH, f"python train.py {args}".strip())
    assert [(f.rule, f.severity.value) for f in got] == ([("LAY006", "error")] if error else [])


def test_unsloth_installed_script_not_here_is_not_an_error(here):
    got = _lay(UNSLOTH, "python train_grpo.py")
    assert [(f.rule, f.severity.value) for f in got] == [("LAY006", "info")]
    assert "train_grpo.py is not here" in got[0].message and "unsloth 2025.3.19" in got[0].message
    assert "fast_inference=True" in got[0].message


def test_unsloth_imported_with_a_computed_fast_inference_is_not_an_error(here):
    (here / "train.py").write_text(SCRIPT.format(value="cfg['fast']"))
    got = _lay(UNSLOTH, "python train.py")
    assert [(f.rule, f.severity.value) for f in got] == [("LAY006", "info")]
    assert "does not evaluate" in got[0].message


def test_without_unsloth_an_unread_script_keeps_the_error(here):
    got = _lay(TRL_015, "python train_grpo.py")
    assert [(f.rule, f.severity.value) for f in got] == [("LAY006", "error")]


def test_a_server_line_is_trls_vllm_even_with_unsloth_installed(here):
    snap = snapshot(2, packages={**UNSLOTH, "trl": "0.16.1", "vllm": "0.8.3", "torch": "2.6.0"})
    got = [
        f
        for f in findings(
            snap,
            config={"use_vllm": True},
            launch="trl vllm-serve --model m\naccelerate launch --num_processes 2 train_grpo.py",
        )
        if f.rule == "LAY006"
    ]
    assert [f.severity.value for f in got] == ["error"]


ENTRY_IMPORTS_LOADER = """\
from unsloth import FastLanguageModel, PatchFastRL
PatchFastRL("GRPO", FastLanguageModel)
import sft
from grpo import train

model, tokenizer = sft.load_model()
train(model, tokenizer)
"""

SFT_MODULE = """\
from unsloth import FastLanguageModel

def load_model():
    return FastLanguageModel.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct", fast_inference={value})
"""

GRPO_MODULE = """\
from trl import GRPOConfig, GRPOTrainer

def train(model, tokenizer):
    GRPOTrainer(model=model, args=GRPOConfig(output_dir="o", use_vllm=True, temperature=1.08))
"""


def _server_logprobs(here, value: str) -> list:
    (here / "reason.py").write_text(ENTRY_IMPORTS_LOADER)
    (here / "sft.py").write_text(SFT_MODULE.format(value=value))
    (here / "grpo.py").write_text(GRPO_MODULE)
    pk = {
        "trl": "0.24.0",
        "vllm": "0.10.2",
        "torch": "2.8.0",
        "transformers": "4.57.1",
        "unsloth": "2025.10.1",
    }
    found = findings(
        snapshot(1, packages=pk), config={"use_vllm": True, "temperature": 1.08}, launch="python reason.py"
    )
    return [f for f in found if f.evidence.get("id") == "trl-server-raw-logprobs-importance-sampling"]


def test_fast_inference_in_a_module_the_script_imports_is_in_process(here):
    """The seventh held-out set (llm-reasoning): reason.py imports sft.py, whose loader asks
    Unsloth for vLLM in-process (fast_inference=True): the run has no vLLM server, so the server
    mode's raw-logprobs failure does not apply. The reader follows the script's own imports."""
    from envdoctor.plan.script_reader import read_script

    (here / "reason.py").write_text(ENTRY_IMPORTS_LOADER)
    (here / "sft.py").write_text(SFT_MODULE.format(value="True"))
    (here / "grpo.py").write_text(GRPO_MODULE)
    decl = read_script(here / "reason.py")
    assert decl.in_process_calls and decl.in_process_calls[0][1] is True
    assert "sft.py:4" in decl.in_process_calls[0][0]
    assert _server_logprobs(here, "True") == []
    # the same code with fast_inference=False: TRL's own vLLM (server by default) is judged
    assert [f.severity.value for f in _server_logprobs(here, "False")] == ["warning"]


def test_followed_imports_are_bounded_and_never_loop(here, monkeypatch):
    """Two modules importing each other are read once; the files read stop at the bound."""
    from envdoctor.plan import script_reader

    (here / "train.py").write_text("import a\n")
    (here / "a.py").write_text("import b\n")
    (here / "b.py").write_text("import a\nimport c\n")
    (here / "c.py").write_text("from unsloth import FastLanguageModel\n")
    decl = script_reader.read_script(here / "train.py")
    assert sorted(p.rsplit("/", 1)[-1] for p in decl.files) == ["a.py", "b.py", "c.py", "train.py"]
    assert decl.in_process_imports == ("unsloth",)
    monkeypatch.setattr(script_reader, "MAX_FOLLOWED_BYTES", len("import b\n"))
    decl = script_reader.read_script(here / "train.py")
    assert sorted(p.rsplit("/", 1)[-1] for p in decl.files) == ["a.py", "train.py"]
    assert decl.in_process_imports == ()


def test_trl_vllm_range_does_not_judge_unsloths_in_process_vllm(here):
    """The seventh held-out set (llm-reasoning, a finished run): TRL 0.24 with vLLM 0.19.1,
    outside TRL 0.24's range, where Unsloth's fast_inference engine generates: PKG006 says it as
    advice naming why; with fast_inference=False (TRL's own vLLM) it stays a warning."""

    def pkg006(value: str) -> list[str]:
        (here / "reason.py").write_text(ENTRY_IMPORTS_LOADER)
        (here / "sft.py").write_text(SFT_MODULE.format(value=value))
        (here / "grpo.py").write_text(GRPO_MODULE)
        pk = {"trl": "0.24.0", "vllm": "0.19.1", "torch": "2.10.0", "transformers": "4.57.6"}
        found = findings(
            snapshot(1, packages={**pk, "unsloth": "2026.4.6"}),
            config={"use_vllm": True},
            launch="python reason.py",
        )
        return [
            f"{f.severity.value}: {f.message}"
            for f in found
            if f.rule == "PKG006" or f.rule == "KNF001" and f.message.startswith("trl 0.24.0 + vllm 0.19.1")
        ]

    (got,) = [g for g in pkg006("True") if "TRL 0.24.0 supports" in g]
    assert got.startswith("info: ") and "starts vLLM through unsloth" in got
    # TRL's own vLLM: the pair is judged at warning, by PKG006's range or, where grpo.py's
    # GRPOConfig(...) (the module that builds the trainer) sets what a known failure of the pair
    # needs, by that KNF001 (PKG006 then defers to the confirmed break)
    assert "warning" in [g.split(":")[0] for g in pkg006("False")]


def test_fast_inference_without_vllm_installed_is_pkg001(here):
    # Unsloth's loader raises ImportError ("Please install vLLM before enabling `fast_inference`")
    no_vllm = {k: v for k, v in UNSLOTH.items() if k != "vllm"}
    (here / "train.py").write_text(SCRIPT.format(value="True"))
    got = [f for f in findings(snapshot(1, packages=no_vllm), launch="python train.py") if f.rule == "PKG001"]
    assert len(got) == 1 and got[0].severity.value == "error" and "fast_inference" in got[0].fix
    (here / "train.py").write_text(SCRIPT.format(value="False"))
    assert not [
        f for f in findings(snapshot(1, packages=no_vllm), launch="python train.py") if f.rule == "PKG001"
    ]
    (here / "train.py").write_text(SCRIPT.format(value="True"))
    assert not [
        f for f in findings(snapshot(1, packages=UNSLOTH), launch="python train.py") if f.rule == "PKG001"
    ]


def test_fast_inference_without_vllm_gets_a_pinned_vllm_that_holds(here):
    # the resolver needs vLLM where the script starts it in-process (gate13: Hospital-Triage's
    # "pip install vllm  # the release your Unsloth supports" was a fix nobody could follow)
    no_vllm = {k: v for k, v in UNSLOTH.items() if k != "vllm"}
    (here / "train.py").write_text(SCRIPT.format(value="True"))
    (got,) = [
        f for f in findings(snapshot(1, packages=no_vllm), launch="python train.py") if f.rule == "PKG001"
    ]
    assert got.remedy is not None and "vllm" in got.remedy.packages
    assert got.fix.startswith("pip install ") and "vllm==" in got.fix
