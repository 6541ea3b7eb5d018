"""Smoke test of the lint fuzzer (bench/lint_fuzz.py): every shape writes a file of the size asked for
that lints without a crash, and a short run end to end prints the summary line the README's bound cites."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import lint_fuzz
from policyscheduler.loader import load_policy_texts

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("shape", [*lint_fuzz.SHAPES, "mixed"])
def test_each_shape_writes_a_file_of_about_the_size_asked_that_loads_without_a_crash(tmp_path: Path,
                                                                                    shape: str) -> None:
    path = tmp_path / f"{shape}.policy"
    size = lint_fuzz.write(path, shape, 20_000, seed=3)
    assert 15_000 <= size <= 20_000
    result = load_policy_texts([(str(path), path.read_text())])
    # the valid shapes load clean; the ones meant to be refused are refused with located diagnostics
    if shape in ("rules", "nesting", "lets", "string", "list"):
        assert result.policy_set is not None and not result.diagnostics, [str(d) for d in result.diagnostics]
    else:
        assert result.diagnostics and all(d.span is not None for d in result.diagnostics)


def test_lint_fuzz_smoke() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "lint_fuzz.py"), "--sizes", "8K",
                           "--shapes", "rules,folding,garbage"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 5, done.stdout  # start-up, three files, summary
    assert re.fullmatch(r"3 files; start-up \d+\.\d\d s; worst \d+\.\d\d s/MiB \(\w+, \d\.\d{3} MiB, cpu \d+\.\d\d s\); "
                        r"slowest \d+\.\d\d s \(\w+, \d\.\d{3} MiB\); 0 failed", lines[-1]), lines[-1]


def _load_seconds(tmp_path: Path, size: int) -> float:
    import time

    path = tmp_path / f"lets{size}.policy"
    lint_fuzz.write(path, "lets", size, seed=1)
    text = path.read_text()
    start = time.process_time()
    result = load_policy_texts([(str(path), text)])
    assert result.policy_set is not None and not result.diagnostics
    return time.process_time() - start


def test_lint_time_is_linear_in_the_lets_of_one_rule(tmp_path: Path) -> None:
    """The fuzzer's 'lets' shape found a quadratic checker (one scope per let, every shadowing check
    walking all earlier lets): 4x the lets must take about 4x the time, not 16x."""
    small = min(_load_seconds(tmp_path, 50_000) for _ in range(2))
    large = min(_load_seconds(tmp_path, 200_000) for _ in range(2))
    assert large < 6 * small + 0.1, (small, large)  # linear: ~4x; the quadratic checker took 7.5x and up


def _suppression_seconds(tmp_path: Path, size: int) -> float:
    import time

    from policyscheduler.cli.lint import with_lint_checks

    path = tmp_path / f"sup{size}.policy"
    lint_fuzz.write(path, "suppressed", size, seed=1)
    loaded = load_policy_texts([(str(path), path.read_text())])
    start = time.process_time()
    checked = with_lint_checks(loaded, [str(path)])
    assert not any(d.code == "unused-binding" for d in checked.diagnostics)  # every one silenced
    return time.process_time() - start


def test_applying_suppressions_is_linear_in_the_file(tmp_path: Path) -> None:
    """The fuzzer's 'suppressed' shape found lint walking every suppression of a file for every
    diagnostic (1.5 MB: 35 s instead of 4): 4x the rules must take about 4x the time, not 16x."""
    small = min(_suppression_seconds(tmp_path, 100_000) for _ in range(2))
    large = min(_suppression_seconds(tmp_path, 400_000) for _ in range(2))
    assert large < 10 * small + 0.2, (small, large)  # linear: ~4x, quadratic: ~16x; a margin for a loaded machine
