"""Smoke test of the lint benchmark (bench/lint_bench.py): a small run end to end, and lint time linear in
rules per file (issue 12: a helper used to recount newlines from the start of the file for every rule)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from bench import lint_bench
from policyscheduler.source import SourceFile
from policyscheduler.syntax import parse

ROOT = Path(__file__).resolve().parents[2]


def test_lint_benchmark_smoke() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "lint_bench.py"), "--rules", "200",
                           "--literal-mib", "1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"lint 200 rules \+ 1 MiB literal \(\d+\.\d MB\): \d+\.\d s \(cpu \d+\.\d s\), "
                        r"peak RSS \d+ MiB, exit 0\n", done.stdout), done.stdout


def _parse_seconds(tmp_path: Path, rules: int) -> float:
    f = tmp_path / f"r{rules}.policy"
    lint_bench.write_file(f, rules)
    src = SourceFile(str(f), f.read_text())
    start = time.process_time()
    module, diags = parse(src)
    assert diags == [] and module is not None and len(module.rules) == rules
    return time.process_time() - start


def test_parse_time_is_linear_in_rules(tmp_path: Path) -> None:
    small = min(_parse_seconds(tmp_path, 1000) for _ in range(2))
    large = min(_parse_seconds(tmp_path, 8000) for _ in range(2))
    assert large < 8 * small * 2.0, (small, large)  # linear with slack; quadratic would be ~64x


def test_long_string_literal_parses_in_constant_memory() -> None:
    import tracemalloc

    text = 'filter f\n  reason "' + "x" * 4_000_000 + '"\n  require true\n'
    tracemalloc.start()
    module, diags = parse(SourceFile("s.policy", text))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert diags == [] and module is not None
    assert peak < 40 * 2**20, peak  # the text and a few copies of the literal; the old pattern needed ~760 MB
