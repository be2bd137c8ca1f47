"""How LLDB's command classes show the core's help (jit_unwind.commands.lldb_text)."""

from jit_unwind.commands.lldb_text import class_name, lldb_help, long_help, short_help


def test_long_help_joins_paragraphs_and_options():
    doc = ("\nSay hello\nto everyone.\n\n"
           "  --json  Print JSON\n          instead of text.\n  --all   Every thread.\n\n"
           "The end.")
    assert long_help(doc) == ("Say hello to everyone.\n\n"
                              "  --json  Print JSON instead of text.\n"
                              "  --all   Every thread.\n\n"
                              "The end.")


def test_gdb_names_become_lldb_names():
    assert lldb_help("See info jit-regions.") == "See jit-regions."
    assert lldb_help("GDB's JIT interface") == "the GDB JIT interface"
    assert short_help("\ninfo jit-regions: list them.\nMore.") == "jit-regions: list them."


def test_class_name():
    assert class_name("py-mixed-bt") == "PyMixedBt"
    assert class_name("jit-regions") == "JitRegions"
