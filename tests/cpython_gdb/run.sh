#!/bin/bash
# CPython 3.14.6's Lib/test/test_gdb through a GDB, four ways: without and with
# jit-unwind loaded into every GDB it starts, each with the JIT off and on.
# usage: tests/cpython_gdb/run.sh [GDB]   (default: the gdb on PATH)
# Prints one summary line per run; the logs are in build/cpython-gdb/.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${JIT_UNWIND_CACHE:-$HOME/.cache/jit-unwind}
VERSION=3.14.6
MINOR=3.14
PYTHON=$CACHE/cpython-$VERSION-jit-x86_64-linux/bin/python$MINOR
TESTS=$ROOT/build/cpython-test-$VERSION
LOGS=$ROOT/build/cpython-gdb
REAL_GDB=$(command -v "${1:-gdb}") || { echo "no GDB ${1:-gdb}" >&2; exit 2; }
# Absolute (the tests run from another directory), the link itself kept (a venv's gdb).
REAL_GDB=$(cd "$(dirname "$REAL_GDB")" && pwd)/$(basename "$REAL_GDB")
[[ -x $PYTHON ]] || { echo "$PYTHON is missing: run make fixtures" >&2; exit 2; }
if [[ ! -d $TESTS/Lib/test/test_gdb ]]; then
    # The interpreter archives leave Lib/test out: it comes from the same source.
    SOURCE=$("$ROOT/tests/fixtures/cpython_source.sh" "$MINOR" "$VERSION") || exit 2
    mkdir -p "$TESTS"
    tar -xJf "$SOURCE" -C "$TESTS" --strip-components=1 "Python-$VERSION/Lib/test/__init__.py" \
        "Python-$VERSION/Lib/test/support" "Python-$VERSION/Lib/test/test_gdb" || exit 2
fi
mkdir -p "$LOGS"
export JIT_UNWIND_REAL_GDB=$REAL_GDB JIT_UNWIND_PYTHON_BIN=$(dirname "$PYTHON")
export JIT_UNWIND_GDB_INIT=$ROOT/gdb_init.py
status=0
for plugin in 0 1; do
    for jit in 0 1; do
        log=$LOGS/$(basename "$REAL_GDB")-$("$REAL_GDB" --version | head -n1 | grep -oE '[0-9]+\.[0-9]+' | head -n1)-plugin$plugin-jit$jit.log
        (cd "$TESTS/Lib" && PATH=$ROOT/tests/cpython_gdb:$PATH JIT_UNWIND_PLUGIN=$plugin \
            JIT_UNWIND_PYTHON_JIT=$jit PYTHONPATH=$TESTS/Lib \
            "$PYTHON" "$ROOT/tests/cpython_gdb/run_test_gdb.py" -v) > "$log" 2>&1 || status=1
        summary=$(grep -E '^(Ran |OK|FAILED)' "$log" | tr '\n' ' ')
        echo "plugin=$plugin PYTHON_JIT=$jit: $summary($log)"
    done
done
exit $status
