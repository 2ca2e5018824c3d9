"""The memory model of a GRPO run: its one home, read by the plan, the rules, triage and the probe.

- ``shape``: the model's architecture (a local ``config.json`` or ``--model-params``);
- ``knobs``: the run's memory-relevant settings (GRPO config, accelerate / DeepSpeed / FSDP,
  the installed TRL's defaults);
- ``parts``: what each GPU holds at its peak, part by part (the formulas, with their sources);
- ``planner``: one row per GPU for a run's context, cached on it, and the fixes;
- ``oom``: an out-of-memory in the optimizer step explained with the plan (triage).

The rules on the plan are in ``envdoctor/checks/memory.py`` and ``memory_plan.py``. Nothing is
imported here: a reader loads the module it needs.
"""
