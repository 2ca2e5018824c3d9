"""The CLI as users run it: formats, exit codes, selection, rule docs, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from envdoctor.checks.docs import rule_docs
from tests.conftest import LEGACY, ROOT, run_cli, snapshot

BROKEN = snapshot(2, packages=LEGACY)


def _facts(write_json, snap=BROKEN):
    return str(write_json(snap))


def test_text_report_flutter_style(write_json):
    proc = run_cli("check", "--facts", _facts(write_json), "--", "python", "train.py")
    assert proc.returncode == 1
    out = proc.stdout
    assert "[✗] GPU layout" in out and "✗ LAY003" in out and "→ fix:" in out
    assert "GPU  MODEL" in out and "rank 0" in out
    assert "envdoctor found 1 error" in out and "\033[" not in out


def test_json_report_matches_schema(write_json):
    proc = run_cli("check", "--facts", _facts(write_json), "--format", "json", "--", "python", "train.py")
    data = json.loads(proc.stdout)
    assert data["schema"] == "envdoctor.report/1"
    assert data["summary"]["errors"] >= 1 and data["summary"]["exit_code"] == 1
    for f in data["findings"]:
        assert set(f) >= {"rule", "severity", "message", "fix", "evidence", "area"}
        assert f["severity"] in ("error", "warning", "info") and f["fix"]
    areas = {"packages", "config", "gpus", "layout", "allocator", "data", "probe"}
    assert {a["key"] for a in data["areas"]} == areas


def test_junit_is_valid_xml(write_json, tmp_path):
    out = tmp_path / "r.xml"
    proc = run_cli(
        "check",
        "--facts",
        _facts(write_json),
        "--format",
        "junit",
        "-o",
        str(out),
        "--",
        "python",
        "train.py",
    )
    assert proc.returncode == 1 and "✗ LAY003" in proc.stdout  # -o with a data format: the text too
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert int(suite.get("failures")) >= 1
    names = {c.get("name") for c in suite.iter("testcase")}
    assert "LAY003" in names


def test_exit_codes_and_strict(write_json):
    clean = _facts(write_json, snapshot(2))
    assert run_cli("check", "--facts", clean).returncode == 0
    warn = write_json(
        snapshot(2, env={"PYTORCH_CUDA_ALLOC_CONF": "a:1", "PYTORCH_ALLOC_CONF": "expandable_segments:True"}),
        "w.json",
    )
    assert run_cli("check", "--facts", str(warn), "--ignore", "ALC001").returncode == 0
    assert run_cli("check", "--facts", str(warn), "--ignore", "ALC001", "--strict").returncode == 1


def test_select_and_ignore(write_json):
    facts = _facts(write_json)
    sel = run_cli("check", "--facts", facts, "--select", "ALC", "--", "python", "train.py")
    assert sel.returncode == 0 and "LAY003" not in sel.stdout
    ign = run_cli("check", "--facts", facts, "--ignore", "dataparallel-trap", "--", "python", "train.py")
    assert ign.returncode == 0


def test_pyproject_settings(write_json, tmp_path):
    facts = _facts(write_json)
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nignore = ["LAY003"]\n')
    assert run_cli("check", "--facts", facts, "--", "python", "train.py", cwd=tmp_path).returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nignroe = ["LAY003"]\n')
    bad = run_cli("check", "--facts", facts, cwd=tmp_path)
    assert bad.returncode == 2 and "unknown key 'ignroe'" in bad.stderr


def test_rules_and_explain():
    listing = run_cli("rules")
    assert listing.returncode == 0
    assert len(listing.stdout.splitlines()) == len(rule_docs())
    one = run_cli("explain", "LAY003")
    assert "DataParallel" in one.stdout and "References:" in one.stdout
    assert run_cli("explain", "dataparallel-trap").returncode == 0
    missing = run_cli("explain", "NOPE1")
    assert missing.returncode == 2 and "envdoctor rules" in missing.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (["check", "--config", "/nonexistent.yaml"], "cannot read"),
        (["check", "--format", "xml"], "Invalid value"),
        (["check", "--", "accelerate", "launch", "'train.py"], None),
        (["check", "--launch", "accelerate launch 'train.py"], "launch command"),
    ],
)
def test_bad_usage_exit_2(args, needle):
    proc = run_cli(*args)
    if needle is None:  # the shell already split it: a literal quote is just a file name
        assert proc.returncode in (0, 1)
        return
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "content, needle",
    [
        ("a: [1, 2\n", "invalid YAML at line"),
        ("- 1\n- 2\n", "expected a mapping"),
        ("{1: 2}", "keys must be strings"),
    ],
)
def test_malformed_config(tmp_path, content, needle):
    path = tmp_path / "grpo.yaml"
    path.write_text(content)
    proc = run_cli("check", "--config", str(path))
    assert proc.returncode == 2 and needle in proc.stderr and str(path) in proc.stderr


def test_yaml_is_loaded_safely(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("a: !!python/object/apply:os.system ['echo pwned']\n")
    proc = run_cli("check", "--config", str(path))
    assert proc.returncode == 2 and "pwned" not in proc.stdout


def test_upgrade_plan(write_json):
    snap = snapshot(
        2,
        packages={
            "trl": "0.15.2",
            "torch": "2.7.0+cu126",
            "vllm": {"version": "0.8.5", "requires": ["torch==2.6.0"]},
        },
    )
    proc = run_cli("check", "--facts", str(write_json(snap)), "--upgrade-plan")
    assert proc.returncode == 0 and proc.stdout.strip() == "pip install 'torch==2.6.0'"


def test_no_heavy_imports():
    code = (
        "import sys, envdoctor\n"
        "from envdoctor.cli import main\n"
        "try:\n    main(['check', '--no-network'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'vllm', 'accelerate',"
        " 'datasets') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "rule_id", sorted(d.id for d in rule_docs().values() if d.area in ("packages", "config"))
)
def test_explain_shows_the_sources_of_every_version_rule(rule_id):
    out = run_cli("explain", rule_id).stdout
    refs = out.split("References:")[1].strip().splitlines()
    assert refs and all(line.strip().startswith("- ") for line in refs)


# --- the launch line on the command line -------------------------------------------------------


@pytest.mark.parametrize(
    "args, needle",
    [
        (["check", "--confg", "grpo.yaml"], "Did you mean '--config'?"),
        (["check", "--junk-flag"], "No such option '--junk-flag'"),
        (["check", "--facts", "f.json", "--lanch", "torchrun t.py"], "Did you mean '--launch'?"),
        (["check", "grpo.yaml"], "did you mean --config grpo.yaml?"),
        (["probe", "--confg", "grpo.yaml"], "Did you mean '--config'?"),
    ],
)
def test_mistyped_options_are_usage_errors(args, needle):
    proc = run_cli(*args)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_bare_launch_line_keeps_its_own_flags(write_json, tmp_path):
    facts = _facts(write_json)
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("num_generations: 4\nper_device_train_batch_size: 4\n")
    # no `--`: options end at the first word; the launcher's --config is the script's
    bare = run_cli(
        "check",
        "--facts",
        facts,
        "--format",
        "json",
        "torchrun",
        "--nproc_per_node",
        "1",
        "train.py",
        "--config",
        str(cfg),
    )
    dashed = run_cli(
        "check",
        "--facts",
        facts,
        "--format",
        "json",
        "--",
        "torchrun",
        "--nproc_per_node",
        "1",
        "train.py",
        "--config",
        str(cfg),
    )
    assert bare.returncode == dashed.returncode == 0
    assert json.loads(bare.stdout)["findings"] == json.loads(dashed.stdout)["findings"]
    assert (
        f"config file {cfg}"
        in [a["summary"] for a in json.loads(bare.stdout)["areas"] if a["key"] == "config"][0]
    )


def test_trl_slurm_example_is_clean(write_json, tmp_path):
    """TRL's documented multi-node GRPO job (tests/plan/test_launch.py: TRL_SLURM): no false
    CFG002 (4/rank × 32 processes), no DataParallel trap, no torchrun glued before srun."""
    import shutil

    from tests.plan.test_launch import TRL_SLURM

    (tmp_path / "examples" / "accelerate_configs").mkdir(parents=True)
    shutil.copy(
        ROOT / "tests" / "plan" / "data" / "deepspeed_zero3.yaml",
        tmp_path / "examples" / "accelerate_configs",
    )
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("per_device_train_batch_size: 4\nnum_generations: 8\nuse_vllm: true\nvllm_mode: server\n")
    facts = str(write_json(snapshot(8)))
    proc = run_cli("check", "--facts", facts, "--config", str(cfg), "--launch", TRL_SLURM, "-v", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "CFG002" not in proc.stdout and "LAY003" not in proc.stdout
    assert "rank 0→GPU 0" in proc.stdout and "rank 7→GPU 7" in proc.stdout
    assert "torchrun" not in proc.stdout
    assert "vLLM (server) on a node srun picks" in proc.stdout  # not "GPU ?" of this node


def test_unresolved_launch_is_said_and_its_rules_skipped(write_json):
    proc = run_cli("check", "--facts", _facts(write_json), "-v", "--", "sudo", "python", "train.py")
    assert proc.returncode == 0 and "LAY003" not in proc.stdout.replace("LAY003,", "")
    assert "[-] GPU layout — launch not resolved: `sudo` is not a launcher" in proc.stdout
    assert "skipped: launch not resolved" in proc.stdout and "torchrun" not in proc.stdout
    data = json.loads(
        run_cli(
            "check", "--facts", _facts(write_json), "--format", "json", "--", "sudo", "python", "train.py"
        ).stdout
    )
    layout = next(a for a in data["areas"] if a["key"] == "layout")
    assert "LAY003" in layout["skipped"] and "sudo" in layout["note"]


@pytest.mark.parametrize(
    "launch, needle",
    [
        ("torchrun --nnodes -5 t.py", "--nnodes -5"),
        ("torchrun --nnodes 1:-4 t.py", "--nnodes 1:-4"),
        ("torchrun --nproc_per_node 2.9 t.py", "--nproc_per_node 2.9"),
        ("torchrun --nproc_per_node two t.py", "--nproc_per_node two"),
        ("torchrun --nproc_per_node 1e999 t.py", "--nproc_per_node 1e999"),
        ("deepspeed --num_nodes -3 t.py", "--num_nodes -3"),
        ("accelerate launch --num_processes 1e999 t.py", "--num_processes 1e999"),
        ("trl vllm-serve --model m --data_parallel_size -1", "--data_parallel_size -1"),
    ],
)
def test_impossible_launch_counts_exit_2(write_json, tmp_path, launch, needle):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("use_vllm: true\nvllm_mode: server\n")
    proc = run_cli(
        "check",
        "--facts",
        _facts(write_json),
        "--config",
        str(cfg),
        "--launch",
        launch,
        "--launch",
        "python t.py",
    )
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "launch", ["torchrun --nproc_per_node gpu t.py", "torchrun --nproc_per_node auto --nnodes 1:2 t.py"]
)
def test_torchrun_count_keywords_stay_valid(write_json, launch):
    proc = run_cli("check", "--facts", _facts(write_json), "--launch", launch)
    assert proc.returncode in (0, 1) and "rank 1→GPU 1" in proc.stdout


def test_nothing_installed_is_not_a_clean_bill(write_json):
    """Exit 0 (nothing wrong was found with the run), a '!' that says nothing of the stack was
    checked and how to point envdoctor at the training environment; --strict exits 1."""
    empty = str(write_json(snapshot(2, packages={})))
    proc = run_cli("check", "--facts", empty)
    assert proc.returncode == 0
    assert "No issues found" not in proc.stdout and "[!] Packages" in proc.stdout
    assert "ENV001 no training stack to check here" in proc.stdout
    assert "--facts" in proc.stdout and "--assume" in proc.stdout
    assert run_cli("check", "--facts", empty, "--strict").returncode == 1
    assumed = run_cli("check", "--facts", empty, "--assume", "trl==1.16.0", "--assume", "torch==2.9.0")
    assert assumed.returncode == 0 and "ENV001" not in assumed.stdout
    assert "trl 1.16.0" in assumed.stdout
    bad = run_cli("check", "--facts", empty, "--assume", "trl")
    assert bad.returncode == 2 and "NAME==VERSION" in bad.stderr


# --- references users can follow ---------------------------------------------------------------

_LOCAL_REF = re.compile(r"^(docs|rules)/[\w./-]+(#[\w-]+)?$")
_GITHUB_SOURCE = re.compile(r"^[\w.-]+/[\w.-]+: [\w./-]+$")  # owner/repo: path (knowledge notes)


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _local_ref_ok(ref: str) -> bool:
    path, _, anchor = ref.partition("#")
    file = ROOT / path
    if not file.is_file():
        return False
    headings = [line.lstrip("#") for line in file.read_text().splitlines() if line.startswith("#")]
    return not anchor or anchor in {_slug(h) for h in headings}


def _all_references():
    import yaml

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "references":
                    yield from ((where, r) for r in (value if isinstance(value, list) else [value]))
                else:
                    yield from walk(value, where)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item, where)

    for path in sorted((ROOT / "rules").rglob("*.yaml")):
        yield from walk(yaml.safe_load(path.read_text()), path.relative_to(ROOT))


def test_references_are_public_urls_or_shipped_docs():
    """`explain` shows public URLs or documents of this repository, never a path users lack;
    the knowledge and triage data may also name a file of a public repository."""
    docs = rule_docs()
    bad = []
    for doc in docs.values():
        for ref in doc.references:
            first = ref.split(" ")[0]
            if not (first.startswith("https://") or (_LOCAL_REF.match(first) and _local_ref_ok(first))):
                bad.append(f"{doc.id}: {ref}")
    for where, ref in _all_references():
        first = str(ref).split(" (")[0]
        if first.startswith("https://"):
            continue
        if _LOCAL_REF.match(first.split(" ")[0]) and _local_ref_ok(first.split(" ")[0]):
            continue
        if _GITHUB_SOURCE.match(first):
            continue
        bad.append(f"{where}: {ref}")
    assert not bad, bad


def test_nothing_points_at_material_users_do_not_have():
    text = [
        (p, p.read_text())
        for folder in ("rules", "envdoctor")
        for p in (ROOT / folder).rglob("*")
        if p.suffix in (".py", ".yaml", ".md")
    ]
    leaks = [
        str(p.relative_to(ROOT))
        for p, t in text
        if re.search(r"\.\./shared/|/work/shared|shared/seeds|shared/knowledge", t)
    ]
    assert not leaks
    for rule_id in ("LAY001", "LAY003", "PKG002", "MEM001", "TRI001"):
        out = run_cli("explain", rule_id).stdout
        assert "shared/" not in out and "docs/field-reports.md#report-" in out, out
