"""The policy sources of ``run`` without an API server: the ConfigMap's policy keys, its reference, its
digest (lint's for the same keys) and the note a reload event carries."""

from __future__ import annotations

import pytest

from policyscheduler.app.reload_report import reload_note
from policyscheduler.app.sources import parse_configmap_ref, policy_texts
from policyscheduler.kube.events import NOTE_LIMIT
from policyscheduler.loader import load_layered
from policyscheduler.reload import Outcome

GOOD = 'filter no_xy\n  reason "node(s) have x=y"\n  require node.labels["x"] != "y"\n'
BROKEN = 'filter no_xy\n  reason "x"\n  require node.allocatable["memory"] >= 5Xi\n'


def test_configmap_texts_are_the_policy_keys_in_key_order() -> None:
    cm = {"data": {"b.policy": "B", "a.policy": "A", "README.md": "x", "c.policy.bak": "y"},
          "binaryData": {"d.policy": "AAAA"}}
    assert policy_texts(cm) == [("a.policy", "A"), ("b.policy", "B")]
    assert policy_texts({}) == [] and policy_texts({"data": None}) == []


def test_configmap_digest_is_lints_digest_for_the_same_keys() -> None:
    """lint names ConfigMap texts ``configmap:<file>#ns/name/<key>``; only the key counts for the digest."""
    ours = load_layered([], texts=[("site.policy", GOOD)]).policy_set
    lints = load_layered([], texts=[("configmap:deploy#ns/cm/site.policy", GOOD)]).policy_set
    assert ours is not None and lints is not None and ours.digest == lints.digest


@pytest.mark.parametrize("text", ["ns", "/name", "ns/", "a/b/c", ""])
def test_configmap_ref_must_be_namespace_slash_name(text: str) -> None:
    with pytest.raises(ValueError):
        parse_configmap_ref(text)
    assert parse_configmap_ref("policyscheduler-system/p") == ("policyscheduler-system", "p")


def test_error_note_keeps_whole_diagnostic_lines_within_the_note_limit() -> None:
    texts = [(f"f{i:02}.policy", BROKEN.replace("no_xy", f"r{i}")) for i in range(40)]
    result = load_layered([], texts=texts)
    assert result.policy_set is None
    outcome = Outcome("error", "edit", "a" * 64, "a" * 64, diagnostics=tuple(result.diagnostics))
    note = reload_note(outcome, "ConfigMap ns/cm")
    assert len(note) <= NOTE_LIMIT
    lines = note.splitlines()
    assert lines[0] == "ConfigMap ns/cm not loaded (40 errors); keeping policy set aaaaaaaaaaaa:"
    assert lines[1].startswith("f00.policy:3:") and " error bad-quantity: " in lines[1]
    assert lines[-1] == "..."
    ok = Outcome("success", "edit", "b" * 64, "a" * 64, loaded="b" * 64, rules=17, requeued=2)
    assert reload_note(ok, "ConfigMap ns/cm") == ("policy set bbbbbbbbbbbb in force (was aaaaaaaaaaaa): 17 rules "
                                                  "from ConfigMap ns/cm; 2 unschedulable pod(s) retried")
