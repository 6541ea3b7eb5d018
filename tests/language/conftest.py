from __future__ import annotations

import pytest

from policyscheduler import loader
from policyscheduler.checker.env import Schema
from policyscheduler.schema import ROOTS
from tests.language.schema_fixture import test_schema


@pytest.fixture(scope="session")
def schema() -> Schema:
    return test_schema()


@pytest.fixture
def cli_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests that go through the CLI (no schema argument): the real object model when it is installed,
    else the test-only schema (same field names)."""
    try:
        import policyscheduler.objects  # noqa: F401
    except ModuleNotFoundError:
        pass
    if not ROOTS:
        schema = test_schema()
        monkeypatch.setattr(loader, "global_schema", lambda: schema)
