"""A thread's stack as every reader shows it: the native frames of a walk (``frames``,
``thread_walk``), how a frame is labelled and named, and the Python frames merged in
(``merge``, ``mixed``).  Above the unwinding strategies, below the commands and readers."""
