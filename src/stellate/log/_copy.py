"""A fast ``dataclasses.replace`` for the small frozen records folded once per event.

``dataclasses.replace`` introspects the fields on every call; the log folds a cursor and slots for every
event it appends or loads, so it pays for that hundreds of thousands of times on a cold open. The replacer
is generated once per class: keyword parameters with a sentinel default, and one slot-descriptor setter call
per field (what a frozen dataclass's own ``__init__`` does through ``object.__setattr__``, minus the lookups).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["replacer"]

T = TypeVar("T")


def replacer(cls: type[T]) -> Callable[..., T]:
    """A ``replace(obj, **changes)`` for instances of ``cls`` (a slotted dataclass without ``__post_init__``)."""
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_KEEP": object()}
    scope.update({f"_set_{name}": vars(cls)[name].__set__ for name in names})
    params = ", ".join(f"{name}=_KEEP" for name in names)
    body = "".join(f"    _set_{name}(copy, obj.{name} if {name} is _KEEP else {name})\n" for name in names)
    source = f"def replace(obj, *, {params}):\n    copy = _new(_cls)\n{body}    return copy\n"
    exec(source, scope)  # generated from the dataclass's own field names only
    replace: Callable[..., T] = scope["replace"]
    return replace
