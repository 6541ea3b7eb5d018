"""The vectorised lowering is an exhaustive ExprVisitor: every expression class has an explicit method, a
missing one is an error when the class is defined, and an object the visitor does not know is an error,
never a silent "unsupported" that would send the rule to the reference without anyone deciding so."""

from __future__ import annotations

import pytest

from policyscheduler.checker import CheckedRule
from policyscheduler.diagnostics import Span
from policyscheduler.evaluation.vector.lower import Lowerer
from policyscheduler.evaluation.vector.program import lower_rule
from policyscheduler.evaluation.vector.scope import FreeNames, NInfo
from policyscheduler.evaluation.vector.values import Unsupported
from policyscheduler.loader import load_policy_texts
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import EXPR_CLASSES


def _span() -> Span:
    return Span("t.policy", 1, 1, 1, 2)


@pytest.mark.parametrize("cls", EXPR_CLASSES, ids=lambda c: c.__name__)
def test_every_expression_class_has_a_method_of_the_lowering(cls: type) -> None:
    for visitor in (Lowerer, FreeNames):
        method = visitor._dispatch[cls]
        assert method.__name__.startswith("_"), method
        assert method.__module__.startswith("policyscheduler.evaluation.vector."), (cls, method.__module__)


@pytest.mark.parametrize("cls", EXPR_CLASSES, ids=lambda c: c.__name__)
def test_a_lowering_without_a_method_for_a_class_cannot_be_defined(cls: type) -> None:
    with pytest.raises(TypeError, match=rf"does not handle expression classes: {cls.__name__}\b"):
        type("Broken", (Lowerer,), {"_" + cls.__name__: None})


def _checked(text: str) -> CheckedRule:
    result = load_policy_texts([("t.policy", text)])
    assert result.policy_set is not None, result.diagnostics
    (rule,) = result.policy_set.rules
    assert rule.checked is not None
    return rule.checked


class _NotAnExpression:
    span = None


def test_an_object_the_visitor_does_not_know_is_an_error_not_unsupported() -> None:
    low = Lowerer(_checked('filter f\n  reason "r"\n  require node.name != ""\n'))
    with pytest.raises(TypeError, match="not an expression"):
        # not an expression, on purpose: what the type checker would refuse must fail at run time too
        low.expr(_NotAnExpression(), {"node": NInfo("node", 0)}, 0)  # type: ignore[arg-type]


def test_a_rule_that_cannot_be_lowered_says_why() -> None:
    # a loop over a node-dependent map: an explicit decision of the loop lowering, reported with the reason
    checked = _checked('filter f\n  reason "r"\n  require all k, v in node.labels: k != v\n')
    with pytest.raises(Unsupported, match="a loop over a node-dependent map"):
        lower_rule(checked)


def test_free_names_skip_the_callee_and_the_loop_binders_but_not_the_default() -> None:
    sp = _span()
    node = ast.Name("node", sp)
    free = FreeNames()
    # len(node.labels): the callee names a builtin, it is not a read
    call = ast.Call(ast.Name("len", sp), (ast.Attr(node, "labels", sp, sp),), sp)
    assert free.of(call) == {"node"}
    # a method call: its receiver is read
    method = ast.Call(ast.Attr(ast.Name("pod", sp), "tolerates", sp, sp), (ast.Name("t", sp),), sp)
    assert free.of(method) == {"pod", "t"}
    # int(s, default node.x): the default is read too
    conv = ast.Call(ast.Name("int", sp), (ast.StringLit("5", sp),), sp, default=ast.Attr(node, "x", sp, sp))
    assert free.of(conv) == {"node"}
    # all t in node.taints where t.effect == e: t is bound, node and e are read
    loop = ast.Loop((ast.Binder("t", sp),), ast.Attr(node, "taints", sp, sp),
                    ast.Binary("==", ast.Attr(ast.Name("t", sp), "effect", sp, sp), ast.Name("e", sp), sp), sp)
    quant = ast.Quantifier("all", loop, method, sp)
    assert free.of(quant) == {"node", "e", "pod"}
    # max(x in xs: x, default d): the default is outside the loop
    agg = ast.Aggregate("max", ast.Loop((ast.Binder("x", sp),), ast.Name("xs", sp), None, sp),
                        ast.Name("x", sp), ast.Name("x", sp), sp)
    assert free.of(agg) == {"xs", "x"}
