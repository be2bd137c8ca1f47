"""GDB testsuite results, plain against the plugin's: every test whose results differ, and
whether the plugin's are worse (tests/gdb_testsuite/run.sh).

    python3 compare.py PLAIN.sum PLUGIN.sum [--allow FILE] [--again PLAIN2.sum PLUGIN2.sum]
    python3 compare.py PLAIN.sum PLUGIN.sum --worse-files     # the .exp files to run again

A test is worse with the plugin when it has more FAIL/UNRESOLVED/ERROR results or fewer
PASS/XFAIL/KFAIL results than plain. A test run twice (--again: the .exp files of the
worse tests run again both ways) counts as worse only if it is worse both times: GDB's
testsuite has timing-dependent tests, and this machine is shared. Exit status: 1 when a
test is worse and not in the allow list, else 0.
"""

import argparse
import collections
import re
import sys

RESULT = re.compile(r"^(PASS|FAIL|XFAIL|KFAIL|XPASS|KPASS|UNRESOLVED|UNTESTED|UNSUPPORTED"
                    r"|ERROR|DUPLICATE|PATH): (.*)$")
RUNNING = re.compile(r"^Running .*/testsuite/(gdb\.[^/]+/[^/ ]+\.exp) \.\.\.$")
# What dejagnu appends to a name on some results; the test is the same.
SUFFIX = re.compile(r" \((timeout|eof|PRMS: [^)]*|got interactive prompt)\)$")
BAD = {"FAIL", "UNRESOLVED", "ERROR"}
GOOD = {"PASS", "XFAIL", "KFAIL"}


def read_sum(path):
    """{test name: [results]} of one gdb.sum, and the totals per result."""
    tests = collections.defaultdict(list)
    totals = collections.Counter()
    current = "?"
    with open(path, errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            running = RUNNING.match(line)
            if running:
                current = running.group(1)
                continue
            match = RESULT.match(line)
            if not match:
                continue
            kind, name = match.groups()
            name = SUFFIX.sub("", name.strip())
            if kind in ("ERROR", "DUPLICATE", "PATH") or not name.startswith("gdb."):
                name = f"{current}: {kind}: {name}"
            tests[name].append(kind)
            totals[kind] += 1
    return tests, totals


def worse(plain, plugin):
    def count(results, kinds):
        return sum(result in kinds for result in results)
    return (count(plugin, BAD) > count(plain, BAD)
            or count(plugin, GOOD) < count(plain, GOOD))


def differing(plain_tests, plugin_tests):
    for name in sorted(set(plain_tests) | set(plugin_tests)):
        plain = sorted(plain_tests.get(name, []))
        plugin = sorted(plugin_tests.get(name, []))
        if plain != plugin:
            yield name, plain, plugin


def read_allow(path):
    """(pattern, reason) per line of the allow list: `REGEX  # reason`."""
    allowed = []
    if path:
        with open(path) as lines:
            for line in lines:
                line = line.strip()
                if line and not line.startswith("#"):
                    pattern, _, reason = line.partition("  # ")
                    allowed.append((re.compile(pattern.strip()), reason.strip()))
    return allowed


def show(results):
    return ",".join(results) or "-"


def exp_file(name):
    return name.split(": ", 1)[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("plain")
    parser.add_argument("plugin")
    parser.add_argument("--allow")
    parser.add_argument("--again", nargs=2, metavar=("PLAIN2", "PLUGIN2"))
    parser.add_argument("--worse-files", action="store_true")
    args = parser.parse_args()
    plain_tests, plain_totals = read_sum(args.plain)
    plugin_tests, plugin_totals = read_sum(args.plugin)
    diffs = list(differing(plain_tests, plugin_tests))
    if args.worse_files:
        files = {exp_file(name) for name, plain, plugin in diffs if worse(plain, plugin)}
        for name in sorted(files):
            print(name)
        return 0
    again = None
    if args.again:
        again = (read_sum(args.again[0])[0], read_sum(args.again[1])[0])
    allowed = read_allow(args.allow)
    for kind in ("PASS", "FAIL", "XFAIL", "KFAIL", "UNRESOLVED", "UNTESTED", "UNSUPPORTED",
                 "ERROR"):
        print(f"{kind:12} plain {plain_totals[kind]:6}   plugin {plugin_totals[kind]:6}")
    print(f"{len(diffs)} tests differ (test: plain -> plugin):")
    failed = 0
    for name, plain, plugin in diffs:
        note = ""
        if worse(plain, plugin):
            reason = next((why for pattern, why in allowed if pattern.search(name)), None)
            if reason is not None:
                note = f"  [worse, allowed: {reason}]"
            elif again is not None and not worse(again[0].get(name, []),
                                                 again[1].get(name, [])):
                note = ("  [worse, not again: run again, "
                        f"{show(sorted(again[0].get(name, [])))} -> "
                        f"{show(sorted(again[1].get(name, [])))}]")
            else:
                note = "  [WORSE]"
                failed += 1
        print(f"  {name}: {show(plain)} -> {show(plugin)}{note}")
    print(f"{failed} worse with the plugin" if failed else "no test worse with the plugin")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
