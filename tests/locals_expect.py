"""What tests/fixtures/python/frame_locals.py binds in each frame when it stops, as
``py-mixed-bt --locals`` must show it (e2e) and the locals reader must read it (unit)."""

from tests.python_expect import SCRIPTS

SCRIPT = SCRIPTS / "frame_locals.py"
OBJECT = None  # a value shown as <TYPE at 0xADDRESS>, the object's address
# function -> [(name, kind, type, value)] as the fixture binds them
EXPECTED = {
    "inner": [("count", "local", "int", "3"), ("flag", "local", "bool", "True"),
              ("data", "local", "bytes", r"b'\x00ab'"),
              ("big", "local", "int", str(2 ** 100)),
              ("negative", "local", "int", "-7"),
              ("long_text", "local", "str", repr("x" * 80) + "... (500 characters)"),
              ("widget", "local", "Widget", OBJECT), ("i", "local", "int", "10000")],
    "outer.<locals>.closure": [("count", "local", "int", "3"),
                               ("shared", "free", "str", "'from outer'")],
    "outer": [("number", "local", "int", "42"), ("text", "local", "str", "'héllo'"),
              ("items", "local", "list", OBJECT),
              ("nothing", "local", "NoneType", "None"),
              ("ratio", "local", "float", "2.5"),
              ("closure", "local", "function", OBJECT),
              ("shared", "cell", "str", "'from outer'")],
    "<module>": [],
}
