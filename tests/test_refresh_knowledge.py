"""scripts/refresh_knowledge.py on synthetic wheels: two TRL and two vLLM releases built here, the
download step replaced (no network). vLLM 0.11.0 drops GuidedDecodingParams, SamplingParams'
truncate_prompt_tokens, an EngineArgs field and a class's static method; TRL 1.1.0 guards its import."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rk() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "refresh_knowledge", ROOT / "scripts" / "refresh_knowledge.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["refresh_knowledge"] = mod
    spec.loader.exec_module(mod)
    return mod


def _wheel(path: Path, name: str, version: str, files: dict[str, str], requires: list[str]) -> Path:
    whl = path / f"{name}-{version}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(whl, "w") as zf:
        for p, src in files.items():
            zf.writestr(p, textwrap.dedent(src))
        zf.writestr(f"{name}-{version}.dist-info/METADATA", meta)
    return whl


IMPORT_UTILS = """
    from packaging.version import Version
    def is_vllm_available(min_version=None):
        v = "0.10.0"
        if not (Version("0.10.0") <= Version(v) <= Version("0.11.0")):
            print("warn")
        if min_version is not None and Version(v) < Version(min_version):
            return False
        return True
"""

GRPO_CONFIG = """
    from dataclasses import dataclass, field
    from transformers import TrainingArguments
    @dataclass
    class GRPOConfig(TrainingArguments):
        use_vllm: bool = field(default=False, metadata={"help": "use vLLM"})
        top_p: float = field(default=1.0, metadata={"help": "nucleus"})
        {extra}
"""

GENERATION_10 = """
    from trl.import_utils import is_vllm_available
    if is_vllm_available():
        from vllm import LLM, SamplingParams
        from vllm.sampling_params import GuidedDecodingParams

    def make(model):
        llm = LLM(model=model, enable_sleep_mode=True, seed=0)
        kw = {"top_p": 1.0, "truncate_prompt_tokens": 8}
        return llm, SamplingParams(**kw)
"""

GENERATION_11 = """
    import vllm
    from packaging.version import Version
    from trl.import_utils import is_vllm_available
    if is_vllm_available():
        from vllm import LLM, SamplingParams
        if Version(vllm.__version__) <= Version("0.10.0"):
            from vllm.sampling_params import GuidedDecodingParams
        else:
            from vllm.sampling_params import StructuredOutputsParams

    def make(model):
        llm = LLM(model=model, enable_sleep_mode=True, seed=0)
        kw = {"top_p": 1.0}
        if is_vllm_available(min_version="0.11.0"):
            kw["structured_outputs"] = None
        return llm, SamplingParams(**kw)
"""

CLIENT = """
    from trl.import_utils import is_vllm_available

    _HAS_LIFECYCLE = is_vllm_available(min_version="0.11.0")

    class VLLMClient:
        def start(self):
            if _HAS_LIFECYCLE:
                self._post(f"{self.base_url}/start_weight_update", json={})

        def init(self):
            return self._post(f"{self.base_url}/init_weight_transfer_engine", json={})
        def health(self):
            return self._get(f"{self.base_url}/health/")
"""

SERVE = """
    def main(args):
        command = ["vllm", "serve", args.model, "--gpu-memory-utilization", "0.9", "--enable-sleep-mode"]
        return command
"""

EXPERIMENTAL = """
    from vllm.distributed.weight_transfer.nccl_engine import NCCLWeightTransferEngine
    def send():
        return NCCLWeightTransferEngine.trainer_init(None)
"""


def trl_files(version: str) -> dict[str, str]:
    files = {
        "trl/__init__.py": "",
        "trl/import_utils.py": IMPORT_UTILS,
        "trl/trainer/grpo_config.py": GRPO_CONFIG.replace(
            "{extra}",
            'epsilon: float = field(default=0.2, metadata={"help": "clip"})' if version == "1.1.0" else "",
        ),
        "trl/generation/vllm_generation.py": GENERATION_10 if version == "1.0.0" else GENERATION_11,
        "trl/generation/vllm_client.py": CLIENT,
        "trl/scripts/vllm_serve.py": SERVE,
        "trl/experimental/async_grpo/transfer.py": EXPERIMENTAL,
    }
    return files


def vllm_files(version: str) -> dict[str, str]:
    new = version == "0.11.0"
    sampling = """
        class GuidedDecodingParams:
            pass
        class SamplingParams:
            top_p: float = 1.0
            truncate_prompt_tokens: int | None = None
    """
    if new:
        sampling = """
            class StructuredOutputsParams:
                pass
            class SamplingParams:
                top_p: float = 1.0
                structured_outputs: StructuredOutputsParams | None = None
        """
    engine = """
        class NCCLWeightTransferEngine:
            @staticmethod
            def trainer_init(args):
                return args
    """
    if new:
        engine = """
            class NCCLWeightTransferEngine:
                def send_weights(self):
                    pass
        """
    routes = '@router.get("/health")\ndef health(): ...\n'
    if new:
        routes += '@router.post("/init_weight_transfer_engine")\ndef init(): ...\n'
        routes += '@router.post("/start_weight_update")\ndef start(): ...\n'
    return {
        "vllm/__init__.py": (
            "from vllm.entrypoints.llm import LLM\nfrom vllm.sampling_params import SamplingParams\n"
        ),
        "vllm/entrypoints/__init__.py": "",
        "vllm/entrypoints/llm.py": (
            "class LLM:\n    def __init__(self, model, *, seed=0, **kwargs):\n        pass\n"
        ),
        "vllm/engine/arg_utils.py": "from dataclasses import dataclass\n@dataclass\nclass EngineArgs:\n"
        "    model: str = ''\n    gpu_memory_utilization: float = 0.9\n"
        + ("" if new else "    enable_sleep_mode: bool = False\n"),
        "vllm/sampling_params.py": sampling,
        "vllm/entrypoints/openai/api_server.py": routes,
        "vllm/distributed/weight_transfer/nccl_engine.py": engine,
    }


TRL_YAML = """\
schema: envdoctor.knowledge/1
trl_lines:
- trl: '>=1.0.0,<1.1.0'
  vllm: '>=0.10.0,<=0.11.0'
  vllm_extra: '>=0.10.0,<=0.11.0'
  vllm_warning_range: '>=0.10.0,<=0.11.0'
  note: curated by hand
  references:
  - https://github.com/huggingface/trl/blob/v1.0.0/pyproject.toml

features: []
"""


@pytest.fixture
def world(tmp_path: Path) -> dict[str, object]:
    built = tmp_path / "built"
    built.mkdir()
    wheels = {}
    for v in ("1.0.0", "1.1.0"):
        wheels[("trl", v)] = _wheel(
            built, "trl", v, trl_files(v), ['vllm<=0.11.0,>=0.10.0; extra == "vllm"', "accelerate>=1.4.0"]
        )
    for v in ("0.10.0", "0.11.0"):
        wheels[("vllm", v)] = _wheel(built, "vllm", v, vllm_files(v), ["torch==2.8.0"])
    downloads: list[tuple[str, str]] = []

    def download(name: str, version: str, dest: Path) -> Path:
        downloads.append((name, version))
        dest.mkdir(parents=True, exist_ok=True)
        src = wheels[(name, version)]
        target = dest / src.name
        target.write_bytes(src.read_bytes())
        return target

    dates = {
        "trl": {"1.0.0": "2026-01-01", "1.1.0": "2026-02-01", "0.9.0": "2025-01-01"},
        "vllm": {"0.10.0": "2025-09-01", "0.11.0": "2025-10-01", "0.6.0": "2024-01-01"},
        "transformers": {"5.24.0": "2026-11-20"},
        "torch": {"2.15.0": "2026-11-01"},
        "accelerate": {"1.15.0": "2026-10-01"},
        "deepspeed": {"0.19.8": "2026-10-02"},
        "peft": {"0.21.2": "2026-10-03"},
    }
    rules = tmp_path / "rules"
    (rules / "knowledge" / "known_failures").mkdir(parents=True)
    (rules / "knowledge" / "trl.yaml").write_text(TRL_YAML)
    return {
        "cache": tmp_path / "cache",
        "rules": rules,
        "download": download,
        "downloads": downloads,
        "releases": lambda name: dates[name],
    }


def _run(rk: ModuleType, world: dict[str, object], check: bool = False) -> tuple[dict[str, str], list[str]]:
    return rk.refresh(
        world["cache"],
        world["rules"],
        check=check,
        today="2026-11-28",
        releases=world["releases"],
        download=world["download"],
        log=lambda s: None,
    )


def test_matrix_finds_the_api_breaks(rk: ModuleType, world: dict[str, object]) -> None:
    changed, notes = _run(rk, world)
    k = world["rules"] / "knowledge"  # type: ignore[operator]
    matrix = yaml.safe_load((k / "vllm_api.yaml").read_text())
    assert matrix["trl_scanned"] == ["1.0.0", "1.1.0"]
    assert matrix["vllm_scanned"] == ["0.10.0", "0.11.0"]  # releases below the floors are not fetched
    rows = {(r["kind"], r["api"], r["trl"]): r for r in matrix["breaks"]}
    # the unguarded import breaks 1.0.0 on 0.11.0, inside its declared range; 1.1.0's guarded one does not
    gd = rows[("name", "vllm.sampling_params:GuidedDecodingParams", ">=1.0.0,<1.1.0")]
    assert gd["vllm"] == [">=0.11.0"] and gd["inside_declared_range"] == [">=0.11.0"] and gd["on_grpo_path"]
    assert not any(
        a == "vllm.sampling_params:GuidedDecodingParams" and t != ">=1.0.0,<1.1.0" for _, a, t in rows
    )
    # 1.1.0's guarded import of StructuredOutputsParams is only checked against vLLM > 0.10.0: no break
    assert not any("StructuredOutputsParams" in a for _, a, _ in rows)
    # keywords: SamplingParams(**kw) through a dict, LLM(...) through EngineArgs (LLM takes **kwargs)
    assert rows[("sampling-kwarg", "truncate_prompt_tokens", ">=1.0.0,<1.1.0")]["vllm"] == [">=0.11.0"]
    assert rows[("llm-kwarg", "enable_sleep_mode", ">=1.0.0")]["vllm"] == [">=0.11.0"]
    assert not any(k == "llm-kwarg" and a in {"model", "seed"} for k, a, _ in rows)
    # the serve line's flag (from EngineArgs' field) and the client's route (missing before 0.11.0)
    assert rows[("serve-flag", "--enable-sleep-mode", ">=1.0.0")]["vllm"] == [">=0.11.0"]
    assert not any(k == "serve-flag" and a == "--gpu-memory-utilization" for k, a, _ in rows)
    assert rows[("endpoint", "/init_weight_transfer_engine", ">=1.0.0")]["vllm"] == ["==0.10.0"]
    assert not any(k == "endpoint" and a == "/health" for k, a, _ in rows)
    # a route the client calls only behind is_vllm_available(min_version="0.11.0"): no break on 0.10.0
    assert not any(k == "endpoint" and a == "/start_weight_update" for k, a, _ in rows)
    # the #7001 class of break: a static method of an imported class removed (off GRPO's path here)
    attr = rows[
        (
            "attribute",
            "vllm.distributed.weight_transfer.nccl_engine:NCCLWeightTransferEngine.trainer_init",
            ">=1.0.0",
        )
    ]
    assert attr["vllm"] == [">=0.11.0"] and attr["on_grpo_path"] is False

    # the catalogue gets the on-path breaks inside the declared range, and the entries validate
    derived = yaml.safe_load((k / "known_failures" / "trl_vllm_api_derived.yaml").read_text())
    from envdoctor.knowledge.failures import parse_file

    entries = parse_file("trl_vllm_api_derived.yaml", derived)
    titles = " | ".join(e.title for e in entries)
    assert "GuidedDecodingParams" in titles and "trainer_init" not in titles
    gd_entry = next(e for e in entries if "GuidedDecodingParams" in e.title)
    assert gd_entry.config == {}  # a module-level import fails at `import trl`, vLLM used or not
    kw_entry = next(e for e in entries if "LLM(enable_sleep_mode=...)" in e.title)
    assert kw_entry.config == {"use_vllm": (True,)}  # a call: only a run that uses vLLM reaches it
    log = "ImportError: cannot import name 'GuidedDecodingParams' from 'vllm.sampling_params' (/x/vllm/s.py)"
    assert any(s.found_in(log) for s in gd_entry.symptoms)
    assert not any(
        s.found_in("cannot import name 'GuidedDecodingParams' from 'other'") for s in gd_entry.symptoms
    )

    # ranges and keys: a trl_lines entry for the minor trl.yaml lacks; the curated line kept
    trl = (k / "trl.yaml").read_text()
    assert "note: curated by hand" in trl and "trl: '>=1.1.0,<1.2.0'" in trl
    assert any("1.1.0: new trl_lines entry" in n for n in notes)
    keys = yaml.safe_load((k / "grpo_config_keys.yaml").read_text())["keys"]
    assert keys["epsilon"]["since"] == "1.1.0" and keys["top_p"]["since"] == "1.0.0"
    horizon = yaml.safe_load((k / "horizon.yaml").read_text())
    assert horizon["checked"] == "2026-11-28"
    assert horizon["packages"]["trl"] == {
        "newest": "1.1.0",
        "released": "2026-02-01",
        "references": ["https://pypi.org/project/trl/1.1.0/"],
    }
    from envdoctor.knowledge.schema import validate

    validate("horizon.yaml", horizon)  # the loader reads what the script writes
    assert horizon["packages"]["transformers"]["newest"] == "5.24.0"
    assert set(changed) == {
        "rules/knowledge/vllm_api.yaml",
        "rules/knowledge/known_failures/trl_vllm_api_derived.yaml",
        "rules/knowledge/trl.yaml",
        "rules/knowledge/grpo_config_keys.yaml",
        "rules/knowledge/horizon.yaml",
    }


def test_check_mode_and_the_cache(rk: ModuleType, world: dict[str, object]) -> None:
    _run(rk, world)
    first = list(world["downloads"])  # type: ignore[call-overload]
    assert sorted(first) == [("trl", "1.0.0"), ("trl", "1.1.0"), ("vllm", "0.10.0"), ("vllm", "0.11.0")]
    cache = world["cache"]
    assert not list((cache / "vllm").glob("*.whl"))  # type: ignore[operator]  # reduced to extracts
    changed, _ = _run(rk, world, check=True)
    assert changed == {}
    assert world["downloads"] == first  # nothing fetched again
    horizon = world["rules"] / "knowledge" / "horizon.yaml"  # type: ignore[operator]
    horizon.write_text(horizon.read_text().replace("5.24.0", "5.23.0"))
    before = horizon.read_text()
    changed, _ = _run(rk, world, check=True)
    assert (
        list(changed) == ["rules/knowledge/horizon.yaml"]
        and 'newest: "5.24.0"' in changed["rules/knowledge/horizon.yaml"]
    )
    assert horizon.read_text() == before  # --check writes nothing


def test_cache_inside_the_repository_is_refused(rk: ModuleType) -> None:
    with pytest.raises(SystemExit):
        rk.main(["--cache", str(ROOT / "wheels"), "--check"])


def test_import_time_range_and_extra(rk: ModuleType) -> None:
    src = textwrap.dedent(IMPORT_UTILS)
    assert rk.import_time_range(src) == ">=0.10.0,<=0.11.0"
    meta = 'Requires-Dist: vllm>=0.10.2,<0.13.0; extra == "vllm"\nRequires-Dist: accelerate>=1.4.0\n'
    assert rk.extra_range(meta) == "<0.13.0,>=0.10.2"
    assert rk.runs({"a", "b", "d"}, ["a", "b", "c", "d"]) == [">=a,<=b", ">=d"]


def test_a_break_the_catalogue_tells_already_is_not_derived_again(
    rk: ModuleType, world: dict[str, object]
) -> None:
    known = world["rules"] / "knowledge" / "known_failures" / "hand.yaml"  # type: ignore[operator]
    known.write_text(
        yaml.safe_dump(
            {
                "schema": "envdoctor.known_failures/1",
                "failures": [
                    {
                        "id": "hand-written",
                        "title": "GuidedDecodingParams removed",
                        "kind": "crash",
                        "certainty": "certain",
                        "when": {"packages": {"trl": ">=1.0.0,<1.1.0", "vllm": ">=0.11.0"}},
                        "symptoms": ["cannot import name 'GuidedDecodingParams'"],
                        "cause": "c",
                        "fix": "f",
                        "sources": ["https://github.com/huggingface/trl/issues/1"],
                    }
                ],
            }
        )
    )
    _run(rk, world)
    k = world["rules"] / "knowledge"  # type: ignore[operator]
    matrix = yaml.safe_load((k / "vllm_api.yaml").read_text())
    row = next(r for r in matrix["breaks"] if r["api"] == "vllm.sampling_params:GuidedDecodingParams")
    assert row["covered_by"] == "hand-written"
    derived = (k / "known_failures" / "trl_vllm_api_derived.yaml").read_text()
    # 1.0.0's SamplingParams keyword fails after its import does: covered with it; 1.x's LLM keyword not
    assert "GuidedDecodingParams" not in derived and "truncate_prompt_tokens" not in derived
    kw = next(r for r in matrix["breaks"] if r["api"] == "truncate_prompt_tokens")
    assert (
        kw["fails_first"] == "vllm.sampling_params:GuidedDecodingParams"
        and kw["covered_by"] == "hand-written"
    )
    assert "LLM(enable_sleep_mode=...)" in derived
