"""CFG013: an unquoted YAML word (``no``, ``off``, ``~``) read as a boolean or None where the
config key is a string / enum (``eval_strategy: no`` is False, not "no").

The keys, what their type does with a boolean or None and where, are data
(rules/knowledge/yaml_string_keys.yaml, read at transformers' and TRL's tags). The words are
found in the config file's own YAML nodes (``parsing.implicit_scalars``), as edited in memory by
``fix``, so the re-check reads the quoted value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import FileEdit, Remedy
from envdoctor.plan.config_files import text_as_run

#: where a value's refusal stops the run, as a message says it
STAGE = {
    "config_init": "before the model loads",
    "trainer_init": "when the trainer is built, after the model has loaded",
}


def _reaches(ctx: Context, found: dict[str, Any], origin: str) -> bool | None:
    """Whether the value reaches the config class: True for a top-level key the file gives it
    (or a section value the script hands it, ``_follow_sections``), False where the plan says the
    key is the script's own, None for a section the script reads in a way not followed."""
    path: tuple[str, ...] = found["path"]
    key = path[-1]
    got = ctx.plan.config_origin.get(key, "")
    if len(path) == 1:
        if got != origin:
            return False  # the command line or the script's code sets it: the file's value does not run
        return not ctx.plan.not_grpo_key(key, got)
    if got.startswith(f"{origin} ({'.'.join(path)})"):
        return True
    return None


def _remedy(path: str, found: dict[str, Any], line: str, entry: dict[str, Any]) -> Remedy | None:
    """The word quoted where the string it spells is a value the key takes (``"no"``), else the
    value a False means (``report_to: none``); None where neither holds."""
    word, col = str(found["word"]), int(found["column"])
    if line[col : col + len(word)] != word:
        return None
    accepted = [str(a) for a in entry.get("accepted") or []]
    if word.lower() in accepted:
        new, said = f'"{word.lower()}"', f'quote it: `{found["path"][-1]}: "{word.lower()}"`'
    elif found["kind"] == "bool" and entry.get("false_means") and word.lower() in ("no", "off"):
        means = str(entry["false_means"])
        new, said = means, f"write `{found['path'][-1]}: {means}` (what a false means here)"
    else:
        return None
    edited = line[:col] + new + line[col + len(word) :]
    return Remedy(
        files=(FileEdit(path=path, line=int(found["line"]), old=(line,), new=(edited,)),),
        fix=f"{said} in {path} line {found['line']}",
    )


@rule("CFG013", needs=("plan",))
def yaml_word_read_as_boolean(ctx: Context) -> Iterator[Hit]:
    path = ctx.plan.config_path
    if not path or str(path).endswith(".json"):
        return
    table: dict[str, Any] = ctx.kb.yaml_string_keys.get("keys") or {}
    text = text_as_run(ctx.plan, str(path))
    if not text:
        return
    from envdoctor.parsing import implicit_scalars

    lines = text.splitlines()
    origin = f"config file {path}"
    for found in implicit_scalars(text):
        key = found["path"][-1]
        entry = table.get(key)
        stage = entry.get("none" if found["kind"] == "null" else "bool") if entry else None
        if not entry or not stage:
            continue
        reaches = _reaches(ctx, found, origin)
        if reaches is False:
            continue
        word, where = found["word"], f"{path} line {found['line']}"
        read = "None" if found["kind"] == "null" else str(word.lower() in ("yes", "on"))
        dotted = ".".join(found["path"])
        msg = (
            f"`{dotted}: {word}` ({where}): YAML reads the unquoted `{word}` as {read}, not the "
            f"string {word.lower()!r} (yaml.safe_load, which TRL's parser and HfArgumentParser use, "
            f"follows YAML 1.1); `{key}` is typed {entry['type']}: {entry['raises']}, "
            f"{STAGE.get(stage, 'at startup')}"
        )
        severity = "error"
        if reaches is None:
            severity = "warning"
            msg += (
                f"; the script reads the `{'.'.join(found['path'][:-1])}` section itself, so this holds "
                "where it hands the value on unchanged (GRPOConfig(**section))"
            )
        line = lines[found["line"] - 1] if found["line"] <= len(lines) else ""
        remedy = _remedy(str(path), found, line, entry)
        accepted = ", ".join(str(a) for a in entry.get("accepted") or [])
        yield hit(
            msg,
            fix=remedy.fix
            if remedy
            else f"set `{dotted}` to one of {accepted} (quoted where YAML reads it otherwise)",
            severity=severity,
            remedy=remedy,
            key=dotted,
            word=word,
            line=found["line"],
            file=str(path),
        )
