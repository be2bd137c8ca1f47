"""The symbol files' private directory: made (mode 0700, a name no one can guess) and
removed with ``os`` alone.

Not ``tempfile.mkdtemp``/``shutil.rmtree``: importing those two pulls ``random``,
``bz2``, ``lzma`` and more into a debugger whose Python had not loaded them (GDB 13's,
lldb-19's): a few milliseconds of the first symbol file's load, its largest Python part
after the ELF writer.
"""

import os
from typing import List, Optional

_ATTEMPTS = 100  # names are 80 random bits: a clash means something else is wrong


def _candidate_roots() -> List[str]:
    """Where to make the directory, in tempfile's order of preference."""
    roots = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")]
    roots += ["/tmp", "/var/tmp", "/usr/tmp"]
    try:
        roots.append(os.getcwd())
    except OSError:  # the debugger's working directory was removed
        pass
    return [root for root in roots if root]


def make_private_directory(prefix: str) -> Optional[str]:
    """A new directory only this user can enter, or None when no root accepts one."""
    for root in _candidate_roots():
        for _ in range(_ATTEMPTS):
            path = os.path.join(root, prefix + os.urandom(10).hex())
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                continue
            except OSError:  # not writable, not a directory, gone: try the next root
                break
            return path
    return None


def remove_directory(path: str) -> None:
    """Remove ``path`` and the files in it (the symbol files); never raises."""
    try:
        with os.scandir(path) as entries:
            names = [entry.path for entry in entries]
    except OSError:
        names = []
    for name in names:
        try:
            os.unlink(name)
        except OSError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        pass
