"""REP013: a model the run loads from the repository's own tree that only the author's machine has
(a committed symlink out of the repository, a model folder without weights); read by
``plan/repo_models.py`` in the hook."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule


@rule("REP013")
def repo_model_path_unloadable(ctx: Context) -> Iterator[Hit]:
    for seen in (ctx.facts.extra.get("repo_paths") or {}).get("model_paths") or []:
        yield hit(
            f"{seen['file']} line {seen['line']} loads the model `{seen['path']}` ({seen['key']}), which "
            f"is the repository's `{seen['at']}`: {seen['problem']}; transformers takes a local "
            "folder before a Hub id of that name, so the model does not load on another machine",
            fix=f"point {seen['key']} at the model's Hub id (e.g. `Qwen/{seen['path'].rsplit('/', 1)[-1]}`) "
            f"or a folder the user downloads, and remove `{seen['at']}` from the repository",
            file=seen["file"],
            line=seen["line"],
            path=seen["at"],
        )
