import pytest

from tests.fuzz.cores import RECIPES, record_cores
from tests.fuzz.harness import Subject


@pytest.fixture(scope="session")
def fuzz_subjects(tmp_path_factory):
    """Every recipe's core, recorded once per session, with its intact walk."""
    directory = tmp_path_factory.mktemp("fuzz-cores")
    return {recorded.name: Subject(recorded)
            for recorded in record_cores(list(RECIPES), directory)}
