"""The README's "Testing policies" example is the files in examples/testing/, and it passes: a reader who
copies it gets a passing test on the first try, and the documented text cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from policyscheduler.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "testing"


def _section() -> str:
    """The section's text: up to the next heading outside a code block (policy comments start with ##)."""
    lines = (REPO / "README.md").read_text().splitlines()
    start = lines.index("### Testing policies")
    fenced = False
    for end in range(start + 1, len(lines)):
        if lines[end].startswith("```"):
            fenced = not fenced
        elif not fenced and lines[end].startswith("#"):
            break
    return "\n".join(lines[start:end]) + "\n"


def test_the_readme_shows_the_example_files_verbatim() -> None:
    blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)\n```", _section(), re.S)
    assert {name for name, _ in blocks} == {f"examples/testing/{f.name}" for f in EXAMPLE.iterdir()}
    for name, text in blocks:
        assert (REPO / name).read_text().rstrip("\n") == text, f"README and {name} differ"


@pytest.mark.parametrize("engine", ["vector", "reference"])
def test_the_example_passes_with_the_output_the_readme_shows(engine: str, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert main(["test", "examples/testing", "-v", "--engine", engine]) == 0
    out = capsys.readouterr().out
    shown = re.search(r"\$ policyscheduler test examples/testing -v\n(.*?)\n```", _section(), re.S)
    assert shown is not None

    def no_digest(text: str) -> str:  # the digest follows the bundled defaults; everything else must match
        return re.sub(r"policy digest [0-9a-f]{12}", "policy digest D", text).rstrip("\n")

    assert no_digest(out) == no_digest(shown.group(1))


def test_every_want_key_is_documented() -> None:
    from policyscheduler.testing.casefile import CASE_KEYS, SUITE_KEYS, WANT_KEYS

    section = _section()
    for key in sorted(WANT_KEYS | CASE_KEYS | SUITE_KEYS):
        assert f"`{key}`" in section, key
