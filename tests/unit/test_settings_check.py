"""The jitdump setting refuses a path jit-unwind cannot read, keeping its value."""

import os

import pytest

from jit_unwind.commands import settings


def test_an_unreadable_jitdump_file_is_refused(tmp_path, monkeypatch):
    good, unreadable = tmp_path / "jit-1.dump", tmp_path / "jit-2.dump"
    good.write_bytes(b"")
    unreadable.write_bytes(b"")
    before = settings.value("jitdump")
    try:
        settings.set_value("jitdump", str(good))
        real_access = os.access
        # Root reads every file: the check is driven by what os.access answers.
        monkeypatch.setattr(os, "access", lambda path, mode: False
                            if str(path) == str(unreadable) else real_access(path, mode))
        with pytest.raises(settings.SettingError, match=r"jit-2\.dump: not readable\.$"):
            settings.set_value("jitdump", str(unreadable))
        assert settings.value("jitdump") == str(good)
        with pytest.raises(settings.SettingError, match="no such file"):
            settings.set_value("jitdump", str(tmp_path / "missing"))
        assert settings.value("jitdump") == str(good)
    finally:
        settings.set_value("jitdump", before)
