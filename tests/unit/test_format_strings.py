"""The format strings lldb-19's bt is given (jit_unwind.stack.format_strings): where the
label and the gate go in LLDB 19's own formats, and what is left alone.  The e2e test
(tests/e2e/test_lldb19_frame_format.py) checks what lldb-19 prints with them."""

from jit_unwind.stack.format_strings import (GATE_ENTRY, LABEL, Gate, scope_end, shown_format,
                                      with_label)

# LLDB 19.1.7's defaults (`settings show frame-format` / `thread-format`, "\`" -> "`").
FRAME = ("frame #${frame.index}: ${ansi.fg.yellow}${frame.pc}${ansi.normal}"
         "{ ${module.file.basename}{`${function.name-with-args}{${frame.no-debug}"
         "${function.pc-offset}}}}{ at ${ansi.fg.cyan}${line.file.basename}${ansi.normal}:"
         "${ansi.fg.yellow}${line.number}${ansi.normal}{:${ansi.fg.yellow}${line.column}"
         "${ansi.normal}}}{${function.is-optimized} [opt]}{${frame.is-artificial} "
         "[artificial]}\\n")
THREAD = ("thread #${thread.index}: tid = ${thread.id%tid}{, ${frame.pc}}"
          "{ ${module.file.basename}{`${function.name-with-args}{${frame.no-debug}"
          "${function.pc-offset}}}}{ at ${ansi.fg.cyan}${line.file.basename}${ansi.normal}:"
          "${ansi.fg.yellow}${line.number}${ansi.normal}{:${ansi.fg.yellow}${line.column}"
          "${ansi.normal}}}{, name = ${ansi.fg.green}'${thread.name}'${ansi.normal}}"
          "{, stop reason = ${ansi.fg.red}${thread.stop-reason}${ansi.normal}}\\n")
MODULE = ("{ ${module.file.basename}{`${function.name-with-args}{${frame.no-debug}"
          "${function.pc-offset}}}}")
LINE = ("{ at ${ansi.fg.cyan}${line.file.basename}${ansi.normal}:${ansi.fg.yellow}"
        "${line.number}${ansi.normal}{:${ansi.fg.yellow}${line.column}${ansi.normal}}}")


def test_frame_format():
    label = "{${frame.no-debug}${script.frame:" + LABEL + "}}"
    expected = FRAME.replace(
        "${frame.pc}${ansi.normal}", "${frame.pc}${ansi.normal}" + label).replace(
        MODULE + LINE,
        MODULE[:-1] + LINE[1:-1] + "}" + "{${frame.no-debug}" + MODULE[1:-1] + GATE_ENTRY
        + "}")
    assert with_label(FRAME) == expected
    assert with_label(expected) == expected  # once only


def test_thread_format():
    result = with_label(THREAD)
    assert "{, ${frame.pc}{${frame.no-debug}${script.frame:" + LABEL + "}}}" in result
    assert result.count(GATE_ENTRY) == 1
    assert result.endswith("{, name = ${ansi.fg.green}'${thread.name}'${ansi.normal}}"
                           "{, stop reason = ${ansi.fg.red}${thread.stop-reason}"
                           "${ansi.normal}}\\n")


def test_user_formats():
    assert with_label("frame #${frame.index} ${function.name}\\n") is None  # no pc
    # No line scope after the module scope: the gate goes into the module scope.
    assert with_label("${frame.pc}{ ${module.file.basename}`x}\\n") == (
        "${frame.pc}{${frame.no-debug}${script.frame:" + LABEL + "}}"
        "{" + GATE_ENTRY + " ${module.file.basename}`x}\\n")
    assert with_label("${frame.pc} ${function.name}") == (
        "${frame.pc}{${frame.no-debug}${script.frame:" + LABEL + "}} ${function.name}")


def test_scope_end():
    assert scope_end("{a{b}c}d", 0) == 7
    assert scope_end("{a\\}b}c", 0) == 6  # an escaped brace
    assert scope_end("{a{b}", 0) is None


def test_gate():
    gate = Gate()
    assert gate.native(None, {}) == ""
    gate.jit = True
    assert not hasattr(gate, "native")  # LLDB drops the scope...
    assert hasattr(gate, "native")  # ...and the next frame is native unless labelled


def test_gate_label():
    gate = Gate()
    assert gate.label("[jit 0x1000]") == " [jit 0x1000]"
    assert not hasattr(gate, "native_first")  # the first gate keeps it closed...
    assert not hasattr(gate, "native")  # ...the last one opens it again
    assert gate.label(None) == ""
    assert gate.native(None, {}) == ""
    gate.jit = True
    assert gate.label("") == "" and not gate.jit  # no name: a native frame


def test_shown_format():
    assert shown_format('"frame #${frame.index} \\`x"') == "frame #${frame.index} `x"
    assert shown_format("unquoted") is None
    assert shown_format('"') is None
