from __future__ import annotations

import pytest

from policyscheduler.checker.env import Schema
from tests.language.schema_fixture import test_schema


@pytest.fixture(scope="session")
def schema() -> Schema:
    return test_schema()
