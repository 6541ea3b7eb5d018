"""Property: whatever the text, loading returns diagnostics and never raises; a set that loads only
ever fails at runtime with PolicyRuntimeError."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyscheduler.diagnostics import (
    Diagnostic,
    PolicyRuntimeError,
    render_json,
    render_text,
)
from policyscheduler.loader import LoadResult, load_policy_texts
from tests.schema_fixture import sample_env, test_schema

SCHEMA = test_schema()

SEEDS = [
    """\
## Taints.
filter taints
  reason "node(s) had untolerated taint(s)"
  applies when pod.priority >= 0
  require all t in node.taints where t.effect in ["NoSchedule", "NoExecute"]: pod.tolerates(t)

score prefer weight 3 normalize reverse
  let n = count(t in node.taints where t.effect == "PreferNoSchedule" and not pod.tolerates(t))
  ignore node when n > 10
  value n * 100 / max(1, len(node.taints))
""",
    """\
filter fit
  let cpu = sum(c in pod.containers: c.requests["cpu"])
  reject "Insufficient cpu" when cpu > node.allocatable["cpu"] - 500m
  reject each ["Insufficient " + k for k, v in node.allocatable where v < 1]
  require if node.unschedulable then false else true else "node(s) were unschedulable"
score spread weight 2 normalize minmax
  value round(float(2Gi / 3) * 0.5) % 7 + trunc(max(c in pod.containers: c.requests["memory"], default 0) / 1Mi)
""",
]

TOKENS = ["filter", "score", "weight", "reason", "require", "reject", "each", "when", "let", "value", "ignore",
          "node", "applies", "all", "any", "in", "where", ":", "(", ")", "[", "]", ",", "=", "==", "+", "/", "%",
          "-", '"', "5Xi", "1e400", "2Gi", "0", "101", "-3", "\n", "#", "##", "max(", "count(", "if", "then",
          "else", "pod.", "node.labels[", "cluster.nodes", "\\", "\t", "é", "\x00", "1 / 0", "for"]


def _check(result: LoadResult, *, run: bool = True) -> None:
    assert isinstance(result, LoadResult)
    assert all(isinstance(d, Diagnostic) for d in result.diagnostics)
    # The loader's catch-all turns a bug of ours into `internal-error`/`too-deep` rather than a crash; the
    # property is that the safety net is never needed for text a user can type.
    assert not [d for d in result.diagnostics if d.code in ("internal-error", "too-deep")], result.diagnostics
    has_error = any(d.severity == "error" for d in result.diagnostics)
    assert (result.policy_set is None) == has_error
    assert "Traceback" not in render_text(result.diagnostics, result.sources)
    render_json(result.diagnostics)
    if run and result.policy_set is not None:
        env = sample_env()
        for rule in result.policy_set.filters:
            try:
                if rule.applies(env):
                    rule.reasons(env)
            except PolicyRuntimeError:
                pass
        for score in result.policy_set.scores:
            try:
                if score.applies(env) and not score.ignored(env):
                    score.raw(env)
            except PolicyRuntimeError:
                pass


def test_seeds_are_valid() -> None:
    for seed in SEEDS:
        result = load_policy_texts([("seed.policy", seed)], schema=SCHEMA)
        assert result.diagnostics == [] and result.policy_set is not None


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "token", "splice"]))
        if op == "insert":
            text = text[:pos] + draw(st.text(max_size=3)) + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 12)):]
        elif op == "replace":
            text = text[:pos] + draw(st.characters()) + text[pos + 1:]
        elif op == "token":
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos:]
        else:
            other = draw(st.sampled_from(SEEDS))
            a = draw(st.integers(0, len(other)))
            text = text[:pos] + other[a:a + draw(st.integers(1, 40))] + text[pos:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_policies_never_raise(text: str) -> None:
    _check(load_policy_texts([("m.policy", text)], schema=SCHEMA))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["a.policy", "b.policy", "dir/a.policy"]), st.text(max_size=200)),
                max_size=3))
def test_random_text_never_raises(files: list[tuple[str, str]]) -> None:
    _check(load_policy_texts(files, schema=SCHEMA))


DEFAULT_POLICIES = sorted((Path(__file__).resolve().parents[1] / "policies").glob("*.policy"))


@st.composite
def mutated_default(draw: st.DrawFn) -> list[tuple[str, str]]:
    """The shipped policy set, with one file mutated: exercises the real schema and every construct used."""
    files = [(p.name, p.read_text(encoding="utf-8")) for p in DEFAULT_POLICIES]
    i = draw(st.integers(0, len(files) - 1))
    text = files[i][1]
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "token"]))
        if op == "insert":
            text = text[:pos] + draw(st.text(max_size=3)) + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 12)):]
        else:
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos:]
    files[i] = (files[i][0], text)
    return files


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_default())
def test_mutated_default_policies_never_raise(files: list[tuple[str, str]]) -> None:
    _check(load_policy_texts(files), run=False)
