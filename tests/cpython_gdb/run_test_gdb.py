"""Run CPython's own Lib/test/test_gdb against an installed interpreter (python -m).

test_gdb runs only in a source build ("test_gdb only works on source builds"): what it
needs from one is python-gdb.py beside the binary, which our archives have (as
bin/python3.X-gdb.py, GDB's auto-load name for bin/python3.X).  The check is answered
yes here; everything else is CPython's test as it is.
"""

import sys
import sysconfig
import unittest

sysconfig.is_python_build = lambda *args, **kwargs: True

if __name__ == "__main__":
    unittest.main(module=None, argv=[sys.argv[0], *sys.argv[1:], "test.test_gdb"])
