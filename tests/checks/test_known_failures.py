"""The known-failures catalogue (rules/knowledge/known_failures/) and KNF001, which reads it.

Every entry gets a scenario built from its own ``when`` where it fires and one outside its version
range where it stays quiet (generated from the catalogue, so no entry goes untested); the seven
real setups of issue #26 are written out by hand, with their fixed releases.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.checks.context import Context
from envdoctor.checks.known_failures import likely, matches
from envdoctor.facts.snapshot import from_dict
from envdoctor.knowledge import known_failures
from envdoctor.knowledge.catalogue import load_dir
from envdoctor.knowledge.failures import SCHEMA, KnownFailure, KnownFailuresError, parse_file
from envdoctor.plan.build import build_plan
from tests.conftest import MODERN, findings, snapshot

CATALOGUE = known_failures()
LAUNCH = {
    "python": "python train.py",
    "torchrun": "torchrun --nproc_per_node 2 train.py",
    "accelerate": "accelerate launch --num_processes 2 train.py",
    "deepspeed": "deepspeed --num_gpus 2 train.py",
    "trl": "trl grpo --output_dir out",
}
STRATEGY = {
    "zero3": "accelerate launch --use_deepspeed --zero_stage 3 --num_processes 2 train.py",
    "zero2": "accelerate launch --use_deepspeed --zero_stage 2 --num_processes 2 train.py",
    "fsdp": "accelerate launch --use_fsdp --num_processes 2 train.py",
    "fsdp2": "accelerate launch --use_fsdp --fsdp_version 2 --num_processes 2 train.py",
}
#: a training script that holds each ``when.facts`` fact and builds a GRPOTrainer
FACT_SCRIPTS = {
    "vllm_in_process_off": (
        "from unsloth import FastLanguageModel\n"
        "from trl import GRPOConfig, GRPOTrainer\n"
        'model, tok = FastLanguageModel.from_pretrained("m")\n'
        'trainer = GRPOTrainer(model=model, args=GRPOConfig(output_dir="o"), reward_funcs=[])\n'
    ),
}
#: where scenario() writes the training scripts of ``facts`` entries: pytest's own temporary folder
#: (set by the fixture below), never a folder left behind in /tmp
_SCRIPTS = Path()


@pytest.fixture(autouse=True, scope="module")
def _scripts_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    global _SCRIPTS
    _SCRIPTS = tmp_path_factory.mktemp("knf-scripts")


PLATFORM = {"windows": "Windows-10-10.0.22631-SP0", "linux": "Linux-x86_64", "macos": "Darwin-23.1.0"}


# -- versions inside and outside an entry's ranges ---------------------------------------------


def _candidates(spec: str) -> list[str]:
    """Versions around every bound the specifier names, oldest first."""
    out = {"0.0.1", "99.0.0"}
    for s in SpecifierSet(spec):
        v = Version(s.version)
        major, minor, micro = (list(v.release) + [0, 0])[:3]
        out |= {str(v.public), f"{major}.{minor}.{micro + 1}", f"{major}.{minor + 1}.0"}
        if micro:
            out.add(f"{major}.{minor}.{micro - 1}")
        if minor:
            out.add(f"{major}.{minor - 1}.0")
        elif major:
            out.add(f"{major - 1}.99.0")
    return sorted(out, key=Version)


def inside(spec: str) -> str:
    return next(v for v in _candidates(spec) if SpecifierSet(spec).contains(v, prereleases=True))


def outside(spec: str) -> str:
    return next(v for v in _candidates(spec) if not SpecifierSet(spec).contains(v, prereleases=True))


def _satisfying(wanted):
    """A config value an entry's condition holds for: ``"<1"`` -> 0.5, ``">0"`` -> 1.0."""
    m = re.match(r"^(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)$", wanted) if isinstance(wanted, str) else None
    if not m:
        return wanted
    bound = float(m.group(2))
    return bound + 1 if m.group(1).startswith(">") else bound - 0.5


def scenario(f: KnownFailure, out_of_range: str | None = None) -> tuple[dict, dict | None, str | None]:
    """A snapshot, a GRPO config and a launch line where every condition of ``f.when`` holds
    (or, with ``out_of_range``, all but that package's range)."""
    packages = {**MODERN}
    for name, spec in f.packages.items():
        packages[name] = outside(spec) if name == out_of_range else inside(spec)
    config = {
        key: ({"warmup": 1} if values[0] == "*" else _satisfying(values[0]))
        for key, values in f.config.items()
    } or None
    launch = None
    if "launcher" in f.launch:
        launch = LAUNCH[f.launch["launcher"][0]]
    if "strategy" in f.launch:
        launch = STRATEGY[f.launch["strategy"][0]]
    if "server" in f.launch:
        launch = "trl vllm-serve --model m" if f.launch["server"][0] == "trl-vllm-serve" else "vllm serve m"
    if f.facts:  # facts of the training script: a script that holds them (and builds a GRPOTrainer)
        script = _SCRIPTS / f"{f.id}.py"
        script.write_text("".join(FACT_SCRIPTS[fact] for fact in f.facts))
        launch = f"python {script}"
    if f.trainer == "grpo" and launch is None:  # the run builds a GRPOTrainer: `trl grpo` says so
        launch = "trl grpo --model_name_or_path m"
    env = {names.split("|")[0]: "x" if value == "*" else value for names, value in f.env.items()}
    snap = snapshot(packages=packages, env=env)
    if f.platform:
        snap["platform"] = PLATFORM.get(f.platform[0], "Linux-x86_64")
        if f.platform[0] in ("rocm", "xpu"):
            packages["torch"] = f"2.6.0+{f.platform[0]}"
            snap = snapshot(packages=packages, env=env)
    return snap, config, launch


def _ctx(snap: dict, config: dict | None, launch: str | None) -> Context:
    return Context(
        facts=from_dict(snap, "test"), plan=build_plan(launch=launch, config_dict=config, live=False)
    )


def _ids(snap: dict, config: dict | None, launch: str | None) -> list[str]:
    return [f.evidence.get("id") for f in findings(snap, config=config, launch=launch) if f.rule == "KNF001"]


IDS = [f.id for f in CATALOGUE]


# -- every entry: fires inside its when, quiet outside its range -------------------------------


@pytest.mark.parametrize("failure", CATALOGUE, ids=IDS)
def test_entry_matches_its_own_when(failure):
    assert matches(_ctx(*scenario(failure)), failure)


@pytest.mark.parametrize("failure", CATALOGUE, ids=IDS)
def test_entry_fires_once_with_its_id_and_fix(failure):
    snap, config, launch = scenario(failure)
    found = [
        f
        for f in findings(snap, config=config, launch=launch)
        if f.rule == "KNF001" and f.evidence.get("id") == failure.id
    ]
    if failure.rule or failure.triage_only:  # left to the older rule / to triage
        assert found == []
        return
    assert len(found) == 1
    hit = found[0]
    # the catalogue's data decides (depends_on): an error for every run, info where it hinges on
    # what envdoctor cannot see, a warning where a fact it reads makes it likely (likely_with)
    expected = failure.severity
    if expected == "info" and failure.kind != "slower" and likely(_ctx(snap, config, launch), failure):
        expected = "warning"
    assert hit.severity.value == expected
    if failure.depends_on != "run":
        assert failure.evidence and f"check {failure.evidence}" in hit.message
    if hit.remedy is None:
        assert hit.fix == failure.fix
    elif not hit.remedy.packages:  # the catalogue's config fix as data (checks/catalogue_fix.py)
        assert hit.fix == failure.fix
        for remedy in (hit.remedy, *hit.alternatives):
            changed = {k: v for k, v in (config or {}).items() if k not in remedy.config_remove}
            after = findings(snap, config={**changed, **remedy.config_set}, launch=launch)
            assert failure.id not in [f.evidence.get("id") for f in after if f.rule == "KNF001"], remedy
    else:  # issue 35: a broken pair or a fixed release gets exact versions that hold when followed
        assert len(failure.packages) >= 2 or failure.fixed_in
        assert hit.fix.startswith("pip install '") and hit.remedy.packages
        assert all(f"'{n}=={v}'" in hit.fix for n, v in hit.remedy.packages.items())
        followed = {**snap, "packages": {**snap["packages"], **hit.remedy.packages}}
        after = findings(followed, config=config, launch=launch)
        assert failure.id not in [f.evidence.get("id") for f in after if f.rule == "KNF001"]
        errors = [
            f for f in after if f.rule in ("PKG004", "PKG006", "KNF001") and f.severity.value == "error"
        ]
        # one more step where the fix leads to another known failure with its own proved fix (the
        # closure's look-ahead): the plan keeps transformers where the model's needs are not
        # known (checks/model_floors.transformers_floor), so TRL moves forward instead and a
        # config-dependent pair of the newer TRL (Liger's dapo default) is fixed next
        for extra in [e for e in errors if e.remedy is not None and e.remedy.packages]:
            followed = {**followed, "packages": {**followed["packages"], **extra.remedy.packages}}
        if errors:
            after = findings(followed, config=config, launch=launch)
            errors = [
                f for f in after if f.rule in ("PKG004", "PKG006", "KNF001") and f.severity.value == "error"
            ]
        assert not errors
    assert failure.title in hit.message
    for name, version in failure.fixed_in.items():
        assert f"{name} {version}" in hit.message
    assert hit.evidence["references"] == list(failure.sources)


@pytest.mark.parametrize("failure", CATALOGUE, ids=IDS)
@pytest.mark.parametrize("which", ["trl", "other"])
def test_entry_quiet_outside_its_range(failure, which):
    names = list(failure.packages)
    name = "trl" if which == "trl" and "trl" in names else names[-1]
    ctx = _ctx(*scenario(failure, out_of_range=name))
    assert not matches(ctx, failure)


@pytest.mark.parametrize("failure", [f for f in CATALOGUE if f.unless_env], ids=lambda f: f.id)
def test_entry_quiet_where_its_escape_is_set(failure):
    snap, config, launch = scenario(failure)
    var, value = next(iter(failure.unless_env.items()))
    snap["env"] = {**snap["env"], var.split("|")[0]: "0" if value == "*" else value}
    assert not matches(_ctx(snap, config, launch), failure)


@pytest.mark.parametrize("failure", [f for f in CATALOGUE if f.unless_config], ids=lambda f: f.id)
def test_entry_quiet_where_its_config_escape_is_set(failure):
    snap, config, launch = scenario(failure)
    key, values = next(iter(failure.unless_config.items()))
    config = {**(config or {}), key: {} if values[0] == "*" else values[0]}
    assert not matches(_ctx(snap, config, launch), failure)


def test_every_run_failure_is_an_error_and_its_escape_quiet():
    """Issue 35 item 7: TRL 0.19.0 in colocate mode with generation_kwargs unset crashes at the
    first generation of every run (huggingface/trl#3633, fixed in 0.19.1): an error, not a
    warning; setting generation_kwargs (even {}) escapes it; judged on an assumed TRL, a warning."""
    from envdoctor.checks.known_failures import severity

    failure = next(f for f in CATALOGUE if f.id == "trl-0.19.0-colocate-generation-kwargs-none")
    pk = {**MODERN, "trl": "0.19.0", "vllm": "0.9.2", "torch": "2.7.0", "transformers": "4.53.0"}
    config = {"use_vllm": True, "vllm_mode": "colocate"}
    (hit,) = [f for f in findings(snapshot(packages=pk), config=config) if f.evidence.get("id") == failure.id]
    assert hit.severity.value == "error"
    assert hit.remedy is not None and hit.remedy.packages == {"trl": "0.19.1"}
    quiet = findings(snapshot(packages=pk), config={**config, "generation_kwargs": {}})
    assert failure.id not in [f.evidence.get("id") for f in quiet]
    assumed = _ctx(snapshot(packages={k: v for k, v in pk.items() if k != "trl"}), config, None)
    assert assumed.trl.assumed and severity(assumed, failure) == "warning"


def test_a_release_bug_the_data_must_trigger_is_advice_naming_what_to_check():
    """Issue 35 item 7 and the seventh held-out set: TRL 0.18 colocate sends vLLM untruncated
    prompt text, which fails only for a prompt longer than max_prompt_length +
    max_completion_length tokens; TRL 0.19.0 drops special tokens only from prompts whose chat
    template marks turns with them. Whether it strikes hinges on the data, which envdoctor does
    not see here: advice (info) that names the data condition, what to check and the fix
    release (the catalogue's depends_on: data); never an error."""
    cases = [
        ({"trl": "0.18.0", "vllm": "0.8.5.post1", "torch": "2.6.0", "transformers": "4.52.3"}, "colocate"),
        ({"trl": "0.19.0", "vllm": "0.8.5.post1", "torch": "2.6.0", "transformers": "4.52.4"}, "server"),
    ]
    for pk, mode in cases:
        config = {"use_vllm": True, "vllm_mode": mode, "generation_kwargs": {}}
        knf = [f for f in findings(snapshot(packages={**MODERN, **pk}), config=config) if f.rule == "KNF001"]
        assert knf and all(f.severity.value == "info" for f in knf), knf
        assert all("it needs " in f.message and "depends on the training data" in f.message for f in knf)
        assert all("which envdoctor cannot see; check " in f.message for f in knf)
        assert all(f.remedy is not None and f.remedy.packages.get("trl") for f in knf)
    pk = {"trl": "0.19.0", "vllm": "0.8.5.post1", "torch": "2.6.0", "transformers": "4.52.4"}
    found = findings(snapshot(packages={**MODERN, **pk}), config={"use_vllm": True, "vllm_mode": "colocate"})
    assert "error" in [f.severity.value for f in found if f.rule == "KNF001"]


def _special_tokens(tmp_path: Path, prompts: str) -> list:
    """KNF001's TRL 0.19.0 special-tokens finding for a train.py that imports prompts.py."""
    (tmp_path / "prompts.py").write_text(prompts)
    (tmp_path / "train.py").write_text(
        "from prompts import build\nfrom trl import GRPOConfig, GRPOTrainer\n"
        "GRPOTrainer(model='m', reward_funcs=[len], args=GRPOConfig(output_dir='o'))\n"
    )
    pk = {"trl": "0.19.0", "vllm": "0.8.5.post1", "torch": "2.6.0", "transformers": "4.52.4"}
    config = {"use_vllm": True, "vllm_mode": "server"}
    found = findings(
        snapshot(packages={**MODERN, **pk}), config=config, launch=f"python {tmp_path / 'train.py'}"
    )
    return [f for f in found if f.evidence.get("id") == "trl-0.19.0-truncated-prompt-loses-special-tokens"]


def test_special_tokens_are_likely_where_the_training_code_builds_chat_messages(tmp_path):
    """TRL 0.19.0 re-decodes every prompt for vLLM without special tokens while
    max_prompt_length is set (grpo_trainer.py at v0.19.0, L1064-1069): chat markup is lost
    wherever the prompts are chat messages. A module the script imports building
    {"role": …, "content": …} makes it likely (a warning naming where); plain text prompts
    leave it advice."""
    chat = "def build(q):\n    return [{'role': 'user', 'content': q}]\n"
    (hit,) = _special_tokens(tmp_path, chat)
    assert hit.severity.value == "warning"
    assert "likely here, the training code builds chat messages (" in hit.message
    assert "prompts.py:2" in hit.message
    (plain,) = _special_tokens(tmp_path, "def build(q):\n    return 'Question: ' + q\n")
    assert plain.severity.value == "info"


def test_an_install_detail_is_advice_that_says_what_to_check():
    """The seventh held-out set: flash-attn 2.8.3 on torch 2.8 fails at import only where its
    binary was built for another torch (Dao-AILab/flash-attention#1832); envdoctor sees the
    versions, not the build: info that says how to tell (depends_on: install)."""
    pk = {"trl": "0.23.0", "torch": "2.8.0", "flash-attn": "2.8.3", "vllm": "0.10.2"}
    found = findings(snapshot(packages={**MODERN, **pk}), config={"use_vllm": True})
    (hit,) = [f for f in found if f.evidence.get("id") == "flash-attn-2.8.3-wheel-torch-2.8-setdevice"]
    assert hit.severity.value == "info"
    assert "depends on how the packages were built or installed" in hit.message
    assert "python -c 'import flash_attn'" in hit.message
    # moving torch off 2.8 is not its fix (a wheel built for the torch installed is)
    assert hit.fix.startswith("install the flash-attn release wheel built for this torch/CUDA/Python")
    assert hit.remedy is None or not hit.remedy.packages


def test_every_entry_says_what_it_depends_on_and_what_would_show_it():
    for f in CATALOGUE:
        assert f.depends_on in ("run", "data", "load", "hardware", "install", "model", "code"), f.id
        assert f.depends_on == "run" or f.evidence, f.id
        assert f.severity == ("info" if f.kind == "slower" or f.depends_on != "run" else "error"), f.id


@pytest.mark.parametrize("failure", [f for f in CATALOGUE if f.env], ids=lambda f: f.id)
def test_entry_quiet_without_its_env(failure):
    snap, config, launch = scenario(failure)
    snap["env"] = {}
    assert not matches(_ctx(snap, config, launch), failure)


@pytest.mark.parametrize("failure", [f for f in CATALOGUE if f.config], ids=lambda f: f.id)
def test_entry_quiet_without_a_config(failure):
    snap, _config, launch = scenario(failure)
    assert not matches(_ctx(snap, None, launch), failure)


def test_catalogue_size_and_sources():
    assert len(CATALOGUE) >= 40
    assert len({f.id for f in CATALOGUE}) == len(CATALOGUE)
    for f in CATALOGUE:
        assert any("github.com" in s for s in f.sources), f.id
        assert f.symptoms or f.kind == "silent-wrong", f.id


def test_loaded_once():
    from envdoctor.knowledge.catalogue import load_known_failures

    assert load_known_failures() is load_known_failures()


# -- the seven real setups of issue #26, and their fixed releases ------------------------------

REAL = [
    (
        "trl-guided-decoding-params-vllm-0.12",
        {"trl": "0.25.0", "vllm": "0.12.0"},
        {"use_vllm": True},
        None,
        {"trl": "0.27.0"},
    ),
    (
        "trl-legacy-vllm-v1-no-model-executor",
        {"trl": "0.15.2", "vllm": "0.8.0"},
        {"use_vllm": True},
        None,
        {"trl": "0.16.0"},
    ),
    (
        "trl-vllm-serve-worker-extension-cls-vllm-0.7",
        {"trl": "0.17.0", "vllm": "0.7.3"},
        {"use_vllm": True},
        None,
        {"vllm": "0.8.3"},
    ),
    (
        "trl-server-weight-sync-dtype-vllm-0.9",
        {"trl": "0.18.0", "vllm": "0.9.1"},
        {"use_vllm": True, "vllm_mode": "server"},
        None,
        {"trl": "0.19.1"},
    ),
    (
        "trl-0.15.0-lora-vllm-base-weights",
        {"trl": "0.15.0", "vllm": "0.7.2"},
        {"use_vllm": True, "use_peft": True},
        None,
        {"trl": "0.15.1"},
    ),
    (
        "trl-colocate-python-launch-no-rank",
        {"trl": "0.19.0", "vllm": "0.8.5"},
        {"use_vllm": True, "vllm_mode": "colocate"},
        "python train.py",
        {"trl": "0.20.0"},
    ),
    (
        "liger-grpo-loss-zero3-size-mismatch",
        {"trl": "0.17.0", "vllm": "0.8.5"},
        {"use_vllm": True, "use_liger_loss": True},
        STRATEGY["zero3"],
        {"trl": "1.6.0"},
    ),
]


@pytest.mark.parametrize(("fid", "packages", "config", "launch", "fixed"), REAL, ids=[r[0] for r in REAL])
def test_real_setup_fires_as_an_error(fid, packages, config, launch, fixed):
    found = [
        f
        for f in findings(snapshot(packages={**MODERN, **packages}), config=config, launch=launch)
        if f.rule == "KNF001"
    ]
    mine = [f for f in found if f.evidence["id"] == fid]
    assert len(mine) == 1 and mine[0].severity.value == "error"
    assert "knows of no step" not in " ".join(f.message for f in found)


@pytest.mark.parametrize(("fid", "packages", "config", "launch", "fixed"), REAL, ids=[r[0] for r in REAL])
def test_real_setup_quiet_on_its_fixed_release(fid, packages, config, launch, fixed):
    assert fid not in _ids(snapshot(packages={**MODERN, **packages, **fixed}), config, launch)


def test_colocate_rank_quiet_under_torchrun_and_with_rank_set():
    pk = {**MODERN, "trl": "0.19.0", "vllm": "0.8.5"}
    cfg = {"use_vllm": True, "vllm_mode": "colocate"}
    fid = "trl-colocate-python-launch-no-rank"
    assert fid not in _ids(snapshot(packages=pk), cfg, "torchrun --nproc_per_node 1 train.py")
    assert fid not in _ids(snapshot(packages=pk, env={"RANK": "0"}), cfg, "python train.py")


def test_liger_zero3_quiet_under_zero2():
    pk = {**MODERN, "trl": "0.17.0", "vllm": "0.8.5"}
    assert "liger-grpo-loss-zero3-size-mismatch" not in _ids(
        snapshot(packages=pk), {"use_vllm": True, "use_liger_loss": True}, STRATEGY["zero2"]
    )


def test_fsdp2_entry_reads_the_fsdp_version(tmp_path):
    """FSDP2 from --fsdp_version or the accelerate config; accelerate's default (FSDP1) stays quiet."""
    pk = {**MODERN, "trl": "0.19.1", "vllm": "0.9.1"}
    cfg = {"use_vllm": True, "vllm_mode": "colocate"}
    fid = "trl-fsdp2-vllm-weights-never-synced-0.18"
    assert fid in _ids(snapshot(packages=pk), cfg, STRATEGY["fsdp2"])
    assert fid not in _ids(snapshot(packages=pk), cfg, STRATEGY["fsdp"])
    for version, fires in (("2", True), ("1", False), (None, False)):
        fsdp = {"fsdp_sharding_strategy": "FULL_SHARD", **({"fsdp_version": version} if version else {})}
        acc = tmp_path / f"fsdp{version}.yaml"
        acc.write_text(yaml.safe_dump({"distributed_type": "FSDP", "num_processes": 2, "fsdp_config": fsdp}))
        launch = f"accelerate launch --config_file {acc} train.py"
        assert (fid in _ids(snapshot(packages=pk), cfg, launch)) is fires, version


def test_default_loss_type_counts_when_the_config_omits_it():
    """loss_type missing: TRL 0.22's default "dapo" is what Liger receives."""
    pk = {**MODERN, "trl": "0.22.0", "vllm": "0.10.2", "liger-kernel": "0.6.2"}
    cfg = {"use_vllm": True, "use_liger_loss": True}
    assert "liger-grpo-loss-unknown-loss-type-dapo" in _ids(snapshot(packages=pk), cfg, None)
    assert "liger-grpo-loss-unknown-loss-type-dapo" not in _ids(
        snapshot(packages=pk), {**cfg, "loss_type": "bnpo"}, None
    )
    old = {**pk, "trl": "0.21.0"}  # default bnpo before 0.22
    assert "liger-grpo-loss-unknown-loss-type-dapo" not in _ids(snapshot(packages=old), cfg, None)


def test_confirmed_break_silences_the_pin_warnings():
    """TRL 0.25 + vLLM 0.12: KNF001 is the one finding; PKG006's range warning stays quiet."""
    rules = {
        f.rule
        for f in findings(
            snapshot(packages={**MODERN, "trl": "0.25.0", "vllm": "0.12.0"}), config={"use_vllm": True}
        )
    }
    assert "KNF001" in rules and "PKG006" not in rules


def test_pkg004_pin_warning_defers_to_the_catalogue():
    snap = snapshot(
        packages={
            **MODERN,
            "trl": {"version": "0.15.2", "requires": ["vllm==0.7.2; extra == 'vllm'"]},
            "vllm": "0.8.0",
        }
    )
    found = findings(snap, config={"use_vllm": True})
    text = " ".join(f.message for f in found if f.rule == "PKG004")
    assert "knows of no step" not in text
    assert any(f.evidence.get("id") == "trl-legacy-vllm-v1-no-model-executor" for f in found)


def test_assume_versions_are_judged(tmp_path):
    from tests.conftest import run_cli

    (tmp_path / "grpo.yaml").write_text("use_vllm: true\n")
    facts = tmp_path / "facts.json"
    import json

    facts.write_text(json.dumps(snapshot(packages=MODERN)))
    out = run_cli(
        "check",
        "--facts",
        str(facts),
        "--config",
        str(tmp_path / "grpo.yaml"),
        "--assume",
        "trl==0.25.0",
        "--assume",
        "vllm==0.12.0",
        "--select",
        "KNF001",
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "GuidedDecodingParams" in out.stdout and "huggingface/trl#4617" in out.stdout


# -- schema: a bad entry is a clear error naming the file and the entry ------------------------

GOOD = {
    "id": "x-breaks",
    "title": "t",
    "kind": "crash",
    "depends_on": "run",
    "when": {"packages": {"trl": ">=0.1"}},
    "symptoms": ["boom"],
    "cause": "c",
    "fix": "f",
    "sources": ["https://github.com/huggingface/trl/issues/1"],
}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"id": "Bad_Id"}, "lowercase-with-dashes"),
        ({"kind": "explodes"}, "'kind' must be one of"),
        ({"certainty": "depends", "depends_on": None}, "'depends_on' must say"),
        ({"certainty": "depends"}, "contradicts"),
        ({"depends_on": "data"}, "'evidence' must say"),
        ({"depends_on": "data", "evidence": "e"}, "happens on every run"),
        ({"depends_on": "weather", "evidence": "e"}, "'depends_on' must be one of"),
        ({"depends_on": "run", "likely_with": {"facts": ["conversational"]}}, "likely_with"),
        ({"depends_on": "data", "evidence": "e", "note": "n", "likely_with": {"facts": ["x"]}}, "facts"),
        ({"when": {"packages": {"trl": ">>1"}}}, "not a PEP 440"),
        ({"when": {"config": {"use_vllm": True}}}, "needs 'packages'"),
        ({"when": {"packages": {"trl": ">=1"}, "launch": {"launcher": ["srun"]}}}, "not in"),
        ({"when": {"packages": {"trl": ">=1"}, "platform": ["beos"]}}, "not in"),
        ({"sources": []}, "sources"),
        ({"sources": ["docs/x.md"]}, "https://"),
        ({"symptoms": []}, "symptoms"),
        ({"symptoms": ["re:(unclosed"]}, "not a valid regex"),
        ({"rule": "pkg2"}, "rule id"),
        ({"extra": 1}, "unknown keys"),
        ({"fix": ""}, "'fix' must be"),
        ({"triage_only": True}, "needs a 'note'"),
        ({"when": {"packages": {"trl": ">=1"}, "env": {"A": 1}}}, "expected {VAR: VALUE}"),
        ({"when": {"packages": {"trl": ">=1"}, "unless_config": ["a"]}}, "unless_config"),
        ({"when": {"packages": {"trl": ">=1"}, "data": ["long prompts"]}}, "not depends_on: run"),
        # a reading's fix must name a value its reads say (here none does)
        ({"reads": ["got {inputs}"], "read_fixes": {"with_labels": "x"}}, "'read_fixes' must map"),
        ({"program_fixes": {"sglang-server": "x"}}, "'program_fixes' must map"),
        (
            {
                "depends_on": "data",
                "evidence": "e",
                "note": "n",
                "when": {"packages": {"trl": ">=1"}, "data": "x"},
            },
            "when.data",
        ),
    ],
)
def test_bad_entry_names_file_and_entry(change, needle):
    entry = {**GOOD, **change}
    with pytest.raises(KnownFailuresError) as err:
        parse_file("mine.yaml", {"schema": "envdoctor.known_failures/1", "failures": [GOOD, entry]})
    text = str(err.value)
    assert text.startswith("mine.yaml: failures[1]") and needle in text
    if change.get("id", "x") == "x" or "id" not in change:
        assert "(x-breaks)" in text


def test_missing_schema_and_duplicate_ids(tmp_path: Path):
    with pytest.raises(KnownFailuresError, match="schema"):
        parse_file("a.yaml", {"failures": [GOOD]})
    doc = {"schema": "envdoctor.known_failures/1", "failures": [GOOD]}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(KnownFailuresError, match=r"b.yaml: id x-breaks already used in a.yaml"):
        load_dir(tmp_path)
    (tmp_path / "b.yaml").write_text("failures: [\n")
    with pytest.raises(KnownFailuresError, match="b.yaml: not valid YAML"):
        load_dir(tmp_path)


def test_silent_failure_may_have_no_symptoms():
    entry = {**GOOD, "kind": "silent-wrong", "symptoms": []}
    assert parse_file("a.yaml", {"schema": "envdoctor.known_failures/1", "failures": [entry]})


def test_symptoms_match_literal_and_regex():
    f = next(x for x in CATALOGUE if x.id == "trl-guided-decoding-params-vllm-0.12")
    log = (
        "ImportError: cannot import name 'GuidedDecodingParams' from 'vllm.sampling_params' "
        "(/usr/lib/python3.12/site-packages/vllm/sampling_params.py)"
    )
    assert any(s.found_in(log) for s in f.symptoms)
    assert not any(s.found_in("all good") for s in f.symptoms)


def test_every_symptom_regex_of_the_catalogue_compiles():
    """The catalogue is loaded with its regexes compiled on first use (check never reads them);
    every one must compile, with the entry named when one does not."""
    regexes = [s.regex for f in CATALOGUE for s in f.symptoms if s.text.startswith("re:")]
    assert regexes and all(r is not None for r in regexes)
    lazy = parse_file(
        "x.yaml", {"schema": SCHEMA, "failures": [{**GOOD, "symptoms": ["re:(unclosed"]}]}, eager=False
    )
    with pytest.raises(KnownFailuresError, match=r"x\.yaml: failures\[0\].*not a valid regex"):
        lazy[0].symptoms[0].found_in("log")


def test_check_parses_only_the_entries_it_reports():
    """KNF001 reads the entries no older rule reports and whose trigger shows before the run;
    the rest (left to a rule, triage_only) are not parsed for check, and are the same entries
    the full catalogue holds."""
    from envdoctor.knowledge import checkable_failures

    full = {f.id for f in CATALOGUE if f.rule is None and not f.triage_only}
    assert {f.id for f in checkable_failures()} == full
    assert len(full) < len(CATALOGUE)


def test_a_failure_that_only_slows_the_run_is_advice_not_a_warning():
    """TRL 0.16's vllm-serve on vLLM 0.8-0.10 falls back to vLLM's V0 engine: the run works (a
    published 1 + 7 GPU LoRA run trained on it), only slower: info, never a warning."""
    pk = {**MODERN, "trl": "0.16.1", "vllm": "0.8.5", "torch": "2.6.0", "transformers": "4.51.3"}
    found = [
        f
        for f in findings(snapshot(2, packages=pk), config={"use_vllm": True})
        if f.rule == "KNF001" and f.evidence.get("id") == "trl-0.16-vllm-serve-worker-cls-falls-back-to-v0"
    ]
    assert found and {f.severity.value for f in found} == {"info"}
    entry = next(e for e in CATALOGUE if e.id == "trl-0.16-vllm-serve-worker-cls-falls-back-to-v0")
    assert entry.kind == "slower" and entry.severity == "info"
    assert next(e for e in CATALOGUE if e.kind == "crash" and e.certainty == "certain").severity == "error"


def test_a_nested_config_value_escapes_a_failure():
    """unless_config ``a.b`` reads the value at b of the mapping a: TRL 0.15's LoRA + reentrant
    checkpointing crash (huggingface/trl#3089) matches every run unless
    gradient_checkpointing_kwargs sets use_reentrant false. The entry is CFG012's to report (it
    reads the script's peft_config= too): the match is asked of the catalogue directly, and
    CFG012 follows it."""
    from envdoctor.checks.context import Context
    from envdoctor.checks.matching import matches
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.knowledge import known_failures
    from envdoctor.plan.build import build_plan

    pk = {"trl": "0.15.2", "vllm": "0.7.2", "torch": "2.5.1", "transformers": "4.49.0"}
    entry = next(f for f in known_failures() if f.id == "trl-0.15-peft-gradient-checkpointing-no-grad")
    assert entry.rule == "CFG012"

    def sev(kwargs: dict | None) -> tuple[bool, list[str]]:
        config = {"use_peft": True, "gradient_checkpointing": True}
        if kwargs is not None:
            config["gradient_checkpointing_kwargs"] = kwargs
        snap = snapshot(packages={**MODERN, **pk})
        ctx = Context(facts=from_dict(snap, "x"), plan=build_plan(config_dict=config, live=False))
        found = findings(snap, config=config)
        return matches(ctx, entry), [f.severity.value for f in found if f.rule == "CFG012"]

    assert sev(None) == (True, ["error"])
    assert sev({"use_reentrant": True}) == (True, ["error"])
    assert sev({"use_reentrant": False}) == (False, [])


def test_special_tokens_are_likely_where_the_dataset_read_is_chat_messages(tmp_path):
    """The same evidence from the data: a local dataset whose prompts are chat messages."""
    import json as _json

    data = tmp_path / "d.jsonl"
    chat = {"prompt": [{"role": "user", "content": "What is 2 + 2?"}], "solution": "4"}
    data.write_text(_json.dumps(chat) + "\n")
    pk = {"trl": "0.19.0", "vllm": "0.8.5.post1", "torch": "2.6.0", "transformers": "4.52.4"}
    config = {"use_vllm": True, "vllm_mode": "server", "dataset_name": str(data)}
    found = findings(snapshot(packages={**MODERN, **pk}), config=config)
    entry = "trl-0.19.0-truncated-prompt-loses-special-tokens"
    (hit,) = [f for f in found if f.evidence.get("id") == entry]
    assert hit.severity.value == "warning" and "the dataset's prompts are chat messages" in hit.message
    data.write_text(_json.dumps({"prompt": "What is 2 + 2?", "solution": "4"}) + "\n")
    (plain,) = [
        f
        for f in findings(snapshot(packages={**MODERN, **pk}), config=config)
        if f.evidence.get("id") == entry
    ]
    assert plain.severity.value == "info"
