"""Facts to plain JSON-ready values: ``{"fact": "Gpu", ...fields}``.

The class name goes under ``fact``, a key no fact uses for a field (facts
do have fields named ``type`` and ``kind``).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

_FIELDS: dict[type, tuple[str, ...]] = {}
_SCALARS = (str, int, float, bool, type(None))


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def to_jsonable(value: Any) -> Any:
    """Convert facts (and what they hold) to JSON-ready values."""
    if isinstance(value, _SCALARS):
        return value
    cls = type(value)
    if hasattr(cls, "__dataclass_fields__"):
        out: dict[str, Any] = {"fact": cls.__name__}
        for name in _fields(cls):
            item = getattr(value, name)
            if name == "cite":
                out["cite"] = {"source": item.source, "line": item.line, "text": item.text}
            else:
                out[name] = to_jsonable(item)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, frozenset, set)):
        return [to_jsonable(v) for v in value]
    return str(value)
