"""The vectorised backend: policies lowered to numpy operations over every node at once.

``make_evaluator("vector")`` runs it under the shared phase driver. :func:`lowering_report` says per
rule whether it runs vectorised or on the reference closures, and why. Module map: ``values`` (runtime
value kinds), ``ops`` (operators with the reference's numeric semantics), ``kernels`` (ragged segments,
per-distinct maps, node selectors), ``columns`` (node tables, incremental), the lowering of expressions
(``lower``: the :class:`~policyscheduler.syntax.visitor.ExprVisitor` combining ``base``, ``scalar``,
``loops`` and ``calls``; ``context`` and ``scope`` what it runs in and reads, ``rows`` value helpers),
``program`` (rule clauses, verdicts), ``backend`` (caching, reference fallback).
"""

from __future__ import annotations

from policyscheduler.evaluation.vector.backend import VectorBackend, VectorRun, lowering_report

__all__ = ["VectorBackend", "VectorRun", "lowering_report"]
