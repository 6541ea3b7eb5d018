"""Lint fuzzer: adversarial policy files of growing size, each linted in a child process and timed.

Issue 24 asks that ``lint`` of any file up to the 16 MiB cap (loader.MAX_POLICY_FILE_BYTES) finish within a
stated bound. The bound rests on lint's work being linear in the file: this generator builds the shapes
most likely to break that (each shape is a family of files, one per size):

* ``rules``     -- many small rules (the lint_bench shape);
* ``nesting``   -- every rule nested to just under the depth limit (parentheses and ``if``);
* ``longline``  -- one rule whose condition is a single line of many ``and`` terms;
* ``lets``      -- one rule with thousands of ``let``\\ s, each reading the previous one;
* ``folding``   -- chains of constant folding (``let aN = aN-1 * aN-1``: squares until ``overflow``;
  ``aN-1 + aN-1``; string doubling), repeated;
* ``string``    -- one huge string literal;
* ``list``      -- one huge list literal compared with ``==`` and ``in``;
* ``suppressed`` -- many warnings, each silenced by its own ``# lint: ignore`` comment;
* ``garbage``   -- random tokens of the language (parse errors: capped per file);
* ``mixed``     -- random rules drawn from all of the above, with a random seed.

For each file it prints one line (shape, size, child CPU seconds, seconds per MiB, exit status) and at the
end the worst seconds-per-MiB (beyond the start-up cost of linting a one-rule file, measured first) and
the slowest single file. A file whose lint exits with anything but 0 or 1,
or prints a traceback, is a failure (exit 1). ``--seconds`` keeps generating ``mixed`` files with new seeds
until that much wall time has passed.

Usage: ``python bench/lint_fuzz.py [--sizes 64K,256K,1M] [--shapes rules,lets] [--seconds 0] [--seed 1]``.
CPU time (user + system of the child) is reported rather than wall time: it is far less disturbed by
other processes on a shared machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

MIB = 2**20
DEPTH = 190
"""Nesting of the ``nesting`` shape: just under the parser's limit (syntax.transformer.MAX_DEPTH = 200)."""


def _rules(rng: random.Random) -> Iterator[str]:
    i = 0
    while True:
        yield (f'filter r{i}\n  reason "node(s) had label bad-{i}"\n  require node.labels["b"] != "bad-{i}"\n'
               if i % 2 == 0 else f'score s{i} weight 1\n  value if node.labels["b"] == "g{i}" then 100 else 0\n')
        i += 1


def _nesting(rng: random.Random) -> Iterator[str]:
    i = 0
    while True:
        if i % 2:
            body = "(" * DEPTH + "len(node.labels)" + ")" * DEPTH + " >= 0"
        else:
            body = "if true then " * (DEPTH // 2) + "true" + " else false" * (DEPTH // 2)
        yield f'filter n{i}\n  reason "r"\n  require {body}\n'
        i += 1


def _longline(rng: random.Random) -> Iterator[str]:
    yield 'filter long\n  reason "r"\n  require true'
    i = 0
    while True:
        yield f' and node.labels["k{i}"] != "v{i}"'
        i += 1


def _lets(rng: random.Random) -> Iterator[str]:
    yield 'score lets weight 1\n  let a0 = len(node.labels)\n'
    i = 1
    while True:
        yield f"  let a{i} = a{i - 1} + {i % 7}\n"
        i += 1


def _folding(rng: random.Random) -> Iterator[str]:
    i = 0
    while True:
        kind = i % 3
        if kind == 0:
            lets = "".join(f"  let a{j} = a{j - 1} * a{j - 1}\n" for j in range(1, 25))
            yield f"score f{i} weight 1\n  let a0 = 3\n{lets}  value a24\n"
        elif kind == 1:
            lets = "".join(f"  let a{j} = a{j - 1} + a{j - 1}\n" for j in range(1, 80))
            yield f"score f{i} weight 1\n  let a0 = 1\n{lets}  value a79\n"
        else:
            lets = "".join(f"  let s{j} = s{j - 1} + s{j - 1}\n" for j in range(1, 40))
            yield f'filter f{i}\n  reason "r"\n  let s0 = "ab"\n{lets}  require len(s39) > 0\n'
        i += 1


def _string(rng: random.Random) -> Iterator[str]:
    yield 'filter huge_string\n  reason "'
    while True:
        yield "x" * 4096
    # the closing quote is added by the writer (see _write): a file cut anywhere stays one literal


def _list(rng: random.Random) -> Iterator[str]:
    yield 'filter huge_list\n  reason "r"\n  require len(node.labels) in [0'
    i = 1
    while True:
        yield f", {i}"
        i += 1


def _suppressed(rng: random.Random) -> Iterator[str]:
    """Rules each with a warning silenced by a ``# lint: ignore`` comment: many of both in one file."""
    i = 0
    while True:
        yield (f'filter q{i}\n  reason "r"\n  let unused{i} = {i}  # lint: ignore[unused-binding] because fuzz\n'
               "  require true\n")
        i += 1


TOKENS = ["filter", "score", "let", "require", "reason", "value", "if", "then", "else", "(", ")", "[", "]",
          "+", "*", "==", "and", "or", "not", "in", "node", "pod", ".", "labels", '"s"', "1", "1.5", "2Gi",
          "\n", "\n  ", ":", "for", "where", "count", "sum", "#"]


def _garbage(rng: random.Random) -> Iterator[str]:
    while True:
        yield " ".join(rng.choice(TOKENS) for _ in range(64))


_CLOSERS: dict[str, Callable[[int], str]] = {
    "longline": lambda n: "\n",
    "string": lambda n: '"\n  require true\n',
    "list": lambda n: "]\n",
    "lets": lambda n: f"  value a{n - 1}\n",  # the last let (chunk k binds a_k): none unused
}
"""How a shape whose file is one open rule is closed, given the number of chunks written."""
SHAPES: dict[str, Callable[[random.Random], Iterator[str]]] = {
    "rules": _rules, "nesting": _nesting, "longline": _longline, "lets": _lets, "folding": _folding,
    "string": _string, "list": _list, "garbage": _garbage, "suppressed": _suppressed,
}
_RULE_SHAPES = ("rules", "nesting", "folding", "suppressed")


def _mixed(rng: random.Random) -> Iterator[str]:
    """Whole rules of the rule-shaped families, renamed so that names do not clash."""
    gens = {name: SHAPES[name](rng) for name in _RULE_SHAPES}
    i = 0
    while True:
        text = next(gens[rng.choice(_RULE_SHAPES)])
        head, _, rest = text.partition("\n")
        kind, _, tail = head.partition(" ")
        yield f"{kind} m{i}_{tail}\n{rest}"
        i += 1


def _no_closer(chunks: int) -> str:
    return ""


def write(path: Path, shape: str, size: int, seed: int) -> int:
    """Write a ``shape`` file of about ``size`` bytes (at most the 16 MiB cap); return its size."""
    rng = random.Random(seed)
    gen = _mixed(rng) if shape == "mixed" else SHAPES[shape](rng)
    close: Callable[[int], str] = _CLOSERS.get(shape, _no_closer)
    written = chunks = 0
    with path.open("w", encoding="utf-8") as out:
        for chunk in gen:
            if written + len(chunk) + len(close(chunks + 1)) > size:
                break
            out.write(chunk)
            written += len(chunk)
            chunks += 1
        out.write(close(chunks))
    return path.stat().st_size


@dataclasses.dataclass
class Result:
    shape: str
    size: int
    cpu: float
    exit: int
    ok: bool

    startup: float = 0.0
    """CPU seconds of linting a one-rule file (interpreter start, imports, the bundled defaults)."""

    @property
    def per_mib(self) -> float:
        """CPU seconds per MiB beyond the start-up cost: the slope the bound is stated with."""
        return max(self.cpu - self.startup, 0.0) / max(self.size / MIB, 1 / 64)


def lint_once(path: Path, shape: str, size: int, timeout: float) -> Result:
    """Lint ``path`` in a child process; its CPU time from the rusage of that child alone."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run([sys.executable, "-m", "policyscheduler", "lint", str(path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        code, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        code, stderr = -1, "timeout"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ok = code in (0, 1) and "Traceback" not in stderr
    return Result(shape, size, cpu, code, ok)


def _size(text: str) -> int:
    units = {"K": 2**10, "M": MIB}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64K,256K,1M", help="file sizes, comma-separated (K, M suffixes)")
    ap.add_argument("--shapes", default=",".join([*SHAPES, "mixed"]), help="shapes, comma-separated")
    ap.add_argument("--seconds", type=float, default=0.0, help="then keep linting new mixed files this long")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0, help="a lint past this is a failure")
    args = ap.parse_args(argv)
    sizes = [min(_size(s), 16 * MIB) for s in args.sizes.split(",")]
    shapes = args.shapes.split(",")
    unknown = [s for s in shapes if s != "mixed" and s not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {', '.join(unknown)}")
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.policy"
        write(path, "rules", 200, args.seed)
        startup = min(lint_once(path, "rules", 200, args.timeout).cpu for _ in range(2))
        print(f"start-up (a one-rule file): cpu {startup:.2f} s", flush=True)

        def one(shape: str, size: int, seed: int) -> None:
            actual = write(path, shape, size, seed)
            res = lint_once(path, shape, actual, args.timeout)
            res.startup = startup
            results.append(res)
            print(f"{shape:9} {actual / MIB:8.3f} MiB  cpu {res.cpu:7.2f} s  {res.per_mib:7.2f} s/MiB  "
                  f"exit {res.exit}{'' if res.ok else '  FAILED'}", flush=True)

        for size in sizes:
            for shape in shapes:
                one(shape, size, args.seed)
        deadline = time.monotonic() + args.seconds
        seed = args.seed
        while time.monotonic() < deadline:
            seed += 1
            one("mixed", random.Random(seed).choice(sizes), seed)
    worst = max(results, key=lambda r: r.per_mib)
    slowest = max(results, key=lambda r: r.cpu)
    failed = [r for r in results if not r.ok]
    print(f"{len(results)} files; start-up {startup:.2f} s; worst {worst.per_mib:.2f} s/MiB ({worst.shape}, {worst.size / MIB:.3f} MiB, "
          f"cpu {worst.cpu:.2f} s); slowest {slowest.cpu:.2f} s ({slowest.shape}, {slowest.size / MIB:.3f} MiB); "
          f"{len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
