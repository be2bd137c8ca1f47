"""``@record``: what ``@dataclass`` makes of the core's plain records, for less.

The records need ``__init__`` with defaults (and default factories), ``__repr__`` and
``__eq__`` over their fields; frozen ones read-only attributes and ``__hash__``; one
needs ordering.  ``@dataclass`` builds each method by a separate ``exec`` after
inspecting the annotations (~0.4 ms a class in the debuggers' Python 3.11), and
importing it imports ``inspect``: with ~30 records on the way of a ``py-mixed-bt``,
~15 ms of a one-shot run (``jit-unwind core``) and a third of the plugin's load.  Here
only ``__init__`` is compiled, at the record's first instance (most records are never
made in a session); the records made at load, at a stop or in a ``bt`` through JIT code
write their own.  The other methods are closures, and the instances behave as the
dataclass's did for everything the plugin does with them (``replace`` is this
module's).  ``NamedItems`` is the same for ``typing.NamedTuple``.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

from operator import attrgetter, ge, gt, le, lt
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

if TYPE_CHECKING:
    from typing import dataclass_transform
else:
    def dataclass_transform(**_options):
        """typing's marker for type checkers (Python 3.11 on), which does nothing here."""
        return lambda function: function

_MISSING = object()
_FACTORY = object()  # an argument left to its field's default_factory


class Field:
    __slots__ = ("default", "default_factory", "compare", "repr")

    def __init__(self, default: Any = _MISSING,
                 default_factory: Optional[Callable[[], Any]] = None, compare: bool = True,
                 repr: bool = True):
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr


def field(*, default: Any = _MISSING, default_factory: Optional[Callable[[], Any]] = None,
          compare: bool = True, repr: bool = True) -> Any:
    """As dataclasses.field, for the options the records use."""
    return Field(default, default_factory, compare, repr)


class FrozenRecordError(AttributeError):
    """Assigning to a field of a frozen record (dataclasses' FrozenInstanceError)."""


def _frozen_setattr(self, name, _value):
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name):
    raise FrozenRecordError(f"cannot delete field {name!r}")


# Type checkers see the records as dataclasses: the fields, __init__, frozen and order.
@dataclass_transform(field_specifiers=(field,))
def record(cls=None, *, frozen: bool = False, order: bool = False):
    """Class decorator, as ``@dataclass`` / ``@dataclass(frozen=True, order=True)``:
    fields are the class's annotations in order, after those of record base classes.
    A class that defines ``__init__`` keeps it (it must set every field; a frozen
    record's go into ``self.__dict__``) and costs no compile."""
    def wrap(klass):
        return _make(klass, frozen, order)
    return wrap if cls is None else wrap(cls)


def _make(cls, frozen: bool, order: bool):
    fields: Dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, "__record_fields__", {}))
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        made = value if isinstance(value, Field) else Field(value)
        fields[name] = made
        if isinstance(value, Field):  # the class keeps a plain default, as dataclass does
            if made.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, made.default)
    names = list(fields)
    compared = [name for name in names if fields[name].compare]
    namespace: Dict[str, Any] = {"_FACTORY": _FACTORY}
    parameters = []
    body = []
    for name in names:
        item = fields[name]
        if item.default_factory is not None:
            namespace[f"_factory_{name}"] = item.default_factory
            parameters.append(f"{name}=_FACTORY")
            value = f"_factory_{name}() if {name} is _FACTORY else {name}"
        else:
            if item.default is not _MISSING:
                namespace[f"_default_{name}"] = item.default
                parameters.append(f"{name}=_default_{name}")
            else:
                parameters.append(name)
            value = name
        # A frozen record's fields go straight into its __dict__ (its __setattr__ raises).
        body.append(f"  _fields[{name!r}] = {value}" if frozen else f"  self.{name} = {value}")
    methods = _methods(compared, names, fields, frozen, order)
    if "__init__" not in cls.__dict__:
        methods["__init__"] = _init_compiled_when_first_called(cls, namespace, parameters,
                                                               body, frozen)
    for method, function in methods.items():
        function.__qualname__ = f"{cls.__qualname__}.{method}"
        setattr(cls, method, function)
    if not frozen:
        cls.__hash__ = None  # mutable and compared by value: unhashable, as dataclass's
    else:
        cls.__setattr__ = _frozen_setattr
        cls.__delattr__ = _frozen_delattr
    cls.__record_fields__ = fields
    return cls


def _init_compiled_when_first_called(cls, namespace, parameters, body, frozen: bool):
    """An __init__ that compiles the record's own at its first call and puts it in the
    class: ~0.1-0.2 ms a class, and most records are never made in a session (compiled
    at the import, the plugin's ~20 records at load were a fifth of its load)."""
    def __init__(self, *args, **kwargs):
        compiled = _compiled_init(cls, namespace, parameters, body, frozen)
        compiled.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = compiled
        compiled(self, *args, **kwargs)
    return __init__


def _compiled_init(cls, namespace, parameters, body, frozen: bool):
    """The record's __init__, compiled: only it is (its speed matters: thousands of
    frames a stack); the other methods are closures over the fields' names.  A record
    on the way of the first JIT frame's bt writes its own instead (the compile is ~0.1 ms
    a class)."""
    if frozen:
        body = ["  _fields = self.__dict__", *body]
    source = f"def __init__(self, {', '.join(parameters)}):\n" + "\n".join(body or ["  pass"])
    # exec of the text, not of compile()'s code: a session's first compile() costs ~1.7 ms
    # (Python builds its AST types), exec of a string does not.
    exec(source, namespace)
    function = namespace["__init__"]
    function.__code__ = function.__code__.replace(co_filename=f"<record {cls.__qualname__}>")
    return function


class NamedItems(tuple):
    """A tuple whose items are named by ``_fields`` (in repr, and by the subclass's
    properties): what ``typing.NamedTuple`` makes, written out in each subclass (its
    ``__new__`` and an ``itemgetter`` property per item), without that class machinery
    (~0.5 ms of a first bt for cfi_rows' rules) or the compile of string annotations."""

    __slots__ = ()
    _fields: Tuple[str, ...] = ()

    def __getnewargs__(self):
        return tuple(self)

    def __repr__(self) -> str:
        items = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"{type(self).__name__}({items})"


def replace(instance, **changes):
    """A copy of ``instance`` with ``changes`` (dataclasses.replace)."""
    values = {name: getattr(instance, name) for name in instance.__record_fields__}
    values.update(changes)
    return instance.__class__(**values)


def _methods(compared, names, fields, frozen: bool, order: bool):
    """__repr__, __eq__ and, as asked, __hash__ and ordering, over the fields."""
    key = attrgetter(*compared) if compared else (lambda _record: ())
    shown = [name for name in names if fields[name].repr]

    def __repr__(self):
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    methods = {"__repr__": __repr__, "__eq__": __eq__}
    if frozen:
        def __hash__(self):
            return hash(key(self))
        methods["__hash__"] = __hash__
    if order:
        for name, compare in (("__lt__", lt), ("__le__", le), ("__gt__", gt), ("__ge__", ge)):
            methods[name] = _ordering(key, compare)
    return methods


def _ordering(key, compare):
    def method(self, other):
        if other.__class__ is self.__class__:
            return compare(key(self), key(other))
        return NotImplemented
    return method
