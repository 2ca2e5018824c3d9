"""API drift on the packages under the stack (issue #36, C5a of
docs/validation/triage-misses-2026-11-29.md): triton under torch's inductor, torchao, xformers,
FlashInfer, HF datasets, safetensors, SGLang, verl, ms-swift. Their symbol histories are derived by
scripts/derive_symbol_history.py from the ``.py`` files of their wheels (read from the index by
range requests); the pins one package's releases place on another (torch -> triton, vLLM ->
xformers / FlashInfer) from their METADATA (``--pins``). Here: the derive script on wheels and
METADATA built here (offline), then triage against the shipped histories (real releases)."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import symbol_history
from envdoctor.triage import symbols
from tests.triage.helpers import findings, scan_bytes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "derive_symbol_history", ROOT / "scripts" / "derive_symbol_history.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["derive_symbol_history"] = mod
    spec.loader.exec_module(mod)
    return mod


def _wheel(folder: Path, name: str, version: str, files: dict[str, str], requires: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    whl = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for path, src in files.items():
            zf.writestr(path, textwrap.dedent(src))
        zf.writestr(
            f"{name}-{version}.dist-info/METADATA",
            f"Name: {name}\nVersion: {version}\n{textwrap.dedent(requires)}",
        )
    return whl


# triton's compiler module as its releases had it: triton_key came in 3.0.0 and went in 3.5.0
COMPILER = "def compile(src, target=None, options=None):\n    pass\n"
COMPILER_KEY = COMPILER + "def triton_key():\n    return ''\n"
TORCH_META = {
    "2.4.1": 'Requires-Dist: triton==3.0.0; platform_system == "Linux" and platform_machine == "x86_64"\n',
    "2.5.1": (
        "Requires-Dist: filelock\n"
        'Requires-Dist: triton==3.1.0; platform_system == "Linux" and platform_machine == "x86_64"'
        ' and python_version < "3.13"\n'
        'Requires-Dist: triton>=3.0; extra == "dynamo"\n'
    ),
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheels")
    for v, src in (
        ("2.3.0", COMPILER),
        ("3.0.0", COMPILER_KEY),
        ("3.1.0", COMPILER_KEY),
        ("3.5.0", COMPILER),
    ):
        files = {
            "triton/__init__.py": "",
            "triton/compiler/__init__.py": "",
            "triton/compiler/compiler.py": src,
        }
        _wheel(root / "triton", "triton", v, files)
    for v, meta in TORCH_META.items():  # the METADATA alone, as --pins keeps it (CACHE/pins/torch)
        _wheel(root / "pins" / "torch", "torch", v, {}, meta)
    sglang = 'Requires-Dist: flashinfer_python==0.2.3; extra == "srt"\nRequires-Dist: torch>=2.5\n'
    _wheel(root / "pins" / "sglang", "sglang", "0.4.4", {}, sglang)
    return root


def test_a_new_distributions_history_from_its_wheels(derive: ModuleType, cache: Path, tmp_path: Path) -> None:
    assert (
        derive.main(["--cache", str(cache), "--offline", "--out", str(tmp_path), "--package", "triton"]) == 0
    )
    import gzip

    doc = json.loads(gzip.decompress((tmp_path / "triton.json.gz").read_bytes()))
    assert doc["releases"] == ["2.3.0", "3.0.0", "3.1.0", "3.5.0"]
    assert doc["symbols"]["m"]["triton.compiler.compiler"]["n"]["triton_key"] == "1-2"
    assert "triton" in derive.REMOTE and derive.PACKAGES["flashinfer_python"][0] == ("flashinfer",)


def test_pins_from_requires_dist(derive: ModuleType, cache: Path, tmp_path: Path) -> None:
    """An exact pin for the platform of a CUDA wheel, an extra's pin of the stack's install (SGLang's
    srt), and never a floor alone (torch>=2.5) nor another platform's line."""
    assert derive.narrow_pins(TORCH_META["2.5.1"], ("triton",)) == {"triton": "==3.1.0"}
    mac = 'Requires-Dist: triton==3.1.0; platform_system == "Darwin"\n'
    assert derive.narrow_pins(mac, ("triton",)) == {}
    old, saved = derive.PIN_SOURCES, None
    derive.PIN_SOURCES = {
        "torch": ("2.0.0", ("triton",)),
        "sglang": ("0.4.0", ("torch", "flashinfer-python")),
    }
    try:
        doc = derive.derive_pins(cache, offline=True, log=lambda s: None)
    finally:
        derive.PIN_SOURCES = old
    assert doc["schema"] == symbol_history.PINS_SCHEMA
    assert doc["pins"]["torch"] == {"2.4.1": {"triton": "==3.0.0"}, "2.5.1": {"triton": "==3.1.0"}}
    assert doc["pins"]["sglang"] == {"0.4.4": {"flashinfer-python": "==0.2.3"}}
    del saved


# -- the shipped histories and pins (real releases) -------------------------------------------


def _drift(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule in ("TRI009", "TRI003")]


def _need(*packages: str) -> None:
    missing = [p for p in packages if p not in symbol_history.every()]
    if missing:
        pytest.skip(f"no history shipped for {missing}")


INDUCTOR = (
    "[rank7]:     from triton.compiler.compiler import triton_key\n"
    "[rank7]: torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
    "[rank7]: ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler' "
    "(/usr/local/lib/python3.10/dist-packages/triton/compiler/compiler.py)\n"
)


def test_triton_under_torch_inductor_without_versions() -> None:
    """heldout-2026-11-29g/logs15a/001 (coreweave/ml-containers#64): no frame, no version; the
    inductor's line names torch as the importer; the answer is triton's range with the name."""
    _need("triton")
    (f,) = _drift(INDUCTOR)
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "API drift between torch and triton" in f.message
    assert "pip install 'triton>=3.0.0,<3.5.0'" in f.fix


def test_the_historys_fact_survives_redaction() -> None:
    """``triton_key: removed in …`` read as a secret's setting and was masked in every output; the
    fact is written ``name — change``, never ``name: value``."""
    from envdoctor.redact import redact

    _need("triton")
    (f,) = _drift(INDUCTOR)
    for text in (f.message, f.fix):
        fact = "triton.compiler.compiler.triton_key — moved to triton.runtime.cache in triton 3.5.0"
        assert fact in redact(text)


def test_triton_under_the_torch_the_log_shows_gets_torchs_pin() -> None:
    _need("triton")
    if not symbol_history.pinned("torch", "2.5.1", "triton"):
        pytest.skip("no pins shipped")
    (f,) = _drift("[pip3] torch==2.5.1\n" + INDUCTOR)
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert f.fix.startswith("pip install 'triton==3.1.0' (torch 2.5.1 requires triton==3.1.0")
    assert "triton>=3.0.0,<3.5.0" in f.fix  # and the range where the name is, as the other way


def test_triton_that_has_the_name_is_not_drift() -> None:
    _need("triton")
    (f,) = _drift("[pip3] triton==3.1.0\n" + INDUCTOR)
    assert f.rule == "TRI003" and "not API drift of triton" in f.message


def test_torchao_removed_name() -> None:
    """heldout-2026-11-29g/logs15a/018 (kubeflow/trainer#3203): torchao 0.16.0 dropped it."""
    _need("torchao")
    (f,) = _drift("ImportError: cannot import name 'int4_weight_only' from 'torchao.quantization'\n")
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "pip install 'torchao<0.16.0'" in f.fix and "removed in torchao 0.16.0" in f.message


def test_xformers_removed_op_and_pin_from_vllm() -> None:
    _need("xformers")
    (f,) = _drift("ImportError: cannot import name 'SwiGLUFusedOp' from 'xformers.ops'\n")
    assert f.rule == "TRI009" and "pip install 'xformers<0.0.34'" in f.fix


def test_datasets_removed_task_template() -> None:
    _need("datasets")
    (f,) = _drift("ImportError: cannot import name 'AudioClassification' from 'datasets'\n")
    assert f.rule == "TRI009" and "pip install 'datasets<3.0.0'" in f.fix


def test_verl_removed_name() -> None:
    _need("verl")
    (f,) = _drift("ImportError: cannot import name 'WorkerType' from 'verl.trainer.ppo.ray_trainer'\n")
    assert f.rule == "TRI009" and "pip install 'verl<0.6.0'" in f.fix


@pytest.mark.parametrize(
    "line",
    [
        # names every release read has: no release of the history lacks them (another cause)
        "ImportError: cannot import name 'jit' from 'triton'\n",
        "ImportError: cannot import name 'safe_open' from 'safetensors'\n",
        # a name of the user's own next to a package's module: no package's history binds it
        "ImportError: cannot import name 'my_helper' from 'triton.language'\n",
        # a folder of the working directory in the package's place: TRI036's, not a release's
        "ImportError: cannot import name 'int4_weight_only' from 'torchao.quantization' (unknown location)\n",
    ],
)
def test_quiet_where_no_release_tells(line: str) -> None:
    assert not [f for f in _drift(line) if f.rule == "TRI009"]


@pytest.mark.parametrize(
    ("shown", "line", "package"),
    [
        ("torchao==0.12.0", "cannot import name 'int4_weight_only' from 'torchao.quantization'", "torchao"),
        ("xformers==0.0.28.post3", "cannot import name 'SwiGLUFusedOp' from 'xformers.ops'", "xformers"),
        ("datasets==2.21.0", "cannot import name 'AudioClassification' from 'datasets'", "datasets"),
        ("verl==0.4.1", "cannot import name 'WorkerType' from 'verl.trainer.ppo.ray_trainer'", "verl"),
    ],
)
def test_the_logs_release_that_has_the_name_is_not_drift(shown: str, line: str, package: str) -> None:
    _need(package)
    (f,) = _drift(f"[pip3] {shown}\nImportError: {line}\n")
    assert f.rule == "TRI003" and f"not API drift of {package}" in f.message


def test_a_healthy_inductor_log_is_quiet() -> None:
    text = (
        "torch==2.5.1 triton==3.1.0 torchao==0.12.0 xformers==0.0.28.post3\n"
        "[rank0]: torch._dynamo hit config.cache_size_limit (8)\n"
        "step 1 loss 0.52\nstep 2 loss 0.47\n{'train_runtime': 12.5, 'train_loss': 0.49}\n"
    )
    assert not [f for f in findings(scan_bytes(text)) if f.severity == Severity.ERROR]


def test_log_caller_names_only_a_package_that_pins_the_callee() -> None:
    if not symbol_history.pinners("triton"):
        pytest.skip("no pins shipped")
    assert (
        symbols.log_caller(["torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"], "triton")
        == "torch"
    )
    assert symbols.log_caller(["my_torch.helpers failed"], "triton") is None
    assert symbols.log_caller(["torch._dynamo line"], "datasets") is None  # torch pins no datasets


VLLM_XFORMERS = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.11/site-packages/vllm/attention/backends/xformers.py", '
    "line 6, in <module>\n"
    "    from xformers.ops import SwiGLUFusedOp\n"
    "ImportError: cannot import name 'SwiGLUFusedOp' from 'xformers.ops' "
    "(/usr/local/lib/python3.11/site-packages/xformers/ops/__init__.py)\n"
)


def test_a_frame_of_the_pinning_package_with_its_version_gets_its_pin() -> None:
    """vLLM's frame imports xformers' op; the log's vLLM 0.8.5 requires xformers==0.0.29.post2
    (its wheel's Requires-Dist), a release that has the op: that pin first, then the range."""
    _need("xformers")
    if not symbol_history.pinned("vllm", "0.8.5", "xformers"):
        pytest.skip("no pins shipped")
    (f,) = _drift("[pip3] vllm==0.8.5\n" + VLLM_XFORMERS)
    assert f.rule == "TRI009" and f.severity == Severity.ERROR and "between vllm and xformers" in f.message
    assert f.fix.startswith("pip install 'xformers==0.0.29.post2' (vllm 0.8.5 requires")
    assert "xformers<0.0.34" in f.fix
    # without vLLM's version: the range where the op is, no pin
    (g,) = _drift(VLLM_XFORMERS)
    assert g.fix.startswith("pip install 'xformers<0.0.34'") and "requires" not in g.fix


def test_a_pin_whose_release_lacks_the_name_is_not_given() -> None:
    """torch 2.2.x pins triton 2.2.0, which has no triton_key: the importer is another torch (a
    nightly), so the pin would not help; the range is the answer."""
    _need("triton")
    if not symbol_history.pinned("torch", "2.2.2", "triton"):
        pytest.skip("no pins shipped")
    (f,) = _drift("[pip3] torch==2.2.2\n" + INDUCTOR)
    assert f.rule == "TRI009" and "requires triton" not in f.fix
    assert "triton>=3.0.0,<3.5.0" in f.fix


def test_torch_module_attribute_added() -> None:
    """heldout-2026-11-28e/logs5/021 (Liuziyu77/Visual-RFT#218): a flash-attn build calls
    torch.library.wrap_triton, which torch 2.5.1 lacks (added in 2.6.0)."""
    _need("torch")
    (f,) = _drift("AttributeError: module 'torch.library' has no attribute 'wrap_triton'\n")
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert f.fix.startswith("pip install 'torch>=2.6.0'")
    (g,) = _drift(
        "[pip3] torch==2.6.0\nAttributeError: module 'torch.library' has no attribute 'wrap_triton'\n"
    )
    assert g.rule == "TRI003" and "not API drift of torch" in g.message  # the log's torch has it


def test_torch_private_module_name_added() -> None:
    """heldout-2026-11-29g/logs15a/017 (meta-pytorch/torchtune#846): torchtune imports a name
    torch 2.2 added."""
    _need("torch")
    (f,) = _drift(
        "ImportError: cannot import name 'return_and_correct_aliasing' from 'torch.utils._python_dispatch'\n"
    )
    assert f.rule == "TRI009" and "pip install 'torch>=2.2.0'" in f.fix


@pytest.mark.parametrize(
    ("line", "package", "pin", "shown"),
    [
        (
            "cannot import name 'CustomCacheManager' from 'sglang.srt.utils'",
            "sglang",
            "sglang<0.4.9.post4",
            "sglang==0.4.6",
        ),
        (
            "cannot import name 'BatchDecodeMlaWithPagedKVCacheWrapper' from 'flashinfer'",
            "flashinfer-python",
            "flashinfer-python<0.7.0",
            "flashinfer-python==0.6.3",
        ),
        (
            "cannot import name 'AdapterRequest' from 'swift.llm'",
            "ms-swift",
            "ms-swift>=3.0.0,<4.0.0",
            "ms-swift==3.8.0",
        ),
    ],
)
def test_frameworks_and_kernels_fire_and_stay_quiet_where_the_log_shows_a_release_with_it(
    line: str, package: str, pin: str, shown: str
) -> None:
    _need(package)
    (f,) = _drift(f"ImportError: {line}\n")
    assert f.rule == "TRI009" and f.severity == Severity.ERROR and f"pip install '{pin}'" in f.fix
    (g,) = _drift(f"[pip3] {shown}\nImportError: {line}\n")
    assert g.rule == "TRI003" and f"not API drift of {package}" in g.message


def test_a_framework_does_not_own_the_stacks_class_names() -> None:
    """ms-swift's DPOTrainer extends TRL's under the same name: a bare message about DPOTrainer is
    TRL's (the frameworks answer only where a module or a frame names them)."""
    _need("ms-swift", "trl")
    assert "ms-swift" not in symbols.packages() and "ms-swift" in symbol_history.every()
    log = "TypeError: DPOTrainer.__init__() got an unexpected keyword argument 'loss_type'\n"
    (f,) = [f for f in _drift(log) if f.rule == "TRI009"]
    assert "removed in trl 0.13.0" in f.message


def test_a_compiled_modules_names_its_releases_code_reads_are_the_releases(
    derive: ModuleType, tmp_path: Path
) -> None:
    """The stubs lag the compiled module: torch._C._cuda_hasPrimaryContext is in every CUDA build
    torch's own code reads it from, in torch/_C/__init__.pyi only from 2.15. A name the release's
    Python reads there (``torch._C.X``, ``from torch._C._sub import X``) is that release's."""
    whl = _wheel(
        tmp_path,
        "torch",
        "2.4.0",
        {
            "torch/__init__.py": "from torch._C import *\n",
            "torch/_C/__init__.pyi": "def _cuda_getDeviceCount() -> int: ...\n",
            "torch/_C/_distributed_c10d.pyi": "class ProcessGroupGloo: ...\n",
            "torch/cuda/__init__.py": (
                "import torch\nfrom torch._C import _cuda_isInBadFork, _cuda_getDeviceCount\n"
                "def f():\n    return torch._C._cuda_hasPrimaryContext(0), torch._C._TensorBase.foo\n"
                "from torch._C._distributed_c10d import ProcessGroupNCCL as PG\n"
            ),
        },
    )
    rel = derive.read_release(whl, ("torch",), derive.FactsCache(None), stubs=True)
    assert {"_cuda_getDeviceCount", "_cuda_hasPrimaryContext", "_cuda_isInBadFork", "_TensorBase"} <= (
        rel.modules["torch._C"].names
    )
    assert "foo" not in rel.modules["torch._C"].names
    assert {"ProcessGroupGloo", "ProcessGroupNCCL"} <= rel.modules["torch._C._distributed_c10d"].names


def test_a_compiled_name_the_stubs_gained_late_is_not_drift() -> None:
    """torch._C._set_torch_function_state: read by torch's Python from 2.6, in the stubs from 2.15
    only; a CPU build or a mismatched extension lacking it on torch 2.8 is not 'added in 2.15'."""
    _need("torch")
    fs = _drift(
        "[pip3] torch==2.8.0\n"
        "AttributeError: module 'torch._C' has no attribute '_set_torch_function_state'\n"
    )
    assert not any("2.15" in f.fix for f in fs)


def test_a_name_that_moved_to_another_module_is_said_moved() -> None:
    """triton 3.5.0 took triton_key out of triton.compiler.compiler into triton.runtime.cache: still
    importable there, so the fact names where it went, not 'removed'."""
    _need("triton")
    (f,) = _drift(INDUCTOR)
    assert "triton_key — moved to triton.runtime.cache in triton 3.5.0" in f.message
    assert "removed in triton" not in f.message
    # a name no module has after its last release is still 'removed'
    (g,) = _drift("ImportError: cannot import name 'int4_weight_only' from 'torchao.quantization'\n")
    assert "moved to" not in g.message


def test_a_cuda_builds_torch_gets_the_indexs_pin_and_rocms_does_not() -> None:
    """pip lists torch 2.5.1+cu124 from PyTorch's index: the same Requires-Dist on triton as
    PyPI's 2.5.1; a ROCm build requires pytorch-triton-rocm instead, so no triton pin is named."""
    _need("triton")
    if not symbol_history.pinned("torch", "2.5.1", "triton"):
        pytest.skip("no pins shipped")
    (f,) = _drift("[pip3] torch==2.5.1+cu124\n" + INDUCTOR)
    assert f.fix.startswith("pip install 'triton==3.1.0' (torch 2.5.1+cu124 requires triton==3.1.0")
    (g,) = _drift("[pip3] torch==2.5.1+rocm6.2\n" + INDUCTOR)
    assert "triton==3.1.0" not in g.fix


def test_a_dtype_the_stubs_gained_a_release_late_is_dated_by_the_releases_code() -> None:
    """torch.float8_e4m3fn came in torch 2.1.0 (its own Python reads it there), in the stubs from
    2.2.0 (tomorrow1238/Ultraman#10, hiyouga/LlamaFactory#4958: torch 1.12.1 / 2.0.0)."""
    _need("torch")
    (f,) = _drift("[pip3] torch==2.0.0\nAttributeError: module 'torch' has no attribute 'float8_e4m3fn'\n")
    assert f.rule == "TRI009" and f.fix.startswith("pip install 'torch>=2.1.0'")


def test_a_name_the_packages_getattr_serves_is_not_removed() -> None:
    """torch.has_cuda: bound in torch/__init__.py up to 2.0, served by its module __getattr__
    (deprecated) from 2.1: not 'removed in torch 2.1.0'."""
    _need("torch")
    fs = _drift("[pip3] torch==2.5.1\nAttributeError: module 'torch' has no attribute 'has_cuda'\n")
    assert not any("removed in torch" in f.message for f in fs)


def test_a_compiled_class_named_with_its_package_is_not_another_packages_class() -> None:
    """torch 2.0's ``'torch.dtype' object has no attribute 'itemsize'`` (added in torch 2.1) was
    read as triton.language's ``dtype`` class (``pip install 'triton>=3.4.0'``): the class's
    package is the one its qualified name names."""
    _need("triton")
    fs = _drift(
        "[pip3] torch==2.0.1\nTraceback (most recent call last):\n"
        '  File "/home/u/train.py", line 3, in <module>\n    n = t.dtype.itemsize\n'
        "AttributeError: 'torch.dtype' object has no attribute 'itemsize'\n"
    )
    assert not any("triton" in f.message for f in fs)
