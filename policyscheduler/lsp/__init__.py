"""``policyscheduler lsp``: a language server for ``.policy`` files (Language Server Protocol over stdio).

It adds no language knowledge of its own. Diagnostics come from the one load pipeline
(:func:`policyscheduler.loader.load_layered`) plus lint's own checks, passed in by the CLI, so the editor
shows exactly what ``policyscheduler lint FOLDER`` prints; completion and hover read the same schema and
builtin tables ``policyscheduler docs`` turns into REFERENCE.md; formatting is ``fmt``'s formatter.

Modules, one concern each: :mod:`.positions` (spans <-> LSP ranges), :mod:`.layers` (the layered set a
document belongs to), :mod:`.diagnostics`, :mod:`.reference` (schema lookups and reference text),
:mod:`.completion`, :mod:`.hover`, :mod:`.navigation` (definitions, document symbols),
:mod:`.formatting`, and :mod:`.server` (the pygls wiring and the debounce).
"""

from __future__ import annotations

from policyscheduler.lsp.server import LintChecks, build_server

__all__ = ["LintChecks", "build_server"]
