"""Hot reload of the policy set: watch the sources, load off the scheduling thread, swap only a good set.

* :mod:`.dirwatch`: ``--policies DIR`` watched on disk by polling (the stdlib has no inotify): the set of
  ``*.policy`` files and, per file, its resolved path, inode, size and mtime -- so the atomic ``..data``
  symlink swap of a mounted ConfigMap volume is seen like any edit.
* :mod:`.reloader`: the one reload worker. Sources tell it *that* something changed (and, for a
  ConfigMap, the new texts); it runs :func:`policyscheduler.loader.load_layered` (the function ``lint``
  runs) in its own thread, hands a set without errors to ``apply`` (the scheduling cycle swaps it in
  between two cycles) and reports every outcome through ``report``. A broken set is never applied: the
  last good one stays in force.

Nothing here talks to the API server; the ConfigMap source and the reporting (events, metrics) live in
:mod:`policyscheduler.app.sources` and :mod:`policyscheduler.app.reload_report`.
"""

from __future__ import annotations

from policyscheduler.reload.dirwatch import DirectoryWatcher, fingerprint
from policyscheduler.reload.reloader import Outcome, Reloader, format_diagnostics

__all__ = ["DirectoryWatcher", "Outcome", "Reloader", "fingerprint", "format_diagnostics"]
