"""bench/symbol_file_cost.py's part inside GDB (its -x script, after gdb_init.py).

Its own file, importing little: modules this script imported would be ready for the
plugin, and the first load's imports are part of what a user's first stop pays.
"""

import json
import os
import time


def _in_gdb(config) -> None:
    import gdb

    def timed(command):
        start, wall = time.process_time(), time.perf_counter()
        text = gdb.execute(command, to_string=True)
        return (time.process_time() - start, time.perf_counter() - wall), text

    gdb.execute("set jit-unwind symbol-file off")
    if config.get("core"):
        gdb.execute(f"core-file {config['core']}", to_string=True)
    else:
        gdb.execute("run", to_string=True)
    first, bt = timed("bt")
    last = config["functions"] - 1
    assert f"many::f{last}" in bt, bt
    load, _ = timed("set jit-unwind symbol-file on")
    gdb.execute("maintenance flush register-cache")
    after, bt_after = timed("bt")
    assert f"many::f{last}" in bt_after, bt_after
    from jit_unwind.gdb.symfile import FILES
    assert FILES.loaded, "no symbol file loaded"
    count = len(FILES._functions)
    assert count == config["functions"], count
    own = _gdbs_own_load(gdb, FILES.loaded)
    if not config.get("core"):
        if config.get("save_core"):
            gdb.execute(f"gcore {config['save_core']}", to_string=True)
        print(f"PID {gdb.selected_inferior().pid}")  # its perf map is removed at the end
        gdb.execute("kill")
    print("RESULT " + json.dumps({"first_bt": first[0], "load": load[0], "bt_after": after[0],
                                  "first_bt_wall": first[1], "load_wall": load[1],
                                  "own": own}))


def _gdbs_own_load(gdb, path):
    """CPU seconds of GDB's ``add-symbol-file`` of a copy of the plugin's file, with the
    plugin's own unloaded: the floor of any load of those symbols (a copy: GDB would
    reuse the minimal symbols of a file it has read)."""
    copy = path + ".copy.elf"
    with open(path, "rb") as source, open(copy, "wb") as target:
        target.write(source.read())
    gdb.execute("set jit-unwind symbol-file off")
    start = time.process_time()
    gdb.execute(f"add-symbol-file {copy} -o 0", to_string=True)
    own = time.process_time() - start
    gdb.execute(f"remove-symbol-file {copy}", to_string=True)
    os.unlink(copy)
    return own


_in_gdb(json.loads(os.environ["JIT_UNWIND_SYMFILE_BENCH"]))
