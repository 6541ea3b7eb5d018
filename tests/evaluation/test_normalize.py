"""Normalisation modes against hand-computed values (grammar/LANGUAGE.md table, kube-scheduler math)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyscheduler.evaluation.normalize import go_div, normalize, raw_error


def test_none_passes_raw_through() -> None:
    assert normalize("none", [0, 37, 100]) == [0, 37, 100]


def test_scale_divides_by_max_truncating() -> None:
    # 1*100/3 = 33.3 -> 33 ; 2*100/3 = 66.6 -> 66
    assert normalize("scale", [1, 2, 3]) == [33, 66, 100]


def test_scale_all_zero_unchanged() -> None:
    assert normalize("scale", [0, 0]) == [0, 0]


def test_reverse_taint_example() -> None:
    # kube TaintToleration: counts 0,1,3 -> 100, 100-33=67, 0
    assert normalize("reverse", [0, 1, 3]) == [100, 67, 0]


def test_reverse_all_zero_is_100() -> None:
    assert normalize("reverse", [0, 0, 0]) == [100, 100, 100]


def test_minmax_float_truncation_and_negatives() -> None:
    # min -2, max 4, span 6: (-2)->0, 1 -> int(100*3/6)=50, 2 -> int(66.66)=66, 4 -> 100
    assert normalize("minmax", [-2, 1, 2, 4]) == [0, 50, 66, 100]


def test_minmax_divides_before_multiplying_like_go() -> None:
    # float64(100) * (float64(29) / float64(100)) = 28.999999999999996 -> 28
    assert normalize("minmax", [0, 29, 100]) == [0, 28, 100]


def test_minmax_equal_is_zero() -> None:
    assert normalize("minmax", [5, 5]) == [0, 0]


def test_spread_pod_topology_formula() -> None:
    # max 10, min 4: 100*(14-4)/10=100, 100*(14-7)/10=70, 100*(14-10)/10=40
    assert normalize("spread", [4, 7, 10]) == [100, 70, 40]


def test_spread_zero_max_is_100() -> None:
    assert normalize("spread", [0, 0]) == [100, 100]


def test_spread_truncates() -> None:
    # max 3, min 1: 100*(4-2)/3 = 66.6 -> 66
    assert normalize("spread", [1, 2, 3]) == [100, 66, 33]


def test_empty_input() -> None:
    for mode in ("none", "scale", "reverse", "minmax", "spread"):
        assert normalize(mode, []) == []


def test_unknown_mode_rejected() -> None:
    with pytest.raises(ValueError):
        normalize("bogus", [1])
    assert raw_error("bogus", 1) is not None


@pytest.mark.parametrize(
    ("mode", "raw", "ok"),
    [
        ("none", 0, True),
        ("none", 100, True),
        ("none", 101, False),
        ("none", -1, False),
        ("scale", -1, False),
        ("reverse", 5000, True),
        ("spread", -3, False),
        ("minmax", -3000, True),
    ],
)
def test_raw_error(mode: str, raw: int, ok: bool) -> None:
    assert (raw_error(mode, raw) is None) is ok


def test_go_div_truncates_toward_zero() -> None:
    assert go_div(7, 2) == 3
    assert go_div(-7, 2) == -3
    assert go_div(7, -2) == -3
    assert go_div(-7, -2) == 3


@given(st.sampled_from(["none", "scale", "reverse", "minmax", "spread"]), st.lists(st.integers(-1000, 1000), min_size=1, max_size=20))
def test_results_always_in_range_for_accepted_raws(mode: str, raws: list[int]) -> None:
    accepted = [r for r in raws if raw_error(mode, r) is None]
    for value in normalize(mode, accepted):
        assert 0 <= value <= 100


_BIG = st.one_of(st.integers(-1000, 1000), st.integers(-(2**70), 2**70), st.integers(2**52, 2**54))


@given(st.sampled_from(["none", "scale", "reverse", "minmax", "spread"]), st.lists(_BIG, min_size=1, max_size=20))
def test_array_normalisation_equals_the_list_version(mode: str, raws: list[int]) -> None:
    import numpy as np

    from policyscheduler.evaluation.normalize import normalize_array

    accepted = [r for r in raws if raw_error(mode, r) is None]
    if mode == "none" or not accepted:
        accepted = [r % 101 for r in raws]
    fits = all(-(2**63) <= r < 2**63 for r in accepted)
    array = np.array(accepted, dtype=np.int64 if fits else object)
    assert normalize_array(mode, array).tolist() == normalize(mode, accepted)


_INT64 = st.one_of(st.integers(-1000, 1000), st.integers(-(2**63), 2**63 - 1), st.integers(2**52, 2**54),
                   st.just(-(2**63)), st.just(2**63 - 1))


@given(st.sampled_from(["none", "scale", "reverse", "minmax", "spread"]), st.lists(_INT64, min_size=1, max_size=20))
def test_bounded_normalisation_equals_the_list_version(mode: str, raws: list[int]) -> None:
    """normalize_bounded (the driver's path when min and max are known) gives normalize's values; one
    int when every raw value is equal. Also normalize_array at the int64 edges (-2**63 has no abs)."""
    import numpy as np

    from policyscheduler.evaluation.normalize import normalize_array, normalize_bounded

    accepted = [r for r in raws if raw_error(mode, r) is None]
    if mode == "none" or not accepted:
        accepted = [r % 101 for r in raws]
    array = np.array(accepted, dtype=np.int64)
    got = normalize_bounded(mode, array, min(accepted), max(accepted))
    want = normalize(mode, accepted)
    if isinstance(got, int):
        assert len(set(accepted)) == 1 and [got] * len(accepted) == want
    else:
        assert got.tolist() == want
    assert normalize_array(mode, array).tolist() == want
