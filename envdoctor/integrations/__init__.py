"""Where envdoctor runs inside training: ``callback`` (imports transformers, so it is never
imported from here), ``monitor`` (the NVML watch) and ``ranks`` (per-rank results)."""
