"""Lint benchmark: the time and peak memory of ``policyscheduler lint`` on one large generated file.

Issue 12 asks for linear-time lint: no rescanning of the file per rule, and a string-literal pattern
whose memory does not grow per character. This writes a file of N valid rules (a filter and a score
alternately, about 50 bytes each, as in the issue's 5 MB file), runs ``policyscheduler lint``
on it in a child process and prints one line:

    lint 100000 rules (10.3 MB): 21.3 s (cpu 20.9 s), peak RSS 812 MiB, exit 0

Wall time is what issue 12's target is about (under 30 s); the child's CPU time (user + system) is
printed too because it is much less disturbed by other processes on a shared machine.

Usage: ``python bench/lint_bench.py [--rules 100000] [--literal-mib 0] [--keep DIR]``.
``--literal-mib M`` adds one rule whose reason is an M MiB string literal (the string-pattern case).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RULE = '''filter bench_rule_{i}
  reason "node(s) had label bad-{i}"
  require node.labels["bench"] != "bad-{i}"
'''
SCORE = '''score bench_score_{i} weight 1
  value if node.labels["bench"] == "good-{i}" then 100 else 0
'''


def write_file(path: Path, rules: int, literal_mib: int = 0) -> int:
    with path.open("w", encoding="utf-8") as out:
        for i in range(rules):
            out.write((RULE if i % 2 == 0 else SCORE).format(i=i))
        if literal_mib:
            out.write('filter huge_literal\n  reason "' + "x" * (literal_mib * 2**20) + '"\n  require true\n')
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", type=int, default=100_000)
    ap.add_argument("--literal-mib", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="write the file here and keep it")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        path = d / "bench.policy"
        size = write_file(path, args.rules, args.literal_mib)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "policyscheduler", "lint", str(path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        elapsed = time.perf_counter() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak = usage.ru_maxrss // 1024  # KiB -> MiB (Linux)
        cpu = usage.ru_utime + usage.ru_stime
    extra = f" + {args.literal_mib} MiB literal" if args.literal_mib else ""
    print(f"lint {args.rules} rules{extra} ({size / 1e6:.1f} MB): {elapsed:.1f} s (cpu {cpu:.1f} s), peak RSS {peak} MiB, "
          f"exit {done.returncode}")
    if done.returncode not in (0, 1):
        print(done.stderr[-2000:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
