"""The data and reward rules (DAT001-DAT009) on small datasets built here: local files of each
format, a save_to_disk folder, the datasets cache's and the hub cache's layouts, a real
tokenizer.json, reward functions in scripts and local modules, TRL releases that differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.plan.data_source import MAX_ROWS, read_dataset
from envdoctor.plan.rewards import from_cli, from_script, returns_nothing
from tests.conftest import LEGACY, MODERN, findings, snapshot


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _dat(
    tmp_path: Path, config: dict | None = None, launch: str | None = None, trl: str | None = None
) -> dict:
    pkgs = dict(MODERN if trl is None else {**MODERN, "trl": trl})
    snap = snapshot(packages=pkgs, env={"HF_HOME": str(tmp_path / "hf")})
    return {f.rule: f for f in findings(snap, config=config, launch=launch) if f.rule.startswith("DAT")}


ROWS = [{"prompt": f"question {i}", "solution": str(i)} for i in range(3)]


# -- where datasets are found ---------------------------------------------------------------


def _arrow(path: Path, rows: list[dict]) -> None:
    pa = pytest.importorskip("pyarrow")
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def test_datasets_cache_layout_is_read(tmp_path):
    root = tmp_path / "hf" / "datasets" / "trl-lib___tiny_math" / "default" / "0.0.0" / "abc123"
    _arrow(root / "tiny_math-train.arrow", [{"question": "q", "answer": "a"}])
    _arrow(root / "tiny_math-test.arrow", [{"prompt": "q"}])
    sample = read_dataset("trl-lib/Tiny-Math", None, "train", {"HF_HOME": str(tmp_path / "hf")})
    assert sample.not_read is None and sample.columns == ["question", "answer"]
    found = _dat(tmp_path, launch="trl grpo --dataset_name trl-lib/Tiny-Math")
    assert "question, answer" in found["DAT002"].message and "DAT001" not in found
    assert "DAT002" not in _dat(tmp_path, {"dataset_name": "trl-lib/Tiny-Math"})  # no launch: not known


def test_hf_datasets_cache_variable_wins(tmp_path):
    root = tmp_path / "elsewhere" / "org___ds" / "default" / "0.0.0" / "h"
    _arrow(root / "ds-train-00000-of-00002.arrow", ROWS[:2])
    _arrow(root / "ds-train-00001-of-00002.arrow", ROWS[2:])
    sample = read_dataset("org/ds", None, "train", {"HF_DATASETS_CACHE": str(tmp_path / "elsewhere")})
    assert len(sample.rows) == 3 and sample.columns == ["prompt", "solution"]


def test_hub_cache_parquet_split_files(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    snap = tmp_path / "hf" / "hub" / "datasets--org--ds" / "snapshots" / ("a" * 40) / "data"
    snap.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"text": "x"}]), snap / "train-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist([{"prompt": "x"}]), snap / "test-00000-of-00001.parquet")
    sample = read_dataset("org/ds", None, "train", {"HF_HOME": str(tmp_path / "hf")})
    assert sample.columns == ["text"] and sample.source.endswith("train-00000-of-00001.parquet")


def test_save_to_disk_folder(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS)}).save_to_disk(str(tmp_path / "saved"))
    sample = read_dataset(str(tmp_path / "saved"), None, "train", {})
    assert sample.not_read is None and len(sample.rows) == 3 and sample.columns == ["prompt", "solution"]
    missing = read_dataset(str(tmp_path / "saved"), None, "validation", {})
    assert "no data file of split 'validation'" in (missing.not_read or "")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("d.json", json.dumps(ROWS)),
        ("d.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS)),
        ("d.csv", "prompt,solution\n" + "".join(f"{r['prompt']},{r['solution']}\n" for r in ROWS)),
    ],
)
def test_text_formats(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    sample = read_dataset(str(tmp_path / name), None, "train", {})
    assert [r["prompt"] for r in sample.rows] == [r["prompt"] for r in ROWS]


def test_reads_a_bounded_sample(tmp_path):
    path = _jsonl(tmp_path / "big.jsonl", [{"prompt": "p" * 100}] * (MAX_ROWS * 20))
    assert len(read_dataset(str(path), None, "train", {}).rows) == MAX_ROWS


def test_not_cached_is_info_and_nothing_else(tmp_path):
    found = _dat(tmp_path, {"dataset_name": "openai/gsm8k", "remove_unused_columns": True})
    assert set(found) == {"DAT001"}
    assert found["DAT001"].severity.value == "info"
    assert "not cached; nothing is downloaded" in found["DAT001"].message


def test_unreadable_file_is_named_not_a_traceback(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"prompt": "a"}\n{not json\n')
    found = _dat(tmp_path, {"dataset_name": str(tmp_path / "d.jsonl")})
    assert set(found) == {"DAT001"} and "d.jsonl could not be read" in found["DAT001"].message


# -- prompt lengths -------------------------------------------------------------------------


def _word_tokenizer(folder: Path, template: str | None = None) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, "word": 1, "hi": 2}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template} if template else {}))


def test_exact_token_count_from_the_cached_tokenizer_is_an_error(tmp_path):
    hub_model = tmp_path / "hf" / "hub" / "models--org--m" / "snapshots" / ("b" * 40)
    _word_tokenizer(hub_model, template="{{ messages }}")
    (hub_model.parent.parent / "refs").mkdir()
    (hub_model.parent.parent / "refs" / "main").write_text("b" * 40)
    rows = [{"prompt": [{"role": "user", "content": "word " * n}]} for n in (10, 300, 500)]
    path = _jsonl(tmp_path / "d.jsonl", rows)
    config = {
        "dataset_name": str(path),
        "model_name_or_path": "org/m",
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_max_model_length": 256,
    }
    found = _dat(tmp_path, config, launch=f"trl grpo --dataset_name {path}")
    f = found["DAT004"]
    assert f.severity.value == "error"
    assert f.evidence["rows_over"] == 2 and f.evidence["longest_tokens"] == 500
    assert "counted with" in f.evidence["counted"] and "DAT003" not in found


def test_estimated_count_is_a_warning_that_says_so(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "word " * 400}])
    config = {
        "dataset_name": str(path),
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_max_model_length": 100,
    }
    f = _dat(tmp_path, config)["DAT004"]
    assert f.severity.value == "warning" and "estimated" in f.message


def test_server_max_model_len_from_the_server_line(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "word " * 400}])
    launch = (
        "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model m --max_model_len 128 && "
        f"CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1 t.py --dataset_name {path}"
    )
    found = _dat(tmp_path, {"use_vllm": True, "vllm_mode": "server"}, launch=launch)
    assert "--max_model_len" in found["DAT004"].message


def test_trl_before_026_truncates_to_max_prompt_length(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "word " * 2000}])
    config = {"dataset_name": str(path), "use_vllm": True, "vllm_mode": "colocate"}
    found = _dat(tmp_path, config, trl="0.20.0")
    assert "DAT004" not in found  # cut to 512 before vLLM, whose max_model_len is 512 + 256
    assert "from the left" in found["DAT005"].message  # the default 512, without the key


def test_trl_025_does_not_cut_conversational_prompts_for_vllm(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": [{"role": "user", "content": "word " * 4000}]}])
    config = {"dataset_name": str(path), "use_vllm": True, "vllm_mode": "colocate"}
    assert "DAT004" in _dat(tmp_path, config, trl="0.25.1")
    assert "DAT004" not in _dat(tmp_path, config, trl="0.24.0")


def test_trl_026_ignores_max_prompt_length(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "word " * 2000}])
    assert "DAT005" not in _dat(tmp_path, {"dataset_name": str(path)}, trl="0.26.0")
    f = _dat(tmp_path, {"dataset_name": str(path), "max_prompt_length": 512}, trl="0.26.0")["DAT005"]
    assert "no longer truncates" in f.message


# -- reward functions -----------------------------------------------------------------------


def _script(tmp_path: Path, body: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def test_rewards_from_a_local_module_and_a_bound_list(tmp_path):
    _script(tmp_path, "def acc(completions, solution, **kw):\n    return []\n", "my_rewards.py")
    script = _script(
        tmp_path,
        "from trl import GRPOTrainer\nfrom my_rewards import acc\nimport my_rewards as mr\n"
        "def main():\n    funcs = [acc, mr.acc, lambda completions, **k: []]\n"
        "    GRPOTrainer(model='m', reward_funcs=funcs)\n",
    )
    reading = from_script(script)
    assert [f.name for f in reading.funcs] == ["acc", "acc", "<lambda>"]
    assert reading.funcs[0].where == "my_rewards.py:1" and not reading.unresolved


def test_unreadable_rewards_are_listed_not_guessed(tmp_path):
    script = _script(
        tmp_path, "from trl import GRPOTrainer\nGRPOTrainer(model='m', reward_funcs=get_funcs(args))\n"
    )
    reading = from_script(script)
    assert not reading.funcs and "get_funcs(args)" in reading.unresolved[0]


def test_cli_dotted_path_and_registry(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    _script(tmp_path, "def r(completions, **kw): ...\n", "pkg/rewards.py")
    monkeypatch.chdir(tmp_path)
    reading = from_cli(["pkg.rewards.r", "accuracy_reward", "nope"], "1.0.0", [tmp_path])
    assert [f.name for f in reading.funcs] == ["r", "accuracy_reward"] and reading.unknown == ["nope"]


def test_registry_reward_needs_its_column(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "q", "answer": "4"}])
    f = _dat(tmp_path, launch=f"trl grpo --reward_funcs accuracy_reward --dataset_name {path}")["DAT007"]
    assert "accuracy_reward" in f.message and "'solution'" in f.message and "answer" in f.message


def test_registry_name_newer_than_installed_trl(tmp_path):
    found = _dat(tmp_path, launch="trl grpo --reward_funcs accuracy_reward --dataset_name x/y", trl="0.20.0")
    assert "from 0.24.0" in found["DAT009"].message
    assert "DAT009" not in _dat(tmp_path, launch="trl grpo --reward_funcs x --dataset_name x/y", trl="0.17.0")


def test_trl_arguments_by_release(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "q"}])
    script = _script(
        tmp_path,
        "from trl import GRPOTrainer\ndef r(prompts, completions): ...\nGRPOTrainer(reward_funcs=r)\n",
    )
    launch = f"python {script} --dataset_name {path}"
    assert "DAT008" not in _dat(tmp_path, launch=launch, trl=LEGACY["trl"])  # 0.15: prompts, completions
    f = _dat(tmp_path, launch=launch)["DAT008"]
    assert f.evidence["unexpected"] == ["completion_ids", "trainer_state", "log_extra", "log_metric"]


def test_positional_only_reward(tmp_path):
    script = _script(
        tmp_path,
        "from trl import GRPOTrainer\ndef r(completions, /, **kw): ...\nGRPOTrainer(reward_funcs=[r])\n",
    )
    assert "positionally" in _dat(tmp_path, launch=f"python {script}")["DAT007"].message


def test_remove_unused_columns_drops_what_a_reward_needs(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", ROWS)
    script = _script(
        tmp_path,
        "from trl import GRPOTrainer\ndef r(completions, solution, **kw): ...\n"
        "GRPOTrainer(reward_funcs=[r])\n",
    )
    found = _dat(tmp_path, {"remove_unused_columns": True}, launch=f"python {script} --dataset_name {path}")
    assert "DAT006" in found
    assert found["DAT007"].fix == "remove_unused_columns: false" and "solution" in found["DAT006"].message


def test_a_script_that_maps_the_dataset_is_not_judged_by_its_raw_columns(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"problem": "q", "solution": "4"}])
    script = _script(
        tmp_path,
        "from trl import GRPOTrainer\nds = ds.map(lambda x: {'prompt': x['problem']})\n"
        "def r(completions, answer, **kw): ...\nGRPOTrainer(reward_funcs=[r])\n",
    )
    found = _dat(tmp_path, launch=f"python {script} --dataset_name {path}")
    assert "DAT002" not in found and "DAT007" not in found


def test_chat_template_set_by_the_script_or_config_is_not_missing(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": [{"role": "user", "content": "hi"}]}])
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "tokenizer_config.json").write_text("{}")
    base = f"--dataset_name {path} --model_name_or_path {tmp_path / 'model'}"
    assert "DAT003" in _dat(tmp_path, launch=f"trl grpo {base}")
    script = _script(tmp_path, "tok.chat_template = '{{ m }}'\n")
    assert "DAT003" not in _dat(tmp_path, launch=f"python {script} {base}")
    assert "DAT003" not in _dat(tmp_path, launch=f"trl grpo {base} --chat_template_path t.jinja")


def test_reward_names_without_a_launch_are_not_judged_as_trl_cli(tmp_path):
    # open-r1's recipes name its own registry ("accuracy", "format"): only `trl grpo` reads TRL's
    assert "DAT009" not in _dat(tmp_path, {"reward_funcs": ["accuracy", "format"]})


def test_a_dataset_mixture_wins_over_dataset_name(tmp_path):
    assert not _dat(tmp_path, {"datasets": [{"path": "a/b"}], "dataset_name": "c/d"})


@pytest.mark.parametrize(
    ("body", "nothing"),
    [
        ("    x = 1", True),
        ("    return None", True),
        ("    def inner():\n        return [1.0]\n    inner()", True),
        ("    ...", False),  # a stub: not judged
        ('    """doc"""\n    pass', False),
        ("    if x:\n        return [1.0]", False),
        ("    for c in completions:\n        yield 1.0", False),
        ("    raise NotImplementedError", False),
    ],
)
def test_returns_nothing(body, nothing):
    import ast

    node = ast.parse(f"def r(completions, **kw):\n{body}\n").body[0]
    assert isinstance(node, ast.FunctionDef)
    assert returns_nothing(node) is nothing


def test_keywords_from_rollout_func_or_environments_are_not_missing(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "q"}])
    env_script = _script(
        tmp_path,
        "from trl import GRPOTrainer\ndef r(environments, **kw):\n    return [1.0]\n"
        "GRPOTrainer(reward_funcs=r, environment_factory=Env)\n",
    )
    assert "DAT007" not in _dat(tmp_path, launch=f"python {env_script} --dataset_name {path}")
    rollout = _script(
        tmp_path,
        "from trl import GRPOTrainer\ndef r(completions, score, **kw):\n    return score\n"
        "GRPOTrainer(reward_funcs=r, rollout_func=roll)\n",
        "rollout.py",
    )
    assert "DAT007" not in _dat(tmp_path, launch=f"python {rollout} --dataset_name {path}")
    plain = _script(
        tmp_path,
        "from trl import GRPOTrainer\ndef r(completions, score, **kw):\n    return score\n"
        "GRPOTrainer(reward_funcs=r)\n",
        "plain.py",
    )
    assert "'score'" in _dat(tmp_path, launch=f"python {plain} --dataset_name {path}")["DAT007"].message


def test_hostile_files_are_bounded_and_named(tmp_path):
    one_line = tmp_path / "one.jsonl"
    with open(one_line, "wb") as fh:  # one 40 MiB line: read only up to the bound
        fh.write(b'{"prompt": "' + b"x" * (40 * 1024 * 1024) + b'"}\n')
    assert read_dataset(str(one_line), None, "train", {}).rows == []
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert "could not be read" in (read_dataset(str(deep), None, "train", {}).not_read or "")
    wide = _jsonl(tmp_path / "wide.jsonl", [{f"c{i}": i for i in range(5000)}])
    found = _dat(tmp_path, launch=f"trl grpo --dataset_name {wide}")
    assert "and 980 more" in found["DAT002"].message and len(found["DAT002"].message) < 2000
    script = _script(tmp_path, "x = " + "(" * 100_000 + ")" * 100_000 + "\n")
    assert from_script(script).unresolved


def test_a_dataset_the_script_loads_by_a_literal_name(tmp_path):
    from envdoctor.plan.data_source import named_in_script

    assert named_in_script('load_dataset("org/ds", "main", split="train[:100]")') == (
        "org/ds",
        "main",
        "train",
    )
    assert named_in_script('datasets.load_dataset("json", data_files="d.jsonl")') == (
        "d.jsonl",
        None,
        "train",
    )
    assert named_in_script("load_dataset(args.dataset_name)") is None
    assert named_in_script('load_dataset("a/b"); load_dataset("c/d")') is None
    path = _jsonl(tmp_path / "d.jsonl", [{"question": "q"}])
    script = _script(
        tmp_path,
        "from datasets import load_dataset\nfrom trl import GRPOTrainer\n"
        f"ds = load_dataset('json', data_files={str(path)!r}, split='train')\n"
        "def r(completions, **kw):\n    return [1.0]\nGRPOTrainer(reward_funcs=r, train_dataset=ds)\n",
    )
    assert "question" in _dat(tmp_path, launch=f"python {script}")["DAT002"].message


def test_a_module_launched_with_python_m(tmp_path, monkeypatch):
    (tmp_path / "src" / "proj").mkdir(parents=True)
    (tmp_path / "src" / "proj" / "train.py").write_text(
        "from trl import GRPOTrainer\ndef r(completions):\n    return [1.0]\nGRPOTrainer(reward_funcs=[r])\n"
    )
    monkeypatch.chdir(tmp_path)
    found = _dat(tmp_path, launch="accelerate launch --num_processes 1 -m proj.train")
    assert "src/proj/train.py:2" in found["DAT008"].message


def test_a_reward_defined_inside_main(tmp_path):
    script = _script(
        tmp_path,
        "from trl import GRPOTrainer\ndef main():\n    def r(completions):\n        return [1.0]\n"
        "    GRPOTrainer(reward_funcs=[r])\nif __name__ == '__main__':\n    main()\n",
    )
    reading = from_script(script)
    assert [(f.name, f.where) for f in reading.funcs] == [("r", "train.py:3")]
    twice = _script(
        tmp_path,
        "def a():\n    def r(x): ...\ndef b():\n    def r(y): ...\nGRPOTrainer(reward_funcs=r)\n",
        "t2.py",
    )
    assert not from_script(twice).funcs and "defined 2 times" in from_script(twice).unresolved[0]


def test_arrow_files_the_datasets_library_writes(tmp_path):
    datasets = pytest.importorskip("datasets")
    src = _jsonl(
        tmp_path / "src.jsonl", [{"prompt": [{"role": "user", "content": "hi"}], "solution": "1"}] * 3
    )
    datasets.load_dataset("json", data_files=str(src), cache_dir=str(tmp_path / "cache"), split="train")
    arrows = sorted((tmp_path / "cache").rglob("*-train*.arrow"))
    assert arrows
    sample = read_dataset(str(arrows[0]), None, "train", {})
    assert sample.columns == ["prompt", "solution"] and sample.rows[0]["prompt"][0]["role"] == "user"


@pytest.mark.parametrize("name", ["a\x00b", "x" * 5000, "../" * 50, "org/" + "n" * 300])
def test_hostile_dataset_names(tmp_path, name):
    found = _dat(tmp_path, launch="trl grpo", config={"dataset_name": name, "dataset_train_split": "tr[ain*"})
    assert set(found) == {"DAT001"}


def test_prompts_that_leave_no_room_for_the_completion(tmp_path):
    path = _jsonl(tmp_path / "d.jsonl", [{"prompt": "word " * 100}])  # ~125 tokens estimated
    config = {
        **_COLOCATE,
        "dataset_name": str(path),
        "vllm_max_model_length": 300,
        "max_completion_length": 256,
    }
    f = _dat(tmp_path, config, launch="trl grpo")["DAT004"]
    assert f.severity.value == "warning" and "leave fewer than max_completion_length" in f.message
    assert "<= 44" in f.fix
    config["max_completion_length"] = 64
    assert "DAT004" not in _dat(tmp_path, config, launch="trl grpo")


_COLOCATE = {"use_vllm": True, "vllm_mode": "colocate"}


def test_a_name_bound_by_an_assignment_is_not_a_def_local_to_another_function(tmp_path):
    # the dataset helper fmt(ex) lives inside load_data(); the reward fmt comes from a call
    script = tmp_path / "train.py"
    script.write_text(
        "from trl import GRPOTrainer\nfrom rewards import build_reward_funcs\n"
        "def load_data(ds):\n    def fmt(ex):\n        return {'prompt': ex['q']}\n    return ds.map(fmt)\n"
        "def main():\n    correctness, fmt = build_reward_funcs()\n"
        "    GRPOTrainer(model='m', reward_funcs=[correctness, fmt])\n"
    )
    reading = from_script(script)
    assert not [f for f in reading.funcs if f.name == "fmt"]
    assert any(u.startswith("fmt (") for u in reading.unresolved)


def test_a_reward_defined_inside_main_alone_is_still_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from trl import GRPOTrainer\n"
        "def main():\n    def fmt(completions):\n        return [1.0]\n"
        "    GRPOTrainer(model='m', reward_funcs=[fmt])\n"
    )
    assert [f.name for f in from_script(script).funcs] == ["fmt"]
