"""The static check stays fast by what it does not load: a reader or a planner loads only when its
input is there (issue 29). Held by the modules a real ``envdoctor check`` process imports, not by
its time (no timed asserts: bench/check_speed.py measures it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from envdoctor.resources import COMPILED, compile_rules, rules_dir
from tests.conftest import ROOT

#: What `envdoctor check` with nothing given must not import, each with the input it is for.
NOT_WITHOUT_INPUT = {
    "yaml": "a config file (the rule data is read from rules/compiled.jsonl)",
    "importlib.metadata": "a distribution that no *.dist-info folder names",
    "packaging": "a version, specifier or Requires-Dist line outside the canonical shapes "
    "(envdoctor.versions, envdoctor.pep508)",
    "envdoctor.facts.declared": "a requirements file, pyproject or lock file",
    "envdoctor.plan.memory": "a model",
    "envdoctor.plan.config_files": "a config file",
    "envdoctor.parsing": "a config file",
    "envdoctor.plan.launch": "a launch command",
    "envdoctor.plan.script_plan": "a launch command that runs a .py script",
    "envdoctor.plan.script_reader": "a launch command that runs a .py script that is there",
    "envdoctor.facts.snapshot": "--facts",
    "envdoctor.net_policy": "a vLLM server or --allow-host",
    "socket": "a vLLM server or --allow-host",
    "envdoctor.report.junit": "--format junit",
    "envdoctor.report.sarif": "--format sarif",
    "envdoctor.report.json_format": "--format json",
    "difflib": "config keys to match",
    "envdoctor.probe": "--probe",
    "envdoctor.triage": "envdoctor triage",
    "envdoctor.cluster": "--distributed",
    "envdoctor.plan.data_source": "a dataset (dataset_name)",
    "envdoctor.plan.tokenizer_files": "a dataset's prompts",
    "envdoctor.plan.rewards": "a training script or reward_funcs",
    "pyarrow": "a Parquet or Arrow dataset",
    "tokenizers": "a dataset's prompts and a cached tokenizer.json",
    "csv": "a CSV dataset",
    "envdoctor.checks.layout_launchers": "a launch command (a rule module loads when a rule of it runs)",
    "envdoctor.checks.layout_server": "a config or launch command with use_vllm on",
    "envdoctor.checks.deepspeed_ref": "a config or launch command",
    "envdoctor.checks.trl_overrides": "a config or launch command",
    "envdoctor.checks.config_values": "a config or launch command",
}

_SCRIPT = """
import json, sys
from envdoctor.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def _modules_of_check(cwd: Path, *args: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "PYTORCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "check", "--no-network", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert "MODULES " in proc.stderr, proc.stderr
    return set(json.loads(proc.stderr.rsplit("MODULES ", 1)[1]))


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


#: whether this environment's own distributions hold a version or Requires-Dist line outside
#: the shapes envdoctor reads itself (a future release may): then packaging reads it, rightly
_ODD_SHAPES = """
import importlib.metadata as md, sys
from envdoctor import pep508, versions
env = {**pep508.default_environment(), "extra": ""}
for dist in md.distributions():
    try:
        versions.parse(str(dist.version))
        for line in dist.requires or []:
            req = pep508.parse(line)
            if req.marker is not None:
                req.marker.evaluate(env)
    except Exception:
        pass
print("packaging" in sys.modules)
"""


def _environment_needs_packaging() -> bool:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", _ODD_SHAPES], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().endswith("True")


def test_check_with_nothing_given_loads_no_reader_or_planner(tmp_path):
    modules = _modules_of_check(tmp_path)
    assert "envdoctor.checks.packages" in modules  # the rules did run
    expected = dict(NOT_WITHOUT_INPUT)
    if _environment_needs_packaging():  # not the check's doing: a dependency's own metadata
        expected.pop("packaging")
    loaded = {name: why for name, why in expected.items() if _loaded(modules, name)}
    assert not loaded, f"loaded without their input: {loaded}"
    assert not any(m.split(".")[0] in ("torch", "transformers", "trl", "vllm") for m in modules)


def test_the_same_modules_load_when_their_input_is_there(tmp_path):
    """The other side: each module above exists and loads for its input (a renamed module
    would otherwise pass the test above unseen)."""
    (tmp_path / "grpo.yaml").write_text(
        "model_name_or_path: no-such-org/no-such-model\nuse_vllm: true\nvllm_mode: server\nfoo_bar: 1\n"
    )
    (tmp_path / "train.py").write_text("from trl import TrlParser\n")
    modules = _modules_of_check(
        tmp_path,
        "--config",
        "grpo.yaml",
        "--format",
        "junit",
        "--allow-host",
        "example.org",
        "--",
        "python",
        "train.py",
    )
    for name in (
        "yaml",
        "envdoctor.plan.memory",
        "envdoctor.plan.memory.planner",
        "envdoctor.plan.memory.shape",
        "envdoctor.parsing",
        "envdoctor.plan.launch",
        "envdoctor.plan.script_reader",
        "envdoctor.net_policy",
        "envdoctor.report.junit",
        "difflib",
        "envdoctor.checks.layout_launchers",
        "envdoctor.checks.layout_server",
        "envdoctor.checks.deepspeed_ref",
        "envdoctor.checks.trl_overrides",
        "envdoctor.checks.config_values",
    ):
        assert name in modules, name


def test_compiled_rule_data_is_fresh():
    """rules/compiled.jsonl holds every YAML file of rules/ as it is now: after editing one, run
    `python -m envdoctor.resources` (a stale entry is parsed from YAML again: slower, not wrong)."""
    text = (rules_dir() / COMPILED).read_text(encoding="utf-8")
    assert text == compile_rules(), "rules/compiled.jsonl is stale: python -m envdoctor.resources"
    assert len(text.splitlines()) == len(list(rules_dir().rglob("*.yaml"))) + 1, (
        "a YAML file of rules/ that JSON cannot hold exactly (a date, a key that is not a string) "
        "is read with PyYAML on every run: quote the value (the last line: the checkable known "
        "failures, parsed)"
    )


def test_check_reads_the_checkable_known_failures_parsed(tmp_path, monkeypatch):
    """KNF001's entries come from rules/compiled.jsonl already parsed and validated, equal to
    what parsing the YAML gives; after an edit of a catalogue file the YAML is parsed again."""
    import shutil

    from envdoctor.knowledge import catalogue
    from envdoctor.knowledge.failures import checkable

    folder = catalogue.catalogue_dir()
    compiled = catalogue.compiled_checkable(folder)
    assert compiled is not None
    assert compiled == tuple(catalogue.load_dir(folder, eager=False, keep=checkable))
    assert catalogue.load_checkable_failures() == compiled
    copy = tmp_path / "known_failures"
    shutil.copytree(folder, copy)
    assert catalogue.compiled_checkable(copy) == compiled  # the same texts
    first = sorted(copy.glob("*.yaml"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert catalogue.compiled_checkable(copy) is None
    (copy / "new.yaml").write_text("x: 1\n", encoding="utf-8")
    first.write_text((folder / first.name).read_text(encoding="utf-8"), encoding="utf-8")
    assert catalogue.compiled_checkable(copy) is None  # a file more
