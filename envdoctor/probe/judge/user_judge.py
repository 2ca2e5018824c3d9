"""Judge the probe's step on the user's data and reward functions (``user_rewards.py`` in the
ranks): the report's ``probe.data`` and ``probe.rewards``, and a finding per fault, under the
ids the data rules give the same failure before the model loads (DAT002–DAT013), so that the
check and the probe speak with one id and one fix. DAT014 (info) says why the step ran the
probe's own prompts or reward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envdoctor.findings import Finding, Severity

if TYPE_CHECKING:
    from envdoctor.probe.interface import ProbeResult, ProbeSpec

_SHOWN = 20  # columns, keywords listed in a message at most


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(map(str, names[:_SHOWN])) + more


def summarize(result: ProbeResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """probe.data (rank 0's, else the first rank's) and probe.rewards (every rank's calls and
    faults, merged by function)."""
    ranks = [d for _r, d in sorted(result.ranks.items()) if isinstance(d.get("data"), dict)]
    data = dict(ranks[0]["data"]) if ranks else {}
    rewards: dict[str, Any] = {}
    functions: dict[str, dict[str, Any]] = {}
    for rank in ranks:
        rec = rank.get("rewards") or {}
        for key in ("source", "used", "reason"):
            if rec.get(key) is not None:
                rewards.setdefault(key, rec[key])
        for key, entry in (rec.get("functions") or {}).items():
            merged = functions.setdefault(key, {**entry, "called": 0, "errors": []})
            merged["called"] += int(entry.get("called") or 0)
            merged["shape"] = merged.get("shape") or entry.get("shape")
            seen = {e.get("rule") for e in merged["errors"]}
            merged["errors"] += [e for e in entry.get("errors") or [] if e.get("rule") not in seen]
    if functions:
        rewards["functions"] = [{k: v for k, v in f.items() if k != "keywords"} for f in functions.values()]
        for f in rewards["functions"]:
            f["errors"] = [{k: v for k, v in e.items() if k != "traceback"} for e in f["errors"]]
        rewards["_keywords"] = {k: f.get("keywords") or [] for k, f in functions.items()}
    return data, rewards


def judge_user(spec: ProbeSpec, result: ProbeResult) -> None:
    """Fill ``result.data`` / ``result.rewards`` and add their findings."""
    data, rewards = summarize(result)
    if not data and not rewards:
        return
    keywords = rewards.pop("_keywords", {})
    result.data, result.rewards = data, rewards
    f = result.findings
    for err in data.get("errors") or []:
        finding = _data_finding(spec, data, err)
        if finding is not None:
            f.append(finding)
    for func in rewards.get("functions") or []:
        for err in func.get("errors") or []:
            f.append(_reward_finding(func, err, keywords.get(func["name"], [])))
    own = []
    if data and not data.get("used"):
        own.append(f"its own prompts ({data.get('reason')})")
    if rewards and not rewards.get("used"):
        own.append(f"its own reward ({rewards.get('reason')})")
    if result.status == "pass" and any(x.severity == Severity.ERROR for x in f):
        result.status = "fail"  # the step ran, but the user's run would not
    if own and (spec.user_data or spec.user_rewards):  # said where the plan asked for them
        f.append(
            Finding(
                "DAT014",
                Severity.INFO,
                "the probe's GRPO step ran " + " and ".join(own),
                "nothing to do for the probe to pass; to have it run the user's batch and rewards: "
                "name a dataset that is on this machine, and reward functions in a module or a "
                'script whose training code is under `if __name__ == "__main__":`',
                {"data": data.get("reason"), "rewards": rewards.get("reason")},
            )
        )


def _data_finding(spec: ProbeSpec, data: dict[str, Any], err: dict[str, Any]) -> Finding | None:
    from envdoctor.checks.data import CHAT_TEMPLATE_FIX, prompt_column_fix

    rule = err.get("rule")
    name = data.get("dataset") or "the dataset"
    where = f"{name} ({data.get('source')})" if data.get("source") else name
    evidence = {k: data.get(k) for k in ("dataset", "split", "source", "rows_read", "columns")}
    if rule == "DAT002":
        columns = list(err.get("columns") or [])
        return Finding(
            "DAT002",
            Severity.ERROR,
            f"dataset {where} has no 'prompt' column in the probe's first batch: its columns are "
            f"{_listed(columns) or 'none'}. GRPOTrainer reads example['prompt'] and raises "
            "KeyError: 'prompt' at the first step, after the model and vLLM have loaded",
            prompt_column_fix(columns),
            evidence,
        )
    if rule == "DAT003":
        return Finding(
            "DAT003",
            Severity.ERROR,
            f"dataset {where} has conversational prompts (lists of {{role, content}}), but the "
            f"tokenizer of {err.get('tokenizer')} the probe loaded has no chat template: TRL applies "
            'it to every prompt and transformers raises "Cannot use chat template functions because '
            'tokenizer.chat_template is not set" (the probe gave it a plain one to go on)',
            CHAT_TEMPLATE_FIX,
            {**evidence, "tokenizer": err.get("tokenizer")},
        )
    if rule == "DAT004":
        key = err.get("limit_key") or "max_model_len"
        room = spec.user_data.get("room") or err.get("max_model_len")
        expr = spec.user_data.get("length_expr") or 'len(tokenizer(x["prompt"]).input_ids)'
        rows = ", ".join(map(str, err.get("rows") or []))
        return Finding(
            "DAT004",
            Severity.ERROR,
            f"{err.get('rows_over')} of the first {err.get('rows_counted')} rows of {name} have prompts "
            f"longer than vLLM's max_model_len {err.get('max_model_len')} ({key}); the longest has "
            f"{err.get('longest_tokens')} tokens (counted in the probe with the user's tokenizer"
            f"{', chat template applied' if data.get('conversational') else ''}; rows {rows}). vLLM "
            'raises in the middle of training: "The decoder prompt (length N) is longer than the '
            'maximum model length"',
            f"filter the dataset before training: dataset = dataset.filter(lambda x: {expr} <= {room}), "
            f"or raise {key}",
            {
                **evidence,
                **{k: err.get(k) for k in ("rows_over", "rows_counted", "longest_tokens", "max_model_len")},
            },
        )
    return None


def _reward_finding(func: dict[str, Any], err: dict[str, Any], keywords: list[str]) -> Finding:
    from envdoctor.checks.data import (
        reward_argument_fix,
        reward_kwargs_fix,
        reward_length_fix,
        reward_return_fix,
    )

    name, where = func.get("name"), func.get("where")
    who = f"reward function {name} ({where})"
    rule = str(err.get("rule"))
    n = err.get("expected") or func.get("expected")
    evidence: dict[str, Any] = {"function": name, "where": where, "called": func.get("called"), **err}
    evidence.pop("traceback", None)
    if rule == "DAT007":
        params = list(err.get("parameters") or [])
        first = params[0] if params else "?"
        return Finding(
            rule,
            Severity.ERROR,
            f"{who} requires {_listed([repr(p) for p in params])}, which nothing supplied in the probe's "
            f'step: TRL passed {_listed(keywords)}. It raised "{err.get("message")}"',
            reward_argument_fix(first),
            {**evidence, "keywords": keywords},
        )
    if rule == "DAT008":
        extra = list(err.get("unexpected") or [])
        return Finding(
            rule,
            Severity.ERROR,
            f"{who} has no **kwargs, and TRL passed it {_listed(keywords)} in the probe's step: it "
            f'raised "{err.get("message")}"',
            reward_kwargs_fix(str(name)),
            {**evidence, "unexpected": extra, "keywords": keywords},
        )
    if rule == "DAT010":
        return Finding(
            rule,
            Severity.ERROR,
            f"{who} returned None in the probe's step: TRL needs a list with one reward (a float, or "
            "None to skip) per completion; the run raises (\"'NoneType' object is not iterable\")",
            reward_return_fix(str(name)),
            evidence,
        )
    if rule == "DAT012":
        return Finding(
            rule,
            Severity.ERROR,
            f"{who} returned {' and '.join(err.get('values') or ['NaN'])} for {err.get('entries')} of "
            f"{n} completions in the probe's step (the first at index {err.get('first')}): TRL counts "
            "a NaN reward as missing, so those completions silently get no reward from it; an "
            "infinite one makes the group's advantages NaN",
            f"make {name} return a float for every completion (None only where it does not apply): "
            "guard the computation that gives NaN or infinity (0/0, log(0), a mean of nothing)",
            evidence,
        )
    if rule == "DAT013":
        return Finding(
            rule,
            Severity.ERROR,
            f"{who} returned {err.get('got')} for {n} completions in the probe's step: TRL needs a "
            'list of one reward per completion: the run raises at its first reward ("returned N '
            'rewards, but M were expected", or "object is not iterable")',
            reward_length_fix(str(name)),
            evidence,
        )
    inner = err.get("innermost")
    frame = err.get("frame")
    at = f"at {frame}" + (f" (innermost: {inner})" if inner and inner != frame else "")
    if err.get("type") in ("ImportError", "ModuleNotFoundError"):
        fix = (
            f"install what {name} imports in the training environment ({str(err.get('message'))[:120]}), "
            "then run the probe again"
        )
    else:
        fix = f"fix {name} where it raised ({frame}), then run the probe again"
    return Finding(
        "DAT011",
        Severity.ERROR,
        f"{who} raised {err.get('type')}: {str(err.get('message'))[:300]} {at} in the probe's step; "
        "the run raises the same at its first reward, after the model and vLLM have loaded",
        fix,
        {**evidence, "traceback": str(err.get("traceback") or "")[-2000:]},
    )
