"""The object files the plugin adds itself keep the stop's cache (own_files)."""

from jit_unwind.symfile.own_files import OwnObjectFiles


def test_events_about_our_files_change_no_region():
    own = OwnObjectFiles()
    own.add("/tmp/jit-unwind-x/jit-1-1.elf")
    assert not own.changes_regions("/tmp/jit-unwind-x/jit-1-1.elf")
    assert own.changes_regions("/usr/lib/libc.so.6")
    assert own.changes_regions(None)  # an object file without a name: anything


def test_removing_one_of_ours_is_known_while_it_lasts():
    own = OwnObjectFiles()
    assert not own.removing
    try:
        with own.removing_one():
            assert own.removing
            raise RuntimeError("remove-symbol-file failed")
    except RuntimeError:
        pass
    assert not own.removing
