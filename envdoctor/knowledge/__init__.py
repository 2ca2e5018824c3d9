"""Curated, sourced version knowledge (``rules/knowledge/*.yaml``), loaded on first use.

The package is knowledge's one home: the loaders here (``knowledge()``, ``known_failures()``);
``schema`` (the tables' schema), ``keys`` (which release has a config key), ``requirements``
(PKG004's severity model) and ``failures`` (the known-failures catalogue) beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from envdoctor import versions
from envdoctor.resources import read_yaml, rules_dir

SCHEMA = "envdoctor.knowledge/1"

if TYPE_CHECKING:
    from envdoctor.knowledge.failures import KnownFailure


class Knowledge:
    """The curated tables, each parsed from YAML on first use (the static check stays fast)."""

    FILES = {
        "trl": "trl.yaml",
        "vllm": "vllm.yaml",
        "grpo_keys": "grpo_config_keys.yaml",
        "grpo_choices": "grpo_config_choices.yaml",
        "trainer_params": "grpo_trainer_parameters.yaml",
        "allocator": "torch_allocator.yaml",
        "requirements": "requirements.yaml",
        "parser_keys": "parser_keys.yaml",
        "script_argument_types": "script_argument_types.yaml",
        "horizon": "horizon.yaml",
        "trainer_hooks": "trainer_hooks.yaml",
        "trl_accelerate_configs": "trl_accelerate_configs.yaml",
        "trl_example_scripts": "trl_example_scripts.yaml",
        "import_names": "import_names.yaml",
        "import_shadow": "import_shadow.yaml",
        "vllm_api": "vllm_api.yaml",
        "requirement_api": "requirement_api.yaml",
        "requirement_floors": "requirement_floors.yaml",
        "wrappers": "wrappers.yaml",
        "frameworks": "frameworks.yaml",
        "optional_features": "optional_features.yaml",
        "peft_gradient_checkpointing": "peft_gradient_checkpointing.yaml",
        "resume_torch_load": "resume_torch_load.yaml",
        "yaml_string_keys": "yaml_string_keys.yaml",
        "refused_settings": "refused_settings.yaml",
        "accelerate_deepspeed": "accelerate_deepspeed.yaml",
        "trl_trainer_vllm": "trl_trainer_vllm.yaml",
    }

    def __init__(self, **tables: dict[str, Any]) -> None:
        self._tables: dict[str, dict[str, Any]] = dict(tables)

    def __getattr__(self, name: str) -> dict[str, Any]:
        files = type(self).FILES
        if name not in files:
            raise AttributeError(name)
        if name not in self._tables:
            self._tables[name] = _load(files[name])
        return self._tables[name]

    def feature(self, name: str, trl_version: str | None) -> bool | None:
        """Whether TRL ``trl_version`` has feature ``name``; None if unknown."""
        return _within(self.feature_entry(name), trl_version)

    def feature_entry(self, name: str) -> dict[str, Any]:
        return next((f for f in self.trl.get("features", []) if f.get("name") == name), {})

    def trl_line(self, trl_version: str | None) -> dict[str, Any] | None:
        lines: list[dict[str, Any]] = self.trl.get("trl_lines", [])
        for line in lines:
            if versions.satisfies(trl_version, str(line.get("trl", ""))):
                return line
        v = versions.parse(trl_version)
        if v is not None and v.is_prerelease:  # 0.18.0.dev0 (a main commit): the line it leads to
            base = ".".join(map(str, v.release))
            return next((ln for ln in lines if versions.satisfies(base, str(ln.get("trl", "")))), None)
        return None

    def config_key(self, key: str) -> dict[str, Any] | None:
        keys: dict[str, dict[str, Any]] = self.grpo_keys.get("keys") or {}
        return keys.get(key)

    def has_config_key(self, key: str, trl_version: str | None) -> bool | None:
        """Whether TRL ``trl_version`` accepts GRPO config key ``key``; None if unknown."""
        return _within(self.config_key(key) or {}, trl_version)


def _within(entry: dict[str, Any], trl_version: str | None) -> bool | None:
    """Whether ``trl_version`` is in an entry's [since, until) range; None when either is unknown."""
    if not entry or versions.parse(trl_version) is None:
        return None
    since, until = entry.get("since"), entry.get("until")
    if since and versions.below(trl_version, str(since)):
        return False
    return not (until and versions.at_least(trl_version, str(until)))


def _load(name: str) -> dict[str, Any]:
    path = rules_dir() / "knowledge" / name
    if not path.is_file():
        return {}
    data = read_yaml(path)
    return data if isinstance(data, dict) else {}


@lru_cache(maxsize=1)
def knowledge() -> Knowledge:
    return Knowledge()


#: How messages name a package.
DISPLAY = {"trl": "TRL", "vllm": "vLLM"}


@dataclass(frozen=True)
class Beyond:
    """A version newer than the newest release of its package envdoctor knows."""

    name: str
    version: str
    newest: str
    released: str

    @property
    def display(self) -> str:
        return DISPLAY.get(self.name, self.name)

    def said(self) -> str:
        """``TRL ≤ 1.16.0 (newest known; 1.17.0 is newer than envdoctor knows)``: how a message
        names the release whose facts it states."""
        return f"{self.display} ≤ {self.newest} (newest known; {self.version} is newer than envdoctor knows)"


def horizon(kb: Knowledge | None = None) -> dict[str, dict[str, Any]]:
    """``rules/knowledge/horizon.yaml``'s packages: name -> {newest, released}."""
    packages = (kb or knowledge()).horizon.get("packages") or {}
    return packages if isinstance(packages, dict) else {}


def beyond_horizon(name: str, version: str | None, kb: Knowledge | None = None) -> Beyond | None:
    """``Beyond`` when ``version`` of ``name`` is newer than the newest release envdoctor knows
    (a pre-release or dev build of a newer release counts; a local label does not), else None.
    Used by the package rules, the messages that state version facts and triage (versions read
    from a log)."""
    entry = horizon(kb).get(normalize_name(name)) or {}
    newest = versions.parse(str(entry.get("newest") or ""))
    v = versions.parse(version)
    if newest is None or v is None:
        return None
    public = versions.parse(v.public)
    if public is None or not public > newest:
        return None
    return Beyond(normalize_name(name), v.public, newest.public, str(entry.get("released") or "?"))


def release_said(name: str, version: str | None, kb: Knowledge | None = None) -> str:
    """How a message names release ``version`` of ``name`` when it states a fact about it:
    ``TRL 1.16.0``; past the horizon, the newest known release the fact comes from
    (``Beyond.said``)."""
    past = beyond_horizon(name, version, kb)
    if past is not None:
        return past.said()
    return f"{DISPLAY.get(normalize_name(name), name)} {version or '?'}"


def normalize_name(name: str) -> str:
    """PEP 503 (the facts layer's ``normalize_name``, spelled here: knowledge stays below it)."""
    value = name.replace("_", "-").replace(".", "-")
    while "--" in value:
        value = value.replace("--", "-")
    return value.lower()


def known_failures() -> list[KnownFailure]:
    """The catalogue of confirmed breakages (rules/knowledge/known_failures/), parsed and
    validated on first use, once per process; ``KnownFailuresError`` names a bad file and entry."""
    from envdoctor.knowledge.catalogue import load_known_failures

    return list(load_known_failures())


def checkable_failures() -> list[KnownFailure]:
    """The catalogue entries ``check`` reports itself (no ``rule``, not ``triage_only``)."""
    from envdoctor.knowledge.catalogue import load_checkable_failures

    return list(load_checkable_failures())
