"""LAY021: how vLLM starts the engine a training script builds itself, per release (the two
held-out setups of set 21: grpo-profiling-harness's fork after torch.cuda.is_available(), and the
class of a spawned engine re-importing an unguarded script)."""

from __future__ import annotations

from pathlib import Path

from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.plan.build import build_plan
from envdoctor.plan.script_reader import read_script
from envdoctor.remedy import Rerun, close
from tests.conftest import MODERN, findings, snapshot

HEAD = "import os\nimport torch\nfrom vllm import LLM\n"
UNGUARDED = HEAD + "model = torch.nn.Linear(2, 2).cuda()\nllm = LLM(model='m')\n"
GUARDED = (
    HEAD + "def main():\n    model = torch.nn.Linear(2, 2).cuda()\n    llm = LLM(model='m')\n\n"
    "if __name__ == '__main__':\n    main()\n"
)
# grpo-profiling-harness's shape: the probe in main(), the engine in a class of a module it imports
PROBE_MAIN = (
    "import torch\n\ndef main():\n    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
    "    {between}from gen import Generator\n    g = Generator('m')\n\n"
    "if __name__ == '__main__':\n    main()\n"
)
GEN = (
    "from vllm import LLM\n\nclass Generator:\n    def __init__(self, name):\n"
    "        self.llm = LLM(model=name{kw})\n"
)


def _lay021(
    tmp_path: Path, script: str, vllm: str = "0.8.5", env: dict | None = None, files: dict | None = None
):
    for name, text in {"train.py": script, **(files or {})}.items():
        (tmp_path / name).write_text(text)
    snap = snapshot(1, packages={**MODERN, "vllm": vllm}, env=env)
    return [f for f in findings(snap, launch=f"python {tmp_path / 'train.py'}") if f.rule == "LAY021"]


def _probe(tmp_path: Path, between: str = "", kw: str = "", **kwargs):
    return _lay021(
        tmp_path, PROBE_MAIN.format(between=between), files={"gen.py": GEN.format(kw=kw)}, **kwargs
    )


# --- spawn re-imports an unguarded script --------------------------------------------------------


def test_cuda_initialised_then_engine_at_module_level_is_an_error_with_an_env_fix(tmp_path):
    (f,) = _lay021(tmp_path, UNGUARDED)
    assert f.severity is Severity.ERROR
    assert "bootstrapping phase" in f.message and "train.py:5" in f.message and ".cuda()" in f.message
    assert f.remedy is not None and f.remedy.env_set == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert 'if __name__ == "__main__"' in f.fix  # the catalogue entry's guard fix, the same text


def test_guarded_script_is_quiet(tmp_path):
    assert _lay021(tmp_path, GUARDED) == []


def test_spawn_from_the_environment_alone_is_enough(tmp_path):
    plain = HEAD + "llm = LLM(model='m')\n"
    assert _lay021(tmp_path, plain) == []  # fork, no CUDA touched: nothing breaks
    (f,) = _lay021(tmp_path, plain, env={"VLLM_WORKER_MULTIPROC_METHOD": "spawn"})
    assert f.severity is Severity.ERROR and "VLLM_WORKER_MULTIPROC_METHOD=spawn" in f.message


def test_engine_in_process_is_quiet(tmp_path):
    assert _lay021(tmp_path, UNGUARDED, env={"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}) == []
    written = "import os\nos.environ.setdefault('VLLM_ENABLE_V1_MULTIPROCESSING', '0')\n" + UNGUARDED
    assert _lay021(tmp_path, written) == []
    launcher = UNGUARDED.replace(
        "LLM(model='m')", "LLM(model='m', distributed_executor_backend='external_launcher')"
    )
    assert _lay021(tmp_path, launcher) == []  # vLLM turns multiprocessing off itself (0.8.0+)


def test_releases_where_the_engine_runs_in_the_caller_are_quiet(tmp_path):
    assert _lay021(tmp_path, UNGUARDED, vllm="0.7.3") == []  # V0 by default before 0.8.0
    assert _lay021(tmp_path, UNGUARDED, vllm="0.7.3", env={"VLLM_USE_V1": "1"})  # V1 asked for
    assert _lay021(tmp_path, UNGUARDED, vllm="0.10.2", env={"VLLM_USE_V1": "0"}) == []  # V0 still there
    assert _lay021(tmp_path, UNGUARDED, vllm="0.11.0", env={"VLLM_USE_V1": "0"})  # V1 only from 0.11.0


def test_past_the_newest_release_read_is_a_warning_and_no_vllm_is_quiet(tmp_path):
    (f,) = _lay021(tmp_path, UNGUARDED, vllm="0.40.0")
    assert f.severity is Severity.WARNING and "0.33.0" in f.message
    (tmp_path / "train.py").write_text(UNGUARDED)
    snap = snapshot(1, packages={**MODERN, "vllm": None})
    snap["packages"] = {k: v for k, v in snap["packages"].items() if v is not None}
    assert not [f for f in findings(snap, launch=f"python {tmp_path / 'train.py'}") if f.rule == "LAY021"]


def test_tensor_parallel_gets_the_guard_fix_only(tmp_path):
    tp = UNGUARDED.replace("LLM(model='m')", "LLM(model='m', tensor_parallel_size=2)")
    (f,) = _lay021(tmp_path, tp)
    assert f.severity is Severity.ERROR and f.remedy is None and "main()" in f.fix


# --- fork after torch.cuda.is_available() --------------------------------------------------------


def test_probe_then_engine_through_an_imported_class_is_a_warning(tmp_path):
    (f,) = _probe(tmp_path)
    assert f.severity is Severity.WARNING
    assert "torch.cuda.is_available()" in f.message and "gen.py:5" in f.message
    candidates = [f.remedy, *f.alternatives]
    assert candidates[0].env_set == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"} in [r.env_set for r in candidates]  # guarded


def test_probe_quiet_where_torch_cuda_is_or_may_be_initialised_or_nvml_answers(tmp_path):
    # torch's CUDA initialised before: vLLM spawns, and the guarded script survives it
    assert _probe(tmp_path, between="torch.zeros(1, device='cuda')\n    ") == []
    # a device envdoctor does not know: it may initialise CUDA (not said)
    assert _probe(tmp_path, between="torch.nn.Linear(2, 2).to(device)\n    ") == []
    assert _probe(tmp_path, env={"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}) == []
    assert _probe(tmp_path, env={"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}) == []


def test_a_probe_not_certainly_run_before_is_not_evidence(tmp_path):
    branch = (
        "import sys\nimport torch\nfrom gen import Generator\n\n"
        "def check():\n    return torch.cuda.is_available()\n\n"
        "if __name__ == '__main__':\n    if len(sys.argv) > 2:\n        torch.cuda.is_available()\n"
        "    g = Generator('m')\n    check()\n"
    )
    assert _lay021(tmp_path, branch, files={"gen.py": GEN.format(kw="")}) == []


def test_trl_colocate_is_trls_business(tmp_path):
    trl = (
        "import torch\nfrom trl import GRPOConfig, GRPOTrainer\ntorch.zeros(1).cuda()\n"
        "GRPOTrainer(model='m', reward_funcs=[len])\n"
    )
    (tmp_path / "train.py").write_text(trl)
    assert read_script(str(tmp_path / "train.py")).engine_start is None
    assert _lay021(tmp_path, trl) == []


def test_the_fix_closure_proves_the_env_fix(tmp_path):
    (tmp_path / "train.py").write_text(PROBE_MAIN.format(between=""))
    (tmp_path / "gen.py").write_text(GEN.format(kw=""))
    facts = from_dict(snapshot(1, packages={**MODERN, "vllm": "0.8.5"}), "snap")
    plan = build_plan(launch=f"python {tmp_path / 'train.py'}", live=False)
    closure = close(facts, plan, Rerun())
    assert "LAY021" in closure.fixed
    assert closure.changes.env_set == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert not [f for f in closure.after if f.rule == "LAY021"]


def test_reading_is_bounded_on_recursive_and_long_call_chains(tmp_path):
    chain = "".join(f"def f{i}():\n    f{i + 1}()\n" for i in range(300))
    loops = "def a():\n    b()\n\ndef b():\n    a()\n    a()\n\n"
    script = HEAD + loops + chain + "def f300():\n    LLM(model='m')\n\na()\nf0()\n"
    (tmp_path / "train.py").write_text(script)
    assert read_script(str(tmp_path / "train.py")).engine_start is None  # past the calls followed
    dotted = "import torch\nimport vllm\ntorch.cuda.set_device(0)\nvllm.LLM(model='m')\n"
    (f,) = _lay021(tmp_path, dotted)
    assert "vllm.LLM(...)" in f.message and "set_device" in f.message


def test_a_notebook_is_not_re_imported_by_spawn(tmp_path):
    # IPython magics run only in a notebook, whose __main__ a spawned child does not re-import
    (f,) = _lay021(tmp_path, UNGUARDED)
    assert f.severity is Severity.ERROR
    assert _lay021(tmp_path, "!pip install vllm\n" + UNGUARDED) == []
    read = read_script(str(tmp_path / "train.py")).engine_start
    assert read is not None and read.cuda_init and read.unguarded is None  # read, not refused


# --- LAY022: external_launcher outside a torchrun-style launch -------------------------------------

EXTERNAL = HEAD + "llm = LLM(model='m', seed=0, distributed_executor_backend='external_launcher')\n"


def _lay022(tmp_path: Path, script: str = EXTERNAL, launch: str = "python", vllm: str = "0.10.2", env=None):
    (tmp_path / "train.py").write_text(script)
    snap = snapshot(1, packages={**MODERN, "vllm": vllm}, env=env)
    return [f for f in findings(snap, launch=f"{launch} {tmp_path / 'train.py'} --n 2") if f.rule == "LAY022"]


def test_external_launcher_under_plain_python_is_an_error_with_a_torchrun_launch(tmp_path):
    (f,) = _lay022(tmp_path)
    assert f.severity is Severity.ERROR and "KeyError: 'RANK'" in f.message and "LOCAL_RANK" in f.message
    assert f.remedy is not None and f.remedy.launch == (
        f"torchrun --nproc_per_node 1 {tmp_path / 'train.py'} --n 2",
    )
    assert _lay021(tmp_path, EXTERNAL) == []  # the engine runs in-process: no start method to judge


def test_external_launcher_quiet_with_ranks_from_the_launcher_the_env_or_the_code(tmp_path):
    assert _lay022(tmp_path, launch="torchrun --nproc_per_node 1") == []
    assert _lay022(tmp_path, env={"RANK": "0", "LOCAL_RANK": "0"}) == []
    ranks = "import os\nos.environ.update(RANK='0', LOCAL_RANK=str(0))\n" + EXTERNAL
    assert _lay022(tmp_path, ranks) == []
    assert _lay022(tmp_path, vllm="0.6.6") == []  # no external_launcher executor yet
    (f,) = _lay022(tmp_path, vllm="0.7.3", env={"RANK": "0"})  # LOCAL_RANK read from 0.7.3
    assert "LOCAL_RANK" in f.message and "KeyError: 'LOCAL_RANK'" in f.message
    assert _lay022(tmp_path, vllm="0.7.2", env={"RANK": "0"}) == []


def test_the_fix_closure_proves_the_torchrun_launch(tmp_path):
    (tmp_path / "train.py").write_text(EXTERNAL)
    facts = from_dict(snapshot(1, packages={**MODERN, "vllm": "0.10.2"}), "snap")
    closure = close(facts, build_plan(launch=f"python {tmp_path / 'train.py'}", live=False), Rerun())
    assert "LAY022" in closure.fixed and closure.changes.launch is not None
    assert closure.changes.launch[-1].startswith("torchrun --nproc_per_node 1 ")
    assert not [f for f in closure.after if f.rule == "LAY022"]
