"""The shortcuts the vector backend takes on resource formulas (quantity ``+ - *`` without guards when
the bounds allow it, a constant operand read in one step, a loop whose value is its own item, ``len``
of a list present on every row, one floating-point errstate per run) decide exactly what the reference
does: each test fails if its shortcut were taken where it must not be."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from policyscheduler.evaluation.vector import ops
from policyscheduler.evaluation.vector.values import INT_GUARD, Const, Poisoned, quantity_to_float
from tests.evaluation.policies import load
from tests.evaluation.vector.test_vector_backend import CLUSTER, PENDING, agree, node, pod


@pytest.fixture(autouse=True)
def _vector_path_on_small_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    from policyscheduler.evaluation.vector import backend

    monkeypatch.setattr(backend, "SMALL", 0)


@pytest.mark.parametrize("x", [0, 7, -7, 2**62 - 1, -(2**62) + 1, 2**62, -(2**62), 2**70, Fraction(293, 200),
                               Fraction(-5, 3), Fraction(2**62, 3), Fraction(1, 2**62), Fraction(7, 1)])
def test_a_constant_operand_reads_as_the_general_conversion_does(x: int | Fraction) -> None:
    try:
        want = ops.q_operand(Const(x))
    except Poisoned:
        with pytest.raises(Poisoned):
            ops.const_operand(x)
        return
    got = ops.const_operand(x)
    assert (int(got[0]), got[1], got[2], got[3]) == (int(want[0]), want[1], want[2], want[3])
    assert type(got[1]) is int


@pytest.mark.parametrize("op", ["+", "-", "*"])
def test_the_unguarded_quantity_operators_agree_with_the_guarded_ones_or_decline(op: str) -> None:
    """Wherever the guarded operator flags a row (or poisons), the shortcut declines; elsewhere it gives
    the same numerators, denominator and bound."""
    rng = random.Random(op)
    fast = ops._Q_FAST[op]
    declined = taken = 0
    for _ in range(400):
        scale = rng.choice([10, 2**20, 2**40, 2**58, 2**61, 2**62 - 1])
        n1 = np.array([rng.randrange(-scale, scale) for _ in range(8)], dtype=np.int64)
        n2 = np.array([rng.randrange(-scale, scale) for _ in range(8)], dtype=np.int64)
        d1, d2 = rng.choice([1, 20, 200, 1000, 3, 2**31, 2**61]), rng.choice([1, 20, 200, 1000, 7, 2**31, 2**61])
        b1, b2 = float(np.abs(n1).max()), float(np.abs(n2).max())
        try:
            n, d, e, bound = ops.Q_OPS[op](n1, d1, b1, n2, d2, b2)
        except Poisoned:
            assert fast(n1, d1, b1, n2, d2, b2) is None
            declined += 1
            continue
        got = fast(n1, d1, b1, n2, d2, b2)
        if e is not None:
            assert got is None
        if got is None:
            declined += 1
            continue
        taken += 1
        assert got[2] < INT_GUARD
        assert got[1] == d and got[2] == bound
        assert got[0].tolist() == n.tolist()
        exact = {"+": Fraction.__add__, "-": Fraction.__sub__, "*": Fraction.__mul__}[op]
        for x1, x2, r in zip(n1.tolist(), n2.tolist(), got[0].tolist()):
            assert Fraction(r, got[1]) == exact(Fraction(x1, d1), Fraction(x2, d2))
    assert declined and taken


BIG = [node(f"b{i}", cpu=c, memory=m) for i, (c, m) in
       enumerate([("4", str(2**61 + 5)), ("4", str(2**62 - 3)), ("1500m", "8Gi"), ("0", "3"), ("7", str(2**59))])]
BIG_PENDING = [pod("p1", cpu="100m", memory="1Gi"), pod("p2", cpu="3", memory=str(2**60)), pod("p3")]


def test_quantity_sums_differences_and_products_near_int64_go_to_the_reference() -> None:
    """Memory near 2**62 doubled, scaled to the pod's cpu denominator (tenths) or squared leaves int64:
    those rows must be decided by the reference, the others keep the shortcut."""
    agree(load('''
score doubled weight 1 normalize minmax
  value trunc((node.allocatable["memory"] + node.allocatable["memory"]) / 1000000)
score scaled weight 1 normalize minmax
  value trunc((node.allocatable["memory"] - pod.requests["cpu"] + pod.requests["memory"]) / 1000000)
score squared weight 1 normalize minmax
  value trunc(node.allocatable["memory"] * node.allocatable["memory"] / 1000000000000000000)
filter room
  reject "no room" when pod.requests["memory"] + node.requested["memory"] > node.allocatable["memory"] - pod.requests["cpu"]
'''), BIG, BIG_PENDING)


def test_loops_whose_value_is_their_item_keep_absent_items_and_error_rows() -> None:
    """``sum`` / ``max`` / ``min`` of a node-dependent list by its own items: items absent on some rows
    (cpu 0, no gpu) are left out, and an item failing on some rows (a division by the requested cpu,
    0 on empty nodes) sends those rows to the reference."""
    agree(load('''
score identity weight 1 normalize minmax
  let parts = [trunc(node.allocatable[r] * 100 / node.allocatable[r]) for r in ["cpu", "memory", "example.com/gpu"]
    where node.allocatable[r] > 0]
  value sum(s in parts: s) + max(s in parts: s) - min(s in parts: s, default 5) + len(parts)
filter identity_sum
  let parts = [100 - node.allocatable[r] for r in ["cpu", "example.com/gpu"] where node.allocatable[r] > 0]
  reject "sum" when sum(s in parts: s) > 150
filter identity_max
  let parts = [100 - node.allocatable[r] for r in ["cpu", "example.com/gpu"] where node.allocatable[r] > 0]
  reject "max" when max(s in parts: s, default 0) >= 100
filter identity_min
  let parts = [node.allocatable[r] - 100 for r in ["cpu", "example.com/gpu"] where node.allocatable[r] > 0]
  reject "min" when min(s in parts: s, default 0) <= -100
filter listed
  let parts = [node.allocatable["cpu"] * 100 / node.requested["cpu"], node.allocatable["memory"] / 1000000]
  reject "listed" when sum(s in parts: s) > 10000
score failing weight 1 normalize minmax
  let parts = [trunc(node.allocatable[r] * 100 / node.requested[r]) for r in ["cpu", "memory"]
    where node.allocatable[r] > 0]
  value if len(parts) == 0 then 0 else sum(s in parts: s) / len(parts)
'''), CLUSTER, PENDING)


def test_float_overflow_and_invalid_operations_raise_no_warning() -> None:
    """A float operator overflowing to inf and inf - inf (nan) warn in numpy unless ignored; the lowered
    operators leave that to one errstate around the program's run, which must be there (pytest turns
    warnings into errors)."""
    agree(load('''
score overflow weight 1 normalize none
  value trunc(min(1.0, float(node.allocatable["memory"])
    * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 - 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60) * 100.0)
filter overflow
  reject "inf" when float(node.allocatable["memory"])
    * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 - 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 * 1.0e60 > 0.0
'''), CLUSTER, PENDING)


def test_a_pod_level_expression_read_twice_per_pod_is_evaluated_once_and_fails_twice() -> None:
    """``pod.requests[r] / pod.requests["example.com/gpu"]`` (a division by zero for every pod here)
    appears in both branches of an item and in two rules: the first evaluation's failure, kept for the
    pod, must fail the other places too, on their own rows; a value kept for a pod must not leak into
    the next pod's evaluation."""
    agree(load('''
score twice weight 1 normalize minmax
  let parts = [if node.allocatable[r] > 2
      then trunc(pod.requests[r] / pod.requests["example.com/gpu"] + node.requested[r])
      else trunc(pod.requests[r] / pod.requests["example.com/gpu"] - node.requested[r])
    for r in ["cpu", "memory"]]
  value sum(s in parts: s) / 1000000
score again weight 1 normalize minmax
  let parts = [trunc(pod.requests[r] / pod.requests["example.com/gpu"] - node.requested[r])
    for r in ["cpu", "memory"] where node.allocatable[r] > 2]
  value sum(s in parts: s) / 1000000
score once_per_pod weight 1 normalize minmax
  let parts = [trunc(pod.requests[r] / (pod.requests["example.com/gpu"] + 1) - node.requested[r])
    for r in ["cpu", "memory"] where node.allocatable[r] > 2]
  value sum(s in parts: s) / 1000000
'''), CLUSTER, PENDING)
    agree(load('''
filter twice
  reject each ["x " + r for r in ["cpu", "memory"]
    where node.allocatable[r] > 1 and pod.requests[r] / pod.requests["example.com/gpu"] > node.requested[r]]
  reject "again" when pod.requests["cpu"] / pod.requests["example.com/gpu"] > node.requested["cpu"]
'''), CLUSTER, PENDING)


def test_float_of_an_exact_quantity_column_is_python_s_correctly_rounded_quotient() -> None:
    """``float(q)`` of numerators and denominators below 2**53, per-row or one denominator, equals
    ``float(Fraction)`` on every row (one IEEE division of exact operands)."""
    rng = random.Random(5)
    n = np.array([rng.randrange(-(2**53) + 1, 2**53) for _ in range(500)], dtype=np.int64)
    d = np.array([rng.randrange(1, 2**53) for _ in range(500)], dtype=np.int64)
    bound = float(np.abs(n).max())
    got, err = quantity_to_float(n, d, bound)
    assert err is None
    assert got.tolist() == [float(Fraction(int(a), int(b))) for a, b in zip(n.tolist(), d.tolist())]
    for den in (3, 200, 2**53 - 1):
        got, err = quantity_to_float(n, den, bound)
        assert err is None
        assert got.tolist() == [float(Fraction(int(a), den)) for a in n.tolist()]


@pytest.mark.parametrize("k", [1, 2, 4, 1024, 2**62, 3, 6, 100])
def test_division_of_non_negative_ints_by_a_power_of_two_shifts_to_the_same_integers(k: int) -> None:
    rng = np.random.default_rng(k)
    x = rng.integers(0, 2**63 - 1, 2000, dtype=np.int64)
    x[:4] = [0, 1, 2**63 - 1, k]
    for y in (k, np.int64(k)):
        assert ops._floor_div_mod("/", x, y).tolist() == [v // k for v in x.tolist()]
        assert ops._floor_div_mod("%", x, y).tolist() == [v % k for v in x.tolist()]


def test_means_and_remainders_of_node_ints_by_powers_of_two_agree() -> None:
    agree(load('''
score halves weight 1 normalize minmax
  value node.pod_count / 2 + node.pod_count % 4 + (node.pod_count + 5) / 1 + node.pod_count / 3
    + (node.pod_count - 2) / 2 + (node.pod_count - 2) % 2
'''), CLUSTER, PENDING)
