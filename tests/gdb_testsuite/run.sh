#!/usr/bin/env bash
# GDB 13.1's own testsuite, plain and with jit-unwind sourced into every GDB it starts;
# prints every test whose results differ and exits 1 if the plugin's are worse
# (tests/gdb_testsuite/compare.py says what "worse" means; allowed.txt the exceptions).
#
#   tests/gdb_testsuite/run.sh                      # the .exp files of ci.list
#   tests/gdb_testsuite/run.sh --all                # all of gdb.base and gdb.python
#   tests/gdb_testsuite/run.sh gdb.base/jit-reader.exp ...
#
# GDB (default /usr/bin/gdb): the GDB tested. PLUGIN_GDBFLAGS: more options for the plugin's
# GDB (e.g. -iex "set python print-stack full"). RUN_NAME (default ci, all or one): the
# directory of the logs, build/gdb-testsuite/RUN_NAME/{plain,plugin}/gdb/testsuite/gdb.sum.
# The testsuite is the one of Debian 12's gdb source package (the orig tarball and Debian's
# patches, from the pool of the mirror apt uses), unpacked and configured once into
# ~/.cache/jit-unwind/gdb-testsuite-13.1 (JIT_UNWIND_CACHE). Both runs go at once (2 runtest
# processes); the .exp files of a worse test run again both ways, and only a test worse
# both times counts.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/gdb_testsuite
CACHE=${JIT_UNWIND_CACHE:-$HOME/.cache/jit-unwind}
VERSION=13.1
DEBIAN_REVISION=3
GDB=${GDB:-/usr/bin/gdb}
SUITE=$CACHE/gdb-testsuite-$VERSION
SRC=$SUITE/gdb-$VERSION/gdb/testsuite

log() { echo "gdb-testsuite: $*" >&2; }
die() { log "error: $*"; exit 2; }

mirror() {
    local uri
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    [[ -n $uri ]] || uri=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
    [[ -n $uri ]] || die "cannot find the Debian mirror apt uses"
    echo "$uri"
}

fetch() {  # the file of Debian's gdb source package named $1, into $CACHE/src
    local file=$CACHE/src/$1
    if [[ ! -f $file ]]; then
        mkdir -p "$CACHE/src"
        log "fetching $1"
        curl -fsS -o "$file.part" "$(mirror)/pool/main/g/gdb/$1" || die "cannot download $1"
        mv "$file.part" "$file"
    fi
    echo "$file"
}

prepare() {  # unpack, patch and configure the testsuite once
    [[ -f $SUITE/.ready ]] && return
    local orig debian tmp
    orig=$(fetch "gdb_$VERSION.orig.tar.xz")
    debian=$(fetch "gdb_$VERSION-$DEBIAN_REVISION.debian.tar.xz")
    rm -rf "$SUITE" && mkdir -p "$SUITE"
    tmp=$SUITE/debian-patches && mkdir -p "$tmp"
    tar -xJf "$orig" -C "$SUITE"
    tar -xJf "$debian" -C "$tmp"
    # Debian's patches (quilt's series, applied as its build does): a few touch the testsuite.
    while read -r patch; do
        [[ -z $patch || $patch == \#* ]] && continue
        patch -d "$SUITE/gdb-$VERSION" -p1 -s -N < "$tmp/debian/patches/$patch" \
            || die "Debian's patch $patch does not apply"
    done < "$tmp/debian/patches/series"
    mkdir -p "$SUITE/obj"
    (cd "$SUITE/obj" && "$SRC/configure" > configure.log 2>&1 && make -s site.exp) \
        || die "configuring the testsuite failed: $SUITE/obj/configure.log"
    touch "$SUITE/.ready"
}

expand() {  # the .exp files a list's globs name
    local pattern
    for pattern in "$@"; do
        (cd "$SRC" && compgen -G "$pattern" || log "no file matches $pattern") | sort
    done
}

run_mode() {  # run_mode MODE DIR FILES...: one runtest process; DIR/gdb/testsuite/gdb.sum
    local mode=$1 dir=$2 flags
    shift 2
    rm -rf "$dir" && mkdir -p "$dir/gdb/testsuite"
    # jit-reader.exp includes the header of the GDB's build tree, two levels above objdir.
    ln -s /usr/include/gdb/jit-reader.h "$dir/gdb/jit-reader.h"
    flags='-nw -nx -iex "set height 0" -iex "set width 0"'
    [[ $mode == plugin ]] && flags+=" -iex \"source $ROOT/gdb_init.py\" ${PLUGIN_GDBFLAGS:-}"
    {
        cat "$SUITE/obj/site.exp"
        echo "set objdir $dir/gdb/testsuite"
        echo "set INTERNAL_GDBFLAGS {$flags}"
    } > "$dir/gdb/testsuite/site.exp"
    (cd "$dir/gdb/testsuite" && runtest --tool gdb GDB="$GDB" "$@" > runtest.out 2>&1) || true
    [[ -s $dir/gdb/testsuite/gdb.sum ]] || die "$mode: runtest wrote no gdb.sum ($dir)"
}

run_both() {  # run_both DIR FILES...
    local dir=$1 start=$SECONDS
    shift
    run_mode plain "$dir/plain" "$@" &
    local plain=$!
    run_mode plugin "$dir/plugin" "$@" &
    local plugin=$!
    wait "$plain" && wait "$plugin" || die "a run failed"
    log "$# .exp files both ways in $((SECONDS - start)) s ($dir)"
}

command -v runtest >/dev/null || die "runtest is missing (apt-get install dejagnu)"
[[ -x $GDB ]] || die "no GDB at $GDB"
prepare
if [[ ${1:-} == --all ]]; then
    mapfile -t files < <(expand 'gdb.base/*.exp' 'gdb.python/*.exp')
    name=${RUN_NAME:-all}
elif [[ $# -gt 0 ]]; then
    mapfile -t files < <(expand "$@")
    name=${RUN_NAME:-one}
else
    mapfile -t patterns < <(sed 's/#.*//; /^ *$/d' "$HERE/ci.list")
    mapfile -t files < <(expand "${patterns[@]}")
    name=${RUN_NAME:-ci}
fi
[[ ${#files[@]} -gt 0 ]] || die "no .exp file to run"
out=$ROOT/build/gdb-testsuite/$name
run_both "$out" "${files[@]}"
sums=("$out/plain/gdb/testsuite/gdb.sum" "$out/plugin/gdb/testsuite/gdb.sum")
mapfile -t again < <(python3 "$HERE/compare.py" "${sums[@]}" --worse-files | grep .)
compare=(python3 "$HERE/compare.py" "${sums[@]}" --allow "$HERE/allowed.txt")
if [[ ${#again[@]} -gt 0 ]]; then
    log "worse with the plugin, run again both ways: ${again[*]}"
    run_both "$out/again" "${again[@]}"
    compare+=(--again "$out/again/plain/gdb/testsuite/gdb.sum"
              "$out/again/plugin/gdb/testsuite/gdb.sum")
fi
"${compare[@]}" | tee "$out/differences.txt"
exit "${PIPESTATUS[0]}"
