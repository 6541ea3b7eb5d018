"""The top-level CLI and the public API surface."""

from __future__ import annotations

import pytest

import policyscheduler
import policyscheduler.cli as cli


def test_public_api_is_pinned() -> None:
    assert sorted(policyscheduler.__all__) == [
        "ClusterSnapshot",
        "Decision",
        "Diagnostic",
        "LoadResult",
        "PolicySet",
        "evaluate",
        "load_policy_set",
        "load_policy_texts",
    ]


def test_public_names_resolve() -> None:
    for name in policyscheduler.__all__:
        assert getattr(policyscheduler, name) is not None


def test_internal_error_is_one_line_and_exit_70(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def boom(args: object) -> int:  # stands in for a bug anywhere below the CLI
        raise RuntimeError("kaboom")

    monkeypatch.delenv("POLICYSCHEDULER_DEBUG", raising=False)
    monkeypatch.setattr("policyscheduler.cli.simulate.run", boom)
    assert cli.main(["simulate"]) == cli.EXIT_INTERNAL_ERROR == 70
    err = capsys.readouterr().err
    assert err.startswith("policyscheduler: internal error: RuntimeError: kaboom\n")
    assert "Traceback" not in err and "POLICYSCHEDULER_DEBUG=1" in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "simulate" in capsys.readouterr().err
