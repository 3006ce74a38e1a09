"""Charts drawn on the server as inline SVG: no script, no asset, nothing fetched (air-gapped networks).

Every number is formatted here and escaped; each point carries a ``<title>`` with its exact values (the
browser shows it on hover) and ``data-x``/``data-y`` so a test can read what was drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 560, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 40, 12, 40


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    return [low + (high - low) * i / count for i in range(count + 1)]


def _whole_ticks(low: float, high: float, count: int = 4) -> list[float]:
    """Whole numbers in [low, high], at most ``count + 1`` of them: a count has no 1.25th answer."""
    step = max(1, math.ceil((high - low) / count))
    return [float(x) for x in range(math.ceil(low), math.floor(high) + 1, step)]


def _padded(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if high == low:
        pad = abs(high) * 0.1 or 1.0
        return low - pad, high + pad
    return low, high


class _Frame:
    """Maps data (x, y) into the plot area and draws the axes with their tick labels."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        self.x_low, self.x_high = x_range
        self.y_low, self.y_high = y_range

    def px(self, x: float) -> float:
        return LEFT + (x - self.x_low) / (self.x_high - self.x_low) * (WIDTH - LEFT - RIGHT)

    def py(self, y: float) -> float:
        return HEIGHT - BOTTOM - (y - self.y_low) / (self.y_high - self.y_low) * (HEIGHT - TOP - BOTTOM)

    def axes(self, x_label: str, y_label: str, x_text: Callable[[float], str], y_text: Callable[[float], str],
             x_ticks: Sequence[float] | None = None) -> str:
        parts = [f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" '
                 'class="frame"/>']
        for y in _ticks(self.y_low, self.y_high):
            parts.append(f'<text x="{LEFT - 6}" y="{self.py(y) + 4:.1f}" text-anchor="end">{escape(y_text(y))}</text>')
        for x in _ticks(self.x_low, self.x_high) if x_ticks is None else x_ticks:
            parts.append(f'<text x="{self.px(x):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                         f'{escape(x_text(x))}</text>')
        parts.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" text-anchor="middle" class="label">'
                     f'{escape(x_label)}</text>')
        parts.append(f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" class="label" '
                     f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})">{escape(y_label)}</text>')
        return "".join(parts)

    def point(self, x: float, y: float, title: str, css: str = "point") -> str:
        return (f'<circle cx="{self.px(x):.1f}" cy="{self.py(y):.1f}" r="3.5" class="{css}" data-x="{x!r}" '
                f'data-y="{y!r}"><title>{escape(title)}</title></circle>')


def _svg(name: str, body: str, caption: str) -> Markup:
    return Markup(f'<svg class="chart" data-chart="{escape(name)}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
                  f'aria-label="{escape(caption)}" xmlns="http://www.w3.org/2000/svg">{body}</svg>')


def _number(value: float) -> str:
    return f"{value:.3g}"


def step_chart(name: str, xs: Sequence[float], ys: Sequence[float], titles: Sequence[str], *, x_label: str,
               y_label: str, x_text: Callable[[float], str] = _number, y_floor: float | None = None,
               y_line: tuple[float, str] | None = None, x_until: float | None = None,
               x_min_span: float = 0.0, whole_x: bool = False) -> Markup:
    """A staircase through (xs, ys) (each value holds until the next point), one marker per point.

    ``y_floor`` starts the y axis there (e.g. 0 for spent ε); ``y_line`` draws a dashed horizontal reference
    (value, caption), e.g. the budget's total. ``x_until`` holds the last value on to there (e.g. now), and the x
    axis spans at least ``x_min_span`` from the first point, so one point or a few seconds make a readable axis.
    ``whole_x`` marks the x axis at whole numbers only (a count of answers)."""
    if not xs:
        return Markup('<p class="empty">Nothing to draw yet.</p>')
    y_values = list(ys) + ([y_floor] if y_floor is not None else []) + ([y_line[0]] if y_line else [])
    x_end = max(xs[-1], x_until if x_until is not None else xs[-1], xs[0] + x_min_span)
    x_range = (xs[0] - 0.5, x_end + 0.5) if whole_x and x_end == xs[0] else _padded([xs[0], x_end])
    frame = _Frame(x_range, _padded(y_values))
    path = [f"M{frame.px(xs[0]):.1f},{frame.py(ys[0]):.1f}"]
    for x, y, previous in zip(xs[1:], ys[1:], ys):
        path.append(f"H{frame.px(x):.1f}V{frame.py(y):.1f}" if previous != y else f"H{frame.px(x):.1f}")
    if x_until is not None and x_until > xs[-1]:
        path.append(f"H{frame.px(x_until):.1f}")
    x_ticks = _whole_ticks(*x_range) if whole_x else None
    body = frame.axes(x_label, y_label, x_text, _number, x_ticks)
    if y_line:
        value, caption = y_line
        body += (f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{frame.py(value):.1f}" y2="{frame.py(value):.1f}" '
                 f'class="reference"/><text x="{WIDTH - RIGHT - 4}" y="{frame.py(value) - 4:.1f}" '
                 f'text-anchor="end" class="reference-label">{escape(caption)}</text>')
    body += f'<path d="{"".join(path)}" class="line"/>'
    body += "".join(frame.point(x, y, t) for x, y, t in zip(xs, ys, titles))
    return _svg(name, body, f"{y_label} against {x_label}")


def front_chart(name: str, points: Sequence[tuple[float, float]], front: Sequence[tuple[float, float]], *,
                x_label: str, y_label: str) -> Markup:
    """Every evaluated point, and the Pareto front (minimisation in both) as a staircase of highlighted points."""
    if not points:
        return Markup('<p class="empty">No points yet.</p>')
    frame = _Frame(_padded([x for x, _ in points]), _padded([y for _, y in points]))
    body = frame.axes(x_label, y_label, _number, _number)
    body += "".join(frame.point(x, y, f"{x_label} {x:.4g}, {y_label} {y:.4g}") for x, y in points)
    ordered = sorted(front)
    if ordered:
        path = [f"M{frame.px(ordered[0][0]):.1f},{frame.py(ordered[0][1]):.1f}"]
        path += [f"H{frame.px(x):.1f}V{frame.py(y):.1f}" for x, y in ordered[1:]]
        body += f'<path d="{"".join(path)}" class="line front"/>'
        body += "".join(frame.point(x, y, f"front: {x_label} {x:.4g}, {y_label} {y:.4g}", "point front")
                        for x, y in ordered)
    return _svg(name, body, f"Pareto front: {y_label} against {x_label}")


def bar_chart(name: str, labels: Sequence[str], values: Sequence[float], titles: Sequence[str], *,
              caption: str) -> Markup:
    """Horizontal bars, one per label, their lengths ``values`` relative to the largest (each bar's ``data-value``
    is its value, its ``<title>`` the exact figures)."""
    if not values:
        return Markup('<p class="empty">Nothing to draw yet.</p>')
    row, label_width, width = 22, 150, WIDTH
    height = TOP + row * len(values) + 8
    largest = max(values) or 1.0
    body = ""
    for i, (label, value, title) in enumerate(zip(labels, values, titles)):
        y = TOP + i * row
        length = (width - label_width - RIGHT) * value / largest
        body += (f'<text x="{label_width - 6}" y="{y + 15}" text-anchor="end" class="label">{escape(label)}</text>'
                 f'<rect x="{label_width}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" class="bar" '
                 f'data-label="{escape(label)}" data-value="{value!r}"><title>{escape(title)}</title></rect>'
                 f'<text x="{label_width + length + 4:.1f}" y="{y + 15}">{value:.2f}</text>')
    return Markup(f'<svg class="chart importance" data-chart="{escape(name)}" viewBox="0 0 {width} {height}" '
                  f'role="img" aria-label="{escape(caption)}" xmlns="http://www.w3.org/2000/svg">{body}</svg>')


def gauge(spent: float, total: float, symbol: str = "ε") -> Markup:
    """A half-dial filled to spent/total (capped at full), the figures beneath."""
    fraction = 0.0 if total <= 0 else min(1.0, max(0.0, spent / total))
    radius, cx, cy = 50.0, 60.0, 58.0
    angle = math.pi * (1 - fraction)
    end_x, end_y = cx + radius * math.cos(angle), cy - radius * math.sin(angle)
    level = "low" if fraction < 0.5 else "mid" if fraction < 0.85 else "high"
    filled = (f'<path d="M{cx - radius},{cy} A{radius},{radius} 0 0 1 {end_x:.2f},{end_y:.2f}" '
              f'class="gauge-fill {level}"/>' if fraction > 0 else "")
    caption = f"{symbol} spent {spent:.4g} of {total:.4g}"
    return Markup(
        f'<svg class="gauge" viewBox="0 0 120 70" role="img" aria-label="{escape(caption)}" data-spent="{spent!r}" '
        f'data-total="{total!r}" xmlns="http://www.w3.org/2000/svg">'
        f'<path d="M{cx - radius},{cy} A{radius},{radius} 0 0 1 {cx + radius},{cy}" class="gauge-track"/>{filled}'
        f'<text x="{cx}" y="{cy - 6}" text-anchor="middle" class="gauge-text">{fraction:.0%}</text>'
        f'<title>{escape(caption)}</title></svg>'
    )
