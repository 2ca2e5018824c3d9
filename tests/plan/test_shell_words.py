"""A launch line a fix prints keeps the shell's variables for the shell to expand: `shlex.join`
quoted `$MASTER_ADDR` into the literal `'$MASTER_ADDR'`, so the printed multi-node line no longer
reached the master (open-r1 PR 264's slurm line, heldout-2026-11-28c)."""

from __future__ import annotations

import shlex

from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.plan.shell_words import join, quote
from envdoctor.remedy import Rerun, close
from tests.conftest import LEGACY, snapshot


def test_variables_stay_for_the_shell_and_the_words_round_trip():
    words = ["--ip", "$MASTER_ADDR", "rdzv_endpoint=${HOST}:6000", "a b $X", "it's", "$(", "plain"]
    line = join(words)
    assert " $MASTER_ADDR " in line and " rdzv_endpoint=${HOST}:6000 " in line
    assert '"a b $X"' in line
    assert shlex.split(line) == words
    assert quote("no vars here") == "'no vars here'"


def test_a_fixed_launch_line_keeps_its_variables():
    line = (
        "accelerate launch --num_processes 4 --main_process_ip $MASTER_ADDR "
        "--machine_rank $SLURM_PROCID train.py"
    )
    facts = from_dict(snapshot(4, packages=LEGACY), "snap")
    plan = build_plan(config_dict={"use_vllm": True, "vllm_device": "auto"}, launch=line, live=False)
    closure = close(facts, plan, Rerun())
    assert closure.changes.launch, closure.unfixed
    fixed = closure.changes.launch[-1]
    assert "--num_processes 3" in fixed
    assert " $MASTER_ADDR " in fixed and " $SLURM_PROCID " in fixed and "'$" not in fixed


def test_a_command_substitution_stays_one_word_as_written():
    """`--role $(hostname -s):` is one word to the shell; the line a fix prints gives it back as
    written (it had been squeezed into `$(hostname-s):`, a command that does not exist)."""
    from envdoctor.plan.launch import parse_launches

    (launch,) = parse_launches("accelerate launch --num_processes 8 --role $(hostname -s): --tee 3 t.py")
    assert launch.options["role"] == "$(hostname -s):" and launch.script == "t.py"
    assert '"$(hostname -s):"' in launch.raw
    assert shlex.split(join(shlex.split(launch.raw))) == shlex.split(launch.raw)
