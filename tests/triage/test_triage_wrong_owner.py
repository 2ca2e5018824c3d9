"""Wrong answers of triage on real logs, fixed at the mechanism (held-out set 20's wrong warnings):
a known failure of GRPO's generation path on an offline trainer's run (logs20a/002), a folder of the
user's project named like a package read as that package (logs20b/002), and a fix of a package's
own copy of a class (one a later release took back) named for another package's object
(logs20c/008)."""

from __future__ import annotations

from types import SimpleNamespace

from envdoctor.triage.draft import Log
from envdoctor.triage.runkind import OFFLINE, generates, generation_only, kind_of
from envdoctor.triage.traceback import package_of
from tests.triage.helpers import findings, scan_bytes

ENTRY = "vllm-pre-0.7.2-device-mismatch"
#: held-out set 20, logs20a/002: TRL's DPO script under DeepSpeed, no vLLM (settled: the
#: precompute-ref forward on the unprepared model)
DPO_LOG = (
    "accelerate launch --config_file tests/distributed/data/accelerate_configs/zero3.yaml \\\n"
    "  trl/scripts/dpo.py \\\n"
    "  --model_name_or_path trl-internal-testing/tiny-Qwen2ForCausalLM-2.5 \\\n"
    "  --precompute_ref_log_probs --output_dir /tmp/out\n"
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
    "cuda:0 and cpu!\n"
)
GRPO_LOG = (
    "accelerate launch train_grpo.py --use_vllm\n"
    "trl==0.14.0\nvllm==0.7.0\n"
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
    "cuda:0 and cpu!\n"
)


def _log(text: str) -> Log:
    return Log({}, {}, None, text.count("\n"), head=text.encode())


def _entry(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.evidence.get("known_failure") == ENTRY]


def test_a_generation_path_failure_stays_off_an_offline_trainers_run() -> None:
    assert kind_of(DPO_LOG) == OFFLINE
    assert _entry(DPO_LOG) == []


def test_the_generation_path_failure_still_fires_on_a_grpo_run() -> None:
    (f,) = _entry(GRPO_LOG)
    assert "pip install 'vllm>=0.7.2'" in f.fix
    # a log that says no kind of training keeps the entry too (a bare error line)
    assert _entry(GRPO_LOG.split("\n", 1)[1])


def test_what_makes_an_entry_one_of_the_generation_path() -> None:
    def entry(config: dict, trainer: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(config=config, trainer=trainer)

    assert generates(entry({"use_vllm": (True,)}))
    assert generates(entry({"vllm_mode": ("server",)}))
    assert generates(entry({}, trainer="grpo"))
    assert not generates(entry({"use_vllm": (True, False)}))  # either value: not a requirement
    assert not generates(entry({"use_peft": (True,), "gradient_checkpointing": (True,)}))
    assert generation_only(entry({"use_vllm": (True,)}), _log(DPO_LOG))
    assert not generation_only(entry({"use_vllm": (True,)}), _log(GRPO_LOG))


def test_offline_scripts_and_settings_tell_the_run_kind() -> None:
    assert kind_of("python trl/scripts/dpo.py --model x") == OFFLINE
    assert kind_of("python run_orpo.py") == OFFLINE
    assert kind_of("--precompute_ref_log_probs") == OFFLINE
    assert kind_of("python examples/scripts/dpo_online.py") == "grpo"  # online DPO generates
    assert kind_of("python train_online_dpo.py") == "grpo"


USER_TB = (
    "Traceback (most recent call last):\n"
    '  File "/root/grail/research/trl/train_trl_grpo.py", line 1793, in <module>\n'
    "    main()\n"
    '  File "/root/grail/research/trl/train_trl_grpo.py", line 1636, in main\n'
    "    run_name=f\"trl_{adapter.name}_grpo_{args.model_id.replace('/', '_')}_{run_id}\",\n"
    "AttributeError: 'Namespace' object has no attribute 'model_id'\n"
)


def test_a_project_folder_named_like_a_package_is_the_users_code() -> None:
    """held-out set 20, logs20b/002: the user's research/trl/ script was said 'raised in trl'."""
    assert package_of("/root/grail/research/trl/train_trl_grpo.py")[0] is None
    assert package_of("/w/proj/vllm/serve.py")[0] is None
    (f,) = [f for f in findings(scan_bytes(USER_TB)) if f.rule == "TRI003"]
    assert "raised in trl" not in f.message and "train_trl_grpo.py:1636" in f.message


def test_a_source_checkout_of_a_package_is_still_that_package() -> None:
    assert package_of("/home/u/trl/trl/trainer/grpo_trainer.py") == ("trl", "trainer/grpo_trainer.py")
    assert package_of("/w/transformers/src/transformers/models/llama/modeling_llama.py")[0] == "transformers"
    assert package_of("/w/vllm/vllm/entrypoints/llm.py")[0] == "vllm"
    assert package_of("/w/OpenRLHF/openrlhf/cli/train_ppo.py")[0] == "openrlhf"  # no layout known
    assert package_of("/venv/lib/python3.11/site-packages/trl/train_x.py")[0] == "trl"  # installed


def test_a_fix_of_a_class_a_later_release_took_back_is_no_answer() -> None:
    """held-out set 20, logs20c/008: OpenRLHF 0.2.2 gave its own LlamaRotaryEmbedding copy a
    cos_cached (OpenRLHF#226) and 0.2.3 dropped the copy (#191); the one-line paste is Unsloth's
    patch on a transformers that dropped cos_cached, not OpenRLHF's: no 'openrlhf>=0.2.2'."""
    text = (
        "Once I get to trainer.train(), I get an AttributeError: 'LlamaRotaryEmbedding' object has no "
        "attribute 'cos_cached'.\n"
    )
    got = findings(scan_bytes(text))
    assert not [f for f in got if "openrlhf" in f.fix or f.rule == "TRI014"]


LOAD_WEIGHTS = "vllm-load-weights-stacked-name-keyerror"
#: held-out set 19, logs19b/003: vLLM's Falcon loader meets falcon-11B's own weight names at the
#: first load (settled: that vLLM's Falcon model lacks the layout), no weight sync
FALCON = (
    '  File "/home/u/env/lib/python3.10/site-packages/vllm/model_executor/models/falcon.py", line 421, '
    "in load_weights\n"
    "    param = params_dict[name]\n"
    "KeyError: 'transformer.h.26.input_layernorm.weight'\n"
)


def _load_weights(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.evidence.get("known_failure") == LOAD_WEIGHTS]


def test_an_entry_that_spells_out_its_exceptions_line_is_not_located_for_another_line() -> None:
    assert _load_weights(FALCON) == []


def test_the_fused_name_keyerror_at_the_same_frame_is_still_the_entrys() -> None:
    fused = FALCON.replace("falcon.py", "qwen2.py").replace(
        "transformer.h.26.input_layernorm.weight", "layers.0.mlp.gate_up_proj.weight"
    )
    (f,) = _load_weights(fused)
    assert "#39935" in f.fix


#: held-out set 19, logs19a/003: vLLM's own CLI imports LLM from vllm (settled: the host's kernel);
#: the frame above vLLM's is pip's console script for vLLM's entry point, not the user's code
SELF_IMPORT = (
    "Traceback (most recent call last):\n"
    '  File "/root/miniconda3/bin/vllm", line 5, in <module>\n'
    "    from vllm.entrypoints.cli.main import main\n"
    '  File "/root/miniconda3/lib/python3.12/site-packages/vllm/entrypoints/cli/__init__.py", line 3, '
    "in <module>\n"
    "    from vllm.entrypoints.cli.benchmark.latency import BenchmarkLatencySubcommand\n"
    '  File "/root/miniconda3/lib/python3.12/site-packages/vllm/benchmarks/latency.py", line 16, '
    "in <module>\n"
    "    from vllm import LLM, SamplingParams\n"
    "ImportError: cannot import name 'LLM' from 'vllm' "
    "(/root/miniconda3/lib/python3.12/site-packages/vllm/__init__.py)\n"
)


def _boundary(text: str):
    from envdoctor.triage import boundary
    from envdoctor.triage.traceback import failure

    lines = text.splitlines()
    return boundary.find(failure(lines[:-1], lines[-1], len(lines)))


def test_a_packages_console_script_is_not_the_users_code() -> None:
    assert _boundary(SELF_IMPORT) is None  # the package importing itself: no drift of two packages
    assert not [f for f in findings(scan_bytes(SELF_IMPORT)) if f.rule == "TRI009"]


def test_the_users_script_importing_the_package_is_still_a_boundary() -> None:
    own = SELF_IMPORT.replace("/root/miniconda3/bin/vllm", "/home/u/serve.py")
    b = _boundary(own)
    assert b is not None and b.callee == "vllm" and b.caller is None


#: held-out set 17, logs17b/001: TRL's own SFT example script, run from a TRL checkout, on a
#: transformers older than 4.46 (settled: transformers >= 4.46); the script is no frame of trl's
SFT_PROCESSING_CLASS = (
    "Traceback (most recent call last):\n"
    '  File "/workflow/trl/examples/scripts/sft.py", line 95, in <module>\n'
    "    trainer = SFTTrainer(\n"
    '  File "/c/envs/w/lib/python3.10/site-packages/trl/trainer/sft_trainer.py", line 409, in __init__\n'
    "    super().__init__(\n"
    "TypeError: Trainer.__init__() got an unexpected keyword argument 'processing_class'\n"
)


def test_a_checkouts_example_script_is_not_the_package_and_the_entry_names_the_sft_trainer() -> None:
    assert package_of("/workflow/trl/examples/scripts/sft.py")[0] is None
    (f,) = [
        f
        for f in findings(scan_bytes(SFT_PROCESSING_CLASS))
        if f.evidence.get("known_failure") == "trl-processing-class-transformers-below-4.46"
    ]
    assert "SFTTrainer" in f.message and f.fix.startswith("pip install 'transformers>=4.46'")
