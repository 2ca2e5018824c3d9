"""A launch that runs a shell script (``bash train.sh``, ``./launch/grpo.sh ARGS``, ``source x.sh``)
is followed to the commands the script runs, read as bash reads them (plan/shell_follow): the
launch lines and exported environment ``check`` judges, the training script read through them,
values the script cannot give said (never guessed), and hostile scripts kept bounded."""

from __future__ import annotations

import json

import pytest

from envdoctor.plan import shell_follow
from envdoctor.plan.launch import parse_launches
from envdoctor.plan.shell_follow import MAX_BYTES, MAX_NESTING, MAX_READ
from envdoctor.plan.shell_lines import MAX_LINE
from tests.conftest import findings, run_cli, snapshot

SERVER_CFG = {"use_vllm": True, "vllm_mode": "server"}
TRAIN = "from trl import GRPOConfig, GRPOTrainer\n"

#: a script that starts TRL's vLLM server in the background, then the trainer; ``{gpus}`` the
#: GPUs the script exports, ``{server}`` the server's GPU
RUN = """\
#!/bin/bash
# the launch script of a GRPO recipe
set -euo pipefail
MODEL=${{1:-Qwen/Qwen2.5-0.5B}}
export CUDA_VISIBLE_DEVICES={gpus}
CUDA_VISIBLE_DEVICES={server} trl vllm-serve --model $MODEL &   # the server first
sleep 60
accelerate launch \\
    --num_processes 2 \\
    train.py --model_name_or_path "$MODEL"
wait
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def _rules(launch: str, n_gpus: int = 2, config: dict | None = None, packages: dict | None = None) -> dict:
    found = findings(snapshot(n_gpus, packages=packages), config=config or SERVER_CFG, launch=launch)
    return {f.rule: f for f in found}


def test_the_scripts_lines_are_the_runs_launch_lines_with_its_exports(here):
    (here / "run.sh").write_text(RUN.format(gpus="0,1", server="1"))
    server, trainer = parse_launches(argv=["bash", "run.sh", "Qwen/Qwen3-1.7B"])
    assert server.is_server and server.source == "run.sh:6"
    assert server.env["CUDA_VISIBLE_DEVICES"] == "1" and "--model Qwen/Qwen3-1.7B" in server.raw
    assert trainer.launcher == "accelerate" and trainer.source == "run.sh:8"
    assert trainer.options["num_processes"] == 2 and trainer.script == "train.py"
    assert trainer.script_args == ["--model_name_or_path", "Qwen/Qwen3-1.7B"]  # $1, continuations joined
    assert trainer.env["CUDA_VISIBLE_DEVICES"] == "0,1"  # the script's export
    assert trainer.raw.startswith("CUDA_VISIBLE_DEVICES=0,1 accelerate launch")  # a line that stands alone
    # the default where the launch gives no argument
    assert parse_launches(argv=["bash", "run.sh"])[1].script_args[-1] == "Qwen/Qwen2.5-0.5B"


def test_exports_that_put_vllms_gpu_on_a_training_rank_are_the_layout_error(here):
    (here / "run.sh").write_text(RUN.format(gpus="0,1", server="1"))
    found = _rules("bash run.sh")
    assert found["LAY006"].severity.value == "error" and "GPU 1" in found["LAY006"].message
    assert found["LAY020"].severity.value == "info" and "run.sh:8" in found["LAY020"].message


def test_the_same_script_healthy_is_clean(here):
    (here / "run.sh").write_text(RUN.format(gpus="0,1", server="2"))  # the server on a GPU of its own
    found = _rules("bash run.sh", n_gpus=3)
    loud = {r: f.message for r, f in found.items() if f.severity.value in ("error", "warning")}
    assert loud == {} and "LAY020" in found


@pytest.mark.parametrize("argv", [["bash", "gone.sh"], ["./gone.sh", "x"]])
def test_a_script_not_here_stays_unresolved_and_says_so(here, argv):
    (launch,) = parse_launches(argv=argv)
    assert "runs a shell script that is not here (gone.sh)" in (launch.unresolved or "")


@pytest.mark.parametrize(
    "argv",
    [
        ["sh", "scripts/train.sh"],
        ["bash", "-x", "scripts/train.sh"],
        ["./scripts/train.sh"],
        ["source", "scripts/train.sh"],
        [".", "scripts/train.sh"],
    ],
)
def test_every_way_a_script_is_run_is_followed(here, argv):
    (here / "scripts").mkdir()
    (here / "scripts" / "train.sh").write_text("python train.py --lr 1e-6\n")
    (launch,) = parse_launches(argv=argv)
    assert launch.script == "train.py" and launch.source == "scripts/train.sh:1"


def test_cd_set_a_nested_scripts_and_a_prefix(here):
    (here / "recipes").mkdir()
    (here / "recipes" / "train.py").write_text(TRAIN)
    (here / "recipes" / "inner.sh").write_text(
        "torchrun --nproc_per_node ${NPROC} train.py --config ${CFG}\n"
    )
    (here / "launch.sh").write_text(
        "set -a\nNPROC=2\nNCCL_DEBUG=INFO\nset +a\nCFG=grpo.yaml   # comment\n"
        'cd "$(dirname "$0")/recipes"\nexport CFG\nbash inner.sh\n'
    )
    (launch,) = parse_launches(argv=["bash", "launch.sh"])
    assert launch.launcher == "torchrun" and launch.options["nproc_per_node"] == 2
    assert launch.script == "recipes/train.py"  # the cd: paths from where the command ran
    assert launch.source == "recipes/inner.sh:1" and launch.env["NCCL_DEBUG"] == "INFO"


def test_an_unsloth_import_is_seen_through_the_script(here):
    (here / "train.py").write_text(
        "from unsloth import FastLanguageModel, PatchFastRL\n"
        'PatchFastRL("GRPO", FastLanguageModel)\n'
        "from trl import GRPOConfig, GRPOTrainer\n"
        'model, tokenizer = FastLanguageModel.from_pretrained(model_name="m", max_seq_length=1024)\n'
        'args = GRPOConfig(output_dir="o", use_vllm=True, num_generations=8, per_device_train_batch_size=8)\n'
        "trainer = GRPOTrainer(model=model, args=args, reward_funcs=[], train_dataset=None)\n"
    )
    (here / "go.sh").write_text(
        "#!/bin/sh\nexport PYTORCH_ALLOC_CONF=expandable_segments:True\npython train.py\n"
    )
    stack = {
        "trl": "0.15.2",
        "vllm": "0.7.2",
        "torch": "2.5.1",
        "transformers": "4.49.0",
        "accelerate": "1.4.0",
        "unsloth": "2025.3.19",
        "unsloth-zoo": "2025.3.19",
    }
    found = findings(snapshot(1, packages=stack), launch="./go.sh")
    entry = [f for f in found if f.evidence.get("id") == "unsloth-use-vllm-without-fast-inference"]
    assert entry and entry[0].severity.value == "error" and "train.py:4" in entry[0].message
    # the bare line as the quiet twin of the old blind spot: the same answer
    direct = findings(snapshot(1, packages=stack), launch="python train.py")
    assert [f.rule for f in entry] == [
        f.rule for f in direct if f.evidence.get("id") == "unsloth-use-vllm-without-fast-inference"
    ]


def test_a_command_substitution_is_said_not_guessed(here):
    (here / "run.sh").write_text("N=$(nvidia-smi -L | wc -l)\ntorchrun --nproc_per_node $N train.py\n")
    found = _rules("bash run.sh", config={})
    said = found["LAY020"].message
    assert "resolved in part" in said and "`$N`: set by a command substitution (run.sh:1)" in said
    assert "LAY004" not in found and "LAY003" not in found  # the count is not known: not judged


@pytest.mark.parametrize(
    ("script", "words", "said"),
    [
        (  # a loop variable, and a variable only the environment sets
            "for seed in 1 2 3; do\n  python train.py --seed $seed --out $OUT_DIR\ndone\n",
            ["--seed", "$seed", "--out", "$OUT_DIR"],
            ["the loop variable of `for` (run.sh:1)", "`$OUT_DIR`: not set by the script"],
        ),
        (  # a variable set in a branch chosen at run time
            'NPROC=2\nif [ -n "$BIG" ]; then\n  NPROC=8\nfi\npython train.py --nproc $NPROC\n',
            ["--nproc", "$NPROC"],
            ["set in a branch chosen at run time (run.sh:3)"],
        ),
    ],
    ids=["loop-and-environment", "branch"],
)
def test_values_the_script_cannot_give_stay_as_written_and_are_said(here, script, words, said):
    (here / "run.sh").write_text(script)
    (launch,) = parse_launches(argv=["bash", "run.sh"])
    assert launch.script_args == words
    for what in said:
        assert any(what in u for u in launch.unknown), launch.unknown


def test_several_trainer_lines_in_branches_leave_the_launch_unresolved(here):
    (here / "run.sh").write_text(
        'if [ "$1" = big ]; then\n  torchrun --nproc_per_node 8 train.py\n'
        "else\n  torchrun --nproc_per_node 2 train.py\nfi\n"
    )
    (launch,) = parse_launches(argv=["bash", "run.sh", "big"])
    assert launch.launcher == "unknown" and "chosen at run time (run.sh:2, run.sh:4)" in (
        launch.unresolved or ""
    )
    found = _rules("bash run.sh", config={}, n_gpus=8)
    assert not {"LAY003", "LAY004"} & set(found)


def test_checks_on_an_exit_stop_the_reading_only_when_they_run(here):
    (here / "run.sh").write_text(
        '[[ -f "$1" ]] || { echo "no config"; exit 1; }\n'
        "python train.py --config $1\nexit 0\npython other.py\n"
    )
    (launch,) = parse_launches(argv=["bash", "run.sh", "c.yaml"])
    assert launch.script == "train.py" and launch.script_args == ["--config", "c.yaml"] and not launch.unknown


@pytest.fixture
def work(monkeypatch):
    """The reader's work, counted (a bound asserted as work done, never as seconds): lines fed,
    and characters ``expand`` handed back in all."""
    done = {"lines": 0, "expanded": 0}
    feed, expand = shell_follow._Reader.feed, shell_follow._Reader.expand

    def counted_feed(self, number, stripped):
        done["lines"] += 1
        return feed(self, number, stripped)

    def counted_expand(self, text, inner=False):
        out = expand(self, text, inner)
        done["expanded"] += len(out)
        return out

    monkeypatch.setattr(shell_follow._Reader, "feed", counted_feed)
    monkeypatch.setattr(shell_follow._Reader, "expand", counted_expand)
    return done


def test_a_huge_script_is_not_read_and_named(here, work):
    (here / "big.sh").write_text("# filler\n" * (MAX_BYTES // 9 + 10) + "python train.py\n")
    (launch,) = parse_launches(argv=["bash", "big.sh"])
    assert work["lines"] == 0  # not read at all
    assert "big.sh" in (launch.unresolved or "") and "bytes" in (launch.unresolved or "")


def test_a_long_script_reads_in_linear_time(here, work):
    body = "".join(f"X{i}=${{X{i - 1}:-a}}\n" for i in range(1, 4000)) + "python train.py --x $X3999\n"
    (here / "long.sh").write_text(body)
    (launch,) = parse_launches(argv=["bash", "long.sh"])
    assert launch.script == "train.py"
    # each line expands once, to a short value: the work grows with the file, not its square
    assert work["lines"] <= body.count("\n") + 1 and work["expanded"] <= 4 * len(body), work


@pytest.mark.parametrize(
    ("files", "argv", "said"),
    [
        ({"bin.sh": b"\x7fELF\x00\x01python train.py\n"}, ["./bin.sh"], "bin.sh is not a text file"),
        ({"loop.sh": b"bash loop.sh\n"}, ["bash", "loop.sh"], "loop.sh runs itself"),
        (
            {
                **{f"s{k}.sh": f"bash s{k + 1}.sh\n".encode() for k in range(MAX_NESTING + 2)},
                f"s{MAX_NESTING + 2}.sh": b"python train.py\n",
            },
            ["bash", "s0.sh"],
            f"{MAX_NESTING} deep",
        ),
    ],
    ids=["binary", "self-recursive", "nested-too-deep"],
)
def test_hostile_scripts_stay_bounded_and_name_the_input(here, files, argv, said):
    for name, data in files.items():
        (here / name).write_bytes(data)
    (launch,) = parse_launches(argv=argv)
    assert launch.launcher == "unknown" and said in (launch.unresolved or "")


def test_fix_names_the_scripts_line_and_never_writes_the_script(here):
    (here / "run.sh").write_text(RUN.format(gpus="0,1", server="1"))
    before = (here / "run.sh").read_text()
    (here / "facts.json").write_text(json.dumps(snapshot(2)))
    (here / "grpo.yaml").write_text("use_vllm: true\nvllm_mode: server\n")
    proc = run_cli("fix", "--facts", "facts.json", "--config", "grpo.yaml", "--", "bash", "run.sh", cwd=here)
    assert "Fixed: LAY006" in proc.stdout, proc.stdout + proc.stderr
    assert "in place of run.sh:8 (run by `bash run.sh`)" in proc.stdout
    assert (here / "run.sh").read_text() == before
    js = run_cli(
        "fix",
        "--format",
        "json",
        "--facts",
        "facts.json",
        "--config",
        "grpo.yaml",
        "--",
        "bash",
        "run.sh",
        cwd=here,
    )
    data = json.loads(js.stdout)
    assert data["launch_from"][-1] == "run.sh:8 (run by `bash run.sh`)"
    assert (here / "run.sh").read_text() == before


def test_an_exported_value_not_known_is_left_to_the_shell_not_taken_from_the_machine(here):
    (here / "run.sh").write_text(
        "export CUDA_VISIBLE_DEVICES=$(pick_free_gpus 2)\naccelerate launch --num_processes 2 train.py\n"
    )
    (launch,) = parse_launches(argv=["bash", "run.sh"])
    assert launch.env["CUDA_VISIBLE_DEVICES"] == "$(pick_free_gpus 2)"
    found = _rules("bash run.sh", n_gpus=4, config={})
    assert not {r for r, f in found.items() if r.startswith("LAY") and f.severity.value != "info"}


def test_an_array_stays_as_written_and_an_empty_dollar_at_gives_no_word(here):
    (here / "run.sh").write_text('ARGS=(\n  --lr 1e-6\n  --seed 1\n)\npython train.py "${ARGS[@]}" "$@"\n')
    (launch,) = parse_launches(argv=["bash", "run.sh"])
    assert launch.script_args == ["${ARGS[@]}"] and '"${ARGS[@]}"' in launch.raw
    assert launch.unknown == ("`${ARGS[@]}`: an array (run.sh:1)",)
    (launch,) = parse_launches(argv=["bash", "run.sh", "--x", "a b"])
    assert launch.script_args == ["${ARGS[@]}", "--x", "a b"]


def test_a_sourced_file_of_exports_sets_the_environment_of_the_lines_after_it(here):
    (here / "env.sh").write_text("export CUDA_VISIBLE_DEVICES=2,3\nexport NCCL_P2P_DISABLE=1\n")
    (launch,) = parse_launches("source env.sh\naccelerate launch --num_processes 2 train.py")
    assert launch.launcher == "accelerate" and launch.env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert launch.source is None  # the trainer's line is the one given


def test_the_hook_reads_a_script_launch_too(here):
    (here / "run.sh").write_text(RUN.format(gpus="0,1", server="2"))
    (here / "grpo.yaml").write_text("use_vllm: true\nvllm_mode: server\n")
    proc = run_cli("hook", "--launch", "bash run.sh", "grpo.yaml", cwd=here)
    assert "LAY020 `bash run.sh` runs `accelerate launch --num_processes 2 train.py" in proc.stdout, (
        proc.stdout
    )


def test_a_root_found_with_pwd_is_absolute_and_a_later_cd_does_not_move_it(here):
    """Robust-R1's script (dev set 16): ROOT="$(cd "$(dirname "$0")/.." && pwd)", then
    `cd $ROOT/src/pkg` and `--deepspeed $ROOT/src/pkg/zero3.json`: one path, not joined twice."""
    (here / "src" / "pkg").mkdir(parents=True)
    (here / "run_scripts").mkdir()
    (here / "run_scripts" / "run.sh").write_text(
        'ROOT="$( cd "$( dirname "${BASH_SOURCE[0]}" )/.." && pwd )"\ncd ${ROOT}/src/pkg\n'
        "torchrun --nproc_per_node 2 train.py --deepspeed ${ROOT}/src/pkg/zero3.json\n"
    )
    (launch,) = parse_launches(argv=["bash", "run_scripts/run.sh"])
    assert launch.script == "src/pkg/train.py"
    assert launch.script_args == ["--deepspeed", str(here / "src" / "pkg" / "zero3.json")]


def test_a_value_that_doubles_each_line_stays_bounded_and_unknown(here, work):
    # A="$A$A" forty times: 2**40 characters if expanded; read in bounded time and memory, said
    (here / "run.sh").write_text("A=x\n" + 'A="$A$A"\n' * 40 + "python train.py --a $A\n")
    (launch,) = parse_launches(argv=["bash", "run.sh"])
    assert work["expanded"] <= 42 * MAX_LINE, work  # never past one line's bound per line
    assert launch.script == "train.py" and launch.script_args == ["--a", "$A"]  # never the old value
    assert any("expands to more than" in u for u in launch.unknown), launch.unknown


def test_scripts_that_run_scripts_many_times_are_read_within_a_budget(here, work):
    # each of three nested scripts runs the next a thousand times: 10**9 lines if all were read
    (here / "s0.sh").write_text("bash s1.sh\n" * 1000)
    (here / "s1.sh").write_text("bash s2.sh\n" * 1000)
    (here / "s2.sh").write_text("python train.py\n" * 1000)
    (launch,) = parse_launches(argv=["bash", "s0.sh"])
    # read up to the budget, then stopped (each nested reader sees one line past it): not 10**9
    assert work["lines"] <= MAX_READ + 1000 // 50, work
    assert launch.launcher == "unknown" and "lines in all" in (launch.unresolved or "")


def test_a_functions_body_is_read_at_its_call_with_the_calls_arguments_and_values(here):
    # bash runs a body where it is called: $1 is the call's, N the value set by then, `local` ends
    (here / "run.sh").write_text(
        "G=0\nH=0\nset_g() {\n  local G=7\n  H=1\n}\nset_g\npython train.py --g $G --h $H\n"
    )
    (launch,) = parse_launches(argv=["bash", "run.sh"])
    assert launch.script_args == ["--g", "0", "--h", "1"]  # the local is gone at the return, H stays
    (here / "run.sh").write_text(
        "N=2\ntrain() {\n  accelerate launch --num_processes $N train.py --lr $1\n}\nN=4\ntrain 1e-5\n"
    )
    (launch,) = parse_launches(argv=["bash", "run.sh", "8"])
    assert launch.options["num_processes"] == 4 and launch.script_args == ["--lr", "1e-5"]
    assert launch.source == "run.sh:3" and not launch.unknown
    # main "$@": the script's arguments handed on; a default of the function's $1 taken
    (here / "run.sh").write_text(
        'main() {\n  SCRIPT=${1:-"train.py"}\n  shift || true\n'
        '  accelerate launch "$SCRIPT" "$@"\n}\nmain "$@"\n'
    )
    (launch,) = parse_launches(argv=["bash", "run.sh"])
    assert launch.script == "train.py" and launch.script_args == []


def test_a_function_never_called_is_read_only_where_nothing_else_launches(here):
    (here / "run.sh").write_text("debug() {\n  python other.py --x $1\n}\naccelerate launch train.py\n")
    (launch,) = parse_launches(argv=["bash", "run.sh", "1"])
    assert launch.script == "train.py" and launch.source == "run.sh:4"
    # called by a name the script is given ("$CMD"): read, its arguments not known, not guessed
    (here / "run.sh").write_text('train() {\n  accelerate launch train.py --lr $1\n}\n"$CMD"\n')
    (launch,) = parse_launches(argv=["bash", "run.sh", "5"])
    assert launch.script_args == ["--lr", "$1"]
    assert any("a function envdoctor did not see called" in u for u in launch.unknown), launch.unknown


def test_an_exit_in_a_function_stops_the_reading_only_where_it_runs(here):
    # `|| die`: the body may not run; a `return` in a branch before an `exit`: the exit may not run
    (here / "run.sh").write_text(
        'die() {\n  echo "$1" >&2\n  exit 1\n}\n[ -f train.py ] || die "no script"\n'
        'gpus() {\n  if [[ -n "${NUM_GPUS:-}" ]]; then\n    return\n  fi\n  exit 1\n}\ngpus\n'
        "accelerate launch train.py\n"
    )
    (launch,) = parse_launches(argv=["bash", "run.sh"])
    assert launch.script == "train.py" and launch.source == "run.sh:13"


PIPELINE = """\
#!/bin/bash
set -e
python scripts/prepare_data.py --out data
python scripts/{train} --config cfg.yaml
python scripts/evaluate.py --model outputs/model
python scripts/make_table.py
"""


@pytest.mark.parametrize(
    "train, body, chosen",
    [
        # AravTewari/11868-grpo's run_catalyst_minimal.sh: data, reward model, GRPO, PPO, DPO,
        # evaluation, a table: the last command (the table) had been read as the trainer
        ("run_grpo.py", "from grpo_trainer import create_grpo_trainer\n", "run_grpo.py"),
        ("train.py", "from trl import GRPOConfig, GRPOTrainer\n", "train.py"),  # its trainer's name
        ("train.py", "import torch\n", "make_table.py"),  # nothing names GRPO: the last, as before
    ],
)
def test_of_a_pipelines_plain_commands_the_grpo_one_is_the_trainer(here, train, body, chosen):
    (here / "scripts").mkdir()
    for name in ("prepare_data.py", "evaluate.py", "make_table.py"):
        (here / "scripts" / name).write_text("import json\n")
    (here / "scripts" / train).write_text(body)
    (here / "run.sh").write_text(PIPELINE.format(train=train))
    (trainer,) = parse_launches(argv=["bash", "run.sh"])
    assert trainer.script == f"scripts/{chosen}"
    assert any("read as the trainer" in u for u in trainer.unknown)  # the others are said
