"""The policy sets the generated cases run under: the bundled defaults and the user-style set.

The user-style set (``tests/gen/policies/*.policy``) is what a platform team would write on top of the
defaults -- label checks, counts of pods on a node, resource arithmetic, taint loops, negative and
float-derived scores, every normalisation mode, and a few rules that fail at run time on some nodes --
so a second backend is tested on constructs the default set never uses. It is loaded on its own
(without the defaults) so that its filters decide feasibility and its scores are not drowned out.
"""

from __future__ import annotations

import functools
from pathlib import Path

from policyscheduler.compiler import PolicySet

__all__ = ["USER_POLICIES_DIR", "default_policy_set", "user_policy_set"]

USER_POLICIES_DIR = Path(__file__).resolve().parent / "policies"


def _load(path: Path) -> PolicySet:
    from policyscheduler.loader import load_policy_set

    result = load_policy_set([path])
    problems = [d for d in result.diagnostics if d.severity == "error"]
    assert result.policy_set is not None and not problems, "\n".join(map(str, result.diagnostics))
    return result.policy_set


@functools.lru_cache(maxsize=1)
def default_policy_set() -> PolicySet:
    """The bundled default set (``policies/``), loaded once; a PolicySet is immutable, so it is shared."""
    from policyscheduler.simulate.defaults import default_policies_dir

    return _load(Path(default_policies_dir()))


@functools.lru_cache(maxsize=1)
def user_policy_set() -> PolicySet:
    """The user-style set in ``tests/gen/policies``, loaded once."""
    return _load(USER_POLICIES_DIR)
