"""A TRL installed at a version not recorded (``0+unknown``: a snapshot or image that names no
release) is judged by no TRL release's rules: set 23's healthy scu-tsc (read after it was
measured; TRL from an Unsloth image, its version never printed) drew six CFG001 errors, "`beta` …
is not known to TRL 0+unknown: it exists in TRL 0.14.0 and newer"."""

from __future__ import annotations

from tests.conftest import findings, snapshot

SCRIPT = """\
from trl import GRPOConfig, GRPOTrainer

args = GRPOConfig(output_dir="o", beta=0.0, num_generations=4, top_p=0.9)
GRPOTrainer(model="m", reward_funcs=[len], args=args).train()
"""


def test_a_trl_of_unrecorded_release_draws_no_release_keyed_error(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    launch = f"python {tmp_path / 'train.py'}"
    unknown = findings(snapshot(1, packages={"trl": "0+unknown"}), launch=launch)
    assert not [f for f in unknown if f.severity.value == "error"], [f.message for f in unknown]
    # a recorded release before those keys still draws them
    old = findings(snapshot(1, packages={"trl": "0.13.0"}), launch=launch)
    assert [f for f in old if f.rule == "CFG001" and f.severity.value == "error"]
