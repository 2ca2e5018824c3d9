"""REP004-REP011 and REP001 on a README: what a repository's launch scripts do when bash runs them
as written (CRLF ends, a launch's options cut off, variables not exported or never set, list
options with commas), paths of the author's machine, and GPUs two launches of one run share.
Each fires on a tiny repository laid out as real ones are and stays quiet where bash (or the
user) gets what the author meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.plan.repo_machine import repo_machine_paths
from envdoctor.plan.repo_paths import repo_paths
from envdoctor.plan.repo_shell import repo_shell
from tests.conftest import run_cli

GRPO = "use_vllm: true\nnum_generations: 4\nper_device_train_batch_size: 4\n"
ACC = "distributed_type: DEEPSPEED\nnum_processes: 2\n"


def _repo(tmp: Path, files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (tmp / name).write_bytes(text)
        else:
            (tmp / name).write_text(text)
    return tmp


def _kinds(tmp: Path, files: dict[str, str | bytes]) -> dict[str, list[dict]]:
    root = _repo(tmp, files)
    return {**repo_shell(root), **repo_machine_paths(root)}


LAUNCH = (
    "CUDA_VISIBLE_DEVICES=1,2 accelerate launch \\\n    --num_processes 2 train.py \\\n    "
    "--config grpo.yaml\n"
)

# kind of finding -> (files where it fires, files where it stays quiet)
CASES: dict[str, tuple[dict[str, str | bytes], dict[str, str | bytes]]] = {
    "crlf": (
        {"run.sh": ("#!/bin/bash\n" + LAUNCH).replace("\n", "\r\n").encode(), "train.py": ""},
        {
            "run.sh": "#!/bin/bash\n" + LAUNCH,
            "notes.sh": b"echo hi\r\n# nothing launched\r\n",
            "train.py": "",
        },
    ),
    "split": (
        {"run.sh": "trl vllm-serve\n    --model Qwen/Qwen2.5-7B\n    --port 8001\n"},
        {
            "run.sh": "trl vllm-serve \\\n    --model Qwen/Qwen2.5-7B \\\n    --port 8001\n",
            "args.sh": 'ARGS=(\n  --model x\n  --port 1\n)\naccelerate launch train.py "${ARGS[@]}"\n',
            "opts.sh": 'case "$1" in\n  --model) M=$2;;\nesac\npython train.py --model "$M"\n',
            "doc.sh": "echo '\npython train.py\n  --lr 1\n'\n",
        },
    ),
    "unexported_env": (
        {
            "train.sh": (
                "set -xe\nNCCL_P2P_DISABLE=1\nCUDA_DEVICE_ORDER=PCI_BUS_ID\naccelerate launch train.py\n"
            )
        },
        {
            "a.sh": "export NCCL_P2P_DISABLE=1\naccelerate launch train.py\n",
            "b.sh": "NCCL_P2P_DISABLE=1 accelerate launch train.py\n",
            "c.sh": "set -a\nNCCL_P2P_DISABLE=1\naccelerate launch train.py\n",
            "d.sh": "MASTER_PORT=29501\ntorchrun --master_port $MASTER_PORT train.py\n",
            "e.sh": "NCCL_DEBUG=INFO\nexport NCCL_DEBUG\naccelerate launch train.py\n",
            "f.sh": "LR=1e-6\naccelerate launch train.py --learning_rate $LR\n",
        },
    ),
    "lora_comma": (
        {"run.sh": 'python train.py --use_peft --lora_target_modules "q_proj", "v_proj" --lora_r 8\n'},
        {
            "run.sh": "python train.py --use_peft --lora_target_modules q_proj v_proj --lora_r 8\n",
            "one.sh": "python train.py --lora_target_modules q_proj,v_proj\n",
        },
    ),
    "unset": (
        {
            "run.sh": (
                "LR=1e-6\naccelerate launch train.py --model_name_or_path $MODLE_PATH --learning_rate $LR\n"
            )
        },
        {
            "a.sh": (
                "MODEL_PATH=Qwen/Qwen2.5-7B\naccelerate launch train.py --model_name_or_path $MODEL_PATH\n"
            ),
            "b.sh": "accelerate launch train.py --model_name_or_path ${MODEL_PATH:-Qwen/Qwen2.5-7B}\n",
            "c.sh": "accelerate launch train.py --model_name_or_path $CKPT\n",
            "README.md": "Set `export CKPT=/path/to/model` before running c.sh.\n",
            "d.sh": "source env.sh\naccelerate launch train.py --config $CONFIG\n",
            "g.sh": "export $(grep -v '^#' .env | xargs)\naccelerate launch train.py --config $CFG2\n",
            "e.sh": "#SBATCH -N 1\nsrun python train.py --config $CFG\n",
            "f.sh": "torchrun --nnodes $SLURM_NNODES train.py --output_dir $OUT\n",
        },
    ),
    "shared_gpus": (
        {
            "scripts/serve.sh": (
                "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model m --gpu-memory-utilization 0.5\n"
            ),
            "scripts/reward.sh": (
                "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model r --port 8001 --gpu-memory-utilization 0.6\n"
            ),
        },
        {
            "scripts/serve.sh": "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model m\n",
            "scripts/serve_zero.sh": "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model other\n",
            "scripts/train.sh": "CUDA_VISIBLE_DEVICES=1,2,3 accelerate launch --num_processes 3 train.py\n",
            "scripts/train_small.sh": "CUDA_VISIBLE_DEVICES=1 accelerate launch --num_processes 1 train.py\n",
            "scripts/train_colocate.sh": "CUDA_VISIBLE_DEVICES=0,1 accelerate launch train.py "
            "--vllm_mode colocate\n",
            "other/serve.sh": "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m --port 9000\n",
        },
    ),
    "full_memory": (
        {"serve.sh": "CUDA_VISIBLE_DEVICES=7 vllm serve m --gpu-memory-utilization 1.0\n"},
        {"serve.sh": "CUDA_VISIBLE_DEVICES=7 vllm serve m --gpu-memory-utilization 0.95\n"},
    ),
    "machine_paths": (
        {
            "recipes/grpo.yaml": GRPO + "model_name_or_path: /mnt/share/user/ckpt/Qwen2.5-7B\n",
            "run.sh": (
                "MODEL=/home/alice/models/Qwen2.5-7B\naccelerate launch train.py "
                "--model_name_or_path $MODEL\n"
            ),
        },
        {
            "recipes/grpo.yaml": GRPO + "model_name_or_path: Qwen/Qwen2.5-7B\noutput_dir: /mnt/share/out\n",
            "run.sh": "accelerate launch train.py --output_dir /home/alice/out --cache_dir /tmp/hf\n",
            "dl.sh": "huggingface-cli download Qwen/Qwen2.5-7B --local-dir /data/models/Qwen2.5-7B\n"
            "accelerate launch train.py --model_name_or_path /data/models/Qwen2.5-7B\n",
            "eval.yaml": "model: /mnt/share/eval\n",  # neither a GRPO nor an accelerate config
            "templ.yaml": GRPO + "model_name_or_path: /path/to/your/model\ndataset_name: /home/user/data\n",
        },
    ),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_kind_fires_on_a_real_layout(kind, tmp_path):
    fires, _ = CASES[kind]
    assert _kinds(tmp_path, fires)[kind], kind


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_kind_stays_quiet_where_the_run_gets_what_was_meant(kind, tmp_path):
    _, quiet = CASES[kind]
    assert _kinds(tmp_path, quiet)[kind] == []


def test_a_crlf_script_and_its_cut_continuations_are_one_cause(tmp_path):
    """The \\r\\n script with ``\\`` continuations: REP004 says it; the continuations it breaks are
    not a second finding (they hold once the ends are LF)."""
    found = _kinds(tmp_path, {"run.sh": ("#!/bin/bash\n" + LAUNCH).replace("\n", "\r\n").encode()})
    assert [c["line"] for c in found["crlf"]] == [2]
    assert found["split"] == []


def test_a_crlf_script_committed_with_lf_ends_is_quiet(tmp_path):
    """A Windows checkout (core.autocrlf) has \\r\\n in the work tree and LF in the commit."""
    import subprocess

    _repo(tmp_path, {"run.sh": "#!/bin/bash\n" + LAUNCH})
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "core.autocrlf=false"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "run.sh"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    (tmp_path / "run.sh").write_bytes((tmp_path / "run.sh").read_bytes().replace(b"\n", b"\r\n"))
    assert repo_shell(tmp_path)["crlf"] == []


def test_a_readme_block_with_a_cut_command_is_a_warning_case(tmp_path):
    readme = (
        "# Train\n\n```bash\naccelerate launch --config_file zero3.yaml \\\n    src/grpo.py\n"
        "    --config recipes/grpo.yaml\n```\n\nOptions:\n\n```\n--lr  the learning rate\n```\n"
    )
    found = _kinds(tmp_path, {"README.md": readme})["split"]
    assert [(c["file"], c["line"], c["readme"]) for c in found] == [("README.md", 4, True)]


def test_an_escaped_space_after_the_backslash_is_said(tmp_path):
    script = "torchrun --nproc_per_node=8 \\ # 8 GPUs\n    --nnodes=1 \\\n    train.py\n"
    found = _kinds(tmp_path, {"run.sh": script})["split"]
    assert found and found[0]["escaped_space"]


def test_servers_on_one_port_are_alternatives_and_a_background_server_shares_with_training(tmp_path):
    together = (
        "CUDA_VISIBLE_DEVICES=0,1 trl vllm-serve --model m --tensor-parallel-size 2 &\n"
        "sleep 60\nCUDA_VISIBLE_DEVICES=1,2,3 accelerate launch --num_processes 3 train.py\n"
    )
    found = _kinds(tmp_path, {"run.sh": together})["shared_gpus"]
    assert [(f["gpus"], f["same_script"], f["second"]["kind"], f["rank0_shared"]) for f in found] == [
        ([1], True, "trainer", True)
    ]


def test_one_after_the_other_in_one_script_is_not_shared(tmp_path):
    serial = "CUDA_VISIBLE_DEVICES=0 python -m vllm.entrypoints.openai.api_server --model m\n"
    serial += "CUDA_VISIBLE_DEVICES=0 accelerate launch train.py\n"
    assert _kinds(tmp_path, {"run.sh": serial})["shared_gpus"] == []


def test_a_machine_path_names_the_repositorys_own_copy(tmp_path):
    found = _kinds(
        tmp_path,
        {
            "config/zero3.yaml": ACC
            + "deepspeed_config:\n  deepspeed_config_file: /workspace/proj/config/ds.json\n",
            "config/ds.json": "{}",
        },
    )["machine_paths"]
    assert [u["held"] for g in found for u in g["uses"]] == ["config/ds.json"]


def test_a_dockerfile_workdir_makes_the_folder(tmp_path):
    found = _kinds(
        tmp_path,
        {
            "Dockerfile": "FROM python:3.11\nWORKDIR /workspace/proj\nCOPY . /workspace/proj\n",
            "config/zero3.yaml": ACC
            + "deepspeed_config:\n  deepspeed_config_file: /workspace/proj/ds.json\n",
        },
    )["machine_paths"]
    assert found == []


def test_paths_under_one_machine_folder_are_said_once(tmp_path):
    files: dict[str, str | bytes] = {
        f"configs/{n}.yaml": GRPO + f"model_name_or_path: /mnt/dolphin/user/ckpt/m{n}\n" for n in range(5)
    }
    found = _kinds(tmp_path, files)["machine_paths"]
    assert len(found) == 1 and found[0]["count"] == 5 and found[0]["prefix"] == "/mnt/dolphin/user/ckpt"


def test_a_readme_names_a_moved_recipe(tmp_path):
    _repo(
        tmp_path,
        {
            "README.md": (
                "```bash\naccelerate launch rl_runner.py --config configs/Qwen-7B/hotpot/RLCR.yaml\n```\n"
            ),
            "rl_runner.py": "",
            "configs/Qwen2_5-3B/hotpot/RLCR.yaml": GRPO,
            "configs/Qwen2_5-7B/hotpot/RLCR.yaml": GRPO,
        },
    )
    found = [m for m in repo_paths(tmp_path)["missing"] if m["file"] == "README.md"]
    assert [(m["written"], m["certainty"], m["near"]) for m in found] == [
        ("configs/Qwen-7B/hotpot/RLCR.yaml", "likely", "configs/Qwen2_5-7B/hotpot/RLCR.yaml")
    ]


def test_a_readme_placeholder_is_info_only(tmp_path):
    _repo(
        tmp_path,
        {"README.md": "```bash\naccelerate launch train.py --config my_recipe.yaml\n```\n", "train.py": ""},
    )
    found = [m for m in repo_paths(tmp_path)["missing"] if m["file"] == "README.md"]
    assert [m["certainty"] for m in found] == ["unknown"]


# --- the hook: each rule at its severity, at its file and line ------------------------------------


def _hook(repo: Path, *files: str) -> tuple[int, list[dict]]:
    out = run_cli("hook", "--format", "json", *files, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    found = [f for item in json.loads(out.stdout)["files"] for f in item["report"]["findings"]]
    return out.returncode, found


def test_the_hook_says_each_shell_finding_at_its_severity(tmp_path):
    _repo(
        tmp_path,
        {
            "grpo.yaml": GRPO,
            "train.py": "",
            "serve.sh": "CUDA_VISIBLE_DEVICES=0 trl vllm-serve\n    --model Qwen/Qwen2.5-7B\n",
            "reward.sh": "CUDA_VISIBLE_DEVICES=0 vllm serve r --port 8001 --gpu-memory-utilization 1.0\n",
            "train.sh": (
                "NCCL_P2P_DISABLE=1\nCUDA_VISIBLE_DEVICES=1 accelerate launch train.py --config grpo.yaml "
                '--lora_target_modules "q_proj", "v_proj"\n'
            ),
            "win.sh": b"accelerate launch train.py --config grpo.yaml\r\n",
            "recipes/grpo.yaml": GRPO + "model_name_or_path: /home/alice/ckpt/Qwen2.5-7B\n",
        },
    )
    rc, found = _hook(tmp_path, "grpo.yaml", "recipes/grpo.yaml")
    by_rule = {f["rule"]: f for f in found if f["rule"] >= "REP004" and f["rule"].startswith("REP")}
    assert rc == 1  # REP004 and REP005 are errors: these scripts fail as written
    assert {r: f["severity"] for r, f in by_rule.items()} == {
        "REP004": "error",
        "REP005": "error",
        "REP006": "warning",
        "REP007": "warning",
        "REP009": "warning",
        "REP010": "warning",
        "REP011": "warning",
    }
    assert by_rule["REP004"]["evidence"]["file"] == "win.sh"
    assert "dos2unix win.sh" in by_rule["REP004"]["fix"]
    assert (by_rule["REP005"]["evidence"]["file"], by_rule["REP005"]["evidence"]["line"]) == ("serve.sh", 1)
    assert "export NCCL_P2P_DISABLE=1" in by_rule["REP006"]["fix"]
    assert "--lora_target_modules q_proj v_proj" in by_rule["REP007"]["fix"]
    assert "/home/alice/ckpt/Qwen2.5-7B" in by_rule["REP009"]["message"]
    # each repository finding once, whatever the number of configs checked
    assert len([f for f in found if f["rule"] == "REP006"]) == 1


def test_the_hook_stays_green_on_healthy_scripts(tmp_path):
    _repo(
        tmp_path,
        {
            "grpo.yaml": GRPO,
            "train.py": "",
            "serve.sh": "export NCCL_P2P_DISABLE=1\nCUDA_VISIBLE_DEVICES=0 trl vllm-serve \\\n  --model m\n",
            "train.sh": (
                "CUDA_VISIBLE_DEVICES=1,2 accelerate launch --num_processes 2 train.py --config grpo.yaml\n"
            ),
        },
    )
    rc, found = _hook(tmp_path, "grpo.yaml")
    assert [f["rule"] for f in found if f["rule"].startswith("REP")] == []


def test_a_cut_launch_is_paired_as_its_author_meant_it(tmp_path):
    """The launch reader joins option lines a missing ``\\`` cut off (REP005 says the cut), and
    finds a config from a folder between the script's and the root: the recipe runs with the
    accelerate config its script names, not with another one of the folder."""
    from envdoctor.plan.repo_launches import read_launches

    _repo(
        tmp_path,
        {
            "proj/src/pkg/run.sh": b"accelerate launch \r\n    --config_file recipes/acc/zero3.yaml \r\n"
            b"    --num_processes 4 src/pkg/grpo.py \r\n    --config recipes/grpo/config.yaml",
            "proj/recipes/acc/zero3.yaml": ACC,
            "proj/recipes/acc/fsdp.yaml": "distributed_type: FSDP\nnum_processes: 8\n",
            "proj/recipes/grpo/config.yaml": GRPO,
            "proj/src/pkg/grpo.py": "",
        },
    )
    [launch] = read_launches(tmp_path).launches
    assert (launch.accelerate, launch.config, launch.processes) == (
        "proj/recipes/acc/zero3.yaml",
        "proj/recipes/grpo/config.yaml",
        4,
    )


def test_a_readme_terminal_session_shows_output_not_commands(tmp_path):
    readme = (
        "```console\n$ python train.py --help\n  --model MODEL   the model\n"
        "$ accelerate launch train.py \\\n    --config grpo.yaml\n  --lr 1   (output)\n```\n"
        "```bash\npython train.py -h\n  --model MODEL\n```\n"
    )
    assert _kinds(tmp_path, {"README.md": readme})["split"] == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \tab=$-'\"\\\n;&", max_size=40))
def test_the_word_splitter_agrees_with_shlex(line):
    """split_words gives shlex.split(comments=True)'s words (no '#' here: bash, unlike shlex,
    starts a comment only at a word's start), None where shlex finds an unclosed quote."""
    import shlex

    from envdoctor.plan.shell_lines import split_words

    try:
        expected: list[str] | None = shlex.split(line, comments=True)
    except ValueError:
        expected = None
    assert split_words(line) == expected


def test_pre_commit_runs_the_hook_when_a_launch_script_or_readme_changes(tmp_path):
    """.pre-commit-hooks.yaml's files pattern takes launch scripts and READMEs (a commit of a
    broken run.sh alone is judged), and the hook reads them without taking them for configs."""
    import re

    import yaml

    hooks = yaml.safe_load((Path(__file__).parents[2] / ".pre-commit-hooks.yaml").read_text())
    files = re.compile(next(h for h in hooks if h["id"] == "envdoctor")["files"])
    for path in (
        "run.sh",
        "scripts/train.slurm",
        "README.md",
        "sub/README_zh.md",
        "c/g.yaml",
        "requirements.txt",
    ):
        assert files.search(path), path
    for path in ("train.py", "docs/notes.md", "run.sh.bak"):
        assert not files.search(path), path
    _repo(
        tmp_path,
        {"run.sh": "NCCL_P2P_DISABLE=1\naccelerate launch train.py\n", "train.py": "", "README.md": "x"},
    )
    rc, found = _hook(tmp_path, "run.sh", "README.md")
    assert rc == 0 and [f["rule"] for f in found if f["rule"].startswith("REP")] == ["REP006"]


def test_a_server_without_a_gpu_list_takes_the_first_gpus(tmp_path):
    """`trl vllm-serve --tensor-parallel-size 2` with every GPU visible runs on GPUs 0 and 1: a
    training launch given GPU 1 beside it shares one; one given GPUs 2-7 does not."""
    server = "trl vllm-serve --model m --tensor-parallel-size 2 &\nsleep 30\n"
    shared = _kinds(
        tmp_path / "a", {"run.sh": server + "CUDA_VISIBLE_DEVICES=1,2 accelerate launch train.py\n"}
    )
    assert [f["gpus"] for f in shared["shared_gpus"]] == [[1]]
    apart = _kinds(
        tmp_path / "b", {"run.sh": server + "CUDA_VISIBLE_DEVICES=2,3,4,5,6,7 accelerate launch t.py\n"}
    )
    assert apart["shared_gpus"] == []


def test_hostile_scripts_give_bounded_findings(tmp_path):
    """Unclosed quotes, heredocs without an end, thousands of servers and cut launches: each
    kind stays at most MAX_FOUND long and nothing raises."""
    from envdoctor.plan.repo_shell import MAX_FOUND

    servers = "".join(f"CUDA_VISIBLE_DEVICES=0 trl vllm-serve --port {i} &\n" for i in range(400))
    files: dict[str, str | bytes] = {
        "servers.sh": servers,
        "quote.sh": '"' + "x\n" * 5000,
        "heredoc.sh": "cat <<EOF\n" + "accelerate launch x.py\n  --a 1\n" * 500,
        "cut.sh": "accelerate launch x.py\n  --a 1\n" * 500,
        "crlf.sh": b"accelerate launch x.py\r\n" * 500,
        "README.md": "```bash\n" + "torchrun x.py\n  --a 1\n" * 500 + "```\n",
    }
    found = _kinds(tmp_path, files)
    assert all(len(v) <= MAX_FOUND for v in found.values())
    assert len(found["shared_gpus"]) == MAX_FOUND and len(found["split"]) == MAX_FOUND


@pytest.mark.parametrize(
    "trainer, severity",
    [
        (
            "CUDA_VISIBLE_DEVICES=1,2,3 accelerate launch --num_processes 3 train.py",
            "error",
        ),  # rank 0 on GPU 1
        ("CUDA_VISIBLE_DEVICES=2,3,1 accelerate launch --num_processes 3 train.py", "warning"),  # rank 0 on 2
    ],
)
def test_rank0_on_a_server_gpu_in_one_script_is_an_error(tmp_path, trainer, severity):
    """NCCL refuses the weight-sync group when the trainer's first process shares a device with a
    server worker (huggingface/trl#3706); another shared GPU is memory pressure (a warning)."""
    _repo(
        tmp_path,
        {
            "grpo.yaml": GRPO,
            "train.py": "",
            "run.sh": f"CUDA_VISIBLE_DEVICES=0,1 trl vllm-serve --model m -tp 2 &\n{trainer}\n",
        },
    )
    _, found = _hook(tmp_path, "grpo.yaml")
    assert [f["severity"] for f in found if f["rule"] == "REP010"] == [severity]


def test_a_commented_out_option_line_ends_the_command(tmp_path):
    """`# --b 2 \\` inside a continued command: the comment takes the backslash, the command ends
    there and the next option line runs as a command of its own."""
    script = "python train.py \\\n    --a 1 \\\n    # --b 2 \\\n    --c 3\n"
    found = _kinds(tmp_path, {"train.sh": script})["split"]
    assert [(f["line"], f["next_line"], f["comment_cut"]) for f in found] == [(1, 4, True)]


def test_a_server_started_in_the_foreground_before_the_training_launch_blocks_it(tmp_path):
    """REP012 (Zityuen/open-r1-coderm's run.sh, fourth held-out set, after its measurement): the
    server serves until stopped, so the launch after it never runs. Quiet with `&`, for a script
    that chooses one of the two (case / if), and for indented lines (a function's body)."""
    serial = (
        "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model m\n"
        "CUDA_VISIBLE_DEVICES=1,2 accelerate launch --num_processes 2 train.py\n"
    )
    (found,) = _kinds(tmp_path / "a", {"run.sh": serial})["blocking_server"]
    assert (found["file"], found["line"], found["launch_line"]) == ("run.sh", 1, 2)
    background = serial.replace("--model m\n", "--model m &\nsleep 60\n")
    assert _kinds(tmp_path / "b", {"run.sh": background})["blocking_server"] == []
    choice = 'case "$1" in\nserve)\n' + serial.replace("\n", " ;;\n", 1) + "esac\n"
    assert _kinds(tmp_path / "c", {"run.sh": choice})["blocking_server"] == []
    alone = "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model m\n"
    apart = {"serve.sh": alone, "train.sh": serial.split("\n", 1)[1]}
    assert _kinds(tmp_path / "d", apart)["blocking_server"] == []


def test_the_hook_says_rep012_as_an_error(tmp_path):
    from tests.conftest import run_cli

    root = _repo(
        tmp_path,
        {
            "run.sh": "trl vllm-serve --model m\naccelerate launch train.py --config grpo.yaml\n",
            "grpo.yaml": "use_vllm: true\nvllm_mode: server\n",
            "train.py": "from trl import GRPOTrainer\n",
        },
    )
    out = run_cli("hook", "grpo.yaml", cwd=root)
    text = " ".join(out.stdout.split())
    assert out.returncode == 1 and "REP012 run.sh line 1 starts `trl vllm-serve` in the foreground" in text
