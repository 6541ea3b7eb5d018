"""Policy sets for the evaluation tests: hand-written texts, and the bundled default set."""

from __future__ import annotations

import functools

from policyscheduler.compiler import PolicySet


def load(*texts: str) -> PolicySet:
    """Load policy texts (files ``00-test.policy``, ``01-test.policy``, ...); any error fails the test."""
    from policyscheduler.loader import load_policy_texts

    result = load_policy_texts([(f"{i:02d}-test.policy", text) for i, text in enumerate(texts)])
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(map(str, errors))
    assert result.policy_set is not None
    return result.policy_set


@functools.lru_cache(maxsize=1)
def default_policies() -> PolicySet:
    """The bundled default policy set, loaded once (a PolicySet is immutable, so tests can share it)."""
    from policyscheduler.loader import load_policy_set
    from policyscheduler.simulate.defaults import default_policies_dir

    result = load_policy_set([default_policies_dir()])
    assert result.policy_set is not None, "\n".join(map(str, result.diagnostics))
    return result.policy_set
