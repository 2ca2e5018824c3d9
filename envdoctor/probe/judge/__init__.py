"""From what was observed to findings: the trainer half (``trainer``), the vLLM half
(``vllm_judge``), the weight-sync proof (``sync_judge``) and the known failure texts
(``failures``). Pure: nothing here starts, waits for or ends a process. Imports the plan and
observe layers only (the spec and result types)."""
