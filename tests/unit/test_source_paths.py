"""The source path every backtrace shows for a frame (source_paths): no debugger."""

from jit_unwind.elf.source_paths import shown_source_path


def test_full_name_is_normalised():
    assert shown_source_path("app.c", "/src/./app/../app/app.c") == "/src/app/app.c"
    assert shown_source_path("/abs/x.c", "/abs/x.c") == "/abs/x.c"


def test_a_relative_directory_prefixed_twice_keeps_the_line_tables_name():
    """glibc: compilation directory "./nptl" before the line table's "./nptl/x.c"."""
    assert shown_source_path("./nptl/x.c", "./nptl/./nptl/x.c") == "nptl/x.c"


def test_a_relative_directory_prefixed_once_stays():
    assert shown_source_path("x.c", "build/x.c") == "build/x.c"
