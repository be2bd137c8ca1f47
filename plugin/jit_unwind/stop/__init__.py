"""What one stop of a process knows, computed once and kept until the process runs
again: the per-stop cache (``cache.StopCache``), which every reader declares on its
``debugger.Process``."""
