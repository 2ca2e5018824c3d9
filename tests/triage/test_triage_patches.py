"""A wrapper's patch in place of another package's method (rules/knowledge/patches.json.gz,
scripts/derive_patch_history.py): ``_unsloth_get_batch_samples() takes 3 positional arguments but 4
were given`` is drift between Unsloth's patch and transformers' ``Trainer.get_batch_samples``, which
takes ``device`` from 4.50 (unslothai/unsloth#2148, unslothai/notebooks#16)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes, script, wheel

ROOT = Path(__file__).resolve().parents[2]
MSG = "TypeError: _unsloth_get_batch_samples() takes 3 positional arguments but 4 were given\n"
FRAMED = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/transformers/trainer.py", line 2245, in train\n'
    "    return inner_training_loop(\n"
    '  File "/usr/local/lib/python3.10/dist-packages/unsloth/models/llama.py", line 262, in '
    "_fast_inner_training_loop\n"
    "    batch, n = self.get_batch_samples(epoch_iterator, num_batches, args.device)\n" + MSG
)


def _tri009(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]


def test_patch_drift_without_frames_or_versions_is_an_error_with_both_fixes() -> None:
    (f,) = _tri009(MSG)
    assert f.severity == Severity.ERROR  # unsloth's own history gives this very message
    assert "Trainer.get_batch_samples" in f.message and "unsloth" in f.message
    assert "transformers<4.50.0" in f.fix
    assert "unsloth>=" in f.fix and "unsloth-zoo>=" in f.fix


def test_patch_drift_with_frames_and_the_new_transformers() -> None:
    (f,) = _tri009("transformers 4.50.0\n" + FRAMED)
    assert f.severity == Severity.ERROR
    assert "the log shows transformers 4.50.0" in f.message


def test_quiet_where_the_log_shows_the_transformers_the_patch_was_written_for() -> None:
    assert not [f for f in _tri009("transformers 4.49.0\n" + FRAMED) if "patch put in place" in f.message]


def test_quiet_on_the_users_own_function() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/train.py", line 3, in _unsloth_get_batch_samples\n'
        "    x = 1\n" + MSG
    )
    assert not [f for f in _tri009(text) if "patch put in place" in f.message]
    mine = "TypeError: my_batch_samples() takes 3 positional arguments but 4 were given\n"
    assert not [f for f in _tri009(mine) if "patch put in place" in f.message]


def test_quiet_on_a_patch_whose_target_never_changed() -> None:
    from envdoctor.triage import patches
    from envdoctor.triage.traceback import failure

    names = {p[2] for w in patches.table().values() for p in w["patches"]}
    assert "_is_openai_available" in names  # unsloth's stand-in for transformers.is_openai_available
    line = "TypeError: _is_openai_available() takes 0 positional arguments but 1 was given"
    tb = failure([line], line)
    assert tb is not None and patches.verdict(tb, {}) is None


OLD = """
from transformers import Trainer
def _patch(self, it, n):
    return it
def apply():
    Trainer.get_batch_samples = _patch
    setattr(Trainer, "training_step", _patch)
class Mine:
    pass
def keep(Other):
    Other.run = _patch
    Mine.x = _patch
"""
NEW = """
from unsloth_zoo.loss import _patch
import transformers
def apply():
    transformers.Trainer.get_batch_samples = _patch
"""
ZOO = """
def _patch(self, it, n, device=None):
    return it
"""


def test_derive_reads_patch_assignments_and_their_signatures(tmp_path: Path) -> None:
    mod = script("derive_patch_history")
    wheel(tmp_path / "u", "unsloth", "2025.1.1", {"models/_utils.py": OLD})
    wheel(tmp_path / "u", "unsloth", "2025.3.1", {"models/_utils.py": NEW})
    wheel(tmp_path / "z", "unsloth_zoo", "2025.3.1", {"loss.py": ZOO})
    out = tmp_path / "patches.json.gz"
    rc = mod.main(
        [
            "--wheels",
            f"unsloth={tmp_path / 'u'}",
            "--wheels",
            f"unsloth-zoo={tmp_path / 'z'}",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    doc = json.loads(gzip.decompress(out.read_bytes()))["wrappers"]
    got = {tuple(p) for p in doc["unsloth"]["patches"]}
    assert ("transformers", "Trainer.get_batch_samples", "_patch", "0-1") in got
    assert ("transformers", "Trainer.training_step", "_patch", "0") in got  # setattr
    assert ("", "Other.run", "_patch", "0") in got  # a class passed in: its package looked up in triage
    assert not any(p[1].startswith("Mine.") for p in got)  # the wrapper's own class
    assert doc["unsloth"]["defs"]["_patch"] == [["self,it,n", "0"], ["@unsloth-zoo", "1"]]
    assert doc["unsloth-zoo"]["defs"]["_patch"] == [["self,it,n,device=", "0"]]


def test_the_shipped_patch_history_holds_its_budget() -> None:
    mod = script("derive_patch_history")
    path = ROOT / "rules" / "knowledge" / "patches.json.gz"
    assert path.stat().st_size <= mod.BUDGET
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert set(doc["wrappers"]) == {"unsloth", "unsloth-zoo", "liger-kernel"}


def test_a_patch_named_as_the_original_needs_the_wrappers_frame() -> None:
    """unsloth_zoo assigns its own ``sdpa_mask`` over transformers' ``sdpa_mask``: the bare message
    names transformers' function as much as the patch (the signature history's, not this one's)."""
    from envdoctor.triage import patches
    from envdoctor.triage.traceback import failure

    line = "TypeError: sdpa_mask() got an unexpected keyword argument 'cache_position'"
    tb = failure([line], line)
    assert tb is not None and patches.verdict(tb, {}) is None
