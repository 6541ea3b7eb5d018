"""The documentation's policy examples are real: every ```policy block of LANGUAGE.md, COOKBOOK.md and the
README lints clean on top of the bundled defaults, and the Builtins section lists every builtin."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from policyscheduler.checker.env import GENERIC_BUILTINS
from policyscheduler.loader import load_layered

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "grammar" / "LANGUAGE.md", REPO / "grammar" / "COOKBOOK.md", REPO / "README.md"]
BLOCK = re.compile(r"^([ \t]*)```policy[ \t]*\n(.*?)^\1```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.usefixtures("cli_schema")


def _blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append((f"{doc.name}:{line}", textwrap.dedent(m.group(2))))
    return found


def test_the_docs_have_policy_examples() -> None:
    names = {name.split(":")[0] for name, _ in _blocks()}
    assert names == {"LANGUAGE.md", "COOKBOOK.md", "README.md"}
    assert len(_blocks()) >= 4  # layering, conversions, the walkthrough (indented in a list), the README


@pytest.mark.parametrize(("where", "text"), _blocks(), ids=[name for name, _ in _blocks()])
def test_policy_block_lints_clean_on_the_defaults(where: str, text: str) -> None:
    result = load_layered(texts=[(f"{where.replace(':', '-')}.policy", text)])
    assert result.policy_set is not None and not result.diagnostics, "\n".join(map(str, result.diagnostics))


def test_builtins_section_lists_every_builtin() -> None:
    text = (REPO / "grammar" / "LANGUAGE.md").read_text(encoding="utf-8")
    section = text.split("## Builtins", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in GENERIC_BUILTINS if f"`{name}(" not in section]
    assert not missing, missing
