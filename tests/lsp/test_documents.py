"""Which set a document is checked in, and where its squiggles go (the server's pieces, called directly)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from policyscheduler.cli.lint import with_lint_checks
from policyscheduler.diagnostics import Span
from policyscheduler.loader import bundled_defaults_dir
from policyscheduler.lsp.diagnostics import by_uri
from policyscheduler.lsp.layers import load_for
from policyscheduler.lsp.navigation import document_symbols
from policyscheduler.lsp.positions import char_col, span_range, utf16_col
from tests.lsp.session import uri


def test_columns_are_utf16_units() -> None:
    line = 'require "😀é" == 5Xi'
    span = Span("f", 1, line.index("5Xi") + 1, 1, line.index("5Xi") + 4)
    rng = span_range(span, [line])
    assert (rng.start.character, rng.end.character) == (line.index("5Xi") + 1, line.index("5Xi") + 4)  # 😀 = 2 units
    assert char_col(line, utf16_col(line, 12)) == 12


def test_an_untitled_buffer_is_a_set_of_its_own_on_the_defaults() -> None:
    u = "untitled:Untitled-1"
    layered = load_for(u, {u: 'filter x\n  reason "r"\n  require node.labels["a"] == 5Xi\n'}, with_lint_checks)
    found = by_uri(layered, u)
    assert [d.code for d in found[u]] == ["bad-quantity"]
    assert found[u][0].range == types.Range(types.Position(2, 30), types.Position(2, 33))
    assert layered.result.default_files, "the bundled defaults are in the set"


def test_editing_the_bundled_defaults_checks_them_as_the_defaults() -> None:
    path = bundled_defaults_dir() / "10-node-unschedulable.policy"
    u = uri(path)
    text = path.read_text(encoding="utf-8")
    clean = load_for(u, {u: text}, with_lint_checks)
    assert clean.result.ok and clean.result.diagnostics == [] and not clean.result.user_files
    broken = load_for(u, {u: text.replace("not node.unschedulable", "not node.unschedulabl")}, with_lint_checks)
    mine = by_uri(broken, u)[u]
    assert [d.code for d in mine] == ["unknown-field"]


def test_an_unsaved_new_file_belongs_to_its_folder(tmp_path: Path) -> None:
    (tmp_path / "a.policy").write_text('filter same\n  reason "r"\n  require true\n', encoding="utf-8")
    u = uri(tmp_path / "new.policy")  # not on disk yet
    layered = load_for(u, {u: 'filter same\n  reason "r"\n  require true\n'}, with_lint_checks)
    codes = {uri_: [d.code for d in ds] for uri_, ds in by_uri(layered, u).items()}
    assert "duplicate-rule" in codes[u]  # new.policy comes after a.policy


def test_document_symbols_are_the_rules_and_statements() -> None:
    text = 'filter a\n  reason "r"\n  require true\n\ndisable score image_locality\n\nscore b weight 2\n  value 1\n'
    symbols = document_symbols("x.policy", text)
    assert [(s.name, s.detail) for s in symbols] == [("a", "filter"), ("disable score image_locality", None),
                                                     ("b", "score weight 2")]
    assert symbols[0].selection_range == types.Range(types.Position(0, 7), types.Position(0, 8))


def test_the_edited_document_counts_whatever_its_name(tmp_path: Path) -> None:
    u = uri(tmp_path / "draft.txt")  # the editor was told it is a policy; lint would need the .policy name
    layered = load_for(u, {u: 'filter x\n  reason "r"\n  require node.nope\n'}, with_lint_checks)
    assert [d.code for d in by_uri(layered, u)[u]] == ["unknown-field"]
