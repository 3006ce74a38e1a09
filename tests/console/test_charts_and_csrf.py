"""The console's SVG charts and CSRF tokens, without a browser (the browser tests read the same attributes)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from curator_service.console import charts, routes, security


def _points(svg: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r'data-x="([^"]+)" data-y="([^"]+)"', svg)]


def test_the_step_chart_draws_every_point_and_holds_each_value_until_the_next():
    svg = str(charts.step_chart("t", [0.0, 1.0, 3.0], [0.0, 2.0, 2.0], ["a", "b", "c"], x_label="x", y_label="y"))
    assert _points(svg) == [(0.0, 0.0), (1.0, 2.0), (3.0, 2.0)]
    (path,) = re.findall(r'<path d="([^"]+)" class="line"/>', svg)
    assert path.count("V") == 1  # one rise (0 → 2); the equal value after it is a flat step, not a second rise
    assert str(charts.step_chart("t", [], [], [], x_label="x", y_label="y")).startswith('<p class="empty">')


def test_a_count_axis_is_marked_at_whole_numbers_only():
    def x_labels(xs: list[float]) -> list[str]:
        svg = str(charts.step_chart("t", xs, [1.0] * len(xs), ["p"] * len(xs), x_label="answered queries",
                                    y_label="y", whole_x=True))
        return re.findall(r'text-anchor="middle">([^<]*)</text>', svg)  # the axis label has a class

    assert x_labels([1.0]) == ["1"]
    assert x_labels([1.0, 2.0]) == ["1", "2"]
    assert x_labels([float(x) for x in range(1, 12)]) == ["1", "4", "7", "10"]


def test_chart_text_is_escaped():
    svg = str(charts.step_chart("t", [0.0, 1.0], [1.0, 2.0], ["<script>x</script>", "b"], x_label="<b>",
                                y_label="y"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "<b>" not in svg


def test_the_gauge_is_capped_at_full_and_states_the_figures():
    over = str(charts.gauge(12.0, 10.0))
    assert "100%" in over and 'data-spent="12.0"' in over and "ε spent 12 of 10" in over
    assert "gauge-fill" not in str(charts.gauge(0.0, 10.0))


def test_the_pareto_chart_marks_exactly_the_front():
    svg = str(charts.front_chart("f", [(1.0, 0.3), (2.0, 0.2), (3.0, 0.25)], [(1.0, 0.3), (2.0, 0.2)], x_label="ε",
                                 y_label="error"))
    front = re.findall(r'class="point front" data-x="([^"]+)" data-y="([^"]+)"', svg)
    assert sorted((float(x), float(y)) for x, y in front) == [(1.0, 0.3), (2.0, 0.2)]


def test_a_csrf_token_is_valid_only_for_its_own_cookie_and_key():
    key, other_key = security.new_console_key(), security.new_console_key()
    token = security.csrf_token(key, "cookie-a")
    assert security.csrf_valid(key, "cookie-a", token)
    assert not security.csrf_valid(key, "cookie-b", token)  # another browser's form
    assert not security.csrf_valid(other_key, "cookie-a", token)  # made before a restart
    assert not security.csrf_valid(key, None, token) and not security.csrf_valid(key, "cookie-a", None)
    assert not security.csrf_valid(key, "cookie-a", "é" * 64)


def test_a_new_datasets_epsilon_chart_runs_from_its_registration_to_now_in_readable_ticks():
    """One point (the registration): the axis starts there and spans at least two minutes to now, labelled to the
    second (it spanned ±12 h labelled to the millisecond)."""
    registered = datetime.now(UTC) - timedelta(seconds=5)
    dataset = {"created_at": registered.isoformat(), "budget": {"total_epsilon": 3.0}}
    svg = str(routes._epsilon_over_time(dataset, []))
    ticks = re.findall(r'<text x="[^"]+" y="216" text-anchor="middle">([^<]+)</text>', svg)
    assert len(ticks) == 5 and len(set(ticks)) == 5, ticks
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in ticks), ticks
    assert ticks[0] == f"{registered:%H:%M:%S}"
    last = datetime.strptime(ticks[-1], "%H:%M:%S").replace(year=registered.year, month=registered.month,
                                                          day=registered.day, tzinfo=UTC)
    assert timedelta(seconds=119) <= (last - registered.replace(microsecond=0)) % timedelta(days=1) <= timedelta(
        seconds=121)
