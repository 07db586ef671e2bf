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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__
_REQUIRED = object()


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
    template: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, info in cls.model_fields.items():
        if info.is_required():
            template[name] = _REQUIRED
        elif info.default_factory is not None:
            template[name] = _REQUIRED
            factories.append((name, info.default_factory))  # type: ignore[arg-type]
        else:
            template[name] = info.default
    new = cls.__new__

    def make(**values: Any) -> M:
        d = template.copy()  # the fields in their declared order, as validation leaves them
        d.update(values)
        for name, factory in factories:
            if name not in values:
                d[name] = factory()
        m = new(cls)
        _set(m, "__dict__", d)
        _set(m, "__pydantic_fields_set__", set(values))
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m

    make.__name__ = make.__qualname__ = f"trusted({cls.__name__})"
    return make
