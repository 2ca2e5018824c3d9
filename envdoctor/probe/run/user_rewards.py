"""In the probe's worker: the user's first batch and reward functions, checked as they run.

Loaded by path beside ``worker.py`` (the worker runs under the user's interpreter, where
envdoctor may not be installed): the stdlib only at import. The worker's spec carries the rows
(``user_data``, read by envdoctor from a local path or the Hugging Face caches) and where the
reward functions live (``user_rewards``: TRL's registry, a dotted module path, or a training
script whose top level only imports and defines, checked by envdoctor from its source).

Each reward function is wrapped: its calls are counted, an exception is recorded with its frame,
and its result is checked for None, NaN entries, a wrong length or a non-number entry. A faulty
result is replaced by zeros so that the step goes on and every function is checked in one step;
the judge (``user_judge``) turns the records into findings.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import math
import re
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

#: tokens a prompt keeps in the probe's step (its length was counted before the cut)
PROBE_PROMPT_TOKENS = 24
#: rows whose prompt tokens are counted at most
MAX_COUNTED = 64
MAX_ERRORS = 3  # kept per function
#: the chat template the probe gives its own tokenizer (the user's is not cached): role: text
PLAIN_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] if m['content'] is string else "
    "m['content'] | map(attribute='text') | join(' ') }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
_MISSING = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)")
_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


def is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    )


# -- the data ------------------------------------------------------------------------------


def _ids(encoded: Any) -> list[int]:
    if hasattr(encoded, "keys"):
        encoded = encoded["input_ids"]
    if encoded and isinstance(encoded[0], list):  # a batch of one
        encoded = encoded[0]
    return list(encoded)


def prompt_tokens(tok: Any, prompt: Any) -> int:
    """The prompt's tokens as TRL gives them to generation: a conversation rendered by the chat
    template with the generation prompt, a plain prompt without special tokens."""
    if is_messages(prompt):
        return len(_ids(tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)))
    return len(_ids(tok(str(prompt), add_special_tokens=False)))


def _cut_text(tok: Any, text: Any, most: int) -> Any:
    if not isinstance(text, str):
        return text
    ids = _ids(tok(text, add_special_tokens=False))
    return text if len(ids) <= most else tok.decode(ids[:most], skip_special_tokens=True)


def cut_prompt(tok: Any, prompt: Any, most: int = PROBE_PROMPT_TOKENS) -> Any:
    """The prompt with each text cut to ``most`` tokens: the probe's model is tiny, its step short."""
    if is_messages(prompt):
        return [{**m, "content": _cut_text(tok, m.get("content"), most)} for m in prompt]
    return _cut_text(tok, prompt, most)


def prepare(data: dict[str, Any], tok: Any, user_tokenizer: bool, info: dict[str, Any]) -> list[dict] | None:
    """The rows the step trains on (None: the probe's own prompts), with what was found in
    ``info`` (the report's probe.data): source, rows read, columns, rows over vLLM's limit, and
    ``errors`` (each a rule id with its facts). Never raises: what the probe could not do with
    the rows is its own limit, not a fault of the user's run."""
    try:
        return _prepare(data, tok, user_tokenizer, info)
    except Exception as exc:
        info["used"] = False
        info["reason"] = f"the probe could not prepare the rows: {type(exc).__name__}: {str(exc)[:200]}"
        return None


def _prepare(data: dict[str, Any], tok: Any, user_tokenizer: bool, info: dict[str, Any]) -> list[dict] | None:
    errors: list[dict[str, Any]] = info.setdefault("errors", [])
    for key in ("dataset", "split", "source", "rows_read", "columns"):
        if key in data:
            info[key] = data[key]
    rows = data.get("rows") or []
    if not rows:
        info["used"] = False
        info["reason"] = data.get("reason") or "no rows"
        return None
    columns = list(data.get("columns") or rows[0].keys())
    info["rows_passed"] = len(rows)
    info["tokenizer"] = f"the user's ({data.get('user_tokenizer')})" if user_tokenizer else "the probe's own"
    if "prompt" not in columns:
        errors.append({"rule": "DAT002", "columns": columns})
        info["used"], info["reason"] = False, "the rows have no 'prompt' column"
        return None
    prompts = [r.get("prompt") for r in rows]
    conversational = all(is_messages(p) for p in prompts)
    info["conversational"] = conversational
    if conversational and not getattr(tok, "chat_template", None):
        if user_tokenizer and not data.get("template_set"):  # the run may set its own
            errors.append({"rule": "DAT003", "tokenizer": data.get("user_tokenizer")})
        tok.chat_template = PLAIN_TEMPLATE  # to go on with the step
        info["chat_template"] = "the probe's plain template (role: text)"
    if user_tokenizer:
        _count(data, tok, prompts, info, errors)
    else:
        info["rows_over_length"] = None
        info["counted"] = (
            "not counted in the probe (the user's tokenizer is not cached): see DAT004 of the check"
        )
    out = []
    for row in rows:
        out.append({**row, "prompt": cut_prompt(tok, row.get("prompt"))})
    info["used"] = True
    return out


def _count(data: dict[str, Any], tok: Any, prompts: list[Any], info: dict[str, Any], errors: list) -> None:
    lengths = []
    for prompt in prompts[:MAX_COUNTED]:
        try:
            lengths.append(prompt_tokens(tok, prompt))
        except Exception as exc:  # the template or the tokenizer refused the row: TRL would too
            info["counted"] = f"not counted: {type(exc).__name__}: {str(exc)[:200]}"
            return
    cut = data.get("truncate_to")
    seen = [min(n, cut) if cut else n for n in lengths]
    limit = data.get("limit")
    info["longest_tokens"] = max(lengths, default=0)
    info["counted"] = f"{len(lengths)} rows with the tokenizer" + (
        ", chat template applied" if info.get("conversational") else ""
    )
    if not limit:
        info["rows_over_length"] = None
        return
    over = [i for i, n in enumerate(seen) if n > limit]
    info["rows_over_length"] = len(over)
    info["max_model_len"] = limit
    if over:
        errors.append(
            {
                "rule": "DAT004",
                "rows_over": len(over),
                "rows_counted": len(lengths),
                "rows": over[:5],
                "longest_tokens": max(seen),
                "max_model_len": limit,
                "limit_key": data.get("limit_key"),
            }
        )


def dataset(datasets: Any, rows: list[dict], need: int, info: dict[str, Any]) -> Any:
    """A ``datasets.Dataset`` of the rows, repeated to ``need`` (None: it could not be built)."""
    try:
        return datasets.Dataset.from_list(rows * max(1, -(-need // len(rows))))
    except Exception as exc:  # mixed types in a column, nested values Arrow refuses
        info["used"] = False
        info["reason"] = f"datasets could not build the rows: {type(exc).__name__}: {str(exc)[:200]}"
        return None


# -- the reward functions ------------------------------------------------------------------


def _where(obj: Any, fallback: str) -> str:
    try:
        target = inspect.unwrap(obj)
        path = inspect.getsourcefile(target) or "?"
        return f"{_short(path)}:{target.__code__.co_firstlineno}"
    except (TypeError, AttributeError, OSError):
        return fallback


#: the user's working folder (the reward spec's root): files under it are shown relative to it
_ROOT = {"cwd": ""}


def _short(path: str) -> str:
    """A file as a finding shows it: relative to the working folder, else its last parts."""
    cwd = _ROOT["cwd"]
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    parts = path.split("/")
    return "/".join(parts[-3:]) if "site-packages" in path else path


def _import_script(path: str) -> Any:
    name = "envdoctor_user_script"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up
    spec.loader.exec_module(module)
    return module


def load(spec: dict[str, Any]) -> tuple[list[tuple[str, str, Callable]], str | None]:
    """The user's reward functions as (name, file:line, function), or the reason none."""
    if spec.get("own_reason"):
        return [], str(spec["own_reason"])
    root = spec.get("root")
    if root and root not in sys.path:
        sys.path.insert(0, root)
    if root or spec.get("cwd"):
        _ROOT["cwd"] = str(spec.get("cwd") or root)
    found: list[tuple[str, str, Callable]] = []
    try:
        if spec.get("script"):
            module = (
                importlib.import_module(spec["module"])
                if spec.get("module")
                else _import_script(spec["script"])
            )
            for attr in spec.get("attrs") or []:
                obj: Any = module
                for part in attr.split("."):
                    obj = getattr(obj, part)
                found.append((attr.split(".")[-1], _where(obj, spec["script"]), obj))
        for item in spec.get("items") or []:
            if "registry" in item:
                rewards = importlib.import_module("trl.rewards")
                obj = getattr(rewards, item["registry"], None)
                if obj is None:
                    return [], f"this TRL's trl.rewards has no {item['registry']} (DAT009)"
                found.append((item["registry"], _where(obj, "trl.rewards"), obj))
            else:
                obj = getattr(importlib.import_module(item["module"]), item["attr"])
                found.append((item["attr"], _where(obj, item["module"]), obj))
    except Exception as exc:
        frame = _frame(exc.__traceback__, 0)
        return [], f"importing the reward functions raised {type(exc).__name__}: {str(exc)[:300]}" + (
            f" (at {frame})" if frame else ""
        )
    bad = [name for name, _w, obj in found if not callable(obj)]
    if bad:
        return [], f"{', '.join(bad)} is not callable"
    return found, None


def _frame(tb: Any, skip: int, innermost: bool = True) -> str:
    """``file:line in function`` of the innermost frame (else the first) after ``skip``."""
    frames = traceback.extract_tb(tb)[skip:]
    if not frames:
        return ""
    last = frames[-1] if innermost else frames[0]
    return f"{_short(last.filename)}:{last.lineno} in {last.name}"


def check_result(out: Any, n: int) -> dict[str, Any] | None:
    """What is wrong with a reward function's result for ``n`` completions (a rule id and its
    facts), or None. TRL takes a list (any sized sequence) of one float or None per completion."""
    if out is None:
        return {"rule": "DAT010"}
    if isinstance(out, (str, bytes, dict)) or not hasattr(out, "__len__"):
        return {"rule": "DAT013", "got": type(out).__name__, "expected": n}
    if len(out) != n:
        return {"rule": "DAT013", "got": f"{type(out).__name__} of {len(out)}", "expected": n}
    nan = []
    for i, value in enumerate(list(out)):
        if value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            return {
                "rule": "DAT013",
                "got": f"entry {i}: {type(value).__name__} {str(value)[:40]!r}",
                "expected": n,
            }
        if not math.isfinite(number):
            nan.append((i, number))
    if nan:
        kinds = sorted({"NaN" if math.isnan(v) else "infinity" for _i, v in nan})
        return {"rule": "DAT012", "entries": len(nan), "first": nan[0][0], "expected": n, "values": kinds}
    return None


def shape(out: Any) -> str:
    """``list[8] of float``: what a reward function returned."""
    if out is None or not hasattr(out, "__len__") or isinstance(out, (str, bytes, dict)):
        return type(out).__name__
    kinds = sorted({type(v).__name__ for v in list(out)[:1000]})
    return f"{type(out).__name__}[{len(out)}] of {', '.join(kinds) or 'nothing'}"


def _call_error(exc: BaseException, name: str) -> dict[str, Any]:
    """An exception from calling the function: the call itself (the signature did not bind:
    DAT007 / DAT008) or raised inside it (DAT011, with its frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    message = str(exc)
    if isinstance(exc, TypeError) and len(frames) <= 1:  # raised at the call, not inside
        missing = _MISSING.search(message)
        if missing:
            return {
                "rule": "DAT007",
                "parameters": re.findall(r"'(\w+)'", missing.group(1)),
                "message": message,
            }
        unexpected = _UNEXPECTED.search(message)
        if unexpected:
            return {"rule": "DAT008", "unexpected": [unexpected.group(1)], "message": message}
    return {
        "rule": "DAT011",
        "type": type(exc).__name__,
        "message": message[:500],
        "frame": _frame(exc.__traceback__, 1, innermost=False) or "?",
        "innermost": _frame(exc.__traceback__, 1) or "?",
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])[-2000:],
    }


def wrap(name: str, where: str, func: Callable, record: dict[str, Any]) -> Callable:
    """``func`` as TRL calls it, with every call and fault written to ``record``."""
    key = name if name not in record else f"{name} ({where})"
    entry = record.setdefault(key, {"name": name, "where": where, "called": 0, "shape": None, "errors": []})

    def note(problem: dict[str, Any]) -> None:
        if len(entry["errors"]) < MAX_ERRORS and problem["rule"] not in {e["rule"] for e in entry["errors"]}:
            entry["errors"].append(problem)

    def after(out: Any, n: int) -> Any:
        entry["shape"] = shape(out)
        entry["expected"] = n
        problem = check_result(out, n)
        if problem is None:
            return out
        note(problem)
        return [0.0] * n  # the step goes on; the finding says what the run would meet

    def size(kwargs: dict[str, Any]) -> int:
        return len(kwargs.get("completions") or kwargs.get("prompts") or [])

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            entry["called"] += 1
            entry.setdefault("keywords", sorted(kwargs))
            start = time.perf_counter()
            try:
                out = await func(*args, **kwargs)
            except Exception as exc:
                note(_call_error(exc, name))
                return [0.0] * size(kwargs)
            finally:
                entry["seconds"] = round(entry.get("seconds", 0.0) + time.perf_counter() - start, 4)
            return after(out, size(kwargs))

        return checked_async

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        entry["called"] += 1
        entry.setdefault("keywords", sorted(kwargs))
        start = time.perf_counter()
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            note(_call_error(exc, name))
            return [0.0] * size(kwargs)
        finally:
            entry["seconds"] = round(entry.get("seconds", 0.0) + time.perf_counter() - start, 4)
        return after(out, size(kwargs))

    return checked


def rewards(spec: dict[str, Any], data_used: bool, info: dict[str, Any]) -> list[Callable] | None:
    """The user's reward functions, wrapped (None: the probe's own reward; ``info`` says why).
    ``info`` is the report's probe.rewards: source, functions, and each one's record."""
    if not data_used and not spec.get("own_reason"):
        spec = {
            "own_reason": "the user's rows were not used (see probe.data), and the reward "
            "functions take their columns"
        }
    funcs, why = load(spec)
    info["source"] = spec.get("script") or ", ".join(
        i.get("registry") or f"{i.get('module')}.{i.get('attr')}" for i in spec.get("items") or []
    )
    if why:
        info["used"], info["reason"] = False, why
        return None
    info["used"] = True
    record: dict[str, Any] = info.setdefault("functions", {})
    return [wrap(name, where, func, record) for name, where, func in funcs]
