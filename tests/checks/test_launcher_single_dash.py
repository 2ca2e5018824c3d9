"""LAY024: a launcher option written with one dash. Set 23's QingtaoLi1/open-r1 a2865ed documents
`accelerate launch --config_file … -num_processes=7 src/open_r1/grpo.py -config …`; accelerate's
own parser (launch_command_parser, run offline at 1.15.0) and torchrun's exit 2 on such words."""

from __future__ import annotations

import pytest

from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import MODERN, findings, snapshot


def _hits(launch: str) -> list:
    return [f for f in findings(snapshot(8, packages=MODERN), launch=launch) if f.rule == "LAY024"]


@pytest.mark.parametrize(
    ("line", "typed", "fixed"),
    [
        (
            "ACCELERATE_LOG_LEVEL=info accelerate launch -num_processes=7 src/grpo.py -config c.yaml",
            ["-num_processes=7"],
            "ACCELERATE_LOG_LEVEL=info accelerate launch --num_processes=7 src/grpo.py -config c.yaml",
        ),
        (
            "accelerate launch -multi_gpu -num_processes 4 train.py",
            ["-multi_gpu", "-num_processes"],
            "accelerate launch --multi_gpu --num_processes 4 train.py",
        ),
        ("torchrun -nproc_per_node 4 train.py", ["-nproc_per_node"], "torchrun --nproc_per_node 4 train.py"),
    ],
)
def test_a_one_dash_launcher_option_is_an_error_and_the_fix_is_the_line_with_two(line, typed, fixed):
    (hit,) = _hits(line)
    assert hit.severity is Severity.ERROR and hit.evidence["options"] == typed
    assert hit.remedy is not None and hit.remedy.launch == (fixed,)
    closure = close(
        from_dict(snapshot(8, packages=MODERN), "snap"), build_plan(launch=line, live=False), Rerun()
    )
    assert "LAY024" in closure.fixed and not [f for f in closure.after if f.rule == "LAY024"]


@pytest.mark.parametrize(
    "line",
    [
        "accelerate launch --num_processes 4 train.py -lr 0.1",  # the script's own words
        "accelerate launch -m pkg.train",  # a short option
        "torchrun --nproc_per_node 2 -m pkg.train",
        "deepspeed -num_gpus 2 train.py",  # deepspeed's parser was not run: not judged
        "python train.py -config c.yaml",
    ],
)
def test_quiet_for_two_dashes_short_options_and_script_words(line):
    assert _hits(line) == []


def test_torch_launch_module_is_named_as_the_line_runs_it():
    (hit,) = _hits("python -m torch.distributed.launch -nproc_per_node 2 train.py")
    assert "python -m torch.distributed.launch line" in hit.message and "torchrun line" not in hit.message
