"""A fast ``dataclasses.replace`` for the small frozen records folded once per event.

``dataclasses.replace`` introspects the fields on every call; the log folds a cursor and slots for every
event it appends or loads, so it pays for that hundreds of thousands of times on a cold open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["replacer"]

T = TypeVar("T")


def replacer(cls: type[T]) -> Callable[..., T]:
    """A ``replace(obj, **changes)`` for instances of ``cls`` (a dataclass without ``__post_init__``)."""
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    new, setter = object.__new__, object.__setattr__

    def replace(obj: T, **changes: Any) -> T:
        copy = new(cls)
        for name in names:
            setter(copy, name, changes[name] if name in changes else getattr(obj, name))
        return copy

    return replace
