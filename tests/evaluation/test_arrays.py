"""evaluation.arrays: numpy's C functions called without numpy's Python wrappers give exactly what the
wrapped calls give (values, dtypes, errors) on the inputs the evaluation hands them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from policyscheduler.evaluation.arrays import all_true, amax, amin, constant_array, count_nonzero, filled, positions

ARRAYS: list[Any] = [
    np.array([], dtype=np.bool_),
    np.array([True, False, True]),
    np.array([False, False]),
    np.array([True, True]),
    np.array([], dtype=np.int64),
    np.array([0, -3, 7, 0], dtype=np.int64),
    np.array([2**62, -(2**63)], dtype=np.int64),
    np.array([0.5, -0.0, 3.25]),
    np.array([1.0, np.nan, -2.0]),
    np.array([3, 10**30, -5], dtype=object),
    np.array([1, 0, 2], dtype=np.int32),
]


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


@pytest.mark.parametrize("x", ARRAYS, ids=lambda x: f"{x.dtype}{list(x)}")
def test_the_helpers_answer_as_the_numpy_calls_they_replace(x: Any) -> None:
    _same(count_nonzero(x), np.count_nonzero(x))
    assert all_true(x) is bool(x.all())
    if x.dtype != object:
        _same(positions(x), np.flatnonzero(x))
    if x.size:
        _same(amin(x), x.min())
        _same(amax(x), x.max())
    else:  # no minimum of nothing, as numpy says
        with pytest.raises(ValueError):
            amin(x)
        with pytest.raises(ValueError):
            amax(x)


@pytest.mark.parametrize(("n", "value", "dtype"), [(0, -1, np.int32), (5, -1, np.int32), (3, True, np.bool_),
                                                   (4, 100, np.int64), (2, 2**40, np.int64)])
def test_filled_is_np_full(n: int, value: Any, dtype: Any) -> None:
    _same(filled(n, value, dtype), np.full(n, value, dtype=dtype))


def test_count_nonzero_takes_python_and_numpy_scalars() -> None:
    for x in (True, False, 0, 3, np.bool_(True), np.int64(0)):
        assert count_nonzero(x) == np.count_nonzero(x)


def test_constant_array_is_shared_read_only_and_as_long_as_asked() -> None:
    """One read-only array per (dtype, value), grown when a longer one is asked for; shorter ones are views
    of its start, so the sizes of successive feasible sets do not rebuild it."""
    small = constant_array(5, np.int64, 7)
    assert small.dtype == np.int64 and small.tolist() == [7] * 5
    big = constant_array(12, np.int64, 7)
    assert big.tolist() == [7] * 12
    again = constant_array(3, np.int64, 7)
    assert again.tolist() == [7] * 3 and np.shares_memory(again, constant_array(12, np.int64, 7))
    assert constant_array(4, np.bool_, False).tolist() == [False] * 4
    assert constant_array(0, np.int32, -1).size == 0
    for arr in (small, big, again):
        with pytest.raises(ValueError):
            arr[0] = 1
