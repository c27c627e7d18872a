from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_state_tools.importers.timestamps import parse_timestamp

UTC = timezone.utc


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-02-14T10:21:40", datetime(2026, 2, 14, 10, 21, 40, tzinfo=UTC).timestamp()),
        ("2026-02-14T10:21:40.000212", datetime(2026, 2, 14, 10, 21, 40, 212, tzinfo=UTC).timestamp()),
        ("2026-02-14 10:21:40", datetime(2026, 2, 14, 10, 21, 40, tzinfo=UTC).timestamp()),
        ("2026-02-14T10:21:40+02:00", datetime(2026, 2, 14, 8, 21, 40, tzinfo=UTC).timestamp()),
        ("2026-02-14T10:21:40Z", datetime(2026, 2, 14, 10, 21, 40, tzinfo=UTC).timestamp()),
        (1779199353.2091, 1779199353.2091),
        (1779199353, 1779199353.0),
        ("1779199370.44", 1779199370.44),
        (" 1779199370 ", 1779199370.0),
        ("2026-02-14T10:21:40.5", datetime(2026, 2, 14, 10, 21, 40, 500000, tzinfo=UTC).timestamp()),
        ("2026-02-14T10:21:40.1234567", datetime(2026, 2, 14, 10, 21, 40, 123456, tzinfo=UTC).timestamp()),
    ],
)
def test_parses_iso_epoch_and_numeric_text(value, expected):
    assert parse_timestamp(value, UTC) == pytest.approx(expected, abs=1e-6)


def test_naive_time_is_local_time_without_a_zone():
    assert parse_timestamp("2026-02-14T10:21:40") == datetime(2026, 2, 14, 10, 21, 40).timestamp()


def test_naive_time_uses_the_named_zone():
    berlin = ZoneInfo("Europe/Berlin")
    assert parse_timestamp("2026-07-01T12:00:00", berlin) == datetime(2026, 7, 1, 10, tzinfo=UTC).timestamp()


def test_zone_in_the_text_wins_over_the_named_zone():
    shifted = timezone(timedelta(hours=5))
    expected = datetime(2026, 2, 14, 10, tzinfo=UTC).timestamp()
    assert parse_timestamp("2026-02-14T10:00:00+00:00", shifted) == expected


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        "",
        "yesterday",
        "nan",
        "inf",
        "1_000",
        float("nan"),
        float("inf"),
        10**400,
        "1e999",
        [1],
        {"t": 1},
        "2026-13-45T99:00:00",
    ],
)
def test_anything_else_is_none(value):
    assert parse_timestamp(value) is None


@given(
    st.one_of(st.text(), st.integers(), st.floats(), st.none(), st.booleans(), st.datetimes().map(str)),
    st.one_of(st.none(), st.timezones()),
)
def test_never_raises(value, tz):
    result = parse_timestamp(value, tz)
    assert result is None or isinstance(result, float)


@pytest.mark.parametrize("value", [1e20, -1e20, 1e308, 1773168132000, "1773168132000", 253402300800,
                                   "0001-01-01T00:00:00+01:00"])
def test_a_time_no_calendar_date_can_show_is_no_time(value: object) -> None:
    # A time in milliseconds (year 58,000) or 1e20 would otherwise push every later message of its
    # session past it, and no report could show it.
    assert parse_timestamp(value) is None


@pytest.mark.parametrize("value, seconds", [(0, 0.0), (-1, -1.0), (253402300799, 253402300799.0),
                                            (253402300799.5, 253402300799.5),
                                            ("0001-01-01T00:00:00+00:00", -62135596800.0)])
def test_the_calendar_s_own_edges_are_times(value: object, seconds: float) -> None:
    assert parse_timestamp(value) == seconds
