"""TRL 0.15-0.17 check the batch against num_generations in GRPOTrainer.__init__: a run whose
script builds a trainer of the repository's own that derives from transformers' Trainer, not
from GRPOTrainer (WncFht/RLCR's CustomTrainer), never runs that check, so CFG002 is info there,
not "TRL refuses at init". A subclass of TRL's GRPOTrainer still runs it. Issue 35."""

from __future__ import annotations

from tests.conftest import findings, snapshot

STACK = {"trl": "0.16.1", "vllm": "0.7.3", "torch": "2.5.1", "transformers": "4.50.0"}
SCRIPT = (
    "from my_trainer import CustomTrainer\nfrom trl import GRPOConfig\n\n"
    "trainer = CustomTrainer(model='m', args=GRPOConfig(output_dir='o'))\n"
)
OWN = "from transformers import Trainer\n\n\nclass CustomTrainer(Trainer):\n    pass\n"
SUB = "from trl import GRPOTrainer\n\n\nclass CustomTrainer(GRPOTrainer):\n    pass\n"
CONFIG = {"per_device_train_batch_size": 6, "num_generations": 32}


def _cfg002(tmp_path, trainer: str):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "my_trainer.py").write_text(trainer)
    launch = f"accelerate launch --num_processes 4 {tmp_path / 'train.py'}"
    return [
        f for f in findings(snapshot(4, packages=STACK), config=CONFIG, launch=launch) if f.rule == "CFG002"
    ]


def test_a_trainer_of_the_repository_that_is_no_grpotrainer_does_not_run_trls_check(tmp_path):
    (f,) = _cfg002(tmp_path, OWN)
    assert f.severity.value == "info"
    assert "CustomTrainer (" in f.message and "transformers.Trainer" in f.message


def test_a_subclass_of_grpotrainer_runs_it(tmp_path):
    (f,) = _cfg002(tmp_path, SUB)
    assert f.severity.value == "error" and "TRL refuses at init" in f.message


UNREAD = """\
from open_r1_video.trainer import Qwen2VLGRPOTrainer
from trl import GRPOConfig, GRPOTrainer

trainer_cls = Qwen2VLGRPOTrainer
trainer = trainer_cls(model="m", args=None)
"""


def _cfg002_script(tmp_path, script: str):
    (tmp_path / "train.py").write_text(script)
    launch = f"accelerate launch --num_processes 4 {tmp_path / 'train.py'}"
    return [
        f for f in findings(snapshot(4, packages=STACK), config=CONFIG, launch=launch) if f.rule == "CFG002"
    ]


def test_a_trainer_envdoctor_could_not_read_leaves_trls_init_check_at_advice(tmp_path):
    """open-r1-multimodal's forks build their own Qwen2VLGRPOTrainer (a copy of TRL's GRPO loop
    on transformers' Trainer) from a package of the repository: whether TRL 0.15-0.17's
    __init__ check runs is not known when its source is not there, so it is advice (issue #35:
    a finding that rests on a part of the script envdoctor could not read stays at info;
    EchoInk's and Visionary-R1's published runs trained with such a batch)."""
    (f,) = _cfg002_script(tmp_path, UNREAD)
    assert f.severity.value == "info"
    assert "Qwen2VLGRPOTrainer (from open_r1_video.trainer)" in f.message
    assert "could not read" in f.message


def test_trls_own_trainer_built_by_the_script_stays_an_error(tmp_path):
    (f,) = _cfg002_script(tmp_path, UNREAD.replace("trainer_cls(", "GRPOTrainer("))
    assert f.severity.value == "error" and "TRL refuses at init" in f.message


def test_unsloths_trainer_is_trls_patched_and_not_unread(tmp_path):
    script = "from unsloth import UnslothGRPOTrainer\n\ntrainer = UnslothGRPOTrainer(model='m')\n"
    (f,) = _cfg002_script(tmp_path, script)
    assert "could not read" not in f.message


READ_CLS = """\
from my_trainer import CustomTrainer as VideoTrainer
from my_trainer import CustomVLLMTrainer
from trl import GRPOConfig, GRPOTrainer

trainer_cls = VideoTrainer if True else CustomVLLMTrainer
trainer = trainer_cls(model="m", args=None)
"""


def test_a_trainer_class_picked_into_a_variable_from_the_repository_is_read(tmp_path):
    """R1-V's descendants (TimeZero, held-out set 10) pick their trainer class into a variable and
    import TRL's GRPOTrainer without using it: the classes they import from the repository decide,
    read as a direct call's would be."""
    (tmp_path / "my_trainer.py").write_text(OWN + "\n\nclass CustomVLLMTrainer(Trainer):\n    pass\n")
    (f,) = _cfg002_script(tmp_path, READ_CLS)
    assert f.severity.value == "info" and "transformers.Trainer" in f.message
    # TRL's GRPOTrainer named in the code (a candidate of the pick): its check may run
    (g,) = _cfg002_script(tmp_path, READ_CLS.replace("else CustomVLLMTrainer", "else GRPOTrainer"))
    assert g.severity.value == "error"


def test_a_trainer_imported_from_trl_that_no_trl_release_has_is_not_read(tmp_path):
    """Rank-GRPO's install step copies its RankGRPOTrainer into the installed trl: the script's
    `from trl import RankGRPOTrainer` is no class of TRL's (its symbol history has none in any
    release), so what its __init__ checks is unknown; TRL's own trainers stay TRL's."""
    from envdoctor.plan.script_reader import read_script

    script = tmp_path / "train.py"
    script.write_text("from trl import RankGRPOTrainer\n\ntrainer = RankGRPOTrainer(model='m', args=None)\n")
    decl = read_script(script)
    assert decl.unread_trainer and decl.unread_trainer.startswith("RankGRPOTrainer (from trl")
    script.write_text("from trl import GRPOTrainer\n\ntrainer = GRPOTrainer(model='m', args=None)\n")
    assert read_script(script).unread_trainer is None
    script.write_text("from trl import DPOTrainer\n\ntrainer = DPOTrainer(model='m', args=None)\n")
    assert read_script(script).unread_trainer is None


GRPO_LOOP = """\
from src.grpo import GRPOTrainer

trainer = GRPOTrainer("Qwen/Qwen2.5-0.5B-Instruct", None, None, {}, "cuda")
trainer.train(None, None)
"""
OWN_LOOP = "import torch\n\n\nclass GRPOTrainer:\n    def __init__(self, *a):\n        pass\n"


def test_a_grpo_loop_of_the_repositorys_own_is_not_judged_as_trls(tmp_path):
    """grpo-qwen0.5 (held-out set 21): `from src.grpo import GRPOTrainer`, a plain class of the
    repository on transformers, with a YAML config of its own: its keys are no GRPOConfig's
    (CFG001 / CFG002 errors were false, and CFG001's fix removed a key its trainer reads)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("")
    (tmp_path / "src" / "grpo.py").write_text(OWN_LOOP)
    (tmp_path / "src" / "train.py").write_text(GRPO_LOOP)
    config = {"max_prompt_length": 256, "num_generations": 8, "per_device_train_batch_size": 1}
    launch = f"python {tmp_path / 'src' / 'train.py'}"
    found = findings(
        snapshot(1, packages={"torch": "2.11.0", "transformers": "5.6.2"}), config=config, launch=launch
    )
    loud = [
        f.rule
        for f in found
        if f.severity.value in ("error", "warning") and f.rule.startswith(("CFG", "PKG008"))
    ]
    assert loud == []
    (env,) = [f for f in found if f.rule == "ENV002"]
    assert "the repository's own trainer" in env.message and "GRPOTrainer (" in env.message
    # the same loop importing TRL's config is TRL's territory again
    (tmp_path / "src" / "train.py").write_text("from trl import GRPOConfig\n" + GRPO_LOOP)
    again = findings(
        snapshot(1, packages={"torch": "2.11.0", "transformers": "5.6.2"}), config=config, launch=launch
    )
    assert not [f for f in again if f.rule == "ENV002"]


def test_a_grpo_trainer_of_its_own_built_through_a_factory_is_the_repositorys(tmp_path):
    """AravTewari/11868-grpo: `from grpo_trainer import create_grpo_trainer`, whose module defines
    `class GRPOTrainer:` on torch, nothing importing TRL: LAY003 (transformers.Trainer's
    DataParallel) was a false error on a healthy run."""
    (tmp_path / "grpo_trainer.py").write_text(
        OWN_LOOP + "\n\ndef create_grpo_trainer(*a):\n    return GRPOTrainer(*a)\n"
    )
    (tmp_path / "run.py").write_text(
        "from grpo_trainer import create_grpo_trainer\n\ncreate_grpo_trainer(1)\n"
    )
    snap = snapshot(2, packages={"torch": "2.6.0", "transformers": "4.51.3"})
    found = findings(snap, launch=f"python {tmp_path / 'run.py'}")
    assert not [f.rule for f in found if f.severity.value == "error"]
    (env,) = [f for f in found if f.rule == "ENV002"]
    assert "GRPOTrainer (" in env.message


def test_a_grpo_trainer_on_a_base_class_of_the_repositorys_own_is_the_repositorys(tmp_path):
    """tokenbender/infinite: `class GRPOTrainer(Trainer)` where `Trainer` is the repository's own
    plain base class (train/trainer/base.py), launched `torchrun -m train.trainer.grpo`: PKG008
    ("TRL is not installed, so GRPOTrainer cannot start") was a false error."""
    (tmp_path / "base.py").write_text("class Trainer:\n    pass\n")
    (tmp_path / "grpo.py").write_text(
        "from base import Trainer\n\n\nclass GRPOTrainer(Trainer):\n    pass\n\n\nGRPOTrainer()\n"
    )
    snap = snapshot(2, packages={"torch": "2.6.0", "transformers": "4.51.3"})
    found = findings(snap, launch=f"torchrun --nproc_per_node 2 {tmp_path / 'grpo.py'}")
    assert not [f.rule for f in found if f.severity.value == "error"]
    assert [f for f in found if f.rule == "ENV002"]


LOOP = """\
import torch
from transformers import AutoModelForCausalLM

policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-Math-1.5B").to("cuda:0")
optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)
"""


def test_a_loop_of_its_own_that_builds_no_trainer_is_no_dataparallel_trap(tmp_path):
    """Set 22's qwen_math_grpo (read after it was measured): a GRPO loop that places its policy on
    cuda:0 itself, run by `python` on two visible GPUs, was LAY003 "transformers.Trainer wraps the
    model in nn.DataParallel", and its fix relaunched it with torchrun: two loops on cuda:0. The
    same line with a transformers Trainer built stays LAY003."""
    (tmp_path / "loop.py").write_text(LOOP)
    snap = snapshot(2, packages={"torch": "2.6.0", "transformers": "4.51.3"})
    found = findings(snap, launch=f"python {tmp_path / 'loop.py'}")
    assert not [f for f in found if f.rule == "LAY003"]
    (tmp_path / "hf.py").write_text(
        LOOP + "from transformers import Trainer, TrainingArguments\n"
        "Trainer(model=policy, args=TrainingArguments(output_dir='o')).train()\n"
    )
    found = findings(snap, launch=f"python {tmp_path / 'hf.py'}")
    assert [f for f in found if f.rule == "LAY003"]
