"""The hook reads what the repository says about its own recipes: which files are GRPO configs,
the launch lines that give each its accelerate config and process counts, and what its declared
TRL does with a key it does not have."""

from __future__ import annotations

from tests.conftest import run_cli

GRPO = "use_vllm: true\nnum_generations: 8\nper_device_train_batch_size: 4\ngradient_accumulation_steps: 1\n"
SFT = "model_name_or_path: Qwen/Qwen2.5-0.5B\nlearning_rate: 2.0e-5\nmax_length: 2048\nbeta: 0.1\n"
ZERO3 = "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 8\n"
FSDP = ZERO3.replace("DEEPSPEED", "FSDP") + "fsdp_config:\n  fsdp_version: 2\n"


def repo(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def text(out) -> str:
    return " ".join((out.stdout + out.stderr).split())


def test_an_sft_recipe_beside_the_grpo_ones_is_skipped_and_v_says_why(tmp_path):
    r = repo(
        tmp_path,
        {
            "recipes/grpo/config.yaml": GRPO,
            "recipes/sft/config.yaml": SFT,
            "recipes/sft/launched.yaml": SFT + "num_generations: 4\n",
            "src/sft.py": "from trl import SFTConfig, SFTTrainer\n",
            "README.md": "```\naccelerate launch src/sft.py --config recipes/sft/launched.yaml\n```\n",
        },
    )
    out = run_cli(
        "hook",
        "-v",
        "--assume",
        "trl==1.16.0",
        "recipes/grpo/config.yaml",
        "recipes/sft/config.yaml",
        "recipes/sft/launched.yaml",
        cwd=r,
    )
    said = text(out)
    assert (
        "skipped recipes/sft/config.yaml: not judged as a GRPO config: it holds none of the keys only GRPO"
        in said
    )
    assert (
        "skipped recipes/sft/launched.yaml: not a GRPO config: the repository launches it with src/sft.py"
        in said
    )
    assert "── recipes/grpo/config.yaml ──" in out.stdout


def test_a_config_a_grpo_script_parses_is_a_grpo_config_without_grpo_only_keys(tmp_path):
    r = repo(
        tmp_path,
        {
            "recipes/minimal.yaml": "learning_rate: 1.0e-6\nbeta: 0.04\nmax_prompt_length: 512\n",
            "train_grpo.py": "from trl import GRPOConfig, GRPOTrainer\n",
            "run.sh": "accelerate launch --num_processes 4 train_grpo.py --config recipes/minimal.yaml\n",
        },
    )
    out = run_cli("hook", "-v", "--assume", "trl==1.16.0", "recipes/minimal.yaml", cwd=r)
    assert "── recipes/minimal.yaml ──" in out.stdout, text(out)


def test_the_launch_lines_give_the_process_counts_and_a_batch_must_fail_under_every_one(tmp_path):
    """per_device 4 × procs: with 7 processes 28 does not divide by 8, with 8 it does: the
    repository launches it both ways, so no finding; launched only with 7, an error."""
    both = repo(
        tmp_path / "both",
        {
            "recipes/grpo.yaml": GRPO,
            "recipes/accelerate_configs/zero3.yaml": ZERO3,
            "README.md": (
                "accelerate launch --config_file recipes/accelerate_configs/zero3.yaml --num_processes=7 \\\n"
                "    grpo.py --config recipes/grpo.yaml\n"
                "accelerate launch --config_file recipes/accelerate_configs/zero3.yaml grpo.py "
                "--config recipes/grpo.yaml\n"
            ),
        },
    )
    files = ("recipes/grpo.yaml", "recipes/accelerate_configs/zero3.yaml")
    out = run_cli("hook", "--assume", "trl==1.16.0", "--select", "CFG002", "--strict", *files, cwd=both)
    assert out.returncode == 0, out.stdout
    assert "── recipes/grpo.yaml + recipes/accelerate_configs/zero3.yaml ──" in out.stdout
    seven = repo(
        tmp_path / "seven",
        {
            "recipes/grpo.yaml": GRPO,
            "recipes/accelerate_configs/zero3.yaml": ZERO3,
            "scripts/train.sh": "accelerate launch --num_processes 7 --config_file "
            "recipes/accelerate_configs/zero3.yaml grpo.py --config recipes/grpo.yaml\n",
        },
    )
    bad = run_cli("hook", "--assume", "trl==1.16.0", "--select", "CFG002", *files, cwd=seven)
    assert bad.returncode == 1 and "processes (7)" in bad.stdout, bad.stdout


def test_without_a_known_process_count_divisibility_is_not_a_finding(tmp_path):
    r = repo(
        tmp_path,
        {
            "recipes/grpo.yaml": GRPO.replace("num_generations: 8", "num_generations: 6"),
            "recipes/accelerate_configs/zero2.yaml": ZERO3,
            "recipes/accelerate_configs/zero3.yaml": ZERO3,
        },
    )
    out = run_cli("hook", "-v", "--strict", "--assume", "trl==1.16.0", "recipes/grpo.yaml", cwd=r)
    assert out.returncode == 0, out.stdout
    assert "CFG002 skipped: the process count is not known" in text(out)


def test_an_fsdp_config_no_launched_recipe_uses_does_not_bring_fsdp_failures(tmp_path):
    r = repo(
        tmp_path,
        {
            "recipes/grpo.yaml": GRPO,
            "recipes/accelerate_configs/zero3.yaml": ZERO3,
            "recipes/accelerate_configs/fsdp.yaml": FSDP,
            "README.md": "accelerate launch --config_file recipes/accelerate_configs/zero3.yaml grpo.py "
            "--config recipes/grpo.yaml\n",
        },
    )
    files = (
        "recipes/grpo.yaml",
        "recipes/accelerate_configs/zero3.yaml",
        "recipes/accelerate_configs/fsdp.yaml",
    )
    out = run_cli("hook", "-v", "--assume", "trl==0.17.0", "--select", "KNF", *files, cwd=r)
    said = text(out)
    assert (
        "KNF001 skipped: no GRPO recipe or launch line of the repository uses this accelerate config" in said
    )
    assert "── recipes/accelerate_configs/fsdp.yaml ──" in out.stdout and "✗ KNF001" not in out.stdout
    # launched with it, the same FSDP config is judged with the recipe: TRL 0.17 has no FSDP support
    (r / "README.md").write_text(
        "accelerate launch --config_file recipes/accelerate_configs/fsdp.yaml grpo.py "
        "--config recipes/grpo.yaml\n"
    )
    used = run_cli("hook", "--assume", "trl==0.17.0", "--select", "KNF", *files, cwd=r)
    assert (
        used.returncode == 1
        and "KNF001 trl 0.17.0: GRPOTrainer before TRL 0.18 does not support FSDP" in text(used)
    )
    assert "── recipes/grpo.yaml + recipes/accelerate_configs/fsdp.yaml ──" in used.stdout


def test_a_server_setting_left_empty_is_judged_only_when_the_trainer_uses_a_server(tmp_path):
    cfg = "use_vllm: true\nnum_generations: 4\nvllm_mode: colocate\nvllm_server_host:\n"
    r = repo(tmp_path, {"grpo.yaml": cfg, "server.yaml": cfg.replace("colocate", "server")})
    quiet = run_cli("hook", "--assume", "trl==1.16.0", "--select", "CFG005", "grpo.yaml", cwd=r)
    assert quiet.returncode == 0 and "CFG005" not in quiet.stdout
    loud = run_cli("hook", "--assume", "trl==1.16.0", "--select", "CFG005", "server.yaml", cwd=r)
    assert loud.returncode == 1 and "vllm_server_host" in loud.stdout


def test_a_trl_declared_with_no_version_spans_every_release(tmp_path):
    r = repo(
        tmp_path,
        {"requirements.txt": "trl\n", "grpo.yaml": GRPO + "max_prompt_length: 256\n"},
    )
    # a bare `trl` installs the newest release, which removed the key: DCL009 says so (an error),
    # and DCL001 no longer says the range spans it; no release older than a key is said either
    out = run_cli("hook", "--select", "DCL001", "--select", "DCL009", "grpo.yaml", cwd=r)
    said = text(out)
    assert out.returncode == 1 and "DCL009" in said and "removed `max_prompt_length` in 0.28.0" in said
    assert "spans the removal" not in said and "older than" not in said


def test_a_key_the_pinned_commit_already_has_is_not_unknown(tmp_path):
    """open-r1_olmo pins TRL c04e84c4 (0.17.0.dev0): its GRPOConfig has loss_type (0.17.0's) but
    not shuffle_dataset (added later in that cycle)."""
    pin = "trl @ git+https://github.com/huggingface/trl.git@c04e84c4545acfaecdf7e0631ad07a86ab0fb2f6\n"
    r = repo(
        tmp_path,
        {"requirements.txt": pin, "grpo.yaml": GRPO + "loss_type: dr_grpo\nshuffle_dataset: false\n"},
    )
    out = run_cli("hook", "--select", "CFG001", "grpo.yaml", cwd=r)
    said = text(out)
    assert "`loss_type`" not in said and "`shuffle_dataset`" in said and "commit c04e84c454" in said
    assert out.returncode == 0  # TRL 0.17.0.dev0 drops the key: dead, a warning
