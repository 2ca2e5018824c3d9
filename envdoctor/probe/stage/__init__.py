"""What the probe puts in place before it launches (``staging``): the model's files
(``model_files``, ``model_writer.py``), the probe server's line and process (``server``,
``server_shim.py``), vLLM's start-up work done ahead (``warm``, ``vllm_warm.py``) and the process
groups they run in (``groups``). Imports the plan and observe layers only."""
