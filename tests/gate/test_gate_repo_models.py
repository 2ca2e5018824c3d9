"""REP013: a model the run loads from the repository's own tree that only the author's machine has
(1dreamboat1/grpo-from-open-r1: a committed Qwen2-0.5B-Instruct folder with config and tokenizer
but no weights; tienanh28122000/R1: a committed symlink to /data1/…/Qwen2.5-1.5B-Instruct)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from envdoctor.plan.repo_models import repo_model_paths
from tests.conftest import run_cli

GRPO = "use_vllm: false\nnum_generations: 4\nper_device_train_batch_size: 4\n"
RUN = "python src/grpo.py --model_name_or_path Qwen2-0.5B-Instruct --output_dir out\n"


def _repo(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


def test_a_committed_model_folder_without_weights_is_an_error_in_the_hook(tmp_path):
    root = _repo(
        tmp_path,
        {"run.sh": RUN, "src/grpo.py": "", "grpo.yaml": GRPO, "Qwen2-0.5B-Instruct/config.json": "{}"},
    )
    (root / "Qwen2-0.5B-Instruct" / "tokenizer.json").write_text("{}")
    (use,) = repo_model_paths(root)["model_paths"]
    assert (
        use["file"] == "run.sh" and use["at"] == "Qwen2-0.5B-Instruct" and "no weight file" in use["problem"]
    )
    out = run_cli("hook", "--format", "json", "grpo.yaml", cwd=root)
    found = [f for item in json.loads(out.stdout)["files"] for f in item["report"]["findings"]]
    (f,) = [f for f in found if f["rule"] == "REP013"]
    assert f["severity"] == "error" and out.returncode == 1


def test_a_committed_symlink_out_of_the_repository_is_said(tmp_path):
    root = _repo(
        tmp_path,
        {
            "scripts/train.sh": "accelerate launch ../src/grpo.py --config ../recipes/r.yaml\n",
            "src/grpo.py": "",
        },
    )
    _repo(root, {"recipes/r.yaml": GRPO + "model_name_or_path: Qwen2.5-1.5B-Instruct\n"})
    os.symlink("/data1/someone/models/Qwen2.5-1.5B-Instruct", root / "scripts" / "Qwen2.5-1.5B-Instruct")
    (use,) = repo_model_paths(root)["model_paths"]
    assert use["at"] == "scripts/Qwen2.5-1.5B-Instruct" and "/data1/someone" in use["problem"]


def test_quiet_for_weights_a_download_a_hub_id_and_a_link_inside_the_repository(tmp_path):
    root = _repo(
        tmp_path,
        {
            "run.sh": RUN,
            "src/grpo.py": "",
            "Qwen2-0.5B-Instruct/config.json": "{}",
            "Qwen2-0.5B-Instruct/model.safetensors": "x",
            "recipes/r.yaml": GRPO + "model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct\n",
        },
    )
    assert repo_model_paths(root)["model_paths"] == []
    (root / "Qwen2-0.5B-Instruct" / "model.safetensors").unlink()
    (root / "get.sh").write_text(
        "huggingface-cli download Qwen/Qwen2-0.5B-Instruct --local-dir Qwen2-0.5B-Instruct\n"
    )
    assert repo_model_paths(root)["model_paths"] == []
    other = _repo(tmp_path / "b", {"run.sh": RUN, "models/q/config.json": "{}", "models/q/model.bin": "x"})
    os.symlink("models/q", other / "Qwen2-0.5B-Instruct")
    assert repo_model_paths(other)["model_paths"] == []
