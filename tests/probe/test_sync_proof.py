"""The weight-sync proof on the CPU: a stand-in for vLLM (a bf16 copy of the model that TRL's
sync fills by name and that samples with log-probs) lets every verdict happen for real, and the
sabotaged syncs the GPU validation runs (docs/validation/probe-model-gpu.md) are caught."""

from __future__ import annotations

import copy

import pytest

from envdoctor.probe.run import sync_proof
from envdoctor.probe.run.sync_proof import judge, prove

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


class FakeEngine:
    """What TRL's VLLMGeneration offers the proof: sync_weights and generate, over an engine
    that holds its own bf16 copy of the checkpoint, like vLLM."""

    mode = "colocate"

    def __init__(self, model, break_sync: str | None = None):
        self.trainer_model = model
        self.engine = copy.deepcopy(model).to(torch.bfloat16).eval()
        self.break_sync = break_sync
        self.temperature, self.top_p, self.top_k, self.min_p = 0.7, 0.9, 50, None
        self.repetition_penalty, self.max_completion_length, self.logprobs = 1.1, 64, None
        self.generation_kwargs = {"stop": ["x"]}
        self.seen: dict = {}

    def sync_weights(self):
        state = dict(self.trainer_model.named_parameters())
        names = list(state)
        if self.break_sync == "name-mapping":  # layer 0's tensors land in layer 1 and back
            swap = {
                n: n.replace("layers.0.", "layers.X.")
                .replace("layers.1.", "layers.0.")
                .replace("layers.X.", "layers.1.")
                for n in names
            }
            state = {swap[n]: state[n] for n in names}
        with torch.no_grad():
            for name, p in self.engine.named_parameters():
                p.copy_(state[name].to(p.dtype))

    def generate(self, prompts, images, num_generations):
        self.seen = {
            k: getattr(self, k)
            for k in ("temperature", "top_p", "top_k", "max_completion_length", "logprobs")
        }
        gen = torch.Generator().manual_seed(0)
        completions, logprobs = [], []
        for prompt in prompts:
            ids, lps = list(prompt), []
            for _ in range(self.max_completion_length):
                with torch.no_grad():
                    logits = self.engine(input_ids=torch.tensor([ids])).logits[0, -1].float()
                dist = torch.log_softmax(logits, -1)
                tok = int(torch.multinomial(dist.exp(), 1, generator=gen))
                ids.append(tok)
                lps.append([float(dist[tok])])
            completions.append(ids[len(prompt) :])
            logprobs.append(lps)
        return prompts, completions, logprobs, None


class Accel:
    @staticmethod
    def unwrap_model(model):
        return model


class Trainer:
    def __init__(self, model, engine):
        self.model, self.vllm_generation, self.accelerator = model, engine, Accel()


@pytest.fixture(scope="module")
def parts():
    from envdoctor.probe.run.worker import word_tokenizer

    tok = word_tokenizer(sorted({w for p in sync_proof.PROMPTS for w in p.split()}))
    config = transformers.Qwen2Config(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return tok, transformers.Qwen2ForCausalLM(config)


def _prove(parts, break_sync=None, fault=None):
    tok, base = parts
    model = copy.deepcopy(base)
    engine = FakeEngine(model, break_sync)
    before = {n: p.clone() for n, p in model.named_parameters()}
    out = prove(Trainer(model, engine), tok, fault)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())  # restored
    return out, engine


def test_a_working_sync_is_proved_and_trls_sampling_settings_are_restored(parts):
    out, engine = _prove(parts)
    assert out["checked"] and out["verdict"] == "proved", out
    assert out["move"] > 1.0 and out["mean_abs_diff_to_trainer"] < 0.2 * out["move"]
    assert engine.seen == {
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": 0,
        "max_completion_length": sync_proof.NEW_TOKENS,
        "logprobs": 0,
    }
    assert (engine.temperature, engine.top_k, engine.generation_kwargs) == (0.7, 50, {"stop": ["x"]})


def test_a_sync_that_does_nothing_is_stale(parts):
    out, _ = _prove(parts, fault="sync_noop")
    assert out["verdict"] == "stale", out
    assert out["mean_abs_diff_to_weights_before"] < 0.2 * out["move"]


def test_wrong_tensors_in_vllm_are_a_mismatch(parts):
    assert _prove(parts, fault="sync_wrong")[0]["verdict"] == "mismatch"
    assert _prove(parts, break_sync="name-mapping")[0]["verdict"] == "mismatch"


def test_the_verdict_thresholds():
    assert judge(0.05, 4.0, 4.0) == "proved"
    assert judge(0.05, 4.0, 4.0, largest=2.0) == "mismatch"  # one token far off
    assert judge(4.0, 0.05, 4.0) == "stale"
    assert judge(2.0, 3.0, 4.0) == "mismatch"
    assert judge(0.01, 0.02, 0.1) == "not proved"  # a move too small proves nothing
    assert judge(float("nan"), 1.0, 4.0) == "mismatch"


def test_sharded_or_pathless_trainers_are_not_checked_and_say_why(parts):
    tok, model = parts

    class Sharded:
        is_deepspeed_enabled = True

    assert "sharded" in prove(Sharded(), tok)["reason"]

    class Plain:
        pass

    plain = Plain()
    plain.model = model
    assert prove(plain, tok)["checked"] is False


def _judged(per_rank: dict, mode: str = "colocate", status: str = "pass"):
    from envdoctor.probe.judge.sync_judge import judge_sync
    from envdoctor.probe.run.runner import ProbeResult, ProbeSpec

    spec = ProbeSpec(launcher=["python"], use_vllm=mode != "off", vllm_mode=None if mode == "off" else mode)
    result = ProbeResult(
        status=status, ranks={r: {"weight_sync": w, "finished": True} for r, w in per_rank.items()}
    )
    judge_sync(spec, result)
    return result


def test_a_stale_sync_on_any_rank_is_prb019_and_fails_the_probe():
    proved = {
        "checked": True,
        "verdict": "proved",
        "mean_abs_diff_to_trainer": 0.04,
        "mean_abs_diff_to_weights_before": 9.5,
        "move": 9.5,
        "tokens": 32,
        "path": "p",
    }
    stale = {
        **proved,
        "verdict": "stale",
        "mean_abs_diff_to_trainer": 19.7,
        "mean_abs_diff_to_weights_before": 0.004,
    }
    r = _judged({0: proved, 1: stale}, mode="server")
    (f,) = [x for x in r.findings if x.rule == "PRB019"]
    assert f.severity.name == "ERROR" and r.status == "fail"
    assert "silently did nothing" in f.message and "NCCL" in f.message
    assert r.weight_sync["ranks"] == {"0": "proved", "1": "stale"}
    assert r.weight_sync["verdict"] == "stale"  # the report shows the rank that failed


def test_a_proved_sync_is_on_record_and_a_cpu_probe_says_the_proof_needs_vllm():
    r = _judged(
        {
            0: {
                "checked": True,
                "verdict": "proved",
                "move": 9.5,
                "tokens": 32,
                "mean_abs_diff_to_trainer": 0.04,
                "mean_abs_diff_to_weights_before": 9.5,
                "path": "colocate",
            }
        }
    )
    assert (
        [x.rule for x in r.findings] == ["PRB012"]
        and "weight sync proved" in r.findings[0].message
        and r.status == "pass"
    )
    cpu = _judged({0: {"checked": False, "reason": "needs vLLM: …"}}, mode="off")
    assert cpu.findings == [] and cpu.weight_sync["reason"].startswith("needs vLLM")


class PeftEngine(FakeEngine):
    """TRL's PEFT sync (``VLLMGeneration._iter_weights``): merge the adapters, send the base
    model's weights under vLLM's names (``base_model.model.`` and ``.base_layer`` dropped, the
    adapters skipped), unmerge; ``skip_merge`` sends the base weights without merging."""

    def __init__(self, model, checkpoint, break_sync=None):
        super().__init__(checkpoint, break_sync)  # vLLM loaded the checkpoint, no adapters
        self.trainer_model = model

    def sync_weights(self):
        model = self.trainer_model
        if self.break_sync != "skip_merge":
            model.merge_adapter()
        try:
            sent = {}
            for name, p in model.named_parameters():
                name = name.removeprefix("base_model.model.").replace(".base_layer", "")
                if model.prefix in name:
                    continue
                sent[name] = p.detach().clone()
        finally:
            if self.break_sync != "skip_merge":
                model.unmerge_adapter()
        with torch.no_grad():
            for name, p in self.engine.named_parameters():
                p.copy_(sent[name].to(p.dtype))


def _prove_peft(parts, break_sync=None, fault=None):
    peft = pytest.importorskip("peft")
    tok, base = parts
    model = peft.get_peft_model(
        copy.deepcopy(base),
        peft.LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"]),
    )
    before = {n: p.clone() for n, p in model.named_parameters()}
    out = prove(Trainer(model, PeftEngine(model, base, break_sync)), tok, fault)
    assert "merge_adapter" not in vars(model)  # the sabotage is undone
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())  # restored
    return out


def test_a_lora_merge_sync_is_proved_and_a_skipped_merge_is_caught(parts):
    out = _prove_peft(parts)
    assert out["checked"] and out["verdict"] == "proved", out
    assert "PEFT: merge_adapter" in out["path"]
    skipped = _prove_peft(parts, break_sync="skip_merge")
    assert skipped["verdict"] == "mismatch", skipped  # vLLM holds the base without the adapters


def test_the_skip_merge_sabotage_the_gpu_validation_runs_is_caught(parts):
    assert _prove_peft(parts, fault="skip_merge")["verdict"] == "mismatch"
