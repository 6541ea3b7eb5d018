"""``policyscheduler fmt``: in place, --check, --diff, and the failure paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyscheduler.cli import main

REPO = Path(__file__).resolve().parents[2]
UGLY = 'filter a   reason "r"\n   require   true # ok\n'
PRETTY = 'filter a\n  reason "r"\n  require true  # ok\n'


def test_policies_folder_is_formatted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fmt", "--check", str(REPO / "policies"), str(REPO / "examples" / "policies")]) == 0
    assert "ok:" in capsys.readouterr().out


def test_check_diff_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "sub" / "a.policy"
    f.parent.mkdir()
    f.write_text(UGLY)
    assert main(["fmt", "--check", str(tmp_path)]) == 1
    assert "not formatted" in capsys.readouterr().err
    assert main(["fmt", "--diff", str(f)]) == 1
    assert "+  require true  # ok" in capsys.readouterr().out
    assert f.read_text() == UGLY
    assert main(["fmt", str(tmp_path)]) == 0
    assert f.read_text() == PRETTY
    assert main(["fmt", "--check", str(f)]) == 0


def test_broken_and_missing_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.policy"
    bad.write_text("filter a\n  require (\n")
    assert main(["fmt", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.policy:3" in err or "bad.policy:2" in err
    assert "Traceback" not in err and bad.read_text() == "filter a\n  require (\n"
    assert main(["fmt", str(tmp_path / "nope.policy")]) == 2
    assert "no such file" in capsys.readouterr().err
