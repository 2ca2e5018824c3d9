"""Credentials committed in the repository's files (``envdoctor hook``): what
``envdoctor.plan.repo_secrets`` found, one finding each, the value never shown."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule

#: kind -> (what it is, the variable the job reads it from, where it is revoked)
_KIND = {
    "hf": ("a Hugging Face token", "HF_TOKEN", "https://huggingface.co/settings/tokens"),
    "wandb": ("a W&B API key", "WANDB_API_KEY", "https://wandb.ai/authorize"),
    "openai": ("an OpenAI API key", "OPENAI_API_KEY", "https://platform.openai.com/api-keys"),
}


@rule("SEC001")
def committed_credential(ctx: Context) -> Iterator[Hit]:
    for seen in ctx.facts.extra.get("committed_secrets") or []:
        what, var, revoke = _KIND.get(seen["kind"], ("a credential", "the variable", "its provider"))
        named = f" after `{seen['name']}`" if seen.get("name") else ""
        yield hit(
            f"{what} is written in {seen['file']} (line {seen['line']}){named}: everyone who can "
            "read the repository can use it, and it stays in the git history",
            f"Delete it from {seen['file']} and let the job read {var} from the environment, set "
            f"from your CI or cluster secret store (GitHub Actions: an Actions secret passed as "
            f"the {var} variable; a notebook: an environment variable, not a cell); revoke the "
            f"committed one at {revoke} and make a new one.",
            file=seen["file"],
            line=seen["line"],
            kind=seen["kind"],
        )
