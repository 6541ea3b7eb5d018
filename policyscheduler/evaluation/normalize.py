"""Score normalisation: raw rule values -> 0..100, exactly as grammar/LANGUAGE.md specifies.

Each mode reproduces a kube-scheduler NormalizeScore with Go's integer arithmetic (division truncates
toward zero), so the default policies give kube-scheduler's numbers bit for bit:

* ``none`` -- raw, which must already lie in 0..100 (Fit, BalancedAllocation, ImageLocality);
* ``scale`` -- max == 0: raw; else ``raw * 100 / max`` (DefaultNormalizeScore: NodeAffinity);
* ``reverse`` -- max == 0: 100; else ``100 - raw * 100 / max`` (DefaultNormalizeScore reversed: taints);
* ``minmax`` -- max == min: 0; else ``int(100.0 * ((raw - min) / (max - min)))`` (InterPodAffinity);
* ``spread`` -- max == 0: 100; else ``100 * (max + min - raw) / max`` (PodTopologySpread);

with min and max over the scored nodes (feasible, not ignored).

(minmax divides before multiplying, as kube-scheduler's InterPodAffinity does; the other order differs
in the last bit, e.g. raw 29 of 0..100 gives 28 here and in kube-scheduler, 29 the other way.)

``scale``, ``reverse`` and ``spread`` assume non-negative raw values (kube-scheduler's helpers do too);
:func:`raw_error` reports a raw value a mode cannot take, so the evaluator can turn it into a runtime
error of that rule on that node instead of producing a score outside 0..100.

Raw scores are 64-bit integers, as in kube-scheduler: the rule wrapper refuses a ``value`` outside int64
with a located ``overflow`` runtime error, and :func:`normalize` clamps any raw score that still lies
outside (a builtin fed a value no API server would accept) to the int64 range before normalising, so the
float and integer arithmetic here never overflows (``float()`` of a 400-digit int raised OverflowError).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from policyscheduler.checker.passes import NORMALIZE_MODES as MODES
from policyscheduler.compiler.builtins import go_div
from policyscheduler.evaluation.arrays import amax, amin, filled

__all__ = ["MODES", "MAX_SCORE", "normalize", "normalize_array", "raw_error", "go_div"]

MAX_SCORE = 100
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def raw_error(mode: str, raw: int) -> str | None:
    """Why ``raw`` is not an acceptable raw score for ``mode`` (None when it is)."""
    if mode == "none":
        if not 0 <= raw <= MAX_SCORE:
            return f"score {raw} is out of range 0..{MAX_SCORE} (normalize none)"
        return None
    if mode in ("scale", "reverse", "spread"):
        if raw < 0:
            return f"score {raw} is negative (normalize {mode} needs raw scores >= 0)"
        return None
    if mode == "minmax":
        return None
    return f"unknown normalisation mode {mode!r}"


def normalize(mode: str, raws: Sequence[int]) -> list[int]:
    """Normalise the raw scores of the scored nodes (in any order) with ``mode``.

    The caller passes only non-ignored feasible nodes and has already rejected raw values for which
    :func:`raw_error` is not None, so every result lies in 0..100.
    """
    if not raws:
        return []
    if mode == "none":
        return list(raws)
    hi = max(raws)
    lo = min(raws)
    if hi > INT64_MAX or lo < INT64_MIN:  # defined behaviour for out-of-range input: clamp (module docstring)
        raws = [min(INT64_MAX, max(INT64_MIN, r)) for r in raws]
        hi, lo = max(raws), min(raws)
    if mode == "scale":
        if hi == 0:
            return list(raws)
        return [go_div(r * MAX_SCORE, hi) for r in raws]
    if mode == "reverse":
        if hi == 0:
            return [MAX_SCORE] * len(raws)
        return [MAX_SCORE - go_div(r * MAX_SCORE, hi) for r in raws]
    if mode == "minmax":
        if hi == lo:
            return [0] * len(raws)
        # Go: float64(MaxNodeScore) * (float64(s-min) / float64(max-min)), truncated. The division
        # comes first, so 29/100 -> 28.999999999999996 -> 28 (not 29): keep the parentheses.
        span = float(hi - lo)
        return [int(float(MAX_SCORE) * (float(r - lo) / span)) for r in raws]
    if mode == "spread":
        if hi == 0:
            return [MAX_SCORE] * len(raws)
        return [go_div(MAX_SCORE * (hi + lo - r), hi) for r in raws]
    raise ValueError(f"unknown normalisation mode {mode!r}")


_EXACT = 2**53
"""Below this magnitude int64 products by 100 cannot overflow and float64 holds every integer exactly."""


def normalize_array(mode: str, raws: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """:func:`normalize` over a numpy array, with identical results.

    int64 arithmetic is used when every value is small enough for it to be exact (the common case);
    otherwise (object arrays of big Python ints, or values near the int64 limits) the list version runs.
    """
    if raws.size == 0:
        return np.zeros(0, dtype=np.int64)
    if raws.dtype == object:
        return np.array(normalize(mode, [int(r) for r in raws.tolist()]), dtype=np.int64)
    r = raws.astype(np.int64, copy=False)
    hi, lo = int(amax(r)), int(amin(r))
    if max(hi, -lo) >= _EXACT:  # (np.abs would wrap -2**63 around to itself)
        return np.array(normalize(mode, [int(x) for x in r.tolist()]), dtype=np.int64)
    if mode == "none":
        return r.copy()
    if mode == "scale":  # raw >= 0 (raw_error), so floor division is Go's truncation
        return r.copy() if hi == 0 else (r * MAX_SCORE) // hi
    if mode == "reverse":
        return filled(r.size, MAX_SCORE, np.int64) if hi == 0 else MAX_SCORE - (r * MAX_SCORE) // hi
    if mode == "minmax":
        if hi == lo:
            return np.zeros(r.size, dtype=np.int64)
        span = float(hi - lo)
        return (float(MAX_SCORE) * ((r - lo).astype(np.float64) / span)).astype(np.int64)
    if mode == "spread":  # lo <= raw <= hi and lo >= 0, so the numerator is >= 0
        return filled(r.size, MAX_SCORE, np.int64) if hi == 0 else (MAX_SCORE * (hi + lo - r)) // hi
    raise ValueError(f"unknown normalisation mode {mode!r}")


def normalize_bounded(mode: str, raws: npt.NDArray[np.int64], lo: int, hi: int) -> npt.NDArray[np.int64] | int:
    """:func:`normalize_array` of an int64 array whose smallest and largest values the caller already
    has (the driver takes them for the raw-value checks): no second pass for them, and one int -- the
    score of every node -- when all the raw values are equal (then the rule cannot change the order
    of the nodes, and the driver adds one number instead of an array). Never copies ``raws`` for
    ``none``: the caller must not write to the result.

    ``none``, ``scale`` and ``reverse`` do not read the minimum: for them ``lo`` may be any value between
    0 and the minimum (the driver passes 0 and spares a pass over the nodes), as long as ``lo == hi`` only
    when every raw value is ``lo``."""
    if lo == hi:
        return normalize(mode, [lo])[0]
    if max(hi, -lo) >= _EXACT:
        return normalize_array(mode, raws)
    if mode == "none":
        return raws
    # below: the same arithmetic as normalize_array, written into one new array in place (each step is one
    # pass over the nodes and no temporary: at 5,000 nodes the passes are the cost)
    if mode == "scale":  # raw >= 0 (raw_error), so floor division is Go's truncation
        if hi == 0:
            return raws
        out = raws * MAX_SCORE
        if hi != 1:  # (a count of 0 or 1 -- an untolerated taint -- divides by 1: the slowest pass, for nothing)
            out //= hi
        return out
    if mode == "reverse":
        if hi == 0:
            return filled(raws.size, MAX_SCORE, np.int64)
        out = raws * MAX_SCORE
        if hi != 1:
            out //= hi
        return np.subtract(MAX_SCORE, out, out=out)
    if mode == "minmax":
        # float(raw) - float(lo) is float(raw - lo): both operands are exact below 2**53 and an IEEE
        # subtraction rounds the exact difference once, as converting the int64 difference does
        scaled = np.subtract(raws, float(lo), dtype=np.float64)
        scaled /= float(hi - lo)
        scaled *= float(MAX_SCORE)  # x * 100.0 == 100.0 * x (IEEE multiplication commutes)
        return scaled.astype(np.int64)
    if mode == "spread":  # lo <= raw <= hi and lo >= 0, so the numerator is >= 0
        if hi == 0:
            return filled(raws.size, MAX_SCORE, np.int64)
        out = np.subtract(hi + lo, raws)
        out *= MAX_SCORE
        out //= hi
        return out
    raise ValueError(f"unknown normalisation mode {mode!r}")
