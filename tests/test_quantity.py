from fractions import Fraction
from typing import Any

import pytest

from policyscheduler.quantity import QuantityError, parse_quantity, round_resource, to_quantity


@pytest.mark.parametrize(
    "text, expected",
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("1.", Fraction(1)),
        ("2Gi", Fraction(2 * 1024**3)),
        ("128Mi", Fraction(128 * 1024**2)),
        ("1Ki", Fraction(1024)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("1G", Fraction(10**9)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("100n", Fraction(1, 10**7)),
        ("5u", Fraction(5, 10**6)),
        ("-1", Fraction(-1)),
        ("+1.5Gi", Fraction(3 * 1024**3, 2)),
    ],
)
def test_parse_valid(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1Xi", "1.2.3", "1 Gi", "Gi", "1mi", "--1", "1e", 5])
def test_parse_invalid_is_none(text: Any) -> None:  # Any: 5 checks a non-string input
    assert parse_quantity(text) is None


def test_to_quantity_numbers_and_errors() -> None:
    assert to_quantity(2) == 2
    assert to_quantity(0.25) == Fraction(1, 4)
    with pytest.raises(QuantityError):
        to_quantity(True)
    with pytest.raises(QuantityError):
        to_quantity(["1"])
    with pytest.raises(QuantityError):
        to_quantity("12 apples")


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("cpu", Fraction(1, 10**7), Fraction(1, 1000)),  # 100n -> MilliValue rounds up to 1m
        ("cpu", Fraction(1, 2), Fraction(1, 2)),
        ("cpu", Fraction(15, 10000), Fraction(2, 1000)),  # 1.5m -> 2m
        ("memory", Fraction(1, 2), Fraction(1)),  # 0.5 byte -> 1 byte
        ("memory", Fraction(1000), Fraction(1000)),
        ("nvidia.com/gpu", Fraction(3, 2), Fraction(2)),
    ],
)
def test_round_resource(name: str, value: Fraction, expected: Fraction) -> None:
    assert round_resource(name, value) == expected
