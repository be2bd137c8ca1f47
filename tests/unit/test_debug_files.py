"""debug_files.py: where a file's separate debug file is, by build ID and by
``.gnu_debuglink``, on libc (Debian's libc6-dbg) and on a small program split with
objcopy; and its three users (the core reader's symbols, the code without CFI, GDB's
decompressed copies) find the same file for libc."""

import os
import shutil
import subprocess

from elftools.elf.elffile import ELFFile

from jit_unwind.elf import debug_files
from jit_unwind.elf.rawelf import RawElf

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def _ids(path):
    with open(path, "rb") as handle:
        elf = RawElf(handle, path)
        return debug_files.build_id(elf), debug_files.debug_link(elf)


def _pyelftools_build_id(path):
    with open(path, "rb") as handle:
        for note in ELFFile(handle).get_section_by_name(".note.gnu.build-id").iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID":
                return note["n_desc"]
    return None


def test_libc_debug_file_is_found_by_build_id():
    identity, link = _ids(LIBC)
    assert identity == _pyelftools_build_id(LIBC) and len(identity) == 40
    expected = f"/usr/lib/debug/.build-id/{identity[:2]}/{identity[2:]}.debug"
    assert os.path.isfile(expected), "libc6-dbg is installed"
    directory = os.path.dirname(os.path.realpath(LIBC))
    # GDB's order: the build ID, then the debug link beside, in .debug/, under the root.
    assert debug_files.candidates(LIBC, identity, link) == [
        expected, f"{directory}/{link}", f"{directory}/.debug/{link}",
        f"/usr/lib/debug{directory}/{link}"]
    assert debug_files.separate_debug_file(LIBC, identity, link) == expected


def test_the_three_users_find_libcs_debug_file():
    from jit_unwind.cli.gdb_debug_files import _debug_file
    from jit_unwind.coreread.symbols import separate_debug_file
    from jit_unwind.regions.nocfi import debug_files_of
    identity, _link = _ids(LIBC)
    expected = f"/usr/lib/debug/.build-id/{identity[:2]}/{identity[2:]}.debug"
    assert separate_debug_file(LIBC) == expected
    assert debug_files_of(LIBC) == [expected]
    assert _debug_file(LIBC) == expected  # Debian compresses its DWARF


def _split_program(directory, *flags):
    """A program built with -g, its DWARF moved to ``prog.debug`` beside it and named
    by its .gnu_debuglink (what distributions' packaging does)."""
    source = directory / "prog.c"
    source.write_text("int main(void) { return 0; }\n")
    whole, program = directory / "whole", directory / "prog"
    subprocess.run(["gcc", "-g", *flags, "-o", str(whole), str(source)], check=True)
    debug = directory / "prog.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(whole), str(debug)], check=True)
    subprocess.run(["objcopy", "--strip-debug", f"--add-gnu-debuglink={debug}", str(whole),
                    str(program)], check=True)
    return str(program), str(debug)


def _found(path):
    return debug_files.separate_debug_file(path, *_ids(path))


def test_debug_link_beside_in_dot_debug_and_under_the_root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    monkeypatch.setattr(debug_files, "DEBUG_ROOT", str(root))
    program, debug = _split_program(tmp_path, "-Wl,--build-id=none")
    with open(program, "rb") as handle:
        assert debug_files.by_build_id(RawElf(handle, program)) is None
    assert _ids(program) == (None, "prog.debug")
    assert _found(program) == debug

    dot_debug = tmp_path / ".debug" / "prog.debug"
    dot_debug.parent.mkdir()
    shutil.move(debug, dot_debug)
    assert _found(program) == str(dot_debug)

    under_root = root / str(tmp_path).lstrip("/") / "prog.debug"
    under_root.parent.mkdir(parents=True)
    shutil.move(dot_debug, under_root)
    assert _found(program) == str(under_root)

    # A link is looked up beside the file it resolves to.
    links = tmp_path / "links"
    links.mkdir()
    (links / "prog").symlink_to(program)
    assert _found(str(links / "prog")) == str(under_root)

    os.unlink(under_root)
    assert _found(program) is None


def test_build_id_comes_before_the_debug_link(tmp_path, monkeypatch):
    root = tmp_path / "root"
    monkeypatch.setattr(debug_files, "DEBUG_ROOT", str(root))
    program, debug = _split_program(tmp_path, "-Wl,--build-id")
    identity, _link = _ids(program)
    assert identity == _pyelftools_build_id(program)
    by_id = root / ".build-id" / identity[:2] / f"{identity[2:]}.debug"
    with open(program, "rb") as handle:
        assert debug_files.by_build_id(RawElf(handle, program)) == str(by_id)
    assert _found(program) == debug  # not there yet: the link's
    by_id.parent.mkdir(parents=True)
    shutil.copy(debug, by_id)
    assert _found(program) == str(by_id)


def test_a_file_is_not_its_own_debug_file(tmp_path, monkeypatch):
    """A debug link naming the file itself (a debug file linked to itself, a copy made
    in place) finds nothing there."""
    monkeypatch.setattr(debug_files, "DEBUG_ROOT", str(tmp_path / "root"))
    program, debug = _split_program(tmp_path, "-Wl,--build-id=none")
    same = tmp_path / "same"
    same.mkdir()
    subprocess.run(["objcopy", "--remove-section=.gnu_debuglink",
                    f"--add-gnu-debuglink={debug}", program, str(same / "prog.debug")],
                   check=True)
    assert _ids(str(same / "prog.debug"))[1] == "prog.debug"
    assert _found(str(same / "prog.debug")) is None


def test_a_debug_link_to_another_build_is_not_taken(tmp_path, monkeypatch):
    """A debug file found by its debug link's name alone belongs to the file only when
    its build ID is the file's: a container's libc is named like this machine's, and
    the other build's debug file would name its code wrongly."""
    monkeypatch.setattr(debug_files, "DEBUG_ROOT", str(tmp_path / "root"))
    program, debug = _split_program(tmp_path, "-Wl,--build-id")
    assert _found(program) == debug
    other = tmp_path / "other"
    other.mkdir()
    _other_program, other_debug = _split_program(other, "-Wl,--build-id=0x1234567890")
    shutil.copy(other_debug, debug)  # the same name, another build
    assert _ids(other_debug)[0] != _ids(program)[0]
    assert _found(program) is None
