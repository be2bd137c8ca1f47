"""``python -m jit_unwind``: the ``jit-unwind`` command."""

import sys

from .cli import main

sys.exit(main())
