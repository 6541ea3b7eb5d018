"""Whole-column building blocks: ragged segments, per-distinct-value maps, node selector matching.

Anything that would need Python per row is done per *distinct* value instead (label values, taints,
strings built for reasons): a cluster has thousands of nodes but few distinct label values, so calling
the reference's own scalar code once per distinct value and gathering keeps both the exact semantics
and the speed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from policyscheduler.evaluation.arrays import amax, count_nonzero, positions
from policyscheduler.evaluation.vector.values import (
    Arr,
    Bools,
    Col,
    Const,
    Mask,
    Value,
    err_or,
    from_python,
    int_add,
)
from policyscheduler.objects.nodeaffinity import RequirementRows, required_node_affinity_rows, term_rows

# ---------------------------------------------------------------------------------- per distinct


def _values_of(v: Value, kind: str, interner: Any) -> tuple[list[Any], Arr | None]:
    """(distinct Python values, inverse index per row) of a column; ([x], None) for a constant."""
    if isinstance(v, Const):
        return [v.value], None
    assert isinstance(v, Col)
    if v.kind != kind:  # a lowering bug: e.g. float data read as string codes would index the interner
        raise TypeError(f"a {v.kind} column where a {kind} column was expected")
    if kind == "str":
        uniq, inv = np.unique(v.data, return_inverse=True)
        return interner.strings(uniq), inv
    if kind == "q":
        from fractions import Fraction

        den = v.den
        if isinstance(den, np.ndarray):
            pairs = np.stack([v.data, den])
            uniq, inv = np.unique(pairs, axis=1, return_inverse=True)
            return [Fraction(int(n), int(d)) for n, d in zip(uniq[0].tolist(), uniq[1].tolist())], inv.reshape(-1)
        uniq, inv = np.unique(v.data, return_inverse=True)
        return [Fraction(int(n), den) for n in uniq.tolist()], inv
    if kind == "float":  # distinct by bit pattern: 0.0 and -0.0 are equal but str() tells them apart
        bits, inv = np.unique(v.data.view(np.int64), return_inverse=True)
        return bits.view(np.float64).tolist(), inv
    uniq, inv = np.unique(v.data, return_inverse=True)
    return uniq.tolist(), inv


def map_values(fn: Callable[[Any], Any], v: Col, kind_in: str, kind_out: str, interner: Any) -> Col:
    """``fn`` once per distinct value of ``v``; rows where it raises get ``err``."""
    return map_strings(fn, kind_out, [v], interner, kinds=[kind_in])


def map_strings(fn: Callable[..., Any], kind_out: str, args: list[Value], interner: Any,
                kinds: list[str] | None = None) -> Col:
    """``fn(*args)`` once per distinct combination of argument values (strings by default)."""
    kinds = kinds or ["str"] * len(args)
    parts = [_values_of(a, k, interner) for a, k in zip(args, kinds)]
    m = next(len(inv) for _, inv in parts if inv is not None)
    key = np.zeros(m, dtype=np.int64)
    for vals, inv in parts:
        if inv is not None:
            key = key * len(vals) + inv
    uniq, inv = np.unique(key, return_inverse=True)
    out: list[Any] = []
    bad: list[bool] = []
    for k in uniq.tolist():
        call: list[Any] = []
        rest = k
        idxs = []
        for vals, i in reversed(parts):
            if i is None:
                idxs.append(0)
            else:
                idxs.append(rest % len(vals))
                rest //= len(vals)
        idxs.reverse()
        call = [vals[j] for (vals, _), j in zip(parts, idxs)]
        try:
            out.append(fn(*call))
            bad.append(False)
        except Exception:  # noqa: BLE001 -- the reference raises on these rows: they get its verdict
            out.append(_ZERO[kind_out])
            bad.append(True)
    col = from_python(out, kind_out, interner)
    data = col.data[inv]
    errs = [a.err for a in args if isinstance(a, Col)]
    err = np.array(bad, dtype=np.bool_)[inv] if any(bad) else None
    if col.err is not None:
        err = err_or(err, col.err[inv])
    den = col.den
    return Col(kind_out, data, err_or(err, *errs), den)


_ZERO: dict[str, Any] = {"bool": False, "int": 0, "float": 0.0, "str": "", "q": 0}


# ------------------------------------------------------------------------------------ segments


class Segments:
    """Ragged elements grouped by node row: row r owns elements ``begins[r]:ends[r]`` (possibly none)."""

    def __init__(self, counts: Arr) -> None:
        self.counts = counts
        self.m = counts.size
        self.ends = np.cumsum(counts)
        self.begins = self.ends - counts
        self.size = int(self.ends[-1]) if self.m else 0
        self.seg = np.repeat(np.arange(self.m, dtype=np.int64), counts)

    def within(self) -> Arr:
        """Each element's position inside its row's list."""
        out: Arr = np.arange(self.size, dtype=np.int64) - self.begins[self.seg]
        return out

    def sum_ints(self, vals: Arr) -> tuple[Arr, Bools | None]:
        """Exact per-row sums of int64 element values (overflow-guarded)."""
        if self.size == 0:
            return np.zeros(self.m, dtype=np.int64), None
        cs = np.concatenate([[0], np.cumsum(vals)])
        mag = np.concatenate([[0.0], np.cumsum(np.abs(vals.astype(np.float64)))])
        out, err = int_add(cs[self.ends], cs[self.begins], True)
        bad = (mag[self.ends] - mag[self.begins]) >= 2.0**62
        return out, err_or(err, bad if count_nonzero(bad) else None)

    def count(self, mask: Mask) -> Arr:
        if mask is True:
            return self.counts.astype(np.int64)
        if mask is False or self.size == 0:
            return np.zeros(self.m, dtype=np.int64)
        return np.bincount(self.seg[mask], minlength=self.m)

    def any(self, mask: Bools | None) -> Bools | None:
        if mask is None:
            return None
        hit = self.count(mask) > 0
        return hit if count_nonzero(hit) else None

    def fold(self, present: Mask, step: Callable[[Arr, Arr], None]) -> None:
        """Call ``step(rows, elements)`` position by position (element k of every row holding k items),
        for sequential reductions whose order matters (float sums, min / max)."""
        if self.size == 0:
            return
        top = int(amax(self.counts))
        for k in range(top):
            rows = positions(self.counts > k)
            pos = self.begins[rows] + k
            if present is not True:
                keep = np.asarray(present)[pos]
                rows, pos = rows[keep], pos[keep]
            if rows.size:
                step(rows, pos)


def elements(starts: Arr, counts: Arr) -> tuple[Segments, Arr]:
    """The segments of rows with ``counts`` items stored at ``starts``, and each element's table row."""
    segs = Segments(counts)
    rows = np.repeat(starts, counts) + segs.within() if segs.size else np.zeros(0, dtype=np.int64)
    return segs, rows


# --------------------------------------------------------------------------------- node selectors

LabelSource = Callable[[str], tuple[Bools, Arr]]
"""key -> (present per row, value codes per row)."""


def requirement(req: Any, source: LabelSource, interner: Any, m: int) -> Bools:
    """apimachinery ``Requirement.Matches`` on every row (see objects/selectors.py)."""
    has, codes = source(req.key)
    op = req.operator
    if op in ("In", "NotIn"):
        inside = has & np.isin(codes, interner.codes_if_known(sorted(req.values)))
        return inside if op == "In" else ~inside
    if op == "Exists":
        return has.copy()
    if op == "DoesNotExist":
        return ~has
    from policyscheduler.objects.selectors import _parse_int64

    number = req.number

    def test(text: str) -> bool:
        value = _parse_int64(text)
        return value is not None and (value > number if op == "Gt" else value < number)

    uniq, inv = np.unique(codes, return_inverse=True)
    ok = np.array([test(s) for s in interner.strings(uniq)], dtype=np.bool_)
    return has & ok[inv]


def _requirements(labels: LabelSource, fields: LabelSource, interner: Any, m: int) -> RequirementRows:
    """Each requirement on every row, matchFields ones from ``fields`` (``metadata.name``)."""

    def rows(req: Any, on_fields: bool) -> Bools:
        return requirement(req, fields if on_fields else labels, interner, m)

    return rows


def term_matches(term: Any, labels: LabelSource, fields: LabelSource, interner: Any, m: int) -> Bools:
    """``NodeSelectorTerm.matches(node)`` on every row."""
    out = term_rows(term, m, _requirements(labels, fields, interner, m))
    assert out is not None  # every requirement is answered in bulk here
    return out


def required_node_affinity(pod: Any, labels: LabelSource, fields: LabelSource, interner: Any, m: int) -> Bools:
    """``pod_matches_required_node_affinity`` on every row: nodeSelector, then the ORed terms."""

    def label_equals(key: str, value: str) -> Bools:
        has, codes = labels(key)
        rows: Bools = has & (codes == interner.code(value))
        return rows

    out = required_node_affinity_rows(pod, m, label_equals, _requirements(labels, fields, interner, m))
    assert out is not None  # every requirement is answered in bulk here
    return out
