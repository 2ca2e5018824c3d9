"""The probe's plan: what it is asked to run — the spec from the resolved layout (``spec``),
which model (``model_source``, the generic ``tinymodel``), where the ranks meet
(``rendezvous``) and the vLLM engine's settings (``vllm_engine``). Imports no other probe layer."""
