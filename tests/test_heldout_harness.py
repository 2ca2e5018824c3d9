"""bench/heldout_eval.py installs for each published setup the stack its source implies (the
harness's choices are the evaluation's inputs, so they are tested like code): a stack note's
inferred line, a fork's dated branch, a range with its install day, a vLLM that a later
``trl[vllm]`` install brings with its own torch, and the origin of a TRL built from a git tree.
Issue 35: each wrong choice here gave a healthy setup a false error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "heldout_eval", Path(__file__).resolve().parents[1] / "bench" / "heldout_eval.py"
)
assert _SPEC is not None and _SPEC.loader is not None
harness = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(harness)


def test_an_inferred_line_is_that_lines_release_at_the_notes_date():
    note = "unpinned (pip install trl[vllm] in grpo.Dockerfile, built ~Aug 2025: inferred 0.20.x)"
    assert harness._trl_from_note(note) == "0.20.0"  # not Aug 2025's newest, 0.22.1
    # one of alternatives is no line: the month decides
    assert harness._trl_from_note("unpinned (setup.py 'trl'; ~0.15.x/0.16.0 in March 2025)") == "0.16.0"


def test_a_vllm_from_a_later_trl_vllm_install_brings_its_own_torch():
    stack = {
        "trl": "unpinned (pip install trl[vllm] in grpo.Dockerfile, built ~Aug 2025: inferred 0.20.x)",
        "vllm": "unpinned, via trl[vllm] extra",
        "torch": "2.6.0 (pinned in grpo.Dockerfile)",
    }
    got = harness._stack(stack)
    assert got["trl"] == "0.20.0" and got["torch"] != "2.6.0"
    from envdoctor.knowledge import knowledge

    pins = {str(p["vllm"]): str(p["torch"]) for p in knowledge().vllm["torch_pins"] if p.get("vllm")}
    assert pins[got["vllm"]] == got["torch"]


def test_a_forks_dated_branch_is_main_of_that_day():
    note = (
        "fork groundlight/trl (editable ../trl; branch release_2025_03_06; fork state of Apr 2025 not stated)"
    )
    assert harness._trl_from_note(note) == "0.16.0.dev0"  # 0.15.2 was out; main led to 0.16.0


def test_trls_main_branch_installed_on_a_day_is_that_days_dev_build():
    note = "git main at ~2025-03-04 (setup.py 'trl @ git+https://github.com/huggingface/trl.git@main')"
    assert harness._trl_from_note(note) == "0.16.0.dev0"  # 0.15.2 (2025-02-25) was out then


def test_a_quoted_range_with_its_install_day_is_what_pip_installed_that_day():
    stack = {
        "trl": "unpinned 'trl>=0.15.0' (resolved at job time, 2026-03-08)",
        "transformers": "unpinned >=4.48.0",
    }
    got = harness._stack(stack, uses_vllm=False)
    assert got["trl"] == "0.29.0"  # not the bound, 0.15.0
    assert got["transformers"] != "4.48.0"  # TRL 0.29's line, not the bound either


def test_the_origin_of_a_trl_built_from_a_git_tree():
    fork = "custom branch andyl98/trl grpo-vram-optimization @ ccc95472f6245f2db00986a08ca16da68bf32c14"
    assert harness._origin(fork) == (
        "git+https://github.com/andyl98/trl.git@ccc95472f6245f2db00986a08ca16da68bf32c14"
    )
    assert harness._origin("git main (setup.py 'trl @ git+https://github.com/huggingface/trl.git@main')") == (
        "git+https://github.com/huggingface/trl.git"
    )
    assert harness._origin("0.19.1 (pin)") is None and harness._origin(None) is None


def test_an_undated_range_is_installed_as_pip_would_not_at_its_lower_bound():
    # rl-chess (held-out set 8): transformers ">=4.45.0,<5" beside TRL 0.29 was installed as
    # 4.45.0, which TRL 0.29 and its vLLM refuse (a PKG004 no real install has)
    from envdoctor import versions
    from envdoctor.knowledge import knowledge

    stack = {
        "trl": ">=0.29.0 (Modal image); exact version inferred 0.29.x (March 2026)",
        "vllm": "unpinned (Modal image)",
        "transformers": "unpinned in the Modal image; pyproject.toml >=4.45.0,<5",
    }
    got = harness._stack(stack)
    assert versions.satisfies(got["transformers"], ">=4.45.0,<5") and got["transformers"] != "4.45.0"
    pin = next(p for p in knowledge().vllm["torch_pins"] if str(p["vllm"]) == got["vllm"])
    assert versions.satisfies(got["transformers"], str(pin.get("transformers") or ">=0"))


def test_the_range_a_note_gives_is_the_packages_own():
    assert harness._note_range("transformers", "pyproject.toml >=4.45.0,<5") == ">=4.45.0,<5"
    assert harness._note_range("trl", "pulled by verifiers[all]==0.1.3.post0 (not stated)") is None
    assert harness._note_range("trl", "unpinned ('trl>=0.7.0'; open-r1 pins its own)") == ">=0.7.0"
    assert harness._note_range("trl", "R1-V pins trl==0.14.0") is None  # a pin, not a range


def test_an_undated_trl_range_is_its_newest_release_consistent_with_the_given_vllm():
    from envdoctor import versions
    from envdoctor.knowledge import knowledge

    kb = knowledge()
    got = harness._stack({"trl": "unpinned in a tool (>=0.19)", "vllm": "0.8.5.post1"})
    ok = [
        v
        for v in harness.TRL_RELEASES
        if versions.satisfies(v, ">=0.19")
        and versions.satisfies("0.8.5.post1", str((kb.trl_line(v) or {}).get("vllm") or ">=0")) is not False
    ]
    assert got["trl"] == max(ok, key=versions.sort_key) and got["trl"] != "0.19.0"


def test_the_machine_has_every_gpu_a_launch_line_names():
    # humor-r1 (set 8): gpus.json counts the 2 GPUs used; CUDA_VISIBLE_DEVICES=1,2 names GPU 2
    assert harness._gpu_count({"count": 2}, ["CUDA_VISIBLE_DEVICES=1,2 uv run python -u train.py"]) == 3
    assert harness._gpu_count({"count": 2}, ["python train.py"]) == 2
    assert harness._gpu_count({"count": 8}, ["CUDA_VISIBLE_DEVICES=4,5,6,7 accelerate launch t.py"]) == 8
    assert harness._gpu_count({}, ["export CUDA_VISIBLE_DEVICES='0, 3'"]) == 4


def test_a_gpu_count_the_setup_does_not_state_stays_unknown():
    # gpus.json "count": "unknown" / null / "1 or 2": the run is judged with the GPUs not known
    # (a snapshot's "gpus": null), never with a default of 2 the user never stated
    assert harness._gpu_count({"count": "unknown"}, ["accelerate launch train.py"]) is None
    assert harness._gpu_count({"count": None}, ["python train.py"]) is None
    assert harness._gpu_count({"count": "1 or 2 (README)"}, ["python train.py"]) is None


def test_a_range_keeps_what_the_stack_brought_else_the_nearest_release_it_allows():
    # TRL 0.23's line brought transformers 4.56.1; ">=4.57.1" asks the nearest series above it,
    # not today's newest (5.x, which TRL 0.23 cannot run on)
    got = harness._stack({"trl": "0.23.1", "transformers": ">=4.57.1 (step.md)", "vllm": "0.10.2"})
    assert got["transformers"].startswith("4.57.")
    # a version the note says the range resolved to is that version
    got = harness._stack({"trl": "0.17.0", "transformers": "'transformers>=4.48' (range; resolved 5.12.1)"})
    assert got["transformers"] == "5.12.1"


def test_a_reconstructed_configs_computed_values_are_left_out(tmp_path):
    """A call the script makes and the collector's <placeholder> for a value the script computes
    are no config file's values (held-out set 9: `eval_steps: <total_step // 100>` drew CFG005);
    a published config keeps every line."""
    he = harness
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "# reconstructed: GRPOConfig(...) in train.py\nlearning_rate: 1e-6\n"
        "eval_steps: <total_step // 100>\nvllm_server_port: <free port picked by the script>\n"
        "output_dir: os.path.join(root, 'o')\n"
    )
    he._drop_code_values(cfg)
    assert cfg.read_text().splitlines()[1:] == ["learning_rate: 1e-6"]
    published = tmp_path / "p.yaml"
    published.write_text("# as published\neval_steps: <total_step // 100>\n")
    he._drop_code_values(published)
    assert "eval_steps" in published.read_text()
    # a config the collector took from the script's GRPOConfig(...) call, its header says so
    # (unsloth-zoo PR 47's notebook: `bf16 = is_bfloat16_supported()` is code, not a config value)
    cell = tmp_path / "c.yaml"
    cell.write_text(
        '# settings as published: the notebook\'s GRPOConfig(...) cell\nbf16: "is_bfloat16_supported()"\n'
        'fp16: "not is_bfloat16_supported()"\nlearning_rate: 5.0e-6\n'
    )
    he._drop_code_values(cell)
    assert cell.read_text().splitlines()[1:] == ["learning_rate: 5.0e-6"]


def test_a_reconstructed_configs_written_out_expressions_are_left_out(tmp_path):
    """Set 16: the collector wrote the script's arithmetic as a quoted value; a path keeps its line."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "# reconstructed from GRPOConfig(...)\n"
        'gradient_accumulation_steps: "16 / (4 * torch.cuda.device_count())  # on one GPU"\n'
        "max_prompt_length: 'maximum_length + 1 (computed)'\n"
        "output_dir: outputs/<run_name>\nlr_scheduler_type: cosine_with_min_lr\n"
    )
    harness._drop_code_values(cfg)
    assert cfg.read_text().splitlines()[1:] == [
        "output_dir: outputs/<run_name>",
        "lr_scheduler_type: cosine_with_min_lr",
    ]


def test_a_note_that_infers_one_exact_release_installs_it():
    """A note's "consistent with unsloth's trl cap (inferred 0.24.0)" means that release, not the newest the
    range allows (held-out set 10: TRL 1.16.0 was installed beside an unsloth that caps it); a
    span ("inferred 0.21-0.23") names no one release."""
    got = harness._stack({"trl": ">=0.14.0 (requirements); 0.24 stated by a commit (inferred 0.24.0)"})
    assert got["trl"] == "0.24.0"
    span = harness._stack({"trl": "not declared; GSPO needs TRL >= 0.20 - inferred 0.21-0.23"})
    assert span["trl"] != "0.21"


def test_the_setups_gpu_model_is_the_machines_not_always_an_h100():
    default = {"name": "default"}
    t4 = harness._gpu_model({"model": "Tesla T4", "memory_gib": 15}, default)
    assert t4["compute_capability"] == "7.5" and t4["memory_total_mib"] == 15 * 1024
    assert harness._gpu_model({"name": "8 x A100 80G"}, default)["compute_capability"] == "8.0"
    assert harness._gpu_model({"model": "RTX A4000"}, default)["name"] == "NVIDIA RTX A4000"  # not an A40
    assert harness._gpu_model({"model": "not stated"}, default) is default


def test_an_amd_machine_has_no_nvml_and_its_rocm_builds_keep_their_label():
    """Set 16's MI300X runs: NVML finds no NVIDIA driver there (facts/gpus.py), and a ROCm torch /
    vLLM is the ROCm build (``2.10.0+rocm7.1``), which the fix's platform note reads."""
    assert harness._not_nvidia({"name": "AMD Instinct MI300X VF", "model": "AMD Instinct MI300X (gfx942)"})
    assert not harness._not_nvidia({"model": "NVIDIA H100 80GB"}) and not harness._not_nvidia({})
    assert harness.LEAD.match("2.10.0+rocm7.1 (setup_env.sh)").group(1) == "2.10.0+rocm7.1"
    assert harness.LEAD.match("2.6.0+cu124 (printed)").group(1) == "2.6.0"


def test_a_package_the_stack_says_is_not_installed_is_absent():
    got = harness._stack({"trl": "0.24.0", "vllm": "not installed (required by fast_inference=True)"}, True)
    assert "vllm" not in got and got["trl"] == "0.24.0"
    # "not installed explicitly - comes with unsloth": installed, by another package
    got = harness._stack({"trl": "not installed explicitly - comes with unsloth; inferred 0.24.0"}, False)
    assert got["trl"] == "0.24.0"
    # "not used" (a verl / ROLL setup): no TRL on the machine, not the default line's 0.15.2
    got = harness._stack({"trl": "not used", "vllm": ">=0.8.0 (requirements.txt)"}, True)
    assert "trl" not in got
    # a package the note places in another environment than the training one
    note = "==0.23.0 (optional extra, used for serving in a separate venv; not used by the GRPO runs)"
    got = harness._stack({"trl": "0.26.0", "vllm": note}, True)
    assert "vllm" not in got and got["trl"] == "0.26.0"
    # set 24's medical-llm-rl: vLLM 0.15 in "separate ~/.venv, inference only" (KNF001 was false)
    note = "0.15 (separate ~/.venv, inference only) (not used by GRPO training (use_vllm not set))"
    got = harness._stack({"trl": "0.24", "vllm": note}, True)
    assert "vllm" not in got


def test_the_collectors_elision_is_no_word_of_the_command(tmp_path):
    # Saliency_R1 (set 11b): "--eval_steps 100 ..." was read as eval_steps [100, '...'] (CFG005)
    (tmp_path / "launch.txt").write_text(
        "accelerate launch train.py --eval_steps 100 ... --num_generations 8 …\n"
    )
    assert harness._commands(tmp_path) == ["accelerate launch train.py --eval_steps 100 --num_generations 8"]


def test_an_inferred_span_of_lines_is_a_release_of_them():
    """gsm8k_minimal_rl-4076510 (set 14): "inferred 0.20-0.21 (Aug 2025; …)" is TRL 0.21, not
    Aug 2025's newest release (0.22.1, which gave the healthy setup KNF001 trl#3992)."""
    note = (
        "unpinned; inferred 0.20-0.21 (Aug 2025; generate_rollouts.py imports "
        "trl.trainer.grpo_trainer.RepeatSampler and uses steps_per_generation, added in 0.18/0.19)"
    )
    assert harness._trl_from_note(note) == "0.21.0"
    assert harness._trl_from_note("unpinned; inferred 0.20-0.21") == "0.21.0"


def test_a_span_of_another_package_leaves_the_date_to_decide():
    """A span no TRL release falls in is another package's ("python 3.10-3.12", "vllm 0.7-0.8"):
    the note's month decides, as before the span reading (not None, which left TRL unplaced)."""
    for note in ("unpinned (Mar 2025, python 3.10-3.12)", "unpinned (Mar 2025; README: vllm 0.7-0.8)"):
        assert harness._trl_from_note(note) == harness._trl_from_note("unpinned (Mar 2025)") == "0.16.0"


def test_an_unquoted_expression_the_collector_wrote_is_left_out(tmp_path):
    """Set 17 (llm-final-project): ``max_steps: len(dataset) * num_train_epochs`` is the
    collector's note of what grpo/grpo.py:583 computes, not a value of any config file."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "# reconstructed from config1 (GRPORunConfig)\n"
        "max_steps: len(dataset) * num_train_epochs\nlearning_rate: 5.0e-06\nbeta: 0.04  # a - b\n"
    )
    harness._drop_code_values(cfg)
    assert cfg.read_text().splitlines()[1:] == ["learning_rate: 5.0e-06", "beta: 0.04  # a - b"]


def test_a_setup_that_declares_its_stack_keeps_its_own_declarations(tmp_path):
    """The hook judges the repository's declarations: the stack note's requirements.txt is added
    only where the setup has none (set 17's qwen3_math_ft: pyproject.toml + requirements_finetune.txt)."""
    (tmp_path / "train.py").write_text("")
    assert not harness._declares(tmp_path)
    (tmp_path / "requirements_finetune.txt").write_text("trl>=0.12.0\n")
    assert harness._declares(tmp_path)


def test_a_stack_entry_as_version_and_note_reads_as_one_string_and_an_installed_release_is_exact():
    """Set 20's collectors wrote stack.json entries as {"version", "note"} objects: read as the
    "version (note)" string of the earlier sets, not passed over (every setup then fell back to the
    0.15 line); a release the note says was installed is the run's."""
    stack = harness._notes(
        {
            "trl": {"version": ">=1.0.0 (1.0.0 installed)", "note": "GRPOTrainer subclass"},
            "torch": {"version": "2.6.0 (requirements.txt: torch>=2.6.0)", "note": ""},
        }
    )
    assert stack == {
        "trl": ">=1.0.0 (1.0.0 installed) (GRPOTrainer subclass)",
        "torch": "2.6.0 (requirements.txt: torch>=2.6.0)",
    }
    assert harness._stack(stack, uses_vllm=False)["trl"] == "1.0.0"
    assert harness._stack({"trl": "TRL 1.0.0 installed on the pod"}, uses_vllm=False)["trl"] == "1.0.0"


def test_a_month_written_with_a_hyphen_dates_the_note():
    """grpo_norm (set 20): "a Sept-2025 release or main" is September 2025's TRL, not today's."""
    note = "unpinned (no requirements file at this commit); a Sept-2025 release or main"
    picked = harness._trl_from_note(note)
    assert picked is not None and picked.startswith("0.2")
    assert harness._stack({"trl": note}, False)["trl"] == picked


def test_a_trainer_line_with_a_command_substitution_keeps_its_flags():
    line = (
        "torchrun $(python -c 'import swift, os; print(os.path.dirname(swift.__file__) + \"/x.py\")') --a 1"
    )
    assert harness.split_words(line)[-2:] == ["--a", "1"]


def test_a_notebooks_shell_lines_are_commands_and_its_magics_are_not(tmp_path):
    """grpo-qwen0.5 (set 21) documents its run as Colab cells: `!python -m src.train …` after
    `%cd …` and `!pip …`: the trainer line is `python -m src.train …`, not `!python …`."""
    (tmp_path / "launch.txt").write_text(
        "# from notebooks/01_baseline.ipynb\n!nvidia-smi\n%pip install -q trl\n%cd /content/repo/\n"
        "!pip install -r requirements.txt\n!python -m src.train --config configs/baseline.yaml\n"
    )
    assert harness._commands(tmp_path) == [
        "nvidia-smi",
        "cd /content/repo/",
        "python -m src.train --config configs/baseline.yaml",
    ]


def test_the_runs_own_version_a_pin_and_a_lock_are_read_from_a_note():
    """Set 22's and set 23's judges: notes that say which version ran, a pin written as a
    requirement and a lock's version fell back to the harness's default TRL 0.15.2."""
    assert harness._stack({"trl": "requirements.txt: trl==1.5.1; the recorded run: 1.6.0"})["trl"] == "1.6.0"
    assert harness._stack({"trl": ">=0.9.0 (unpinned) -> 0.29.1 resolved"})["trl"] == "0.29.1"
    assert harness._stack({"trl": "trl[vllm]==0.18.0 (setup.py pin)"})["trl"] == "0.18.0"
    assert harness._stack({"trl": "* (pyproject) / 0.11.4 (poetry.lock)"})["trl"] == "0.11.4"
    got = harness._stack({"trl": "1.3.0", "torch": ">=2.6.0; 2.11.0 in the run", "vllm": "not declared"})
    assert got["torch"] == "2.11.0" and got["vllm"] == "0+unknown"  # not a vLLM the harness picks


def test_a_setup_that_states_no_trl_runs_one_of_unknown_release():
    got = harness._stack({"transformers": "==4.57.3", "trl": "imported but not listed"})
    assert got["trl"] == "0+unknown" and got["transformers"] == "4.57.3"


def test_the_trainer_line_is_the_last_that_runs_the_setups_trainer():
    lines = [
        "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model m",
        "uv run python scripts/run_grpo.py --single-gpu",
        "uv run python scripts/run_math_eval.py --model out",
        "nohup uv run python dashboard/server.py &",
        "uv run sky launch cluster.yaml",
        "wait",
    ]
    assert harness._trainer_line(lines) == "uv run python scripts/run_grpo.py --single-gpu"
    assert harness._trainer_line(["python train.py", "python sweep.py --config s.py"]) == "python train.py"
    assert harness._trainer_line(["bash run.sh"]) == "bash run.sh"
