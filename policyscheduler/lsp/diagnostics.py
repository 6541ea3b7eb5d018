"""Lint's diagnostics as LSP diagnostics, one list per file of the set.

Codes, messages and positions are the ones ``policyscheduler lint`` prints (the same
:class:`~policyscheduler.diagnostics.Diagnostic` objects); only the encoding changes: 0-based lines and
UTF-16 columns, and the code links to ``lint --explain``. A diagnostic without a position (a set without
filters) is shown at the top of the document that was edited, so it is not lost.
"""

from __future__ import annotations

from lsprotocol import types

from policyscheduler.diagnostics import ERROR, Diagnostic
from policyscheduler.lsp.layers import Layered, uri_for
from policyscheduler.lsp.positions import span_range

__all__ = ["to_lsp", "by_uri"]

SOURCE = "policyscheduler lint"


def to_lsp(d: Diagnostic, lines: list[str]) -> types.Diagnostic:
    """One diagnostic in the protocol's shape."""
    return types.Diagnostic(
        range=span_range(d.span, lines),
        message=d.message,
        severity=types.DiagnosticSeverity.Error if d.severity == ERROR else types.DiagnosticSeverity.Warning,
        code=d.code,
        source=SOURCE,
    )


def by_uri(layered: Layered, edited_uri: str) -> dict[str, list[types.Diagnostic]]:
    """Every user file of the set (empty lists clear old squiggles), plus any other file a diagnostic names."""
    out: dict[str, list[types.Diagnostic]] = {uri: [] for uri in layered.user_uris.values()}
    out.setdefault(edited_uri, [])
    sources = layered.result.sources
    for d in layered.result.diagnostics:
        if d.span is None:
            uri, lines = edited_uri, []
        else:
            uri = layered.user_uris.get(d.span.file) or uri_for(d.span.file, {})
            src = sources.get(d.span.file)
            lines = src.lines if src is not None else []
        out.setdefault(uri, []).append(to_lsp(d, lines))
    return out
