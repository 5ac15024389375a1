"""Plotly figures as plain {"data", "layout"} dicts, built from selector data.

Templates emit the dict with json_script; static/js/charts.js draws every [data-chart].
No chart logic lives in templates or JavaScript.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

MAX_POINTS = 1500

OBSERVED = "#3451b2"
ESTIMATED = "#8a94a6"
BILLED = "#c28b00"
REPLAYED = "#0f8a5f"
FAILED = "#b42318"
OK = "#a15c00"

Point = Mapping[str, Any]


def decimate(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """Keep at most ~limit points: the lowest and highest of each bucket, in order, so the
    sawtooth's peaks and drops survive.

    >>> len(decimate([{"seq": i, "context_tokens": i % 7} for i in range(10_000)], 100))
    100
    """
    if len(points) <= limit:
        return list(points)
    buckets = max(1, limit // 2)
    size = len(points) / buckets
    out: list[Point] = []
    for b in range(buckets):
        chunk = points[int(b * size) : int((b + 1) * size)]
        if not chunk:
            continue
        low = min(chunk, key=lambda p: p["context_tokens"])
        high = max(chunk, key=lambda p: p["context_tokens"])
        out.extend(sorted({id(low): low, id(high): high}.values(), key=lambda p: p["seq"]))
    return out


def sparkline_path(values: Sequence[float], width: int = 120, height: int = 28) -> str:
    """An SVG polyline `points` attribute for a sparkline of fills (0..1, clipped)."""
    if not values:
        return ""
    step = width / max(1, len(values) - 1)
    coords = []
    for i, value in enumerate(values):
        y = height - min(1.0, max(0.0, value)) * (height - 2) - 1
        coords.append(f"{i * step:.1f},{y:.1f}")
    return " ".join(coords)


def _series(
    points: Sequence[Point], *, name: str, color: str, dash: str = "solid", width: float = 2
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": [p["seq"] for p in points],
        "y": [p["context_tokens"] for p in points],
        "customdata": [round(100 * float(p["fill"]), 1) for p in points],
        "line": {"color": color, "dash": dash, "width": width, "shape": "linear"},
        "hovertemplate": "seq %{x}<br>%{y:,} tokens (%{customdata}% of window)<extra>"
        + name
        + "</extra>",
    }


def _split_estimated(points: Sequence[Point]) -> tuple[list[Point], list[Point]]:
    reported = [p for p in points if not p.get("estimated")]
    estimated = [p for p in points if p.get("estimated")]
    return reported, estimated


# Where each limit's label sits, so labels of close limits never overprint: the window on the
# right above its line, the hard limit on the left above its line, the soft limit on the left
# below its line (soft < hard, so the two left labels face away from each other).
LABEL_PLACES = {
    "window": {"x": 1, "xanchor": "right", "yanchor": "bottom"},
    "hard limit": {"x": 0, "xanchor": "left", "yanchor": "bottom"},
    "soft limit": {"x": 0, "xanchor": "left", "yanchor": "top"},
}
# A limit is drawn when it is at most this many times the data's peak; otherwise the y axis
# would be scaled to the limit and a session at 2 % of its window would be a flat line.
LIMIT_IN_RANGE = 1.6


def _limit_line(
    value: int, label: str, color: str, dash: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    shape = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": value,
        "y1": value,
        "line": {"color": color, "width": 1, "dash": dash},
    }
    note = {
        "xref": "paper",
        "y": value,
        **LABEL_PLACES.get(label, LABEL_PLACES["window"]),
        "text": f"{label} {value:,}",
        "showarrow": False,
        "font": {"size": 11, "color": color},
    }
    return shape, note


def _off_scale_note(limits: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """One line above the plot naming the limits too far above the data to draw."""
    return {
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 1,
        "xanchor": "left",
        "yanchor": "bottom",
        "text": "off scale: " + ", ".join(f"{label} {value:,}" for label, value in limits),
        "showarrow": False,
        "font": {"size": 11, "color": "#5d6673"},
    }


def y_range(peak: float, limits: Iterable[int]) -> list[float]:
    """The y axis from 0 to a little above the data and the limits drawn with it.

    >>> y_range(4_000, [200_000])
    [0, 4400.0]
    >>> y_range(150_000, [200_000])
    [0, 212000.0]
    """
    drawn = [v for v in limits if v <= max(peak, 1) * LIMIT_IN_RANGE]
    top = max([peak, *drawn]) or 1
    return [0, round(top * (1.06 if drawn and max(drawn) >= peak else 1.1), 1)]


def compaction_markers(spans: Iterable[Mapping[str, Any]], *, name: str) -> dict[str, Any]:
    """One marker per compaction at its position and the size before it; click opens the span."""
    spans = list(spans)
    texts = []
    for s in spans:
        before, after = s.get("tokens_before"), s.get("tokens_after")
        if before is not None and after is not None:
            texts.append(f"{s['stage']} · {before:,} → {after:,} (-{before - after:,})")
        else:
            texts.append(f"{s['stage']} · sizes not reported")
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": [s["seq"] for s in spans],
        "y": [s.get("tokens_before") or 0 for s in spans],
        "text": texts,
        "customdata": [s.get("url", "") for s in spans],
        "marker": {
            "symbol": "triangle-down",
            "size": 13,
            "color": [FAILED if s.get("failed") else OK for s in spans],
            "line": {"color": "#fff", "width": 1},
        },
        "hovertemplate": "seq %{x}<br>%{text}<extra>" + name + "</extra>",
    }


def token_curve(
    points: Sequence[Point],
    *,
    spans: Iterable[Mapping[str, Any]] = (),
    window: int | None = None,
    soft_limit: int | None = None,
    hard_limit: int | None = None,
    replayed: Sequence[Point] | None = None,
    replayed_spans: Iterable[Mapping[str, Any]] = (),
    replayed_clears: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Context size per model call (the sawtooth), billed tokens, limits and compactions;
    ``replayed_clears`` (span markers of tool-result clearing) are drawn apart from the
    replay's summaries, as small circles."""
    shown = decimate(points)
    reported, estimated = _split_estimated(shown)
    data: list[dict[str, Any]] = []
    if reported:
        data.append(_series(reported, name="Context (reported)", color=OBSERVED))
    if estimated:
        data.append(_series(estimated, name="Context (estimated)", color=ESTIMATED, dash="dot"))
    if shown:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "Billed tokens",
                "x": [p["seq"] for p in shown],
                "y": [p["billed_tokens"] for p in shown],
                "line": {"color": BILLED, "width": 1, "dash": "dash"},
                "visible": "legendonly",
                "hovertemplate": "seq %{x}<br>%{y:,} billed<extra>Billed</extra>",
            }
        )
    if replayed is not None:
        data.append(_series(decimate(replayed), name="Replayed context", color=REPLAYED, width=2))
    spans = list(spans)
    if spans:
        data.append(compaction_markers(spans, name="Observed compaction"))
    replayed_spans = list(replayed_spans)
    if replayed_spans:
        marker = compaction_markers(replayed_spans, name="Replayed compaction")
        marker["marker"]["symbol"] = "triangle-down-open"
        marker["marker"]["color"] = REPLAYED
        data.append(marker)
    replayed_clears = list(replayed_clears)
    if replayed_clears:
        clears = compaction_markers(replayed_clears, name="Replayed clear")
        clears["marker"].update(symbol="circle-open", size=9, color=REPLAYED)
        data.append(clears)
    peak = max(
        [
            float(y)
            for trace in data
            if trace.get("visible") != "legendonly"
            for y in trace.get("y", [])
            if y is not None
        ]
        or [0.0]
    )
    shapes, notes, off_scale = [], [], []
    limits = [
        (window, "window", "#1b1f24", "solid"),
        (hard_limit, "hard limit", FAILED, "dash"),
        (soft_limit, "soft limit", OK, "dot"),
    ]
    for value, label, color, dash in limits:
        if not value:
            continue
        if value > max(peak, 1) * LIMIT_IN_RANGE:
            off_scale.append((label, value))
            continue
        shape, note = _limit_line(value, label, color, dash)
        shapes.append(shape)
        notes.append(note)
    if off_scale:
        notes.append(_off_scale_note(off_scale))
    return {
        "data": data,
        "layout": {
            # The top margin leaves room for Plotly's modebar and the off-scale note, so
            # neither covers a limit's label.
            "margin": {"l": 64, "r": 16, "t": 34, "b": 44},
            "height": 380,
            "xaxis": {"title": {"text": "message seq"}, "zeroline": False},
            "yaxis": {
                "title": {"text": "tokens"},
                "range": y_range(peak, [v for v, *_ in limits if v]),
                "tickformat": ",d",
            },
            "legend": {"orientation": "h", "y": -0.2, "yanchor": "top"},
            "hovermode": "closest",
            "shapes": shapes,
            "annotations": notes,
            "plot_bgcolor": "#fff",
            "paper_bgcolor": "#fff",
        },
    }


# Label positions taken in turn by neighbouring points, so tags of close points fan out.
TEXT_POSITIONS = ("top center", "bottom center", "middle right", "middle left")


def scatter_tags(
    points: Sequence[tuple[float, float]], numbers: Sequence[int] | None = None
) -> tuple[list[str], list[str]]:
    """Tags "#1", "#2"... for points (or the row ``numbers`` given); points drawn at the same
    place share one tag ("#1 #3") and the others get none, so no two tags are printed on top
    of each other.

    >>> scatter_tags([(10, 0.5), (20, 0.9), (10, 0.5)])
    (['#1 #3', '#2', ''], ['top center', 'bottom center', 'top center'])
    >>> scatter_tags([(10, 0.5), (20, 0.9)], numbers=[2, 4])[0]
    ['#2', '#4']
    """
    numbers = list(numbers) if numbers is not None else list(range(1, len(points) + 1))
    first_at: dict[tuple[float, float], int] = {}
    tags: list[str] = []
    for i, (x, y) in enumerate(points):
        key = (round(x, -2), round(y, 2))
        if key in first_at:
            tags[first_at[key]] += f" #{numbers[i]}"
            tags.append("")
        else:
            first_at[key] = i
            tags.append(f"#{numbers[i]}")
    places = []
    slot = 0
    for tag in tags:
        places.append(TEXT_POSITIONS[slot % len(TEXT_POSITIONS)] if tag else "top center")
        slot += 1 if tag else 0
    return tags, places


def savings_vs_retention(
    rows: Sequence[Mapping[str, Any]], *, front: Collection[str] = ()
) -> dict[str, Any] | None:
    """Experiment summary: input tokens saved against retention score, one point per policy
    that has a score. A policy without one (it wrote no summary, or every compaction failed)
    is not drawn: the table says "—" for it and the chart does not invent a figure. Policies
    on the advice's front (labels in ``front``) are drawn as diamonds. Fewer than two distinct
    points are no chart (None): one point draws axes around nothing."""
    scored = [(n, r) for n, r in enumerate(rows, 1) if r.get("retention_score") is not None]
    xs = [r.get("input_tokens_saved") or 0 for _, r in scored]
    ys = [r["retention_score"] for _, r in scored]
    if len(set(zip(xs, ys, strict=True))) < 2:
        return None
    tags, places = scatter_tags(list(zip(xs, ys, strict=True)), [n for n, _ in scored])
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "markers+text",
                "x": xs,
                "y": ys,
                # Short tags on the chart (the table beside it numbers its rows the same way);
                # the full policy shows on hover.
                "text": tags,
                "customdata": [f"#{n}" for n, _ in scored],
                "hovertext": [
                    f"{r.get('label', '')}{' · on the front' if r.get('label') in front else ''}"
                    for _, r in scored
                ],
                "textposition": places,
                "cliponaxis": False,
                "marker": {
                    "size": [16 if r.get("label") in front else 12 for _, r in scored],
                    "symbol": [
                        "diamond" if r.get("label") in front else "circle" for _, r in scored
                    ],
                    "color": OBSERVED,
                },
                "hovertemplate": (
                    "%{customdata} %{hovertext}<br>saved %{x:,} tokens<br>retention %{y:.0%}"
                    "<extra></extra>"
                ),
            }
        ],
        "layout": {
            "margin": {"l": 64, "r": 48, "t": 34, "b": 48},
            "height": 340,
            "xaxis": {"title": {"text": "input tokens saved"}, "tickformat": ",d"},
            "yaxis": {
                "title": {"text": "retention score"},
                "range": [0, 1.12],
                "tickformat": ".0%",
            },
            "plot_bgcolor": "#fff",
            "paper_bgcolor": "#fff",
        },
    }


PAIR_COLORS = (REPLAYED, "#8e3fb5")
PAIR_DASHES = ("solid", "dash")


def replay_pair_curve(
    points: Sequence[Point],
    *,
    replays: Sequence[tuple[str, Sequence[Point]]],
    window: int | None = None,
) -> dict[str, Any]:
    """The observed curve with two (or more) replayed curves overlaid, for comparing replays."""
    figure = token_curve(points, window=window)
    for n, (label, curve) in enumerate(replays):
        figure["data"].append(
            _series(
                decimate(curve),
                name=label,
                color=PAIR_COLORS[n % len(PAIR_COLORS)],
                dash=PAIR_DASHES[n % len(PAIR_DASHES)],
            )
        )
    return figure
