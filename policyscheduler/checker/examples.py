"""One example per diagnostic code: a policy file (linted on top of the bundled defaults) that triggers it.

Shown by ``policyscheduler lint --explain CODE`` and in grammar/REFERENCE.md; the test suite lints every
example and checks that its code is reported (tests/checker/test_catalogue.py), so the catalogue never
drifts from the checker. ``text`` is None for the codes no policy text can trigger (they are about paths
or about a bug of ours); ``how`` says what does.
"""

from __future__ import annotations

import dataclasses

__all__ = ["EXAMPLES", "Example"]


@dataclasses.dataclass(frozen=True)
class Example:
    text: str | None
    how: str = ""


_F = 'filter f\n  reason "r"\n'

EXAMPLES: dict[str, Example] = {
    "unreadable-file": Example(None, "policyscheduler lint does-not-exist.policy"),
    "no-policy-files": Example(None, "policyscheduler lint an-empty-folder/"),
    "symlink-loop": Example(None, "policyscheduler lint dir/ where dir/loop is a symlink to dir itself"),
    "too-large": Example(_F + "  require pod.requests[\"cpu\"] < " + "9" * 5000 + "m\n"),
    "misplaced-default": Example('score s weight 1\n  value int(node.labels["x"], default 0, 1)\n'),
    "reject-needs-reason": Example(_F + "  reject when node.unschedulable\n"),
    "parse-error": Example(None, "text that is no policy at all and defeats every specific parse message (rare)"),
    "unexpected-token": Example(_F + "  require node.name = \"a\"\n"),
    "unexpected-character": Example(_F + "  require node.unschedulable && true\n"),
    "unexpected-eof": Example(_F + "  require (node.unschedulable\n"),
    "unterminated-string": Example(_F + '  require node.name == "a\n'),
    "too-deep": Example("score s weight 1\n  value " + "-" * 5000 + "1\n",
                        "an expression nested thousands of levels deep (here: 5,000 unary minus signs)"),
    "too-many-errors": Example("".join(f"filter f{i}\n  require x{i}\n" for i in range(105))),
    "unknown-name": Example(_F + "  require x\n"),
    "unknown-field": Example(_F + '  require node.lables["a"] == "b"\n'),
    "unknown-function": Example(_F + "  require has(node.labels, \"a\")\n"),
    "bad-conversion": Example(_F + '  require int("4x") > 3\n'),
    "not-callable": Example(_F + "  require node.name()\n"),
    "type-mismatch": Example(_F + "  require node.name + 1 > 0\n"),
    "bad-arity": Example(_F + "  require starts_with(node.name)\n"),
    "bad-quantity": Example(_F + '  require node.allocatable["memory"] >= 5Xi\n'),
    "bad-string": Example(_F + '  require node.name == "a\\q"\n'),
    # not shown as text: the example would put the invisible characters into REFERENCE.md itself
    # (tests/language/test_bounded_values.py lints one)
    "bidi-control": Example(None, "a string literal holding U+202E (RIGHT-TO-LEFT OVERRIDE), e.g. "
                            "require node.name != \"admin<U+202E><U+2066>// check<U+2069>\""),
    "overflow": Example("score s weight 1 normalize scale\n  let big = 3037000500\n  value (big * big + len(node.name)) % 100\n"),
    "shadowed-name": Example("score s weight 1\n  let node = 1\n  value node\n"),
    "duplicate-rule": Example(_F + "  require true\n\n" + _F + "  require false\n"),
    "unknown-rule": Example("disable score image_localty\n"),
    "conflicting-statements": Example("disable score image_locality\ndisable score image_locality\n"),
    "empty-override": Example("override score image_locality\n"),
    "unknown-use": Example("use defaults some\n"),
    "no-filters": Example("use defaults none\nscore s weight 1\n  value 1\n"),
    "score-range": Example("score s weight 1\n  value 250\n"),
    "division-by-zero": Example("score s weight 1 normalize scale\n  value len(node.labels) / 0\n"),
    "empty-aggregate": Example("score s weight 1 normalize scale\n  value max(t in node.taints: len(t.key))\n"),
    "weight-range": Example("score s weight 101\n  value 1\n"),
    "unknown-normalize": Example("score s weight 1 normalize rescale\n  value 1\n"),
    "missing-reason": Example("filter f\n  require not node.unschedulable\n"),
    "missing-value": Example("score s weight 1\n  let x = 1\n"),
    "missing-victim": Example('preempt p\n  reason "r"\n  applies when pod.priority > 0\n'),
    "missing-check": Example(_F),
    "duplicate-clause": Example('filter f\n  reason "one"\n  reason "two"\n  require not node.unschedulable\n'),
    "clause-order": Example("score s weight 1\n  value 1\n  ignore node when node.unschedulable\n"),
    "clause-not-allowed": Example(_F + "  require not node.unschedulable\n  value 1\n"),
    "applies-uses-node": Example(_F + "  applies when node.unschedulable\n  require true\n"),
    "applies-uses-target": Example('preempt p\n  applies when target.priority > 0\n  victim true\n'),
    "unused-binding": Example(_F + "  let x = 1\n  require not node.unschedulable\n"),
    "cost-limit": Example("score f weight 1 normalize scale\n  value sum(a, x in node.labels: count(b, y in "
                          "node.labels where (all c, z in node.labels: all d, w in node.labels: x != w)))\n"),
    "internal-error": Example(None, "a bug in policyscheduler while loading (please report it)"),
    "duplicate-rule-body": Example(_F + "  require not node.unschedulable\n\nfilter g\n  reason \"r\"\n"
                                   "  require not node.unschedulable\n"),
    "unreachable": Example(_F + "  applies when false\n  require not node.unschedulable\n"),
    "victim-always-true": Example('preempt p\n  applies when pod.priority > 100\n  victim true\n'),
    "constant-filter": Example(_F + "  require 1 < 2\n"),
    "require-never-fails": Example(_F + "  require len(node.taints) >= 0\n"),
    "score-range-unproven": Example("score s weight 1\n  value len(node.labels) * 10\n"),
    "cost-budget": Example("score s weight 1 normalize scale\n  value count(a, x in node.labels where "
                           "(any b, y in node.labels: any c, z in node.labels: x == z))\n"),
    "pod-only-filter": Example(_F + '  require pod.labels["tier"] != "batch"\n'),
    "possible-division-by-zero": Example('score s weight 1 normalize scale\n'
                                         '  value 100 / int(node.labels["slots"], default 0)\n'),
    "label-key-typo": Example(_F + '  require "kubernetes.io/hostnmae" in node.labels\n'),
    "unknown-taint-effect": Example(_F + '  require all t in node.taints where t.effect == "NoSchedul": '
                                    "pod.tolerates(t)\n"),
    "suppression-needs-reason": Example(_F + "  require len(node.taints) >= 0  # lint: ignore[require-never-fails]\n"),
    "unused-suppression": Example(_F + "  require not node.unschedulable  # lint: ignore[constant-filter] because "
                                  "it is a demo\n"),
}
