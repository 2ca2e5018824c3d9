"""Rules on the user's dataset and reward functions, read before any model loads.

The dataset is read only when it is on this machine (a bounded sample: envdoctor.plan.data_source),
the tokenizer only from its files here (envdoctor.plan.tokenizer_files), reward functions only as
source (envdoctor.plan.rewards). Those readers load inside the rules, and only when the run names
a dataset, a script or ``reward_funcs``: a check without them stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import FileEdit, Remedy
from envdoctor.plan.interface import COMPUTED
from envdoctor.plan.layout import trainer_env
from envdoctor.plan.model_name import model_name

if TYPE_CHECKING:
    from envdoctor.plan.data_source import DataSample
    from envdoctor.plan.rewards import RewardFunc, RewardReading
    from envdoctor.plan.tokenizer_files import TokenizerFiles

#: What a training script may do to the dataset between loading it and the trainer: then the
#: columns read from disk are not the ones the trainer sees, and column rules stay quiet.
_TRANSFORMS = re.compile(
    r"\b(map|rename_column|rename_columns|add_column|remove_columns|select_columns|set_transform|"
    r"with_transform|cast|flatten|from_dict|from_list|from_pandas|from_generator|concatenate_datasets|"
    r"interleave_datasets)\s*\("
)
#: Columns ``remove_unused_columns=True`` keeps (GRPOTrainer's signature columns).
KEPT = ("prompt", "image", "images")
DEFAULT_MAX_PROMPT = 512  # GRPOConfig before TRL 0.26
DEFAULT_MAX_COMPLETION = 256
_SHOWN_ROWS = 5
#: Prompt text put through the tokenizer at most (characters): the rows past it are not counted.
MAX_COUNTED_CHARS = 400_000


@dataclass
class DataView:
    """What the rules share: the sample, whether the trainer sees it as read, the tokenizer."""

    sample: DataSample | None = None
    transformed: str | None = None  # why the trainer may see other columns
    tokenizer: TokenizerFiles | None = None
    lengths: list[int] = field(default_factory=list)  # prompt tokens, row order
    conversational: bool = False


def _view(ctx: Context) -> DataView:
    cached = ctx.__dict__.get("_data_view")
    if isinstance(cached, DataView):
        return cached
    view = DataView()
    ctx.__dict__["_data_view"] = view
    if isinstance(ctx.config.get("datasets"), list):
        return view  # a `datasets:` mixture wins over dataset_name: not read
    named = None
    if any(isinstance(ctx.config.get(k), str) for k in ("dataset_name", "dataset_path")):
        from envdoctor.plan.data_source import named_dataset

        named = named_dataset(ctx.config)
    elif "load_dataset(" in (_script_source(ctx) or ""):  # the reader loads only for a dataset named
        from envdoctor.plan.data_source import named_in_script

        named = named_in_script(_script_source(ctx) or "")
    if named is None:
        return view
    from envdoctor.plan.data_source import read_dataset

    env = _cache_env(ctx)
    view.sample = read_dataset(*named, env)
    view.transformed = _transformed(ctx)
    rows = view.sample.rows
    prompts = [r.get("prompt") for r in rows if "prompt" in r]
    view.conversational = bool(prompts) and all(_is_messages(p) for p in prompts)
    if prompts:
        from envdoctor.plan.tokenizer_files import TokenizerFiles, load

        model = model_name(ctx)
        view.tokenizer = load(model, env) if model else TokenizerFiles(model="", folder=None)
        if not model:
            view.tokenizer.how = "estimated at ~4 characters a token (the run names no model)"
        view.lengths = _prompt_tokens(prompts, view.tokenizer)
    return view


def data_view(ctx: Context) -> DataView:
    """The dataset sample, its prompts' token lengths and whether they are chat messages, read
    once per check (the readers load only when the run names a dataset)."""
    return _view(ctx)


def _cache_env(ctx: Context) -> dict[str, str]:
    """Where the trainer's Hugging Face caches are: its environment, and on a live check the
    variables the snapshot does not keep (``XDG_CACHE_HOME``, ``HUGGINGFACE_HUB_CACHE``)."""
    env = trainer_env(ctx.facts, ctx.plan.trainer)
    if ctx.facts.live:
        import os

        for var in ("XDG_CACHE_HOME", "HUGGINGFACE_HUB_CACHE"):
            if os.environ.get(var) and var not in env:
                env[var] = os.environ[var]
    return env


def _transformed(ctx: Context) -> str | None:
    """Why the trainer may see other columns than those read (None: it sees them as read):
    ``trl grpo`` passes the split as loaded; a script is read for what changes a dataset."""
    trainer = ctx.plan.trainer
    if trainer is None:
        return "no launch line: the program that loads the dataset is not known"
    if trainer.launcher == "trl-grpo":
        return None
    source = _script_source(ctx)
    if source is None:
        return f"the training script ({trainer.script or trainer.module or 'unknown'}) is not read"
    found = _TRANSFORMS.search(source)
    return f"{_script_path(ctx)} calls {found.group(1)}() on its data" if found else None


def _script_path(ctx: Context) -> Path | None:
    """The training script: the launch line's ``.py`` file, or its ``-m`` module's file under
    the working folder (or its ``src/``)."""
    trainer = ctx.plan.trainer
    if trainer is None:
        return None
    if trainer.script and trainer.script.endswith(".py"):
        return Path(trainer.script)
    if trainer.module:
        rel = Path(*trainer.module.split("."))
        for root in (Path.cwd(), Path.cwd() / "src"):
            for cand in (root / rel.with_suffix(".py"), root / rel / "__main__.py"):
                if cand.is_file():
                    return cand
    return None


def _script_source(ctx: Context) -> str | None:
    path = _script_path(ctx)
    if path is None:
        return None
    try:
        if path.stat().st_size > 2 * 1024 * 1024:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}]
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _prompt_tokens(prompts: list[Any], tok: TokenizerFiles) -> list[int]:
    """Each prompt's tokens: a plain prompt's text, or the sum over a conversation's message
    contents (a lower bound: the chat template adds its role markers)."""
    texts: list[str] = []
    owner: list[int] = []
    chars = 0
    for i, prompt in enumerate(prompts):
        parts = [_text(m.get("content")) for m in prompt] if _is_messages(prompt) else [_text(prompt)]
        chars += sum(map(len, parts))
        if chars > MAX_COUNTED_CHARS and texts:
            break
        texts += parts
        owner += [i] * len(parts)
    lengths = [0] * (owner[-1] + 1 if owner else 0)
    for i, n in zip(owner, tok.count(texts), strict=True):
        lengths[i] += n
    return lengths


def _sample(ctx: Context) -> DataSample | None:
    view = _view(ctx)
    return view.sample if view.sample is not None and view.sample.not_read is None else None


@rule("DAT001")
def dataset_not_checked(ctx: Context) -> Iterator[Hit]:
    sample = _view(ctx).sample
    if sample is None or sample.not_read is None:
        return
    yield hit(
        f"dataset {sample.name} (split {sample.split}): {sample.not_read}; its columns, chat "
        "format and prompt lengths are checked when it is on this machine",
        fix=f"load it once where the run starts (`datasets.load_dataset({sample.name!r})` fills the "
        "cache), or point dataset_name at a local file or save_to_disk folder",
        dataset=sample.name,
        split=sample.split,
        reason=sample.not_read,
    )


def prompt_column_fix(columns: list[str]) -> str:
    """DAT002's fix for a dataset with these columns (the check's and the probe's)."""
    hint = next(
        (c for c in ("question", "problem", "query", "instruction", "input", "text") if c in columns), None
    )
    if hint:
        return f"rename the column: dataset = dataset.rename_column({hint!r}, 'prompt')"
    if "messages" in columns:
        return (
            "give the dataset a 'prompt' column (plain text or a list of {role, content} messages "
            "without the answer: dataset.map(lambda x: {'prompt': x['messages'][:-1]}) for a chat)"
        )
    return "give the dataset a 'prompt' column (plain text or a list of {role, content} messages)"


def column_fix(column: str, config_key: str | None = None) -> str:
    """DAT002's fix for a dataset that lacks ``column`` (a trainer's, read in a log: the dataset's
    own columns unknown); ``config_key``: the config key that names the column (SFT's
    dataset_text_field)."""
    fix = (
        "rename the dataset's column that holds it: "
        f"dataset = dataset.rename_column('<its column>', {column!r})"
    )
    if config_key:
        fix += f", or set {config_key} to that column ({config_key}='<its column>')"
    return fix


def reward_argument_fix(name: str) -> str:
    """DAT007's fix for a reward function's required parameter nothing supplies (the check's, the
    probe's and triage's)."""
    return (
        f"give the dataset a {name!r} column (dataset = dataset.rename_column('<the column that holds "
        f"it>', {name!r})), or name the parameter after the dataset's column that holds it; a default "
        f"({name}=None) only where the function does without it"
    )


def reward_kwargs_fix(func: str) -> str:
    """DAT008's fix for a reward function without ``**kwargs`` (the check's, the probe's and
    triage's)."""
    return f"add **kwargs to {func}'s parameters: def {func}(..., **kwargs)"


def reward_return_fix(func: str) -> str:
    """DAT010's fix (the check's, the probe's and triage's)."""
    return f"end {func} with `return [...]`: one float per completion, on every path"


def reward_length_fix(func: str) -> str:
    """DAT013's fix (the probe's and triage's)."""
    return f"return a list with one float per completion from {func}: len(result) == len(completions)"


@rule("DAT002", needs=("trl-trainer",))
def dataset_no_prompt_column(ctx: Context) -> Iterator[Hit]:
    view = _view(ctx)
    sample = _sample(ctx)
    if sample is None or "prompt" in sample.columns or view.transformed:
        return
    fix = prompt_column_fix(sample.columns)
    yield hit(
        f"dataset {sample.name} ({sample.source}) has no 'prompt' column: its columns are "
        f"{_listed(sample.columns) or 'none'}. GRPOTrainer reads example['prompt'] and raises "
        "KeyError: 'prompt' at the first step, after the model and vLLM have loaded",
        fix=fix,
        **sample.as_evidence(),
    )


CHAT_TEMPLATE_FIX = (
    "use the model's instruct variant (it ships a chat template), or set one: "
    "tokenizer.chat_template = ... and pass processing_class=tokenizer; or make the prompts plain text"
)


@rule("DAT003")
def chat_template_missing(ctx: Context) -> Iterator[Hit]:
    view = _view(ctx)
    tok = view.tokenizer
    if not view.conversational or tok is None or tok.chat_template is not False or view.sample is None:
        return
    if view.transformed or any("chat_template" in str(k) for k in ctx.config):
        return  # the script may render the prompts itself; a config may set a template
    if "chat_template" in (_script_source(ctx) or ""):
        return  # the script sets one (tokenizer.chat_template = ...)
    yield hit(
        f"dataset {view.sample.name} has conversational prompts (lists of {{role, content}}), but "
        f"the tokenizer of {tok.model} ({tok.folder}) has no chat template: TRL applies it to every "
        'prompt and transformers raises "Cannot use chat template functions because '
        'tokenizer.chat_template is not set" (a processor: "this processor does not have a chat '
        'template")',
        fix=CHAT_TEMPLATE_FIX,
        model=tok.model,
        tokenizer_folder=str(tok.folder),
        **view.sample.as_evidence(),
    )


def _vllm_limit(ctx: Context) -> tuple[int, str] | None:
    """vLLM's max_model_len as this run sets it, with the key that sets it."""
    if not ctx.plan.use_vllm:
        return None
    from envdoctor.coerce import as_int
    from envdoctor.plan.layout import vllm_mode

    trl = ctx.trl.version
    mode = vllm_mode(ctx.plan, ctx.facts, ctx.kb)
    server = ctx.plan.server
    if mode == "server":
        value = as_int(server.options.get("max_model_len"), 0) if server is not None else 0
        return (value, "the server's --max_model_len") if value > 0 else None
    if mode != "colocate":
        return None
    if versions.satisfies(trl, ">=0.26") is not False:
        value = as_int(ctx.config.get("vllm_max_model_length"), 0)
        return (value, "vllm_max_model_length") if value > 0 else None
    if versions.satisfies(trl, ">=0.18"):  # colocate: max_prompt_length + max_completion_length
        mp = _max_prompt(ctx)
        mc = _max_completion(ctx)
        return (mp + mc, "max_prompt_length + max_completion_length") if mp and mc else None
    return None


def _max_prompt(ctx: Context) -> int | None:
    from envdoctor.coerce import as_int

    default = DEFAULT_MAX_PROMPT if versions.satisfies(ctx.trl.version, "<0.26") else None
    raw = ctx.value("max_prompt_length", default)
    value = as_int(raw, 0) if raw is not None and raw is not COMPUTED else 0
    return value if value > 0 else None  # None too where the script computes it


def _max_completion(ctx: Context) -> int | None:
    """max_completion_length as the run sets it (TRL's default where unset); None where the
    training script computes it."""
    from envdoctor.coerce import as_int

    raw = ctx.value("max_completion_length", DEFAULT_MAX_COMPLETION)
    value = as_int(raw, 0) if raw is not COMPUTED else 0
    return value if value > 0 else None


def _truncated_before_vllm(ctx: Context, conversational: bool) -> bool:
    """Whether TRL cuts prompts to max_prompt_length before vLLM sees them: from 0.19
    (huggingface/trl#3601) to 0.25, where conversational prompts lost it (trl#4358), gone in 0.26."""
    trl = ctx.trl.version
    if versions.satisfies(trl, ">=0.19,<0.25"):
        return True
    return bool(versions.satisfies(trl, ">=0.25,<0.26")) and not conversational


def _over(view: DataView, limit: int) -> tuple[list[int], int]:
    rows = [i for i, n in enumerate(view.lengths) if n > limit]
    return rows, max(view.lengths, default=0)


def _how(view: DataView) -> str:
    assert view.tokenizer is not None
    what = "message contents, before the chat template" if view.conversational else "prompt text"
    return f"tokens of the {what}, {view.tokenizer.how}"


def _length_expr(view: DataView) -> str:
    if view.conversational:
        return 'len(tokenizer.apply_chat_template(x["prompt"], add_generation_prompt=True))'
    return 'len(tokenizer(x["prompt"]).input_ids)'


def _room(ctx: Context, cap: int) -> int:
    """The longest prompt that leaves max_completion_length tokens under ``cap``."""

    completion = _max_completion(ctx) or 0
    return cap - completion if 0 < completion < cap else cap


@rule("DAT004")
def prompt_too_long_for_vllm(ctx: Context) -> Iterator[Hit]:
    view = _view(ctx)
    sample = _sample(ctx)
    limit = _vllm_limit(ctx)
    if sample is None or not view.lengths or limit is None or view.tokenizer is None:
        return
    cap, key = limit
    lengths = view.lengths
    mp = _max_prompt(ctx)
    if mp and _truncated_before_vllm(ctx, view.conversational):
        lengths = [min(n, mp) for n in lengths]
    over = [i for i, n in enumerate(lengths) if n > cap]
    room = _room(ctx, cap)
    if not over:
        tight = [i for i, n in enumerate(lengths) if n > room]
        if tight:
            yield hit(
                f"{len(tight)} of the first {len(lengths)} rows of {sample.name} leave fewer than "
                f"max_completion_length tokens under vLLM's max_model_len {cap} ({key}): prompts up "
                f"to {max(lengths)} tokens ({_how(view)}), so those completions stop at "
                f"max_model_len, shorter than the {cap - room} tokens the config allows",
                fix=f"filter the dataset: dataset = dataset.filter(lambda x: {_length_expr(view)} <= "
                f"{room}), or raise {key} to {max(lengths) + cap - room}",
                severity="warning",
                rows_over=len(tight),
                rows_read=len(lengths),
                longest_tokens=max(lengths),
                max_model_len=cap,
                counted=view.tokenizer.how,
            )
        return
    exact = view.tokenizer.exact and not view.transformed
    severity = ctx.on_trl("error") if exact else "warning"
    longest = max(lengths)
    shown = ", ".join(map(str, over[:_SHOWN_ROWS])) + ("…" if len(over) > _SHOWN_ROWS else "")
    yield hit(
        f"{len(over)} of the first {len(lengths)} rows of {sample.name} have prompts longer than "
        f"vLLM's max_model_len {cap} ({key}); the longest has {longest} tokens "
        f"({_how(view)}; rows {shown}). "
        f"TRL {ctx.trl.version} does not cut them for vLLM, and vLLM raises in the middle of "
        'training: "The decoder prompt (length N) is longer than the maximum model length"',
        fix=f"filter the dataset before training: dataset = dataset.filter(lambda x: {_length_expr(view)} "
        f"<= {room}), or raise {key}",
        severity=severity,
        rows_over=len(over),
        rows_read=len(lengths),
        longest_tokens=longest,
        max_model_len=cap,
        counted=view.tokenizer.how,
    )


@rule("DAT005", needs=("trl-keys",))
def prompts_over_max_prompt_length(ctx: Context) -> Iterator[Hit]:
    view = _view(ctx)
    sample = _sample(ctx)
    mp = _max_prompt(ctx)
    if sample is None or not view.lengths or mp is None or view.tokenizer is None:
        return
    over, longest = _over(view, mp)
    if not over:
        return
    trl = ctx.trl.version
    if versions.satisfies(trl, ">=0.26") is not False:
        if "max_prompt_length" not in ctx.config:
            return
        what = (
            f"TRL {trl} no longer truncates prompts (max_prompt_length is deprecated since 0.26 and "
            "ignored): these prompts go to generation and training whole, with their memory"
        )
    else:
        what = (
            f"TRL {trl} cuts them to {mp} tokens from the left: the beginning of each (system "
            "prompt, instructions) is lost without a message"
        )
    yield hit(
        f"{len(over)} of the first {len(view.lengths)} rows of {sample.name} are longer than "
        f"max_prompt_length {mp}; the longest has {longest} tokens ({_how(view)}). {what}",
        fix="filter or shorten the long prompts before training, or raise max_prompt_length",
        severity=ctx.on_trl("warning"),
        rows_over=len(over),
        rows_read=len(view.lengths),
        longest_tokens=longest,
        max_prompt_length=mp,
        counted=view.tokenizer.how,
    )


def _removes_columns(ctx: Context) -> bool:
    from envdoctor.plan.values import as_bool

    return bool(as_bool(ctx.config.get("remove_unused_columns", False)))


@rule("DAT006", needs=("trl-keys",))
def remove_unused_columns_drops(ctx: Context) -> Iterator[Hit]:
    sample = _sample(ctx)
    if sample is None or _view(ctx).transformed or not _removes_columns(ctx):
        return
    dropped = [c for c in sample.columns if c not in KEPT]
    if not dropped:
        return
    yield hit(
        f"remove_unused_columns is true: the trainer keeps only {', '.join(KEPT[:1])} of "
        f"{sample.name} and drops {_listed(dropped)}, so no reward function receives them "
        "as keyword arguments",
        fix="remove_unused_columns: false  # TRL's GRPOConfig default",
        severity="warning",
        dropped=dropped,
        **sample.as_evidence(),
    )


# -- reward functions ----------------------------------------------------------------------


def _rewards(ctx: Context) -> RewardReading | None:
    cached = ctx.__dict__.get("_reward_reading")
    if cached is not None or "_reward_reading" in ctx.__dict__:
        return cached
    reading = None
    names = ctx.config.get("reward_funcs")
    trainer = ctx.plan.trainer
    if isinstance(names, str):
        names = [names]
    cli = trainer is not None and trainer.launcher == "trl-grpo"
    if cli and versions.satisfies(ctx.trl.version, "<0.18") is True:
        reading = None  # `trl grpo` reads --reward_funcs from 0.18 (trl/scripts/grpo.py)
    elif isinstance(names, list) and names and cli:
        from envdoctor.plan.rewards import from_cli

        reading = from_cli([str(n) for n in names], ctx.trl.version, [Path.cwd()])
    elif _script_path(ctx) is not None:
        from envdoctor.plan.rewards import from_script

        reading = from_script(_script_path(ctx) or Path(), ctx.plan.edited)
    ctx.__dict__["_reward_reading"] = reading
    return reading


def _passed(ctx: Context) -> tuple[list[str], list[str] | None]:
    """TRL's own reward arguments, and the dataset columns passed on (None: not known)."""
    from envdoctor.plan.rewards import NOT_PASSED, trl_args

    view = _view(ctx)
    sample = _sample(ctx)
    columns: list[str] | None = None
    if sample is not None and not view.transformed:
        kept = [c for c in sample.columns if c in KEPT] if _removes_columns(ctx) else sample.columns
        columns = [c for c in kept if c not in NOT_PASSED]
    return trl_args(ctx.trl.version), columns


def _listed(names: list[str], most: int = 20) -> str:
    """Column names as a message lists them: the first ``most``, then how many more."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _where(func: RewardFunc) -> str:
    return f"reward function {func.name} ({func.where})"


@rule("DAT007", needs=("trl-trainer",))
def reward_missing_argument(ctx: Context) -> Iterator[Hit]:
    reading = _rewards(ctx)
    if reading is None:
        return
    from envdoctor.plan.rewards import conditional_args

    trl_given, columns = _passed(ctx)
    maybe = conditional_args(ctx.trl.version)
    for func in reading.funcs:
        for p in func.params:
            if p.required and p.positional_only:
                yield hit(
                    f"{_where(func)} takes {p.name} positionally only, but TRL passes every "
                    "argument by keyword: TypeError at the first reward",
                    fix=f"drop the '/' from the signature of {func.name}",
                    severity=ctx.on_trl("error"),
                    function=func.name,
                    parameter=p.name,
                )
                continue
            if not p.required or p.name in trl_given or p.name in maybe or reading.open_sources:
                continue  # (rollout_func / environment_factory may add the keyword)
            if columns is None:
                # the dataset's columns were not read: only a parameter no column can fill is judged
                unfilled = _never_filled(func, p.name, trl_given)
                if unfilled:
                    yield hit(
                        f"{_where(func)} requires {p.name!r}, which TRL never passes: {unfilled}. "
                        "Either way a TypeError at the first reward",
                        fix=_rename_fix(func, p.name, trl_given),
                        remedy=_rename_remedy(func, p.name, trl_given),
                        severity=ctx.on_trl("error"),
                        function=func.name,
                        parameter=p.name,
                        columns=None,
                    )
                continue
            if p.name in columns:
                continue
            dropped = _removes_columns(ctx) and p.name in (_sample(ctx) or _EMPTY).columns
            why = (
                "remove_unused_columns: true drops that column before the reward"
                if dropped
                else f"TRL passes {', '.join(trl_given)} and the dataset's columns "
                f"({_listed(columns) or 'none besides prompt'})"
            )
            yield hit(
                f"{_where(func)} requires {p.name!r}, which nothing supplies: {why}. It raises "
                f"\"{func.name}() missing 1 required positional argument: '{p.name}'\" at the first step",
                fix="remove_unused_columns: false" if dropped else reward_argument_fix(p.name),
                severity=ctx.on_trl("error"),
                function=func.name,
                parameter=p.name,
                columns=columns,
            )


def _never_filled(func: RewardFunc, name: str, trl_given: list[str]) -> str:
    """Why a required parameter is never filled whatever the dataset's columns ("" when a column
    of that name could fill it): a name TRL never passes on as a column (prompt, completion), or a
    body that hands TRL's keyword on twice (it takes the parameter for that keyword)."""
    from envdoctor.plan.rewards import NOT_PASSED

    if name in NOT_PASSED:
        return f"TRL keeps the dataset's {name!r} column to itself (it passes {', '.join(trl_given)})"
    twice = [(k, callee, line) for k, callee, line in func.forwards if k in trl_given]
    if not twice:
        return ""
    k, callee, line = twice[0]
    return (
        f'without a dataset column {name!r} the call raises "missing 1 required positional argument: '
        f"'{name}'\"; with one, TRL's {k}= lands in **kwargs, which line {line} hands on to {callee}() "
        f"beside {k}=..., and that raises \"got multiple values for keyword argument '{k}'\""
    )


def _rename_remedy(func: RewardFunc, name: str, trl_given: list[str]) -> Remedy | None:
    """The script edit that names the parameter as TRL passes it (the body keeps its name)."""
    entry = func.renames.get(name)
    if entry is None or entry[0] not in trl_given:
        return None
    key, edits = entry
    path = func.where.rsplit(":", 1)[0]
    return Remedy(
        files=tuple(FileEdit(path=path, line=line, old=old, new=new) for line, old, new in edits),
        fix=f"in {func.where}: take {key!r} in place of {name!r} and set {name} = {key} at the top "
        "of the body",
    )


def _rename_fix(func: RewardFunc, name: str, trl_given: list[str]) -> str:
    twice = [k for k, _, _ in func.forwards if k in trl_given]
    if twice:
        own = func.name.split(".")[-1]
        return (
            f"name the parameter {twice[0]!r}, as TRL passes it: def {own}(prompts, {twice[0]}, "
            f"**{func.kwarg_name or 'kwargs'}), and use {twice[0]} for {name} in the body"
        )
    return f"take TRL's arguments by their names (prompts, completions, **kwargs) instead of {name!r}"


def _given_twice(
    ctx: Context, func: RewardFunc, trl_given: list[str], columns: list[str] | None
) -> Iterator[Hit]:
    """A reward function that hands its ``**kwargs`` on beside an explicit keyword TRL puts in
    them: "got multiple values for keyword argument" at the first reward. Said by DAT007 instead
    where a required parameter stands for that keyword."""
    twice = [(k, callee, line) for k, callee, line in func.forwards if k in trl_given]
    if not twice:
        return
    fills = {*trl_given, *(columns or [])}
    if any(p.required and p.name not in fills for p in func.params):
        return  # DAT007's (a required parameter named for nothing TRL passes)
    k, callee, line = twice[0]
    kw = func.kwarg_name or "kwargs"
    yield hit(
        f"{_where(func)} hands its **{kw} on to {callee}() beside {k}=... (line {line}), but TRL passes "
        f'{k} by keyword and the function does not name it, so it is in **{kw}: "got multiple values '
        f"for keyword argument '{k}'\" at the first reward",
        fix=f"take {k} by name (def {func.name.split('.')[-1]}(..., {k}, **{kw})), or drop {k}=... from "
        f"the call",
        severity=ctx.on_trl("error"),
        function=func.name,
        unexpected=[k],
        columns=columns,
    )


class _Empty:
    columns: list[str] = []


_EMPTY = _Empty()


@rule("DAT008", needs=("trl-trainer",))
def reward_unexpected_keyword(ctx: Context) -> Iterator[Hit]:
    reading = _rewards(ctx)
    if reading is None:
        return
    trl_given, columns = _passed(ctx)
    for func in reading.funcs:
        if func.var_keyword:
            yield from _given_twice(ctx, func, trl_given, columns)
            continue
        extra = [n for n in [*trl_given, *(columns or [])] if n not in func.accepted]
        if not extra:
            continue
        yield hit(
            f"{_where(func)} has no **kwargs, and TRL {ctx.trl.version} also passes it "
            f'{_listed(extra)}: it raises "{func.name}() got an unexpected keyword argument '
            f"'{extra[0]}'\" at the first step"
            + ("" if columns is not None else " (the dataset's columns were not read: there may be more)"),
            fix=reward_kwargs_fix(func.name),
            severity=ctx.on_trl("error"),
            function=func.name,
            unexpected=extra,
            columns=columns,
        )


@rule("DAT009")
def reward_func_unknown(ctx: Context) -> Iterator[Hit]:
    reading = _rewards(ctx)
    if reading is None or not reading.unknown:
        return
    from envdoctor.plan.rewards import REGISTRY

    trl = ctx.trl.version
    known = [n for n, (since, _) in REGISTRY.items() if versions.satisfies(trl, f">={since}") is not False]
    for name in reading.unknown:
        later = REGISTRY.get(name)
        why = f" (TRL's registry has it from {later[0]})" if later else ""
        yield hit(
            f"reward_funcs names {name!r}, which TRL {trl}'s CLI cannot load{why}: it is neither in "
            f"its registry ({', '.join(known) or 'none'}) nor a dotted import path; it raises "
            f"\"Could not load reward function '{name}'\" before training",
            fix="name a registry function, or a dotted path to your own: my_rewards.my_reward",
            severity=ctx.on_trl("error"),
            name=name,
            registry=known,
        )


@rule("DAT010")
def reward_returns_nothing(ctx: Context) -> Iterator[Hit]:
    reading = _rewards(ctx)
    if reading is None:
        return
    for func in reading.funcs:
        if func.returns_nothing is None:
            continue
        yield hit(
            f"{_where(func)} never returns a value: it returns None, and TRL needs a list with one "
            "reward (a float, or None to skip) per completion; the first step raises "
            "(\"'NoneType' object is not iterable\")",
            fix=reward_return_fix(func.name),
            severity=ctx.on_trl("error"),
            function=func.name,
        )


# -- what the probe takes from here (envdoctor.probe.plan.user_batch) ----------------------------


def probe_view(ctx: Context) -> tuple[DataView, dict[str, Any]]:
    """The dataset as the rules read it, and vLLM's prompt limit for the probe to count
    against: ``limit`` (tokens), ``limit_key`` (what sets it), ``truncate_to`` (TRL cuts prompts
    to it before vLLM in this release; None: it does not), ``room`` and ``length_expr`` for
    DAT004's fix, ``template_set`` (the config or script sets a chat template)."""
    view = _view(ctx)
    limit = _vllm_limit(ctx)
    mp = _max_prompt(ctx)
    cut = mp if mp and _truncated_before_vllm(ctx, view.conversational) else None
    template_set = any("chat_template" in str(k) for k in ctx.config) or "chat_template" in (
        _script_source(ctx) or ""
    )
    return view, {
        "template_set": template_set,  # the run sets a chat template itself: DAT003 stays quiet
        "room": _room(ctx, limit[0]) if limit else None,
        "length_expr": _length_expr(view),
        "limit": limit[0] if limit else None,
        "limit_key": limit[1] if limit else None,
        "truncate_to": cut,
    }


def script_path(ctx: Context) -> Path | None:
    """The training script the launch line runs (its ``-m`` module's file), or None."""
    return _script_path(ctx)
