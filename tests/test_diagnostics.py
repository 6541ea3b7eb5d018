"""Every code the language stages emit is in the documented catalogue; spans render with a caret."""

from __future__ import annotations

import re
from pathlib import Path

from policyscheduler.diagnostics import CODES, Diagnostic, Span, render_json, render_text, summary
from policyscheduler.source import SourceFile

PKG = Path(__file__).resolve().parents[1] / "policyscheduler"


def test_every_emitted_code_is_catalogued() -> None:
    emitted: set[str] = set()
    for path in [*PKG.glob("syntax/*.py"), *PKG.glob("checker/*.py"), *PKG.glob("compiler/*.py"), PKG / "loader.py"]:
        emitted |= set(re.findall(r'\b(?:error|warning)\(\s*"([a-z-]+)"', path.read_text()))
    assert emitted, "no codes found: the scan is broken"
    assert emitted - set(CODES) == set()
    assert all(desc and "\n" not in desc for desc in CODES.values())


def test_render_excerpt_and_summary() -> None:
    src = SourceFile("a.policy", "filter f\n  require x\n")
    d = Diagnostic("unknown-name", "error", "unknown name 'x'", Span("a.policy", 2, 11, 2, 12))
    assert render_text([d], {"a.policy": src}) == (
        "a.policy:2:11: error unknown-name: unknown name 'x'\n      require x\n              ^"
    )
    assert '"line": 2' in render_json([d])
    assert summary([d], 1) == "1 error, 0 warnings in 1 file"
    assert render_text([Diagnostic("internal-error", "error", "boom", None)]) == "error internal-error: boom"
