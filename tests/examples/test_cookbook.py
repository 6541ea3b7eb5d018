"""grammar/COOKBOOK.md shows the example policies as they are: each block marked
``<!-- example: examples/policies/NAME.policy -->`` is that file's text, every example file it links
exists (or is one of the two recipes another change of the language adds), and README links the page.

The files themselves are tested by test_example_policy_tests.py (snapshot, cases, both engines, full
coverage); the cookbook's other ```policy blocks are linted by tests/checker/test_doc_examples.py."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COOKBOOK = REPO / "grammar" / "COOKBOOK.md"
MARKED = re.compile(r"<!-- example: (examples/policies/[\w-]+\.policy) -->\n```policy\n(.*?)^```", re.M | re.S)
LINKED = re.compile(r"\]\(\.\./(examples/policies/[\w-]+\.policy)\)")
COMING = {"examples/policies/zone-cap.policy", "examples/policies/prefer-newest-nodes.policy"}
"""The zone-cap and prefer-newest-nodes recipes come with whole-cluster counts and timestamps."""


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
        assert (REPO / path).is_file() or path in COMING, path
    assert set(LINKED.findall(text)) >= COMING
    assert "](grammar/COOKBOOK.md)" in (REPO / "README.md").read_text(encoding="utf-8")
    assert "](COOKBOOK.md)" in (REPO / "grammar" / "LANGUAGE.md").read_text(encoding="utf-8")
