"""A command substitution in a launch line is one word of it: ms-swift's documented line runs
`python -m torch.distributed.run … $(python -c 'import swift, os; print(…)') --rlhf_type grpo`,
whose quoted spaces shlex split into words of the launcher (held-out set 20's ms-swift setups)."""

from __future__ import annotations

from envdoctor.plan.build import build_plan
from envdoctor.plan.launch import parse_launch
from envdoctor.plan.shell_words import split

SWIFT = (
    "python -m torch.distributed.run --nproc_per_node 1 "
    "$(python -c 'import swift, os; print(os.path.dirname(swift.__file__) + \"/cli/rlhf.py\")') "
    "--rlhf_type grpo --use_vllm true --vllm_mode colocate --num_generations 8"
)


def test_a_substitution_stays_one_word_with_its_text():
    words = split(SWIFT)
    assert words[5].startswith("$(python -c 'import swift") and words[5].endswith("')")
    assert words[6:8] == ["--rlhf_type", "grpo"]
    assert split('torchrun $(uv run python -c "import swift")/cli/rlhf.py --x 1')[1] == (
        '$(uv run python -c "import swift")/cli/rlhf.py'
    )


def test_quotes_arithmetic_and_open_substitutions():
    assert split("echo '$(not one' x") == ["echo", "$(not one", "x"]
    assert split("n $((A * 8)) t.py") == ["n", "$((A * 8))", "t.py"]
    assert split("a $(open b") == ["a", "$(open", "b"]
    assert split("plain 'a b'") == ["plain", "a b"]


def test_hostile_open_substitutions_take_linear_time():
    line = "a $(" * 50_000
    assert split(line)[:3] == ["a", "$(a", "$(a"]  # each open one scanned once, not to the end


def test_the_launch_reads_the_flags_after_the_substitution():
    launch = parse_launch(SWIFT)
    assert launch.script is not None and launch.script.startswith("$(python -c")
    assert "--num_generations" in launch.script_args and "8" in launch.script_args
    assert build_plan(launch=SWIFT, live=False).framework.key == "ms-swift"


def test_a_line_holding_the_placeholders_mark_is_split_as_shlex_splits_it():
    """The placeholder is a private-use character: a line that already holds one (hostile or
    pasted) is split as shlex splits it, never with another substitution's text put in."""
    assert split("a \ue0005\ue001 $(b c) d") == ["a", "\ue0005\ue001", "$(b", "c)", "d"]
