"""The stack's settings as envdoctor's knowledge holds them, and where a run sets them.

``setting``: a name as a setting of the stack (vLLM's engine arguments: the attributes of EngineArgs
and of vllm.yaml's ``engine_options.config_classes``; TRL's GRPOConfig keys; transformers'
TrainingArguments; PEFT's LoraConfig; DeepSpeed's config keys and the pydantic models that check
them, ``refused_settings.yaml``). ``setters``: where a run sets one of vLLM's engine fields (the
engine argument, and each stack's option where the log shows that stack).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envdoctor.knowledge import knowledge
from envdoctor.triage.draft import Log


def engine_options() -> dict[str, Any]:
    table = knowledge().vllm.get("engine_options")
    return table if isinstance(table, dict) else {}


def setters(field: str, log: Log, context: Sequence[str]) -> list[str]:
    """Where the run sets vLLM's ``field``: the engine argument, and each stack's option
    (``engine_options.setters``) where the log shows that stack (TRL's always: GRPO's stack)."""
    kb = log.ctx.kb if log.ctx is not None else knowledge()
    shown = "\n".join([*context, log.head[:65536].decode("utf-8", "replace")])
    out = [f"vLLM's engine argument {field} (LLM({field}=…), vllm serve --{field.replace('_', '-')})"]
    for s in engine_options().get("setters", []):
        stack = str(s.get("stack", ""))
        if stack != "trl" and not any(x in shown for x in s.get("shows", [])):
            continue
        renamed = list((s.get("renamed") or {}).get(field, []))
        if stack == "trl":
            keys = [k for k in [*renamed, str(s.get("colocate", "")).format(field=field)] if kb.config_key(k)]
            serve = any(
                field in (a.get("args") or {}) or field in (a.get("added") or {}) for a in serve_args(kb)
            )
            said = [f"GRPOConfig {keys[0]}"] if keys else []
            said += [str(s.get("server", "")).format(field=field)] if serve else []
            if said:
                out.append("TRL: " + " / ".join(said))
            continue
        fields = s.get("fields")
        if fields and field not in fields and not renamed:
            continue
        out.append(f"{stack}: " + (renamed[0] if renamed else str(s.get("option", "")).format(field=field)))
    return out


def serve_args(kb: Any) -> list[dict[str, Any]]:
    server = kb.trl.get("vllm_server") or {}
    args = server.get("vllm_serve_args") if isinstance(server, dict) else None
    return [a for a in args or [] if isinstance(a, dict)]


@dataclass(frozen=True)
class Setting:
    """A name envdoctor knows as a setting of the stack, and where the run sets it."""

    name: str
    package: str
    where: str  # how the user sets it, in words


# -- the stack's settings ----------------------------------------------------------------------------


def _table() -> dict[str, Any]:
    return knowledge().refused_settings


def _has(package: str, cls: str, name: str) -> bool:
    from envdoctor.knowledge.symbol_history import history

    h = history(package)
    return h is not None and bool(h.member(cls, "a", name)[0])


@lru_cache(maxsize=1)
def _vllm_classes() -> tuple[str, ...]:
    table = knowledge().vllm.get("engine_options") or {}
    return tuple(str(c) for c in table.get("config_classes", []) if str(c) != "SamplingParams")


def _deepspeed(section: str, name: str) -> Setting | None:
    keys = (_table().get("deepspeed_keys") or {}).get(section) or []
    if name not in keys:
        return None
    return Setting(name, "deepspeed", f'the DeepSpeed config JSON\'s "{section}": {{"{name}": …}}')


def _vllm(name: str, log: Log | None, context: Sequence[str]) -> Setting | None:
    if not (_has("vllm", "EngineArgs", name) or any(_has("vllm", c, name) for c in _vllm_classes())):
        return None
    if log is None:
        return Setting(name, "vllm", f"vLLM's engine argument {name}")
    return Setting(name, "vllm", "; ".join(setters(name, log, context)))


def setting(
    name: str, model: str = "", log: Log | None = None, context: Sequence[str] = ()
) -> Setting | None:
    """``name`` as a setting of the stack (``model``: the pydantic model that refused it, where
    shown), or None where envdoctor's knowledge does not know it as one."""
    mapped = (_table().get("models") or {}).get(model) if model else None
    if isinstance(mapped, dict):  # a model whose fields are a config file's keys
        return _deepspeed(str(mapped.get("section", "")), name)
    if model and model not in _vllm_classes():
        return None  # another package's model: its fields are no setting envdoctor knows
    if model:
        return _vllm(name, log, context)
    if "_" not in name:
        return None  # a bare word ("model", "stage"): too common to be read as a setting
    found = _vllm(name, log, context)
    if found is not None:
        return found
    kb = log.ctx.kb if log is not None and log.ctx is not None else knowledge()
    if kb.config_key(name) is not None or _has("trl", "GRPOConfig", name):
        return Setting(name, "trl", f"TRL's GRPOConfig {name} (--{name} on TRL's command line)")
    if _has("transformers", "TrainingArguments", name):
        return Setting(name, "transformers", f"the trainer's TrainingArguments {name} (--{name})")
    if _has("peft", "LoraConfig", name):
        return Setting(name, "peft", f"PEFT's LoraConfig({name}=…)")
    return next(
        (
            s
            for sec in (_table().get("deepspeed_keys") or {})
            if (s := _deepspeed(str(sec), name)) is not None
        ),
        None,
    )
