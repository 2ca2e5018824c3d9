"""SEC001: a credential committed in the repository's scripts and configs (a W&B key in a launch
script, an HF token in a notebook, an OpenAI key in .env) is an error of the hook, masked in every
output; variable references and placeholders stay quiet."""

from __future__ import annotations

import json

import pytest

from envdoctor.plan.repo_secrets import repo_secrets, scan_text
from tests.conftest import run_cli

# made-up values of the real shapes (not anyone's credentials)
WANDB = "3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012ab3"
HF = "hf_" + "Qw3rTy7UiOp9AsDfGhJkLzXcVbNm12PoIu"
OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
GRPO = "use_vllm: true\nnum_generations: 4\nper_device_train_batch_size: 4\n"

FIRES = {
    "export": (f"export WANDB_API_KEY={WANDB}\n", "wandb"),
    "login": (f"wandb login {WANDB}\n", "wandb"),
    "relogin": (f"wandb login --relogin {WANDB}\n", "wandb"),
    "flag": (f"python train.py --wandb_api_key {WANDB} --config grpo.yaml\n", "wandb"),
    "flag=": (f"python train.py --wandb-api-key={WANDB}\n", "wandb"),
    "python": (f'os.environ["WANDB_API_KEY"] = "{WANDB}"\n', "wandb"),
    "wandb.login": (f'wandb.login(key="{WANDB}")\n', "wandb"),
    "yaml": (f"wandb_api_key: {WANDB}\n", "wandb"),
    "self-hosted": (f"WANDB_API_KEY=local-{WANDB}\n", "wandb"),
    "hf": (f"export HF_TOKEN={HF}\n", "hf"),
    "hf-cli": (f"huggingface-cli login --token {HF}\n", "hf"),
    "openai": (f"OPENAI_API_KEY={OPENAI}\n", "openai"),
}
QUIET = [
    "export WANDB_API_KEY=${WANDB_API_KEY}\n",
    "export WANDB_API_KEY=$WANDB_KEY\n",
    "wandb login $WANDB_API_KEY\n",
    "WANDB_API_KEY: ${{ secrets.WANDB_API_KEY }}\n",
    "WANDB_API_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
    "WANDB_API_KEY=<your-wandb-key>\n",
    "WANDB_API_KEY=0000000000000000000000000000000000000000\n",
    "export HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
    "export HF_TOKEN=hf_YOUR_TOKEN_HERE_xxxxxxxxxxxxxxxxxxxxx\n",
    "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
    "pip install scikit-learn sk-some-very-long-package-name\n",
    f"git checkout {WANDB}  # a commit, not a key\n",
    f"wandb_project: grpo-{WANDB}\n",
]


@pytest.mark.parametrize("form", sorted(FIRES))
def test_each_written_form_is_found_with_its_line_and_never_its_value(form):
    text, kind = FIRES[form]
    found = scan_text("# setup\n" + text, "scripts/train.sh")
    assert [(s.kind, s.line) for s in found] == [(kind, 2)]
    assert all(
        WANDB not in v and HF not in v and OPENAI not in v
        for s in found
        for v in map(str, s.to_dict().values())
    )


@pytest.mark.parametrize("text", QUIET)
def test_references_and_placeholders_are_quiet(text):
    assert scan_text(text, "x.sh") == []


def test_the_repository_walk_reads_scripts_slurm_makefile_notebooks_env_and_yaml(tmp_path):
    files = {
        "scripts/train.sh": f"export WANDB_API_KEY={WANDB}\n",
        "slurm/job.slurm": f"#SBATCH -N 1\nwandb login {WANDB}\n",
        "Makefile": f"train:\n\tHF_TOKEN={HF} accelerate launch train.py\n",
        "notebooks/run.ipynb": json.dumps({"cells": [{"source": [f"%env OPENAI_API_KEY={OPENAI}\n"]}]}),
        ".env": f"WANDB_API_KEY={WANDB}\n",
        "configs/grpo.yaml": f"wandb_api_key: {WANDB}\n",
        "data/big.sh": "x" * 2_000_000 + f"\nexport WANDB_API_KEY={WANDB}\n",  # over the size cap
        ".git/config": f"WANDB_API_KEY={WANDB}\n",  # git's own folder is not the repository's files
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = {(s.file, s.kind) for s in repo_secrets(tmp_path)}
    assert found == {
        ("scripts/train.sh", "wandb"),
        ("slurm/job.slurm", "wandb"),
        ("Makefile", "hf"),
        ("notebooks/run.ipynb", "openai"),
        (".env", "wandb"),
        ("configs/grpo.yaml", "wandb"),
    }


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit"])
def test_the_hook_goes_red_once_and_masks_the_key_in_every_format(tmp_path, fmt):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/train.sh").write_text(
        f"export WANDB_API_KEY={WANDB}\naccelerate launch --num_processes 2 train.py --config grpo.yaml\n"
    )
    (tmp_path / "grpo.yaml").write_text(GRPO)
    (tmp_path / "other.yaml").write_text(GRPO)
    out = run_cli("hook", "-v", "--format", fmt, "grpo.yaml", "other.yaml", cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert WANDB not in out.stdout + out.stderr
    assert "SEC001" in out.stdout
    if fmt == "json":
        rules = [f["rule"] for item in json.loads(out.stdout)["files"] for f in item["report"]["findings"]]
        assert rules.count("SEC001") == 1  # said once, not once per config
        assert "scripts/train.sh" in out.stdout and "WANDB_API_KEY" in out.stdout


def test_a_commit_of_a_script_alone_is_still_checked_for_credentials(tmp_path):
    (tmp_path / "run.sh").write_text(f"wandb login {WANDB}\n")
    out = run_cli("hook", "run.sh", cwd=tmp_path)
    assert out.returncode == 1 and "SEC001" in out.stdout and WANDB not in out.stdout + out.stderr


def test_a_repository_with_only_references_passes(tmp_path):
    (tmp_path / "run.sh").write_text("export WANDB_API_KEY=${WANDB_API_KEY}\nwandb login $WANDB_API_KEY\n")
    (tmp_path / "grpo.yaml").write_text(GRPO)
    out = run_cli("hook", "grpo.yaml", cwd=tmp_path)
    assert "SEC001" not in out.stdout, out.stdout
