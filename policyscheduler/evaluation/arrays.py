"""numpy calls the evaluation makes several dozen times per pod, without numpy's Python-level wrappers.

``np.count_nonzero(x)``, ``x.min()``, ``x.max()``, ``x.all()``, ``np.full`` and ``np.flatnonzero`` each run
a Python function (argument dispatch, keyword handling) before the C loop; on the arrays of one pod
(a few thousand rows) that wrapper costs as much as the loop, and a pod makes about seventy such calls.
These are the same C functions called directly: the same results, dtypes and errors (an empty array
still has no minimum).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

try:  # numpy >= 2
    from numpy._core.multiarray import count_nonzero as _count_nonzero
except ImportError:  # pragma: no cover -- numpy 1.26
    from numpy.core.multiarray import count_nonzero as _count_nonzero  # type: ignore[no-redef]

__all__ = ["all_true", "amax", "amin", "constant_array", "count_nonzero", "every_slot", "filled", "positions"]

count_nonzero = _count_nonzero
"""``np.count_nonzero(x)`` (no ``axis``): the number of true / non-zero items of ``x``."""

amin = np.minimum.reduce
"""``x.min()`` of a non-empty array (ValueError on an empty one, as ``x.min()``)."""

amax = np.maximum.reduce
"""``x.max()`` of a non-empty array."""


def all_true(x: npt.NDArray[Any]) -> bool:
    """``bool(x.all())``: every item true / non-zero (True for an empty array)."""
    return int(_count_nonzero(x)) == x.size


def filled(n: int, value: Any, dtype: Any) -> npt.NDArray[Any]:
    """``np.full(n, value, dtype=dtype)``."""
    out = np.empty(n, dtype=dtype)
    out.fill(value)
    return out


def positions(x: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """``np.flatnonzero(x)`` of a one-dimensional array: the indexes of its true / non-zero items."""
    return x.nonzero()[0]


_CONSTANTS: dict[tuple[Any, Any], npt.NDArray[Any]] = {}


def constant_array(size: int, dtype: Any, value: Any) -> npt.NDArray[Any]:
    """A read-only array of ``size`` times ``value``, shared: "no verdict" / "not ignored" / "no error" for
    every node is the usual answer, and readers never write to an outcome (a write would raise).

    One array per (dtype, value), as long as the largest size asked for; a smaller size is a view of its
    start (the feasible set, and so the size, changes from pod to pod: an array per size would be rebuilt
    as often as it is used)."""
    key = (dtype, value)
    arr = _CONSTANTS.get(key)
    if arr is None or arr.size < size:
        if arr is None and len(_CONSTANTS) >= 32:  # a handful of values are common: keep those
            _CONSTANTS.clear()
        arr = _CONSTANTS[key] = filled(size, value, dtype)
        arr.flags.writeable = False
    return arr[:size]


_SLOTS: list[npt.NDArray[np.int64]] = []


def every_slot(n: int) -> npt.NDArray[np.int64]:
    """A read-only ``np.arange(n, dtype=np.int64)``, shared: the node set a pod starts from, asked for on
    every pod (and again by the vector backend's wide runs), and the same from pod to pod while the
    node count holds. Readers only index it (a write would raise)."""
    if _SLOTS and _SLOTS[0].size == n:
        return _SLOTS[0]
    arr = np.arange(n, dtype=np.int64)
    arr.flags.writeable = False
    _SLOTS[:] = [arr]
    return arr
