"""The lint CLI: exit codes, text and JSON output, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from policyscheduler import loader
from policyscheduler.cli import lint

REPO = Path(__file__).resolve().parents[2]
VALID = """\
## Nodes marked unschedulable are off limits.
filter unschedulable
  reason "node(s) were unschedulable"
  require not node.unschedulable

## Prefer nodes with fewer taints.
score few_taints weight 2 normalize reverse
  value len(node.taints)
"""


pytestmark = pytest.mark.usefixtures("cli_schema")


def test_valid_policy_is_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "10-a.policy").write_text(VALID)
    assert lint.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: 2 rules in 1 file + 21 bundled default rules, digest ")
    assert lint.main([str(tmp_path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["diagnostics"] == [] and doc["files"] == 1 and doc["rules"] == 23 and len(doc["digest"]) == 64
    assert doc["default_files"] == 16


def test_text_format_has_caret_under_the_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.policy"
    f.write_text("filter f\n  reason \"r\"\n\trequire node.nme == \"\"\nscore s weight 0\n  value 1\n")
    assert lint.main([str(f)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{f}:3:15: error unknown-field: Node has no field or method 'nme'; did you mean 'name'?"
    assert lines[1] == "    \trequire node.nme == \"\""
    assert lines[2] == "    \t" + " " * 13 + "^^^"
    assert lines[-1] == "2 errors, 0 warnings in 1 file"


def test_json_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.policy"
    f.write_text("score s weight 1\n  let unused = 1\n  value 1 / \n")
    assert lint.main(["--format", "json", str(f)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["digest"] is None and doc["files"] == 1
    (d,) = doc["diagnostics"]
    assert set(d) == {"code", "severity", "message", "file", "line", "col", "end_line", "end_col"}
    assert (d["code"], d["line"], d["col"]) == ("unexpected-eof", 3, 12)


def test_warnings_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "w.policy"
    f.write_text("score s weight 1\n  let unused = 1\n  value 1\n")
    assert lint.main([str(f)]) == 0
    out = capsys.readouterr().out
    assert "warning unused-binding" in out and out.splitlines()[-1].startswith("ok: 1 rule in 1 file")


def test_usage_errors_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert lint.main([]) == 2
    assert lint.main(["x.policy", "--format", "yaml"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_unreadable_paths_are_diagnostics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.policy"
    binary = tmp_path / "binary.policy"
    binary.write_bytes(b"\xff\xfe\x00 filter")
    assert lint.main([str(missing), str(binary)]) == 1
    out = capsys.readouterr().out
    assert f"{missing}:1:1: error unreadable-file: " in out
    assert f"{binary}:1:1: error unreadable-file: " in out
    assert "Traceback" not in out


def test_internal_errors_never_show_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(loader, "check", broken)
    (tmp_path / "a.policy").write_text(VALID)
    assert lint.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "internal-error" in out and "simulated bug" in out and "Traceback" not in out


def test_module_entry_point(tmp_path: Path) -> None:
    (tmp_path / "a.policy").write_text("filter f\n  require true\n")
    proc = subprocess.run([sys.executable, "-m", "policyscheduler.cli.lint", str(tmp_path)], check=False, cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "missing-reason" in proc.stdout and proc.stderr == ""


@pytest.mark.skipif(not (REPO / "policies").is_dir(), reason="no default policies in this checkout")
def test_default_policies_lint_clean(capsys: pytest.CaptureFixture[str]) -> None:
    status = lint.main([str(REPO / "policies")])
    out = capsys.readouterr().out
    assert status == 0, out


def test_a_parser_failure_that_is_no_syntax_error_is_a_parse_error_diagnostic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """parse-error is the defensive code for a failure of the parsing library that is not a located
    syntax error (nothing in our grammar produces one today): it must stay a diagnostic, never a crash."""
    import lark

    from policyscheduler.syntax import parser as parser_module
    from policyscheduler.syntax.grammar import get_parser

    real = get_parser()

    class Failing:
        terminals = real.terminals
        rules = real.rules

        def parse_interactive(self, *args: object, **kwargs: object) -> object:  # the parser's entry point
            raise lark.exceptions.LarkError("grammar engine failure")

    monkeypatch.setattr(parser_module, "get_parser", lambda: Failing())
    (tmp_path / "a.policy").write_text(VALID)
    assert lint.main([str(tmp_path / "a.policy")]) == 1
    out = capsys.readouterr().out
    assert "error parse-error: cannot parse this part of the file: grammar engine failure" in out
    assert "Traceback" not in out
