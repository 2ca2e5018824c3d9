"""Turn the CLI's inputs (config files, launch lines) into a ``Plan``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envdoctor.errors import InputError, read_input_text
from envdoctor.plan.interface import MAPPING_ORIGIN, VALUE_UNKNOWN, Launch, Plan, from_code
from envdoctor.plan.script_file import script_file
from envdoctor.plan.values import validate

_LAUNCH_ONLY = {"config"}  # script arguments that are not GRPOConfig fields


def default_accelerate_config(environ: dict[str, str] | None = None) -> Path | None:
    """accelerate's default config file, where ``accelerate launch`` looks without --config_file."""
    env = os.environ if environ is None else environ
    if env.get("ACCELERATE_CONFIG_FILE"):
        return Path(env["ACCELERATE_CONFIG_FILE"])
    home = env.get("HF_HOME") or os.path.join(
        env.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface"
    )
    return Path(home) / "accelerate" / "default_config.yaml"


def build_plan(
    config: str | None = None,
    accelerate_config: str | None = None,
    launch: Sequence[str] | str | None = None,
    config_dict: dict[str, Any] | None = None,
    live: bool = True,
    launch_argv: Sequence[str] = (),
) -> Plan:
    """Read the files and launch lines into a plan; CLI script arguments override the file.

    ``launch``: launch text (a list is one command's argv, as ``preflight(launch=[...])``
    takes it); ``launch_argv``: the command after ``--`` as the shell passed it (not joined and
    split again).
    """
    plan = Plan()
    if launch or launch_argv:  # the launch parser loads only for a launch
        from envdoctor.plan.launch import parse_launches

        plan.launches = parse_launches(launch or None, launch_argv)
        _job_cli(plan)
    trainer = plan.trainer
    script_cfg: dict[str, Any] = {}
    if trainer is not None:
        from envdoctor.script_args import parse_script_args

        script_cfg = parse_script_args(trainer.script_args)
        if config is None and isinstance(script_cfg.get("config"), str):
            config = _launch_file(plan, script_cfg["config"], "GRPO config", "--config")
    if trainer is not None and script_file(trainer):
        from envdoctor.plan.script_plan import read_training_script  # only for a .py script

        script_cfg, code = read_training_script(plan, trainer, script_cfg)
        _merge_code(plan, code)
        plan.job = plan.job or _declared_job(trainer)
    if config_dict:
        _merge(plan, config_dict, MAPPING_ORIGIN)
        _follow_sections(plan, config_dict, MAPPING_ORIGIN)
    if config:
        plan.config_path = str(config)
        data = _read_mapping(config, "GRPO config", plan)
        _merge(plan, data, f"config file {config}")
        _read_by_script(plan, f"config file {config}")
        _follow_sections(plan, data, f"config file {config}")
    if plan.script is not None and plan.script.hydra_config:
        _follow_sections(plan, plan.script.hydra_values, f"{HYDRA_ORIGIN} {plan.script.hydra_config}")
    if trainer is not None:
        _merge(plan, {k: v for k, v in script_cfg.items() if k not in _LAUNCH_ONLY}, "command line")
        _apply_config_env(plan, trainer)
        _read_hostfile(trainer)
    if trainer is not None and trainer.launcher.startswith("trl-") and not trainer.is_server:
        _trl_launcher_keys(plan, trainer)
    acc_path = accelerate_config
    named = None  # the accelerate config the launch line names (not envdoctor's own option)
    if acc_path is None and trainer is not None:
        acc_path = named = trainer.options.get("config_file") or trainer.options.get("accelerate_config")
    if acc_path is None and live and trainer is not None and trainer.launcher == "accelerate":
        default = default_accelerate_config()
        if default is not None and default.is_file():
            acc_path = str(default)
    bundled = _trl_bundled_config(trainer, acc_path)
    if bundled is None and isinstance(named, str) and trainer is not None:
        bundled = _launch_accelerate_config(plan, trainer, named)
        acc_path = None  # found nowhere: not read (LAY019)
    if bundled is not None:
        plan.accelerate_path, plan.accelerate = bundled
    elif isinstance(acc_path, str):
        plan.accelerate_path = acc_path
        plan.accelerate = _read_mapping(acc_path, "accelerate config", plan)
    elif acc_path is not None:
        raise InputError("--config_file", f"expected a file path, got {acc_path!r}")
    if trainer is not None:
        from envdoctor.plan.framework import detect

        plan.framework = detect(trainer, plan.script)
    return plan


#: job launchers' command lines that submit a declaration file: program -> its subcommands
_JOB_CLIS = {
    "sky": ("launch", "exec", "jobs"),
    "az": ("ml",),
    "kubectl": ("apply", "create"),
    "modal": ("run", "deploy"),
}


def _job_cli(plan: Plan) -> None:
    """``sky launch task.yaml``, ``az ml job create -f job.yml``, ``kubectl apply -f job.yaml``,
    ``modal run app.py``: the trainer is the launch line the declared job runs on each node (its
    counts in ``plan.job``), or unresolved with why where its count is not known."""
    trainer = plan.trainer
    if trainer is None or trainer.launcher != "unknown":
        return
    words = [*trainer.program, *trainer.script_args]
    prog = os.path.basename(words[0]) if words else ""
    if prog not in _JOB_CLIS or len(words) < 2 or words[1] not in _JOB_CLIS[prog]:
        return
    named = [w.split("::")[0] for w in words[2:]]
    path = next(
        (w for w in named if w.endswith((".yaml", ".yml", ".py", ".ipynb")) and os.path.isfile(w)), None
    )
    if path is None:
        return
    from pathlib import Path

    from envdoctor.plan.launchers import one_job, read_file
    from envdoctor.plan.launchers.counts import runs

    last: dict[str, Any] = {}  # each declaration's last launch line: the training, after its setup steps
    for found_job in read_file(Path(path), path):
        last[found_job.source] = found_job
    job = one_job(list(last.values()))
    if job is None:
        return
    plan.job = job
    found = runs(job.command, job.env) if job.command and (job.in_process or not job.unknown) else []
    if found and job.in_process and job.unknown:
        # the app's file trains in the container's process: read as the training script, while
        # the GPUs it gets are not known
        found[-1].unresolved = f"{job.kind} ({job.source}): {job.unknown}"
    if not found:
        trainer.unresolved = f"{job.kind} ({job.source}): {job.unknown or 'no launch line read'}"
        return
    plan.launches[plan.launches.index(trainer)] = found[-1]


#: Azure ML's bindings in a job's command (``${{inputs.model_dir}}``, ``${{outputs.ckpt}}``): a
#: line that carries one is the command of an Azure ML job, which its distribution starts
_AML_BINDING = "${{"


def _declared_job(trainer: Launch) -> Any:
    """The job launcher the repository declares around a bare ``python`` line of a script that
    is here (envdoctor.plan.launchers; read only then): None where the line is a launcher's own
    or nothing declares the script. A line with Azure ML's ``${{inputs.…}}`` bindings whose job
    is declared nowhere envdoctor reads (a notebook's cell, an SDK call elsewhere) is that job's
    command all the same: its process count per node is not known, not one."""
    path = script_file(trainer)
    if trainer.launcher != "python" or trainer.wrappers or not path or not os.path.isfile(path):
        return None
    if "LOCAL_RANK" in trainer.env:
        return None
    from envdoctor.plan.launchers import JobLaunch, jobs_for, one_job

    job = one_job(jobs_for(trainer.script, trainer.module, path))
    bound = [w for w in trainer.script_args if _AML_BINDING in w and ("inputs." in w or "outputs." in w)]
    if job is None and bound:
        from envdoctor.plan.launchers.azureml import KIND

        return JobLaunch(
            kind=KIND,
            source=f"the launch line ({bound[0][:60]})",
            command=trainer.raw,
            unknown="its ${{inputs.…}} / ${{outputs.…}} bindings make it an Azure ML job's command, "
            "and the job's distribution (how many processes per node) is declared in no file "
            "envdoctor read",
        )
    return job


def _trl_launcher_keys(plan: Plan, trainer: Launch) -> None:
    """``trl grpo`` hands accelerate what its parser does not take (``--num_processes``,
    ``--accelerate_config``…), from the command line or the config file (``accelerate_config:
    zero2``): launcher options, not GRPOConfig keys; the command line's win."""
    from envdoctor.plan.launch import TRL_ACCELERATE

    for key in sorted(TRL_ACCELERATE & set(plan.config)):
        value = plan.config.pop(key)
        if plan.config_origin.pop(key, "").startswith("config file"):
            trainer.options.setdefault(key, value)


def _trl_bundled_config(trainer: Launch | None, name: Any) -> tuple[str, dict[str, Any]] | None:
    """``trl grpo --accelerate_config zero2``: a config TRL ships (rules/knowledge/
    trl_accelerate_configs.yaml), when the name is not a file here, as TRL resolves it."""
    if trainer is None or not trainer.launcher.startswith("trl") or not isinstance(name, str):
        return None
    if os.path.lexists(name) or trainer.options.get("config_file") is not None:
        return None
    from envdoctor.knowledge import knowledge

    config = (knowledge().trl_accelerate_configs.get("configs") or {}).get(name)
    if not isinstance(config, dict):
        return None
    return f"{name} (TRL's trl/accelerate_configs/{name}.yaml)", dict(config)


def _launch_file(plan: Plan, written: str, what: str, option: str) -> str | None:
    """The path to read for a file the launch line names (``plan.launch_files``: where it was
    found when not where the line names it, or that it was found nowhere); None when not found."""
    from envdoctor.plan.launch_files import LaunchFile, locate, missing_in_repository, script_here

    found, how = locate(written)
    if found is None or how:
        missing = None
        if found is None:
            trainer = plan.trainer
            others = "\n".join(lx.raw for lx in plan.launches if lx is not trainer)
            if trainer is not None and script_here(trainer.script, trainer.module):
                missing = missing_in_repository(written, others)
        plan.launch_files.append(LaunchFile(what, option, written, found, how, missing=missing))
    return found


def _launch_accelerate_config(plan: Plan, trainer: Launch, written: str) -> tuple[str, dict[str, Any]] | None:
    """The accelerate config the launch line names (``--config_file``), where ``locate`` finds
    it, else the config TRL or open-r1 ships that its path ends with, as envdoctor knows it
    (said in ``plan.launch_files``); None when it is found nowhere (then the launch line's flags
    alone say the layout: the process count, where no flag gives it, is not known)."""
    from envdoctor.plan.launch_files import LaunchFile, known_accelerate_config

    option = "--config_file" if trainer.options.get("config_file") else "--accelerate_config"
    found = _launch_file(plan, written, "accelerate config", option)
    if found is not None:
        return found, _read_mapping(found, "accelerate config", plan)
    known = known_accelerate_config(written)
    if known is not None:
        name, config, source = known
        plan.launch_files[-1] = LaunchFile("accelerate config", option, written, None, source, name)
        return f"{written} ({source}, as envdoctor knows it)", config
    _count_unread(plan, trainer)
    return None


def _count_unread(plan: Plan, trainer: Launch | None) -> None:
    """An accelerate launch line with no ``--num_processes`` whose accelerate config was found
    nowhere: its process count is that file's, not known (the layout is not resolved)."""
    unread = [f for f in plan.launch_files if f.what == "accelerate config" and not f.read and not f.known]
    if trainer is None or not unread or "num_processes" in trainer.options or trainer.unresolved:
        return
    trainer.unresolved = (
        f"the process count is in accelerate config {unread[-1].written} ({unread[-1].option}), "
        "which is not here"
    )


def _read_mapping(path: str, what: str, plan: Plan) -> dict[str, Any]:
    """A config file as a mapping; its readers (YAML, JSON, TOML) load only for a file given;
    its keys set twice go to ``plan.duplicate_keys`` (CFG007)."""
    from envdoctor.parsing import read_mapping

    twice: list[dict[str, Any]] = []
    data = read_mapping(path, what, twice)
    plan.duplicate_keys += [{**d, "file": str(path), "what": what} for d in twice]
    return data


def _merge(plan: Plan, values: dict[str, Any], origin: str) -> None:
    for key, value in values.items():
        validate(str(key), value, origin)  # values outside every rule's domain: exit 2 here
        plan.config[key] = value
        plan.config_origin[key] = origin


def _merge_code(plan: Plan, code: dict[str, tuple[Any, str]]) -> None:
    """What the script's GRPOConfig(...) calls set: a literal is config like a file's (one no rule
    can judge is kept as a key only); any other expression leaves the key set, value unknown."""
    from envdoctor.errors import InputError
    from envdoctor.plan.script_plan import UNKNOWN

    for key, (value, origin) in code.items():
        if value is not UNKNOWN:
            try:
                validate(key, value, origin)
            except InputError:  # outside every rule's domain: the script's to refuse
                value, origin = UNKNOWN, f"{origin}, {VALUE_UNKNOWN}"
        if value is UNKNOWN:
            plan.config.pop(key, None)
        else:
            plan.config[key] = value
        plan.config_origin[key] = origin


def _read_hostfile(trainer: Launch) -> None:
    """deepspeed without ``--num_nodes`` runs on every host of ``--hostfile``: count them
    (``host slots=N`` lines) when the file is here; the layout says so when it is not."""
    path = trainer.options.get("hostfile", trainer.options.get("H"))
    if trainer.launcher != "deepspeed" or not isinstance(path, str) or not os.path.isfile(path):
        return
    text = read_input_text(path, f"deepspeed --hostfile {path}", 1024 * 1024)
    hosts = {line.split()[0] for line in (raw.split("#", 1)[0] for raw in text.splitlines()) if line.strip()}
    if not hosts:
        raise InputError(f"deepspeed --hostfile {path}", "lists no host")
    trainer.options["_hostfile_hosts"] = len(hosts)


def _apply_config_env(plan: Plan, trainer: Launch) -> None:
    """TRL's parser exports a config file's ``env:`` mapping before training starts."""
    env = plan.config.get("env")
    if isinstance(env, dict):
        for key, value in env.items():
            trainer.env.setdefault(str(key), str(value))


def _read_by_script(plan: Plan, origin: str) -> None:
    """A script that reads its config file itself and names every GRPOConfig keyword: the file's
    keys it does not pass are its own (read or ignored by it), never GRPOConfig's to judge."""
    script = plan.script
    if script is None or not script.self_load:
        return
    passed = set(script.trl_config_keys)
    for key, where in plan.config_origin.items():
        if where == origin and key not in passed:
            plan.script_keys.setdefault(
                key, f"read by the script itself ({script.self_load}), which does not pass it to GRPOConfig"
            )


def _unfollow(plan: Plan) -> None:
    """Keys the config file gave GRPOConfig through a keyword of the script (``_follow_sections``)
    that the script, read again (edited by ``fix``), no longer passes: no longer GRPOConfig's; a
    top-level key of the file stays the file's own."""
    script = plan.script
    if script is None:
        return
    for key, origin in list(plan.config_origin.items()):
        head, through, _ = origin.partition(", through ")
        if not through or key in script.file_keys:
            continue
        value = plan.config.pop(key, None)
        del plan.config_origin[key]
        if head.endswith(f" ({key})") and head.startswith("config file "):
            plan.config[key] = value
            plan.config_origin[key] = head[: -len(f" ({key})")]


def _dig(data: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return _ABSENT
        data = data[part]
    return data


_ABSENT = object()


def _follow_sections(plan: Plan, data: dict[str, Any], origin: str) -> None:
    """A script that reads the config file itself and hands GRPOConfig values from places in it
    (``GRPOConfig(per_device_train_batch_size=conf["training"].get(…))``, ``**conf["grpo"]``): the
    values there are the config's, said as from that place; the file's sections the script reads
    are its own, never GRPOConfig's keys."""
    script = plan.script
    if script is None or script.problem or not (script.file_keys or script.file_spreads):
        return
    roots: dict[str, str] = {}
    for key, (path, where) in script.file_keys.items():
        value = _dig(data, path)
        if len(path) > 1 or path[0] != key:
            roots.setdefault(path[0], where)
        if value is _ABSENT or isinstance(value, dict) or value is None or _interpolated(value):
            continue  # not in the file: the script's default, value unknown
        validate(key, value, origin)
        plan.config[key] = value
        plan.config_origin[key] = f"{origin} ({'.'.join(path)}), through {where}"
    for path, where in script.file_spreads.items():
        section = _dig(data, path)
        if path:
            roots.setdefault(path[0], where)
        if not isinstance(section, dict):
            continue
        for key, value in section.items():
            if _interpolated(value):
                plan.config.pop(str(key), None)
                plan.config_origin[str(key)] = f"{origin} ({'.'.join((*path, str(key)))}), {VALUE_UNKNOWN}"
                continue
            validate(str(key), value, origin)
            plan.config[str(key)] = value
            plan.config_origin[str(key)] = f"{origin} ({'.'.join((*path, str(key)))}), spread into {where}"
    for root, where in roots.items():
        if root in data and root not in script.file_keys and not any(not p for p in script.file_spreads):
            plan.script_keys.setdefault(
                root, f"a section of the config file the script reads itself ({where})"
            )
            if plan.config_origin.get(root) == origin:
                plan.config.pop(root, None)
                plan.config_origin.pop(root, None)


#: how the origin of a key read from the config a Hydra entry composes begins
HYDRA_ORIGIN = "Hydra config"


def _interpolated(value: Any) -> bool:
    """An OmegaConf interpolation (``${…}``): its value is not read."""
    return isinstance(value, str) and "${" in value


def file_places(plan: Plan, nested: bool = True) -> dict[str, tuple[str, ...]]:
    """The config keys whose value the training script reads from a nested place of the config
    file itself (``_follow_sections``) -> that place: ``envdoctor fix`` edits them there
    (``nested=False``: top-level places too)."""
    script = plan.script
    if script is None:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for path, _ in script.file_spreads.items():
        for key, origin in plan.config_origin.items():
            if path and origin.endswith(
                f"({'.'.join((*path, key))}), spread into {script.file_spreads[path]}"
            ):
                out[key] = (*path, key)
    for key, (path, where) in script.file_keys.items():
        if plan.config_origin.get(key, "").endswith(f"({'.'.join(path)}), through {where}"):
            out[key] = path
    return {k: p for k, p in out.items() if len(p) > 1 or not nested}


def _keep_code(plan: Plan, new: Plan) -> None:
    new.script = plan.script
    for key, origin in plan.config_origin.items():
        if from_code(origin) and key not in new.config_origin:
            if key in plan.config:
                new.config[key] = plan.config[key]
            new.config_origin[key] = origin


def relaunch(plan: Plan, lines: Sequence[str]) -> Plan:
    """``plan`` with its launch lines replaced by ``lines`` (``envdoctor fix`` trying a launch
    line): the config file's keys stay, the old command line's keys go and the new one's come,
    as ``build_plan`` would read them; no file is read but a deepspeed hostfile and the training
    script the new trainer line runs (its flags reach its GRPOConfig(...) calls)."""
    from envdoctor.plan.launch import parse_launches
    from envdoctor.script_args import parse_script_args

    new = Plan(
        config_path=plan.config_path, accelerate=dict(plan.accelerate), accelerate_path=plan.accelerate_path
    )
    new.script_keys = dict(plan.script_keys)
    new.repository_read = plan.repository_read
    new.duplicate_keys = list(plan.duplicate_keys)  # the files are the same files
    new.edited = dict(plan.edited)
    new.launch_files = list(plan.launch_files)
    for key, value in plan.config.items():
        origin = plan.config_origin.get(key, MAPPING_ORIGIN)
        if origin != "command line" and not from_code(origin) and not origin.startswith(HYDRA_ORIGIN):
            new.config[key] = value
            new.config_origin[key] = origin
    new.launches = parse_launches("\n".join(lines)) if lines else []
    trainer = new.trainer
    if trainer is None or not script_file(trainer):
        _keep_code(plan, new)  # no script to read again: what its code set stays
    if trainer is not None:
        args = parse_script_args(trainer.script_args)
        if script_file(trainer):
            # the script read again, as check reads it: its flags on the new line reach its
            # GRPOConfig(...) calls; a config file's key still wins over its code
            from envdoctor.plan.script_plan import read_training_script

            args, code = read_training_script(new, trainer, args)
            _merge_code(new, {k: v for k, v in code.items() if k not in new.config_origin})
            if new.config_path:  # a key the (edited) script no longer passes is its own
                _unfollow(new)
                _read_by_script(new, f"config file {new.config_path}")
            new.job = _declared_job(trainer)
            if new.script is not None and new.script.hydra_config:
                _follow_sections(new, new.script.hydra_values, f"{HYDRA_ORIGIN} {new.script.hydra_config}")
        _merge(new, {k: v for k, v in args.items() if k not in _LAUNCH_ONLY}, "command line")
        _apply_config_env(new, trainer)
        _read_hostfile(trainer)
        _count_unread(new, trainer)
    return new
