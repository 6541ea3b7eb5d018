"""The broken-policy corpus: every file declares, on its first line, the diagnostic it must produce.

``# expect: CODE LINE:COL`` -> lint exits 1 and reports CODE at exactly LINE:COL.
``# expect-warning: CODE LINE:COL`` -> lint exits 0 and reports that warning.
``# message: TEXT`` on the second line -> that diagnostic's message contains TEXT (the helpful part).
More ``# expect...`` lines (each optionally followed by its ``# message:``) may follow the first: every one
must be reported (a file with an error and a warning: lint reports both, and exits 1).
A subdirectory is linted as one policy set (cross-file cases); its expectation is in one of its files.
Cases are linted as `lint` always lints: on top of the bundled defaults.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from policyscheduler.cli import lint

BROKEN = Path(__file__).parent / "broken"
EXPECT = re.compile(r"^# expect(-warning)?: ([a-z-]+) (\d+):(\d+)\s*$")
MESSAGE = re.compile(r"^# message: (.+?)\s*$")


def _cases() -> list[Path]:
    return sorted([*BROKEN.glob("*.policy"), *(p for p in BROKEN.iterdir() if p.is_dir())])


def _expectation(case: Path) -> tuple[bool, str, str, int, int]:
    files = sorted(case.glob("*.policy")) if case.is_dir() else [case]
    for f in files:
        m = EXPECT.match(f.read_text().splitlines()[0])
        if m:
            return m.group(1) is not None, m.group(2), str(f), int(m.group(3)), int(m.group(4))
    raise AssertionError(f"{case} declares no expectation on its first line")


def _message(case: Path) -> str | None:
    lines = case.read_text().splitlines() if case.is_file() else []
    m = MESSAGE.match(lines[1]) if len(lines) > 1 else None
    return m.group(1) if m else None


def _more(case: Path) -> list[tuple[bool, str, int, int, str | None]]:
    """The further expectations of a single-file case: (warning?, code, line, col, message or None)."""
    lines = case.read_text().splitlines() if case.is_file() else []
    out: list[tuple[bool, str, int, int, str | None]] = []
    i = 1
    while i < len(lines) and lines[i].startswith("# "):
        m = EXPECT.match(lines[i])
        if m:
            msg = MESSAGE.match(lines[i + 1]) if i + 1 < len(lines) else None
            out.append((m.group(1) is not None, m.group(2), int(m.group(3)), int(m.group(4)),
                        msg.group(1) if msg else None))
        i += 1
    return out


pytestmark = pytest.mark.usefixtures("cli_schema")


def test_corpus_is_large_enough() -> None:
    assert len(_cases()) >= 35


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_broken_policy(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    is_warning, code, file, line, col = _expectation(case)
    status = lint.main([str(case), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    found = [(d["code"], d["file"], d["line"], d["col"], d["severity"]) for d in report["diagnostics"]]
    assert (code, file, line, col, "warning" if is_warning else "error") in found, found
    wanted = _message(case)
    if wanted is not None:
        messages = [d["message"] for d in report["diagnostics"] if (d["code"], d["line"], d["col"]) == (code, line, col)]
        assert any(wanted in m for m in messages), messages
    assert not any("reject_pod" in d["message"] or "__ANON" in d["message"] for d in report["diagnostics"])
    more = _more(case)
    for more_warning, more_code, more_line, more_col, more_message in more:
        hits = [d for d in report["diagnostics"] if (d["code"], d["file"], d["line"], d["col"], d["severity"])
                == (more_code, file, more_line, more_col, "warning" if more_warning else "error")]
        assert hits, found
        assert more_message is None or any(more_message in d["message"] for d in hits), hits
    clean = is_warning and all(w for w, *_ in more)  # any expected error: lint exits 1
    assert status == (0 if clean else 1)
    if clean:
        assert report["digest"] is not None
    # the text rendering of the same case never shows a traceback and has the caret excerpt
    lint.main([str(case)])
    text = capsys.readouterr().out
    assert "Traceback" not in text
    assert f"{file}:{line}:{col}: {'warning' if is_warning else 'error'} {code}: " in text
