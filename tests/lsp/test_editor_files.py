"""The VS Code extension folder: valid manifests, and a highlighting grammar that knows the real grammar."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.lsp.session import ROOT

VSCODE = ROOT / "examples" / "editors" / "vscode"


def _regexes(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k in ("match", "begin", "end") and isinstance(v, str)] + \
            [r for v in node.values() for r in _regexes(v)]
    if isinstance(node, list):
        return [r for v in node for r in _regexes(v)]
    return []


def _grammar() -> dict[str, Any]:
    grammar: dict[str, Any] = json.loads((VSCODE / "syntaxes" / "policy.tmLanguage.json").read_text(encoding="utf-8"))
    return grammar


def test_the_manifest_wires_the_language_grammar_and_server() -> None:
    pkg = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    assert (VSCODE / pkg["main"]).is_file()
    lang = pkg["contributes"]["languages"][0]
    assert lang["extensions"] == [".policy"] and (VSCODE / lang["configuration"]).is_file()
    grammar = pkg["contributes"]["grammars"][0]
    assert grammar["scopeName"] == _grammar()["scopeName"] and (VSCODE / grammar["path"]).is_file()
    assert pkg["contributes"]["configuration"]["properties"]["policyscheduler.command"]["default"] == \
        ["policyscheduler", "lsp"]
    assert "vscode-languageclient" in pkg["dependencies"]
    assert not (VSCODE / "node_modules").exists()


def test_every_keyword_of_policy_lark_is_highlighted() -> None:
    lark = "\n".join(ln for ln in (ROOT / "grammar" / "policy.lark").read_text(encoding="utf-8").splitlines()
                     if not ln.lstrip().startswith("//"))
    keywords = set(re.findall(r'"([a-z_]+)"', lark)) | {"pod", "max", "min"}  # REJECT_POD, AGG_MINMAX
    patterns = "\n".join(_regexes(_grammar())).replace("\\b", " ")  # a word boundary is no letter
    missing = sorted(w for w in keywords if not re.search(rf"(?<![A-Za-z_]){w}(?![A-Za-z_])", patterns))
    assert missing == []


def _scope_of(token: str) -> str | None:
    """The scope the grammar's number/string/comment rules give a whole token (Python re runs these regexes)."""
    repo = _grammar()["repository"]
    for rule in [*repo["comments"]["patterns"], *repo["numbers"]["patterns"]]:
        if re.fullmatch(rule["match"].replace("$", ""), token):
            return str(rule["name"])
    if re.fullmatch(repo["strings"]["begin"] + r'(?:[^"\\]|\\.)*' + '"', token):
        return str(repo["strings"]["name"])
    return None


def test_literals_get_the_grammars_token_kinds() -> None:
    assert _scope_of("500m") == _scope_of("2Gi") == _scope_of("1e3") == "constant.numeric.quantity.policy"
    assert _scope_of("1.5") == "constant.numeric.float.policy"
    assert _scope_of("42") == "constant.numeric.integer.policy"
    assert _scope_of('"node(s) had \\"x\\""') == "string.quoted.double.policy"
    assert _scope_of("## docs") == "comment.block.documentation.policy"
    assert _scope_of("# note") == "comment.line.number-sign.policy"
    # the grammar's own terminals agree on what a quantity is
    lark = (ROOT / "grammar" / "policy.lark").read_text(encoding="utf-8")
    quantity = re.search(r"^QUANTITY\.\d+: /(.*)/$", lark, re.MULTILINE)
    assert quantity is not None
    for token in ("500m", "2Gi", "1e3", "1.5Ki"):
        assert re.fullmatch(quantity.group(1), token)


def test_the_client_starts_the_configured_command() -> None:
    js = (VSCODE / "extension.js").read_text(encoding="utf-8")
    assert 'require("vscode-languageclient/node")' in js and 'get("command")' in js
    assert Path(VSCODE / ".gitignore").read_text(encoding="utf-8").splitlines()[0] == "node_modules/"
