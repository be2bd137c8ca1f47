"""The README stays a page a newcomer reads in five minutes, with one backtrace from plain
GDB and the same stop's with the plugin; docs/performance.md stays a results page (its
history is in git).  Longer material belongs in docs/guide.md, supported.md, testing.md."""

import re

from tests.support import REPO

README = REPO / "README.md"
PERFORMANCE = REPO / "docs" / "performance.md"


def lines(path):
    return path.read_text().splitlines()


def code_blocks(text: str):
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)


def test_readme_is_at_most_150_lines():
    assert len(lines(README)) <= 150, len(lines(README))


def test_readme_shows_plain_gdb_then_the_plugin_on_one_stop():
    blocks = code_blocks(README.read_text())
    frame = re.compile(r"^#\d+ +0x[0-9a-f]+ in ", re.M)
    plain = [i for i, block in enumerate(blocks)
             if frame.search(block) and re.search(r"^#\d+ .* in \?\? \(\)", block, re.M)
             and "[jit]" not in block]
    plugin = [i for i, block in enumerate(blocks)
              if frame.search(block) and re.search(r"^#\d+ .* in \[jit\] ", block, re.M)]
    assert plain and plugin, "README.md needs a plain `bt` (?? frames) and the plugin's ([jit])"
    assert min(plain) < max(plugin), "plain GDB's backtrace comes first"


def test_readme_keeps_the_test_command_and_ci():
    text = " ".join(README.read_text().split())
    assert "`make test` is the test command" in text
    assert "CI runs `.ci/run`" in text
    assert text.index("make test-cpython-gdb") < text.index("then `make test`")


def test_readme_links_resolve():
    for target in re.findall(r"\]\((docs/[^)#]+)", README.read_text()):
        assert (REPO / target).exists(), target


def test_performance_page_is_at_most_300_lines():
    assert len(lines(PERFORMANCE)) <= 300, len(lines(PERFORMANCE))
