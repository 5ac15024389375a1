"""The alerts page's chart: alerts opened per day by rule, with compactions and failed splices.

A plain {"data", "layout"} dict, drawn by static/js/charts.js like every other figure.
"""

from __future__ import annotations

from typing import Any

from alerts.selectors import DailyCounts

RULE_COLORS = {
    "compaction_storm": "#d92d20",
    "compaction_loop": "#e04f16",
    "repeated_compaction": "#a15c00",
    "compaction_thrash": "#c28b00",
    "failed_splice": "#b42318",
    "near_overflow": "#8a94a6",
    "overflow": "#7a1a12",
    "lost_constraint": "#6941c6",
    "orphan_pairs": "#3451b2",
    "personal_data": "#0f8a5f",
    "secret": "#9e1c5c",
}


def alerts_per_day(counts: DailyCounts, *, labels: dict[str, str]) -> dict[str, Any]:
    """Stacked bars of alerts opened per day by rule; lines for compactions and failed splices.

    >>> from datetime import date
    >>> fig = alerts_per_day(DailyCounts([date(2026, 11, 1)], {"overflow": [2]}, [5], [1]),
    ...                      labels={"overflow": "Overflow"})
    >>> [t["name"] for t in fig["data"]]
    ['Overflow', 'Compactions', 'Failed splices']
    """
    days = [d.isoformat() for d in counts.days]
    data: list[dict[str, Any]] = [
        {
            "type": "bar",
            "name": labels.get(rule, rule),
            "x": days,
            "y": values,
            "marker": {"color": RULE_COLORS.get(rule, "#3451b2")},
            "hovertemplate": "%{x}: %{y} opened<extra>" + labels.get(rule, rule) + "</extra>",
        }
        for rule, values in sorted(counts.opened_by_rule.items())
    ]
    for name, values, color, dash in (
        ("Compactions", counts.compactions, "#3451b2", "solid"),
        ("Failed splices", counts.failed_splices, "#b42318", "dot"),
    ):
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name,
                "x": days,
                "y": values,
                "yaxis": "y2",
                "line": {"color": color, "dash": dash, "width": 2},
                "hovertemplate": "%{x}: %{y}<extra>" + name + "</extra>",
            }
        )
    return {
        "data": data,
        "layout": {
            "barmode": "stack",
            "height": 260,
            "margin": {"l": 48, "r": 48, "t": 16, "b": 36},
            "legend": {"orientation": "h", "y": -0.2},
            "xaxis": {"type": "date", "tickformat": "%b %d"},
            "yaxis": {"title": {"text": "alerts opened"}, "rangemode": "tozero"},
            "yaxis2": {
                "title": {"text": "compactions"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "showgrid": False,
            },
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
        },
    }
