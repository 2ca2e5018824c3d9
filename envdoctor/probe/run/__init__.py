"""The probe's run: the lifecycle that stages, launches, watches and judges (``runner``), and
what runs inside each rank (``worker.py``, ``sync_proof.py``: stdlib + the training stack,
never envdoctor). The top of the probe's inner layers: may import every one below."""
