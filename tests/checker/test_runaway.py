"""Issue 24: the runaway policies of the report. Before, each passed lint with no error and then ran for
minutes on 3 nodes x 2 pods (or hung lint itself); now each is refused by the loader with a located
error, or finishes -- with a located error where it overflows -- in well under 2 s on a 3-node snapshot."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from policyscheduler.cli import main
from policyscheduler.loader import load_policy_texts

_CHARS = "x" * 1000
_SQUARES = "".join(f"  let a{i} = a{i - 1} * a{i - 1}\n" for i in range(1, 25))
_PAIRS = "".join(f"  let b{i} = [b{i - 1}, b{i - 1}]\n" for i in range(1, 25))
_NESTED = (f'  let a = split("{_CHARS}", "")\n  let b = [a for x in a]\n  let c = [b for x in a]\n')

REFUSED = {
    # '==' on a list of lists of lists built by comprehensions: 10^9 item comparisons per node
    "equality": (f'filter eq_big\n  reason "eq"\n{_NESTED}  require c == c\n', "cost-limit", (1, 8)),
    # 'in' on the same
    "membership": (f'filter in_big\n  reason "in"\n{_NESTED}  require c in [c]\n', "cost-limit", (1, 8)),
    # 24 doublings by list literals: static cost 79 before, 2^24 leaves compared by '=='
    "exponential": (f'filter exp\n  reason "exp"\n  let b0 = [node.name]\n{_PAIRS}  require b24 == b24\n',
                    "cost-limit", (1, 8)),
    # 24 squarings of an int literal: constant folding on unbounded integers hung lint; now 64-bit folding
    # stops at the first square out of range, at that operator
    "folding": (f"score fold weight 1 normalize scale\n  let a0 = 3\n{_SQUARES}  value (a24 + len(node.name)) % 100\n",
                "overflow", (8, 15)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_runaway_policy_is_refused_with_a_located_error(name: str) -> None:
    text, code, (line, col) = REFUSED[name]
    load_policy_texts([("warm.policy", 'filter w\n  reason "w"\n  require true\n')])  # grammar tables built
    start = time.perf_counter()
    result = load_policy_texts([("r.policy", text)])
    assert time.perf_counter() - start < 2
    assert result.policy_set is None
    found = [d for d in result.diagnostics if d.code == code]
    assert found and found[0].span is not None, result.diagnostics
    assert (found[0].span.line, found[0].span.col) == (line, col)


def _snapshot(tmp_path: Path) -> Path:
    items: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for i in range(3)]
    items += [{"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"p{i}", "namespace": "default", "creationTimestamp": f"2024-01-01T00:00:0{i}Z"},
               "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "i"}]}}
              for i in range(2)]
    path = tmp_path / "c3.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


# sum of 1m / k over 155 x 155 items: exact fractions whose denominators are the lcm of 1..24,000 -- the
# sums are now size-checked at every step, so the rule fails fast (a located overflow) instead of grinding
QUANTITY_SUM = ("score qsum weight 1 normalize scale\n"
                f'  let a = split(node.name + "{"x" * 150}", "")\n'
                "  value trunc(sum(i, x in a: sum(j, y in a: 1m / (i * 1000 + j + 1))) * 1000) % 100\n")


@pytest.mark.parametrize("engine", ["reference", "vector"])
def test_quantity_sum_fails_fast_with_a_located_overflow(tmp_path: Path, engine: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    pol = tmp_path / "qsum.policy"
    pol.write_text(QUANTITY_SUM)
    assert load_policy_texts([("q.policy", QUANTITY_SUM)]).policy_set is not None  # it is not refused
    start = time.perf_counter()
    status = main(["simulate", "--engine", engine, "--policies", str(pol), "-o", "json", str(_snapshot(tmp_path))])
    elapsed = time.perf_counter() - start
    assert status == 0
    assert elapsed < 2, elapsed
    doc = json.loads(capsys.readouterr().out)
    errors = [e for p in doc["placements"] for e in p.get("score_errors", [])]
    assert len(errors) == 6
    assert {e["location"] for e in errors} == {f"{pol}:3:30"}  # the inner sum overflows first
    assert {e["message"] for e in errors} == {
        "overflow: the result of 'sum' is a quantity too large (or too finely divided) to compute exactly"}
