"""``simulate`` draws its progress on a terminal only, and erases it before the result is printed."""

from __future__ import annotations

import argparse
import io
import json

from policyscheduler.cli import simulate as simulate_cli


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _args(**overrides: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    simulate_cli.add_arguments(parser)
    return argparse.Namespace(**{**vars(parser.parse_args([])), **overrides})


def test_progress_is_drawn_on_a_tty_and_erased() -> None:
    out, err = io.StringIO(), _Tty()
    assert simulate_cli.run(_args(output="json"), stdout=out, stderr=err) == 0
    drawn = err.getvalue()
    assert "\rsimulating: " in drawn and " pods placed " in drawn
    assert drawn.endswith("\r\033[K")  # the line is erased before the result goes to stdout
    assert json.loads(out.getvalue())["placements"]


def test_no_progress_when_stderr_is_not_a_tty() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert simulate_cli.run(_args(output="json"), stdout=out, stderr=err) == 0
    assert err.getvalue() == ""
