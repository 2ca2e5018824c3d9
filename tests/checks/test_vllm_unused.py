"""A vLLM the run never generates with cannot fail the run at generation: the rules that judge
vLLM's own versions (PKG004 on its pins, PKG007, KNF001 on its failures) give advice there, saying
it is unused; a failure that strikes at import (TRL imports vLLM whenever it is installed) stays.
Issue #35: TimeZero, SpaceR and EchoInk (held-out set 10) trained with vLLM 0.7.2 installed for an
R1-V trainer that generates with HF's generate. Also: a version nobody recorded (``0+unknown``)
holds no range of the known failures."""

from __future__ import annotations

from envdoctor import versions
from envdoctor.plan.script_reader import read_script
from tests.conftest import findings, snapshot

#: vLLM 0.7.2 pins torch 2.5.1 (rules/knowledge/vllm.yaml): torch 2.6.0 breaks its ABI pin
STACK = {"trl": "0.15.1", "vllm": "0.7.2", "torch": "2.6.0", "transformers": "4.49.0"}
TRAIN = "from trl import GRPOTrainer\n\ntrainer = GRPOTrainer(model='m', reward_funcs=[])\n"


def _pkg004(tmp_path, script: str | None, config: dict | None = None, launch: str | None = None):
    if script is not None:
        (tmp_path / "train.py").write_text(script)
        launch = launch or f"python {tmp_path / 'train.py'}"
    got = findings(snapshot(1, packages=STACK), config=config or {}, launch=launch)
    return [f for f in got if f.rule == "PKG004" and f.message.startswith("vllm")]


def test_an_unused_vllms_torch_pin_is_advice(tmp_path):
    (f,) = _pkg004(tmp_path, TRAIN)
    assert f.severity.value == "info"
    assert "never generates with the installed vLLM 0.7.2" in f.message
    assert "pip uninstall vllm" in f.fix and f.remedy is None


def test_use_vllm_on_keeps_the_error(tmp_path):
    (f,) = _pkg004(tmp_path, TRAIN, {"use_vllm": True})
    assert f.severity.value == "error"


def test_a_script_that_builds_an_engine_itself_keeps_the_error(tmp_path):
    script = TRAIN + "from vllm import LLM\n\nllm = LLM(model='m')\n"
    (f,) = _pkg004(tmp_path, script)
    assert f.severity.value == "error"
    # `import vllm` and vllm.LLM(...): the same engine
    (g,) = _pkg004(tmp_path, TRAIN + "import vllm as v\n\nllm = v.LLM(model='m')\n")
    assert g.severity.value == "error"


def test_an_engine_under_a_use_vllm_test_follows_the_config(tmp_path):
    """R1-V's trainers build LLM(...) under `if self.use_vllm:` and generate with HF otherwise."""
    (tmp_path / "my_trainer.py").write_text(
        "from transformers import Trainer\nfrom vllm import LLM\n\n\n"
        "class VideoTrainer(Trainer):\n"
        "    def __init__(self, args):\n"
        "        if args.use_vllm:\n"
        "            self.llm = LLM(model='m')\n"
    )
    script = "from my_trainer import VideoTrainer\n\ntrainer = VideoTrainer(args=None)\n"
    (f,) = _pkg004(tmp_path, script)
    assert f.severity.value == "info"
    (g,) = _pkg004(tmp_path, script, {"use_vllm": True})
    assert g.severity.value == "error"


def test_what_envdoctor_cannot_read_keeps_the_error(tmp_path):
    # no training script named: whether the run generates with vLLM is not known
    (f,) = _pkg004(tmp_path, None)
    assert f.severity.value == "error"
    # the script named is not there
    (g,) = _pkg004(tmp_path, None, launch=f"python {tmp_path / 'absent.py'}")
    assert g.severity.value == "error"
    # a trainer class of the repository envdoctor could not read (it may build the engine)
    unread = "from far_away.trainer import VideoGRPOTrainer\n\ntrainer = VideoGRPOTrainer(model='m')\n"
    (h,) = _pkg004(tmp_path, unread)
    assert h.severity.value == "error"


def test_a_frameworks_entry_point_keeps_the_error(tmp_path):
    """A script that hands the run to a framework (verl, OpenRLHF) builds no trainer envdoctor
    knows: the framework may generate with vLLM whatever use_vllm says."""
    (f,) = _pkg004(tmp_path, "from verl.trainer.main_ppo import main\n\nmain()\n")
    assert f.severity.value == "error"


def test_a_vllm_server_line_keeps_the_error(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    launch = f"trl vllm-serve --model m ; python {tmp_path / 'train.py'}"
    (f,) = _pkg004(tmp_path, None, launch=launch)
    assert f.severity.value == "error"


def test_a_failure_at_import_stays_an_error_with_vllm_unused(tmp_path):
    """TRL 0.18-0.26 import GuidedDecodingParams from vLLM at module level whenever vLLM is
    installed: `from trl import GRPOTrainer` fails with use_vllm off too (at_import: true)."""
    (tmp_path / "train.py").write_text(TRAIN)
    stack = {"trl": "0.21.0", "vllm": "0.12.0", "torch": "2.9.0", "transformers": "4.57.3"}
    got = findings(snapshot(1, packages=stack), config={}, launch=f"python {tmp_path / 'train.py'}")
    knf = [f for f in got if f.rule == "KNF001" and "GuidedDecodingParams" in f.message]
    assert [f.severity.value for f in knf] == ["error"]
    assert "never generates" not in knf[0].message


def test_the_reader_places_vllm_engines(tmp_path):
    path = tmp_path / "t.py"
    path.write_text(
        "from vllm import AsyncLLMEngine, LLM as Engine\n"
        "if cfg.use_vllm:\n    a = Engine(model='m')\n"
        "b = AsyncLLMEngine.from_engine_args(x)\n"
    )
    assert read_script(path).vllm_engine == f"{path}:4"
    path.write_text("from vllm import SamplingParams\n\nSamplingParams(n=2)\nLLM(model='m')\n")
    assert read_script(path).vllm_engine is None  # LLM is not vLLM's here
    # an availability test is no config switch: the engine is built whenever vLLM is installed
    path.write_text("from vllm import LLM\nif is_vllm_available():\n    llm = LLM(model='m')\n")
    assert read_script(path).vllm_engine == f"{path}:3"


def test_a_placeholder_version_holds_no_range():
    assert versions.placeholder("0+unknown") and versions.placeholder("0.0.0")
    assert not versions.placeholder("0.7.2") and not versions.placeholder(None)


def test_a_package_at_a_placeholder_version_matches_no_known_failure(tmp_path):
    """Unsloth installed from git reported as 0+unknown is no release before 2025.10.2."""
    stack = {"trl": "1.16.0", "transformers": "5.5.3", "torch": "2.10.0", "unsloth": "0+unknown"}
    got = findings(snapshot(1, packages=stack), config={})
    assert not [f for f in got if f.rule == "KNF001" and "Unsloth before" in f.message]
    stack["unsloth"] = "2025.9.1"
    got = findings(snapshot(1, packages=stack), config={})
    assert [f for f in got if f.rule == "KNF001" and "Unsloth before" in f.message]


SUBCLASS = (
    "from trl import GRPOTrainer\n\n\n"
    "class SkipZeroAdvantageGRPOTrainer(GRPOTrainer):\n"
    "    def _generate(self, prompts):\n"
    "        if self.use_vllm:\n"
    "            return super()._generate(prompts)\n"
    "        return []\n\n\n"
    "trainer = SkipZeroAdvantageGRPOTrainer(model='m', reward_funcs=[])\n"
)


def test_a_grpo_trainer_subclass_of_the_script_is_a_trainer_envdoctor_knows(tmp_path):
    """Held-out set 20's qwen3-1.7B-MATH-RLVR builds its own GRPOTrainer subclass and keeps vLLM
    for its evaluation scripts: the installed vLLM never generates in the run."""
    (f,) = _pkg004(tmp_path, SUBCLASS)
    assert f.severity.value == "info" and "never generates" in f.message


def _unused_pin(tmp_path, stack):
    (tmp_path / "train.py").write_text(SUBCLASS)
    got = findings(snapshot(1, packages=stack), config={}, launch=f"python {tmp_path / 'train.py'}")
    return [f for f in got if f.rule == "PKG004" and f.message.startswith("vllm")]


def test_an_unused_vllm_trl_imports_at_import_is_advice_that_says_so(tmp_path):
    """TRL imports vLLM at `from trl import GRPOTrainer` whenever it is installed (`if
    is_vllm_available(): from vllm… import …`, derived from its wheels), and that import was
    seen to pass with vLLM's torch pin unmet on both sides: held-out set 20's
    qwen3-1.7B-MATH-RLVR@8986c60 trained 7,496 steps with TRL 1.0.0, torch 2.6.0 and vLLM 0.19.0
    (built for torch 2.10.0) installed for its evaluation; TimeZero on a newer torch."""
    stack = {"trl": "1.0.0", "vllm": "0.19.0", "torch": "2.6.0", "transformers": "4.57.1"}
    for torch in ("2.6.0", "2.11.0"):
        (f,) = _unused_pin(tmp_path, {**stack, "torch": torch})
        assert f.severity.value == "info" and "never generates" in f.message
        assert "TRL 1.0.0 imports vLLM whenever it is installed" in f.message
        assert "module level of trl/generation/vllm_client.py" in f.message
        assert "seen to pass" in f.message and f.remedy is None
