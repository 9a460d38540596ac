"""The golden plan, for the tests of the build chain's steps."""

from __future__ import annotations

import pytest

from builder.plan.plan_model import Plan
from tests.golden_plan import golden_plan


@pytest.fixture
def golden() -> Plan:
    return golden_plan()
