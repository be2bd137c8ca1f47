"""Bugs the fuzzer found, each kept as the case that showed it."""

from jit_unwind.stop import cache as session
from tests.fuzz.harness import Mutation
from tests.fuzz.mutations import mutation_for


def test_no_symbol_table_parse_for_cold_exits_on_314(fuzz_subjects, monkeypatch):
    """py3.14-jit seed 78 (first runs) took 1.25 s: every stop looked up 3.13's
    COLD_EXITS, which 3.14 lacks, and a missing name is searched in the whole .symtab
    (36,000 symbols parsed by pyelftools, once per stop)."""
    subject = fuzz_subjects["py3.14-jit"]
    looked_up = []
    original = session.symbol_address

    def spy(mappings, name, full_tables=False):
        looked_up.append((name, full_tables))
        return original(mappings, name, full_tables)
    monkeypatch.setattr(session, "symbol_address", spy)
    for mutation in (Mutation("none", "intact core"), mutation_for(subject, 78)):
        assert not subject.check(78, mutation)
    assert ("COLD_EXITS", True) not in looked_up, looked_up
    assert not any(name == "COLD_EXITS" for name, _ in looked_up), looked_up


def test_symbol_table_index_is_built_once_per_file(fuzz_subjects, monkeypatch):
    """py3.13-jit seed 136 took 2.4 s: 3.13's COLD_EXITS is a static symbol, found only
    in .symtab, and pyelftools rebuilt that table's name index (33,000 symbols parsed)
    at every stop, since each get_section_by_name makes a new section object."""
    from elftools.elf.sections import SymbolTableSection
    subject = fuzz_subjects["py3.13-jit"]
    assert not subject.check(136, mutation_for(subject, 136))  # indexes built by now
    parsed = []
    original = SymbolTableSection.get_symbol

    def counting(self, index):
        parsed.append(index)
        return original(self, index)
    monkeypatch.setattr(SymbolTableSection, "get_symbol", counting)
    assert not subject.check(136, mutation_for(subject, 136))
    assert len(parsed) < 1000, f"{len(parsed)} symbols parsed in one case"


def test_hash_tables_are_read_once_per_file(fuzz_subjects, monkeypatch):
    """py3.12-threads seed 907 went over the time budget: each symbol lookup of each stop
    made pyelftools read every mapped file's .gnu.hash header and Bloom filter again
    (39 times in one case, a fifth of its time)."""
    from elftools.elf.elffile import ELFFile
    subject = fuzz_subjects["py3.12-threads"]
    assert not subject.check(907, mutation_for(subject, 907))
    asked = []
    original = ELFFile.get_section_by_name

    def counting(self, name):
        asked.append(name)
        return original(self, name)
    monkeypatch.setattr(ELFFile, "get_section_by_name", counting)
    assert not subject.check(907, mutation_for(subject, 907))
    assert ".gnu.hash" not in asked and ".hash" not in asked, asked


def test_no_negative_line_from_a_garbage_code_object(fuzz_subjects):
    """py3.14-jit seed 6075: words of a code object overwritten, its co_firstlineno
    among them: py-mixed-bt --json printed line -627529854, which its schema forbids
    (a line is unknown, null, rather than impossible)."""
    subject = fuzz_subjects["py3.14-jit"]
    mutation = Mutation("py-code", "co_firstlineno of hot() negative",
                        {_code_of(subject, "hot") + _firstlineno_offset(subject):
                         (-627529854).to_bytes(4, "little", signed=True)})
    assert not subject.check(6075, mutation)
    assert not subject.check(6075, mutation_for(subject, 6075))


def _code_of(subject, name):
    return next(f.code_address for f in subject.reference.python if f.name == name)


def _firstlineno_offset(subject):
    from jit_unwind.stop.cache import StopCache
    from tests.fuzz.coremodel import CoreMemory
    with subject.perf_map_installed(None):
        process = subject.process(CoreMemory(subject.image), Mutation("none", ""))
        runtime, _ = StopCache(process).python_runtime()
    return runtime.layout.code_firstlineno


def test_an_undecodable_fde_is_no_exception(fuzz_subjects):
    """toy-fp seed 6841: a return slot pointing into a libc function whose FDE holds an
    instruction pyelftools does not decode ("Unknown CFI opcode", raised while
    formatting its own message): unwind_with_cfi let the exception out instead of
    saying it cannot tell (LLDB's walk caught it; the core's entry point did not)."""
    subject = fuzz_subjects["toy-fp"]
    mutation = mutation_for(subject, 6841)
    assert mutation.kind == "return-slot", mutation
    assert not subject.check(6841, mutation)
