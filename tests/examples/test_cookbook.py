"""grammar/COOKBOOK.md shows the example policies as they are: each block marked
``<!-- example: examples/policies/NAME.policy -->`` is that file's text, every example file it links
exists, and README links the page.

The files themselves are tested by test_example_policy_tests.py (snapshot, cases, both engines, full
coverage); the cookbook's other ```policy blocks are linted by tests/checker/test_doc_examples.py."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COOKBOOK = REPO / "grammar" / "COOKBOOK.md"
MARKED = re.compile(r"<!-- example: (examples/policies/[\w-]+\.policy) -->\n```policy\n(.*?)^```", re.M | re.S)
LINKED = re.compile(r"\]\(\.\./(examples/policies/[\w-]+\.policy)\)")
TIME_AND_TOTALS = {"examples/policies/zone-cap.policy", "examples/policies/prefer-newest-nodes.policy"}
"""The two recipes that need whole-cluster counts and timestamps (issue 23's stories)."""


def test_each_marked_block_is_the_example_file() -> None:
    text = COOKBOOK.read_text(encoding="utf-8")
    blocks = MARKED.findall(text)
    assert len(blocks) >= 10
    assert text.count("<!-- example:") == len(blocks)  # no marker without its block
    for path, body in blocks:
        assert (REPO / path).read_text(encoding="utf-8") == body, f"{path} differs from its cookbook block"


def test_the_stories_are_there_and_the_links_resolve() -> None:
    text = COOKBOOK.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # a policy's `##` docs are no headings
    headings = re.findall(r"^## (.+)$", prose, re.M)
    assert len(headings) == 12
    for path in set(LINKED.findall(text)) | {p for p, _ in MARKED.findall(text)}:
        assert (REPO / path).is_file(), path
    assert {p for p, _ in MARKED.findall(text)} >= TIME_AND_TOTALS
    assert "](grammar/COOKBOOK.md)" in (REPO / "README.md").read_text(encoding="utf-8")
    assert "](COOKBOOK.md)" in (REPO / "grammar" / "LANGUAGE.md").read_text(encoding="utf-8")


def _block_defining(rule: str) -> str:
    """The cookbook's ```policy block that defines ``rule``."""
    text = COOKBOOK.read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"^```policy\n(.*?)^```", text, re.M | re.S) if f"filter {rule}\n" in b]
    assert len(blocks) == 1, rule
    return str(blocks[0])


def test_the_hostname_spread_places_like_the_pod_spec_constraint(tmp_path: Path) -> None:
    """The cookbook's hostname variant of rack-hard-spread places a Deployment's replicas exactly where
    the same pods with a pod-spec topologySpreadConstraint (hostname, maxSkew 1, DoNotSchedule) go under
    the bundled defaults -- in both engines (helpers.simulate runs both and compares them)."""
    from tests.examples.helpers import node, placements, pod, simulate

    policy = tmp_path / "hostname-spread.policy"
    policy.write_text(_block_defining("hostname_hard_spread"))
    nodes = [node("big", cpu="16", memory="32Gi"), *(node(f"n{i}", cpu="2") for i in range(3))]
    running = [pod("old-0", labels={"app": "web"}, on="big"), pod("old-1", labels={"app": "web"}, on="n0")]
    constraint = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"app": "web"}}}
    plain = [pod(f"web-{i}", labels={"app": "web"}, cpu="300m") for i in range(8)]
    spread = [dict(p, spec={**p["spec"], "topologySpreadConstraints": [constraint]}) for p in plain]
    status, by_policy, err = simulate(tmp_path, [*nodes, *running, *plain], policy)
    assert status == 0, err
    status, by_kube, err = simulate(tmp_path, [*nodes, *running, *spread])
    assert status == 0, err
    assert placements(by_policy) == placements(by_kube)
    per_node = {n["metadata"]["name"]: 0 for n in nodes}
    for where in [*placements(by_policy).values(), "big", "n0"]:
        assert where is not None
        per_node[where] += 1
    assert max(per_node.values()) - min(per_node.values()) <= 1, per_node
    # without the spread the big node (LeastAllocated) takes more than its share: the rule made the difference
    status, unspread, err = simulate(tmp_path, [*nodes, *running, *plain])
    assert status == 0, err
    assert list(placements(unspread).values()).count("big") > per_node["big"] - 1, (per_node, placements(unspread))
