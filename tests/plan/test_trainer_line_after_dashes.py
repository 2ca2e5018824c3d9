"""The command after ``--`` is the trainer's line (the CLI's convention: ``--launch`` lines run
beside it), whatever other ``python`` lines come first: SakanaAI/RLT starts its own vLLM servers
with ``python trainers/vllm_server.py`` before ``accelerate launch … train.py`` (set 29b)."""

from __future__ import annotations

from envdoctor.plan.build import build_plan

SERVERS = "\n".join(
    f"CUDA_VISIBLE_DEVICES={i} python trainers/vllm_server.py --model=m --port={8765 + i}" for i in range(2)
)
TRAINER = ["accelerate", "launch", "--num_processes", "2", "train.py"]


def test_the_command_after_dashes_is_the_trainer_beside_python_server_lines():
    plan = build_plan(launch=SERVERS, launch_argv=TRAINER, live=False)
    assert plan.trainer is not None and plan.trainer.script == "train.py"
    assert plan.trainer.launcher == "accelerate"
    assert [lx.raw.split()[-1] for lx in plan.launches][:2] == ["--port=8765", "--port=8766"]  # order kept


def test_without_dashes_the_first_line_that_is_no_server_stays_the_trainer():
    plan = build_plan(launch=SERVERS + "\n" + " ".join(TRAINER), live=False)
    assert plan.trainer is not None and plan.trainer.script == "trainers/vllm_server.py"
    plan = build_plan(launch_argv=["python", "train.py"], live=False)
    assert plan.trainer is not None and plan.trainer.script == "train.py"
