"""py-mixed-bt reads its flags without argparse when they are all flags it knows (a
one-shot run such as the jit-unwind command's then never imports argparse): every such
combination means what the parser says, and anything else still gets the parser's
messages."""

import itertools

import pytest

from jit_unwind.commands import CommandError
from jit_unwind.commands.mixed_bt import _FLAGS, parse, parser


def test_every_combination_of_flags_means_what_argparse_says():
    for count in range(4):
        for argv in itertools.permutations(_FLAGS, count):
            try:
                expected = vars(parser().parse_args(list(argv)))
            except CommandError:
                with pytest.raises(CommandError):
                    parse(list(argv))
                continue
            assert vars(parse(list(argv))) == expected, argv


def test_what_is_no_flag_gets_the_parsers_message():
    with pytest.raises(CommandError, match="unrecognized arguments: --bogus"):
        parse(["--all-threads", "--bogus"])
    with pytest.raises(CommandError, match="not allowed with argument"):
        parse(["--python-only", "--native-last"])
    assert parse(["--all"]).all_threads  # an abbreviation, as argparse takes it
