import pytest

from tests.fuzz.cores import RECIPES, record_cores
from tests.fuzz.harness import Subject


@pytest.fixture(scope="session")
def fuzz_subjects(tmp_path_factory):
    """The suite's recipes' cores (one per JIT runtime; `make fuzz` runs them all),
    recorded once per session, with their intact walks."""
    directory = tmp_path_factory.mktemp("fuzz-cores")
    names = [name for name, recipe in RECIPES.items() if recipe.suite]
    return {recorded.name: Subject(recorded)
            for recorded in record_cores(names, directory)}
