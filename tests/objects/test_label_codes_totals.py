"""LabelCodes' per-domain totals and spreading (add.reduceat over the nodes sorted by domain, a copy for
a key with a value per node) against the plain bincount and gather they replace."""

from __future__ import annotations

import random

import numpy as np
import pytest

from policyscheduler.objects.topology import build_label_codes


def _labels(rng: random.Random, n: int, shape: str) -> list[dict[str, str]]:
    if shape == "own":  # a value per node, in node order (the hostname)
        return [{"k": f"h{i}"} for i in range(n)]
    if shape == "own-shuffled":  # a value per node, not in first-seen order of the codes' positions
        names = [f"h{i}" for i in range(n)]
        rng.shuffle(names)
        return [{"k": name} for name in names]
    return [{} if rng.random() < 0.2 else {"k": f"v{rng.randrange(4)}"} for _ in range(n)]


@pytest.mark.parametrize("shape", ["own", "own-shuffled", "few"])
@pytest.mark.parametrize("seed", range(20))
def test_totals_and_spread_match_bincount_and_gather(shape: str, seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 40)
    lc = build_label_codes("k", _labels(rng, n, shape))
    per_node = np.array([rng.randint(-3, 9) for _ in range(n)], dtype=np.int64)
    expected = np.rint(np.bincount(lc.filled, weights=per_node, minlength=len(lc.values) + 1)).astype(np.int64)
    got = lc.totals(per_node)
    assert got.dtype == np.int64
    assert np.array_equal(got, expected)
    table = np.array([rng.randint(0, 9) for _ in range(len(lc.values) + 1)], dtype=np.int64)
    spread = lc.spread(table)
    assert np.array_equal(spread, table[lc.codes])
    if spread.size:
        spread[0] += 1  # the caller's own array: the table is not changed
        assert np.array_equal(lc.spread(table), table[lc.codes])


def test_identity_only_for_a_value_per_node_in_order() -> None:
    assert build_label_codes("k", [{"k": "a"}, {"k": "b"}, {"k": "c"}]).identity
    assert not build_label_codes("k", [{"k": "a"}, {}, {"k": "c"}]).identity
    assert not build_label_codes("k", [{"k": "a"}, {"k": "a"}, {"k": "c"}]).identity
