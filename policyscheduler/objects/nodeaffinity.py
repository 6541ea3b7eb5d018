"""A pod's required node affinity over many nodes at once.

:func:`~policyscheduler.objects.records.pod_matches_required_node_affinity` answers for one node. Two
callers need the answer for every node in one pass: the spread counts (which nodes a constraint counts,
from the state's label codes) and the vector engine (``matches_node_affinity`` on a rule's rows). They
read node labels from different tables, so each passes how to test one requirement on all its rows;
how the requirements combine (nodeSelector, then ORed terms, each term ANDing its expressions and
fields, an empty or invalid term matching nothing) is written once, here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from policyscheduler.objects.records import NodeSelectorTerm, Pod
from policyscheduler.objects.selectors import Requirement

__all__ = ["RequirementRows", "LabelRows", "term_rows", "required_node_affinity_rows"]

BoolArray = npt.NDArray[np.bool_]

RequirementRows = Callable[[Requirement, bool], BoolArray | None]
"""``(requirement, on_fields) ->`` the requirement's answer on every row (``on_fields``: a matchFields
requirement, which reads ``metadata.name``), or None when the caller cannot answer it in bulk."""

LabelRows = Callable[[str, str], BoolArray | None]
"""``(key, value) ->`` whether each row's label ``key`` equals ``value`` (a nodeSelector entry), or None."""


def term_rows(term: NodeSelectorTerm, n: int, requirement: RequirementRows) -> BoolArray | None:
    """``term.matches(node)`` on ``n`` rows; None as soon as ``requirement`` gives None."""
    if not (term.match_expressions or term.match_fields) or not term._valid:
        return np.zeros(n, dtype=np.bool_)
    out = np.ones(n, dtype=np.bool_)
    for selector, on_fields in ((term._labels, False), (term._fields, True)):
        if selector is None:
            continue
        for req in selector.requirements:
            rows = requirement(req, on_fields)
            if rows is None:
                return None
            out &= rows
    return out


def required_node_affinity_rows(pod: Pod, n: int, label_equals: LabelRows,
                                requirement: RequirementRows) -> BoolArray | None:
    """``pod_matches_required_node_affinity`` on ``n`` rows; None as soon as a callback gives None."""
    out = np.ones(n, dtype=np.bool_)
    for key, value in pod.node_selector.items():
        rows = label_equals(key, value)
        if rows is None:
            return None
        out &= rows
    if pod.has_required_node_affinity:
        anyterm = np.zeros(n, dtype=np.bool_)
        for term in pod.required_node_affinity:
            rows = term_rows(term, n, requirement)
            if rows is None:
                return None
            anyterm |= rows
        out &= anyterm
    return out
