"""What the probe sees while it runs: NVML samples of which process holds which GPU
(``watcher``). Imports no other probe layer; staging and the run use it."""
