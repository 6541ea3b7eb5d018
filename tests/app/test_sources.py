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


# -- a ConfigMap with no *.policy key; the saved last good set ---------------------------------------------

def test_a_configmap_source_without_policy_keys_is_an_error_not_the_bare_defaults() -> None:
    from policyscheduler.app.sources import PolicySources

    sources = PolicySources([], ("ns", "cm"))
    result = sources._load_source([], policy_texts({"data": {"README.md": "no policies here"}}))
    assert result.policy_set is None
    assert [d.code for d in result.errors] == ["no-policy-files"]
    assert "ConfigMap ns/cm has no *.policy key" in str(result.errors[0])
    # without a ConfigMap source the bundled defaults alone are a valid set, as before
    assert PolicySources([])._load_source([], []).ok


def test_a_saved_last_good_record_round_trips_and_rejects_what_is_not_one() -> None:
    from policyscheduler.app.lastgood import LastGood

    record = LastGood("d" * 64, "ns/cm", "42", (("a.policy", "x"), ("b.policy", "y")), "2026-01-01T00:00:00Z")
    again = LastGood.decode(record.encode())
    assert again is not None and again.same_as(record) and again.saved_at == record.saved_at
    for text in ("", "[]", '{"files": ["a"]}', '{"files": {"a.policy": 3}}', "{not json"):
        assert LastGood.decode(text) is None


def test_the_last_shutdown_line_counts_what_was_dropped() -> None:
    from policyscheduler.app.handover import Handover

    assert Handover(released=True).clean and Handover().summary() == "shutdown: clean hand-over"
    dropped = Handover(binds_not_sent=3, events_not_sent=12, released=False)
    assert not dropped.clean
    assert dropped.summary() == "shutdown: 12 events and 3 binds not sent; lease not released"
    assert not Handover(events_not_sent=1).clean
