"""grammar/REFERENCE.md is generated (``policyscheduler docs``), current, and its examples run."""

from __future__ import annotations

import pytest

from policyscheduler.checker import global_schema
from policyscheduler.checker.env import GENERIC_DOCS
from policyscheduler.cli import main
from policyscheduler.cli.docs import CONSTRUCTS, DEFAULT_OUTPUT, GENERIC_EXAMPLES, field_examples, generate, wrap
from policyscheduler.loader import _ensure_object_model, load_layered


def test_committed_reference_is_current() -> None:
    assert DEFAULT_OUTPUT.read_text(encoding="utf-8") == generate(), "run: policyscheduler docs"
    assert main(["docs", "--check"]) == 0


def _loads(text: str) -> None:
    r = load_layered(texts=[("example.policy", text)])
    assert r.policy_set is not None, [str(d) for d in r.diagnostics]


@pytest.mark.parametrize("title, what, example", CONSTRUCTS, ids=[c[0] for c in CONSTRUCTS])
def test_construct_examples_load(title: str, what: str, example: str) -> None:
    _loads(example)


@pytest.mark.parametrize("name", sorted(GENERIC_DOCS))
def test_generic_builtin_examples(name: str) -> None:
    _loads(wrap(GENERIC_EXAMPLES[name]))


def test_field_examples() -> None:
    _ensure_object_model()
    examples = field_examples(global_schema())
    assert len(examples) > 30
    text = "\n".join(wrap(ex).replace("filter example", f"filter ex{i}") for i, ex in enumerate(examples.values()))
    _loads(text)


def test_every_code_is_in_the_reference() -> None:
    from policyscheduler.diagnostics import CODES

    text = DEFAULT_OUTPUT.read_text(encoding="utf-8")
    assert all(f"### `{code}`" in text for code in CODES)
