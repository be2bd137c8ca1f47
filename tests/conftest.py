import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))

from tests.support import GDB_BINARIES


@pytest.fixture(params=sorted(GDB_BINARIES))
def gdb(request):
    """Each test that takes ``gdb`` runs once with GDB 13 and once with GDB 18."""
    path = GDB_BINARIES[request.param]
    assert path.exists(), f"{request.param} is missing at {path}: run `make venv`"
    return path
