"""The driver's per-pod shortcuts give what the long way gives.

Session 36 cut per-pod fixed cost in the driver: the starting node set is one shared read-only array
(:func:`~policyscheduler.evaluation.arrays.every_slot`), the feasible mask handed to the context is read
off the verdict codes, and the bounds of the modes that do not read the minimum come from one pass
(:func:`~policyscheduler.evaluation.driver._raw_bounds`). Decisions are guarded end to end by the
oracle and backend differential tests; these pin each shortcut to its definition.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyscheduler.evaluation.arrays import every_slot
from policyscheduler.evaluation.decision import NodeVerdict
from policyscheduler.evaluation.driver import _raw_bounds, _record, _set_feasible
from policyscheduler.evaluation.normalize import normalize, normalize_bounded, raw_error

MODES = ["none", "scale", "reverse", "minmax", "spread"]


def test_every_slot_is_a_shared_read_only_arange() -> None:
    a = every_slot(7)
    assert a.tolist() == list(range(7)) and a.dtype == np.int64
    assert every_slot(7) is a  # shared while the node count holds
    with pytest.raises(ValueError):
        a[0] = 3  # readers only index it
    b = every_slot(3)
    assert b.tolist() == [0, 1, 2] and every_slot(0).size == 0


_INT64 = st.one_of(st.integers(-5, 130), st.integers(-(2**63), 2**63 - 1), st.just(-(2**63)), st.just(2**63 - 1),
                   st.integers(2**52, 2**54))


@given(st.sampled_from(MODES), st.lists(_INT64, min_size=1, max_size=30))
def test_raw_bounds_accepts_exactly_the_values_the_mode_takes(mode: str, raws: list[int]) -> None:
    """None exactly when some value has a raw_error; else bounds with which normalize_bounded gives what
    the list version gives (for none/scale/reverse the min is 0 from one unsigned pass)."""
    raw = np.array(raws, dtype=np.int64)
    bounds = _raw_bounds(mode, raw)
    bad = any(raw_error(mode, r) is not None for r in raws)
    assert (bounds is None) == bad
    if bounds is None:
        return
    lo, hi = bounds
    assert hi == max(raws) and lo <= min(raws)
    assert lo == (0 if mode in ("none", "scale", "reverse") else min(raws))
    got = normalize_bounded(mode, raw, lo, hi)
    want = normalize(mode, raws)
    assert ([got] * len(raws) if isinstance(got, int) else got.tolist()) == want


def test_raw_bounds_of_equal_values() -> None:
    """All zero: one int for every mode; all one non-zero value: an array of the right value."""
    for mode in MODES:
        zeros = np.zeros(5, dtype=np.int64)
        b = _raw_bounds(mode, zeros)
        assert b is not None and normalize_bounded(mode, zeros, *b) == normalize(mode, [0])[0]
        sevens = np.full(5, 7, dtype=np.int64)
        b = _raw_bounds(mode, sevens)
        assert b is not None
        got = normalize_bounded(mode, sevens, *b)
        assert ([got] * 5 if isinstance(got, int) else got.tolist()) == normalize(mode, [7] * 5)


class _Cluster:
    def __init__(self) -> None:
        self.mask: Any = None

    def set_feasible_mask(self, mask: Any) -> None:
        self.mask = mask


def test_feasible_mask_is_the_nodes_left_active() -> None:
    """The mask read off the codes (``codes < 0``) marks exactly the nodes the filters left in ``active``."""
    rng = np.random.default_rng(3)
    n = 50
    for _ in range(20):
        codes = np.full(n, -1, dtype=np.int32)
        table: list[NodeVerdict] = []
        active = every_slot(n)
        for f in range(3):
            out = np.where(rng.random(active.size) < 0.2, 0, -1).astype(np.int32)
            active = _record(codes, table, active, out, [NodeVerdict(rule=f"f{f}", reasons=("no",))])
        cluster = _Cluster()
        _set_feasible(cluster, active, codes, [])  # type: ignore[arg-type]
        want = np.zeros(n, dtype=np.bool_)
        want[active] = True
        assert cluster.mask.dtype == np.bool_ and cluster.mask.tolist() == want.tolist()


@pytest.mark.parametrize("mode", ["scale", "reverse"])
def test_bounded_normalisation_of_zeros_and_ones(mode: str) -> None:
    """Raw values of 0 and 1 (an untolerated taint counted per node): the division by 1 is skipped."""
    raws = [0, 1, 1, 0, 1]
    got = normalize_bounded(mode, np.array(raws, dtype=np.int64), 0, 1)
    assert not isinstance(got, int) and got.tolist() == normalize(mode, raws)
