"""The live scheduler as an application: ``policyscheduler run`` above the API adapters of :mod:`policyscheduler.kube`.

* :mod:`.options`: what a run starts from (:class:`RunSettings`, per profile :class:`ProfileSettings`) and
  what the scheduler is built with (:class:`Options`, :class:`RunProfile`).
* :mod:`.startup` loads the policies, connects and builds the scheduler; :mod:`.lifecycle` runs it until a signal
  or a lost lease (the exit status).
* :mod:`.scheduler`: :class:`LiveScheduler`, the watches feeding the cache and the queue, the one loop
  around the scheduling cycle (:mod:`policyscheduler.cycle`), binds handed to the binder; with
  :mod:`.pods` (what it asks of a pod), :mod:`.decisions` (the decision log lines) and :mod:`.heap` (the
  collector kept off the cluster state); :mod:`.watching` is its watch handler (watched objects to the
  cache, the queue, the volume binder; the cluster events that move pods).
* :mod:`.sources`: each profile's policy sources (files polled, a ConfigMap watched) feeding
  :mod:`policyscheduler.reload`; :mod:`.reload_report` reports every reload (log, metrics, events).
* :mod:`.shadow`: shadow profiles, judging another scheduler's placements.
* :mod:`.host`: the two protocols through which the scheduler and the sources meet without importing
  each other.
"""

from __future__ import annotations

from policyscheduler.app.lifecycle import EXIT_LOST_LEASE, EXIT_OK, EXIT_USAGE, run
from policyscheduler.app.options import Options, ProfileSettings, RunProfile, RunSettings
from policyscheduler.app.scheduler import LiveScheduler
from policyscheduler.app.sources import PolicySourceError, PolicySources

__all__ = ["EXIT_LOST_LEASE", "EXIT_OK", "EXIT_USAGE", "LiveScheduler", "Options", "PolicySourceError",
           "PolicySources", "ProfileSettings", "RunProfile", "RunSettings", "run"]
