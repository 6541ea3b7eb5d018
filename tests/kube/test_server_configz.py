"""``/configz``: the effective configuration of a running scheduler, as JSON (kube-scheduler serves its
componentconfig there)."""

from __future__ import annotations

import json

from policyscheduler.app.configz import effective_config
from policyscheduler.app.options import Options, RunProfile
from policyscheduler.kube.secure import SecureServing
from policyscheduler.loader import load_layered


def test_configz_shows_options_serving_and_each_profile() -> None:
    loaded = load_layered([])
    assert loaded.policy_set is not None
    options = Options(scheduler_name="a", leader_elect=True, lease_namespace="sys",
                      secure_serving=SecureServing("0.0.0.0", 10259), bind_address=None)
    profiles = [RunProfile("a", loaded.policy_set), RunProfile("judge", loaded.policy_set, shadows="a")]
    doc = effective_config(options, profiles, {"a": "d1", "judge": "d2"})
    json.dumps(doc)  # serialisable as it is served
    assert doc["options"]["leader_elect"] is True and doc["options"]["lease_namespace"] == "sys"
    assert doc["serving"] == {"secure": {"host": "0.0.0.0", "port": 10259, "cert_file": None, "key_file": None},
                              "plain": None}
    assert doc["profiles"] == [{"schedulerName": "a", "policyDigest": "d1"},
                               {"schedulerName": "judge", "policyDigest": "d2", "mode": "shadow", "shadows": "a"}]
