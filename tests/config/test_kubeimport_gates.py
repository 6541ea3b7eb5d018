"""``config import`` and kube-scheduler's SchedulingGates plugin: built in, so enabling it changes nothing
and disabling it is named (policyscheduler keeps gating; the API server refuses to bind a gated pod)."""

from __future__ import annotations

import textwrap

from policyscheduler.config.kubeimport import NO_RULES, import_kube_config

KUBE = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def test_disabling_scheduling_gates_is_reported_enabling_it_is_silent() -> None:
    text = KUBE + textwrap.dedent("""\
        profiles:
        - schedulerName: s
          plugins:
            preEnqueue:
              disabled:
              - name: SchedulingGates
        """)
    notes = import_kube_config("k.yaml", text).notes
    assert len(notes) == 1 and notes[0].startswith("k.yaml:8:")
    assert "always keeps gated pods out of the queue" in notes[0]
    enabled = text.replace("disabled", "enabled")
    assert import_kube_config("k.yaml", enabled).notes == []


def test_the_text_no_longer_claims_gated_pods_are_never_scheduled() -> None:
    assert "never scheduled" not in NO_RULES["SchedulingGates"]
    assert "last gate is removed" in NO_RULES["SchedulingGates"]
