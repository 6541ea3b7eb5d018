"""The one lark parser, built lazily from ``policy.lark``.

The grammar ships inside the wheel as ``policyscheduler/grammar/policy.lark`` (pyproject force-include);
in a source checkout or an editable install it is read from the repository's ``grammar/policy.lark``.
Building an LALR table costs tens of milliseconds, so it is done once per process, never per reload.
"""

from __future__ import annotations

import importlib.resources
import threading
from pathlib import Path

from lark import Lark, Token

_LOCK = threading.Lock()
_PARSER: Lark | None = None


def grammar_text() -> str:
    """The grammar source: packaged copy first, repository copy as the fallback."""
    try:
        res = importlib.resources.files("policyscheduler").joinpath("grammar/policy.lark")
        if res.is_file():
            return res.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError):
        pass
    repo_copy = Path(__file__).resolve().parents[2] / "grammar" / "policy.lark"
    return repo_copy.read_text(encoding="utf-8")


def _strict_available() -> bool:
    """lark's strict mode needs ``interegular`` to detect terminal collisions."""
    try:
        import interegular  # noqa: F401
    except ImportError:
        return False
    return True


RESERVED_WORDS = (
    "filter", "score", "preempt", "and", "or", "not", "in", "if", "then", "else", "all", "any", "where", "for",
    "count", "sum", "true", "false", "default", "use", "disable", "override", "replace",
)
"""Words that are keywords everywhere. The contextual lexer would read them as names where no keyword
fits (``let count = 1`` would parse, and ``count > 1`` later would fail far from the cause); reserving
them makes the error appear where the word is misused. The layering statement words (use, disable,
override, replace) start a top-level item like filter, score and preempt, and are reserved for the same reason.
A rule cut short (``value 1 +`` then ``filter
next``) also fails *at* the next rule's keyword, which keeps error recovery on the right rule. Clause
words (reason, weight, let, value, ...) stay usable as field names: ``x.reason``."""

_RESERVED: dict[str, str] = {}


def _reserve(tok: Token) -> Token:
    """Lexer callback on NAME: retype reserved words to their keyword terminal."""
    kind = _RESERVED.get(tok)  # a Token hashes and compares as its text (no copy per name)
    if kind is not None:
        return Token.new_borrow_pos(kind, str(tok), tok)
    return tok


def get_parser() -> Lark:
    """The shared LALR parser (strict when possible, positions on every tree node)."""
    global _PARSER
    if _PARSER is None:
        with _LOCK:
            if _PARSER is None:
                _PARSER = Lark(
                    grammar_text(),
                    parser="lalr",
                    lexer="contextual",
                    strict=_strict_available(),
                    propagate_positions=True,
                    maybe_placeholders=True,
                    lexer_callbacks={"NAME": _reserve},
                )
                for term in _PARSER.terminals:
                    if term.pattern.type == "str" and term.pattern.value in RESERVED_WORDS:
                        _RESERVED[term.pattern.value] = term.name
                _plain_rule_names(_PARSER)
    return _PARSER


def _plain_rule_names(parser: Lark) -> None:
    """Give every grammar rule a plain ``str`` name (lark keeps the ``Token`` its grammar reader made).

    After each reduction the LALR loop looks the rule's name up in the parse table; with a ``Token`` as
    the key, Python calls ``Token.__eq__`` (a Python function) for every lookup: about one call per
    reduction, a tenth of the parse of a large file. A ``str`` with the same text hashes and compares
    the same, so nothing else changes.
    """
    for rule in parser.rules:
        if type(rule.origin.name) is not str:
            rule.origin.name = str(rule.origin.name)
