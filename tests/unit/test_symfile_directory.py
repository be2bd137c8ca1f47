"""The symbol files' private directory, made and removed without tempfile/shutil."""

import os
import stat

from jit_unwind.symfile import directory
from jit_unwind.symfile.directory import make_private_directory, remove_directory


def test_private_directory_under_tmpdir_only_for_this_user(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    first, second = make_private_directory("jit-unwind-"), make_private_directory("jit-unwind-")
    assert first != second
    for path in (first, second):
        assert os.path.dirname(path) == str(tmp_path)
        assert os.path.basename(path).startswith("jit-unwind-")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_unusable_tmpdir_falls_back_to_the_next_root(tmp_path, monkeypatch):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    monkeypatch.setenv("TMPDIR", str(not_a_directory))
    monkeypatch.setattr(directory, "_candidate_roots",
                        lambda: [str(not_a_directory), str(tmp_path / "missing"), str(tmp_path)])
    assert os.path.dirname(make_private_directory("p-")) == str(tmp_path)


def test_no_root_gives_none(tmp_path, monkeypatch):
    monkeypatch.setattr(directory, "_candidate_roots", lambda: [str(tmp_path / "missing")])
    assert make_private_directory("p-") is None


def test_remove_directory_removes_its_files_and_never_raises(tmp_path):
    path = make_private_directory_in(tmp_path)
    for name in ("jit-1-1.elf", "jit-1-2.elf"):
        with open(os.path.join(path, name), "wb") as out:
            out.write(b"\x7fELF")
    remove_directory(path)
    assert not os.path.exists(path)
    remove_directory(path)  # gone already: nothing to do, no error
    remove_directory(str(tmp_path / "never-made"))


def make_private_directory_in(root):
    path = os.path.join(str(root), "d")
    os.mkdir(path, 0o700)
    return path


def test_a_removed_working_directory_is_no_obstacle(tmp_path, monkeypatch):
    """The debugger's working directory was deleted (os.getcwd fails): the directory
    is made under TMPDIR all the same."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    path = make_private_directory("jit-unwind-")
    assert path is not None and os.path.dirname(path) == str(tmp_path)
