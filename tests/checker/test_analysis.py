"""The shared AST visitor (exhaustive dispatch) and the analyses over checked rules."""

from __future__ import annotations

import pytest

from policyscheduler.checker import CheckedRule
from policyscheduler.compiler import PolicySet
from policyscheduler.loader import load_policy_set, load_policy_texts
from policyscheduler.syntax import ast
from policyscheduler.syntax.visitor import EXPR_CLASSES, ExprVisitor, children, walk

POLICY = """
filter f
  reason "no"
  applies when len(pod.labels) > 0
  let team = pod.labels["team"]
  let mine = count(p in node.pods where p.labels["team"] == team)
  let quota = if team == "a" then 3 else 5
  require mine < quota
  require all t in node.taints where t.effect == "NoSchedule": pod.tolerates(t)
  require all k, v in pod.node_selector: node.labels[k] == v

score s weight 2 normalize minmax
  let base = sum(x in [1, 2, 3]: x * 2)
  let parts = [node.allocatable[r] for r in ["cpu", "memory"] where node.allocatable[r] > 0]
  value base + len(parts) - max(i in pod.images: len(i), default 0)
"""


def _rule(kind: str, name: str) -> tuple[PolicySet, CheckedRule]:
    result = load_policy_texts([("t.policy", POLICY)])
    assert result.policy_set is not None, result.diagnostics
    rule = next(r for r in result.policy_set.rules if r.name == name and (kind == "filter") == (r in result.policy_set.filters))
    assert rule.checked is not None
    return result.policy_set, rule.checked


def test_a_pass_missing_an_expression_class_fails_when_defined() -> None:
    with pytest.raises(TypeError, match=r"does not handle expression classes: .*IntLit"):
        class Incomplete(ExprVisitor[int]):
            def _FloatLit(self, e: ast.FloatLit) -> int:
                return 0


def test_every_expression_class_has_children() -> None:
    ps, _ = _rule("filter", "f")
    seen: set[type] = set()
    for rule in ps.rules:
        assert rule.checked is not None
        for clause in rule.checked.rule.clauses:
            for e in _clause_exprs(clause):
                seen.update(type(x) for x in walk(e))
    # the sample policy uses most classes; every class the visitor knows is handled by children()
    assert {ast.Quantifier, ast.Aggregate, ast.Comprehension, ast.IfExpr, ast.Call, ast.Index} <= seen
    assert len(EXPR_CLASSES) == 16
    with pytest.raises(TypeError):
        children("not an expression")  # type: ignore[arg-type]  # wrong on purpose


def _clause_exprs(clause: ast.Clause) -> list[ast.Expr]:
    from policyscheduler.checker.analysis import clause_expressions

    return list(clause_expressions(clause))


def test_node_dependence_follows_lets_and_loop_variables() -> None:
    ps, rule = _rule("filter", "f")
    analysis = ps.analyses["filter f"]
    lets = {c.name: c for c in rule.rule.clauses if isinstance(c, ast.Let)}
    assert not analysis.depends_on_node(lets["team"].value)
    assert analysis.depends_on_node(lets["mine"].value)
    assert not analysis.depends_on_node(lets["quota"].value)
    requires = [c for c in rule.rule.clauses if isinstance(c, ast.Require)]
    assert all(analysis.depends_on_node(r.cond) for r in requires)
    # inside the map loop, the pod-level iterable stays pod-level
    loop = requires[2].cond
    assert isinstance(loop, ast.Quantifier)
    assert not analysis.depends_on_node(loop.loop.iterable)


def test_score_pod_level_parts_are_not_node_dependent() -> None:
    ps, rule = _rule("score", "s")
    analysis = ps.analyses["score s"]
    lets = {c.name: c for c in rule.rule.clauses if isinstance(c, ast.Let)}
    assert not analysis.depends_on_node(lets["base"].value)
    assert analysis.depends_on_node(lets["parts"].value)


def test_reads_name_records_fields_and_methods() -> None:
    ps, _ = _rule("filter", "f")
    reads = ps.analyses["filter f"].reads
    assert {"Pod.labels", "Node.pods", "Node.taints", "Taint.effect", "Pod.tolerates()", "Node.labels",
            "Pod.node_selector"} <= reads
    assert "Pod.tolerates" not in reads  # a method call is not a field read
    assert ps.reads >= reads | ps.analyses["score s"].reads


def test_default_policies_read_what_their_plugins_register_for() -> None:
    ps = load_policy_set(["policies"]).policy_set
    assert ps is not None
    assert "Node.taints" in ps.analyses["filter taint_toleration"].reads
    assert "Node.allocatable" in ps.analyses["filter node_resources_fit"].reads
    assert "Cluster.spread_count()" in ps.analyses["filter pod_topology_spread"].reads
    assert not any(r.startswith("Cluster.") for r in ps.analyses["filter node_unschedulable"].reads)


def test_the_expr_union_lists_every_expression_class_of_the_ast() -> None:
    """Exhaustiveness is checked against ``ast.Expr``: a node class left out of it would escape every pass."""
    import dataclasses
    import typing

    not_expressions = {*typing.get_args(ast.Clause), *typing.get_args(ast.Rule), *typing.get_args(ast.Statement),
                       ast.Module, ast.Loop, ast.Binder}
    defined = {c for c in vars(ast).values()
               if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == ast.__name__}
    assert defined - not_expressions == set(EXPR_CLASSES)


def test_every_pass_over_expressions_is_an_exhaustive_visitor() -> None:
    """The checker, the closure compiler, the vectorised lowering and fmt all dispatch through the visitor."""
    import policyscheduler.checker.expressions
    import policyscheduler.compiler.closures
    import policyscheduler.evaluation.vector.lower
    import policyscheduler.syntax.format

    def concrete(cls: type) -> set[str]:
        out: set[str] = set() if cls.__dict__.get("partial", False) else {cls.__qualname__}
        subclasses: list[type] = cls.__subclasses__()
        for sub in subclasses:
            out |= concrete(sub)
        return out

    passes = concrete(ExprVisitor) - {"ExprVisitor"}
    assert {"ExprChecker", "ExprCompiler", "Lowerer", "FreeNames", "_Printer", "_Level", "_Leftmost"} <= passes
    for cls in (policyscheduler.evaluation.vector.lower.Lowerer, policyscheduler.syntax.format._Printer):
        assert set(cls._dispatch) == set(EXPR_CLASSES)


def test_visit_of_an_unknown_object_is_a_type_error() -> None:
    from policyscheduler.syntax.format import expression_text

    with pytest.raises(TypeError, match="not an expression"):
        expression_text("pod.name")  # type: ignore[arg-type]  # wrong on purpose
