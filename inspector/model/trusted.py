"""Making model objects from values already checked, without validating them again.

A reader checks every value of a line before it makes a block, a message or a usage of it (its
own checks, or a typed decoder's); pydantic's validation of the same values then costs more than
making the object (about 1.5 µs of 2 for a block; a 100 MB session makes some 80,000 of them).
`trusted(cls)` gives a constructor that makes the object pydantic's `model_construct` would
make (the same fields in the same order, the same "fields set"), in a third of validation's time.

It takes keyword arguments only, every required field among them, each already of the field's
type (a tuple where the field is a tuple: nothing is converted). Models with validators, a
post-init hook, private attributes or extra fields are refused when the constructor is made.
Tests hold each trusted object equal to the validated one.

The constructor is compiled for its class, as `dataclasses` writes `__init__`: its parameters are
the fields, a default left out is filled in by an `is` test, and the object's dict is one literal
in the declared order (a generic constructor copying a template dict and looping over the
default factories took half as long again).
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class _Unset:
    """The default of every optional parameter: the field was not given (not in "fields set")."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


def trusted(cls: type[M]) -> Callable[..., M]:
    """A constructor of `cls` that does not validate (see the module docstring)."""
    decorators = cls.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or cls.__pydantic_post_init__
        or cls.__private_attributes__
        or cls.model_config.get("extra") == "allow"
    ):
        raise TypeError(f"{cls.__name__} validates or keeps more than its fields: construct it with checks")
    names = list(cls.model_fields)
    # the constructor's own names start with "_", which no field's does (pydantic keeps those private)
    if not all(n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_") for n in names):
        raise TypeError(f"{cls.__name__} has a field that cannot be a parameter")
    scope: dict[str, Any] = {
        "_new": cls.__new__,
        "_cls": cls,
        "_set": object.__setattr__,
        "_UNSET": _UNSET,
        "_empty": set,
    }
    params: list[str] = []
    fill: list[str] = []
    required: list[str] = []
    for i, (name, info) in enumerate(cls.model_fields.items()):
        if info.is_required():
            params.append(name)
            required.append(repr(name))
            continue
        params.append(f"{name}=_UNSET")
        if info.default_factory is not None:
            scope[f"_default{i}"] = info.default_factory
            default = f"_default{i}()"
        else:
            try:
                hash(info.default)
            except TypeError:  # a mutable default: pydantic copies it per object, this would share it
                raise TypeError(
                    f"{cls.__name__}.{name} has a mutable default: give it a default factory"
                ) from None
            scope[f"_default{i}"] = info.default
            default = f"_default{i}"
        fill += [
            f"    if {name} is _UNSET:",
            f"        {name} = {default}",
            "    else:",
            f"        _given.add({name!r})",
        ]
    source = "\n".join(
        [
            f"def make(*, {', '.join(params)}):" if params else "def make():",
            f"    _given = {{{', '.join(required)}}}" if required else "    _given = _empty()",
            *fill,
            "    _m = _new(_cls)",
            "    _set(_m, '__dict__', {" + ", ".join(f"{n!r}: {n}" for n in names) + "})",
            "    _set(_m, '__pydantic_fields_set__', _given)",
            "    _set(_m, '__pydantic_extra__', None)",
            "    _set(_m, '__pydantic_private__', None)",
            "    return _m",
        ]
    )
    exec(compile(source, f"<trusted {cls.__qualname__}>", "exec"), scope)  # the text is ours, not input
    make: Callable[..., M] = scope["make"]
    make.__name__ = make.__qualname__ = f"trusted({cls.__name__})"
    return make
