"""The chart figures: scaled to the data, limits drawn only when in range, labels apart."""

from __future__ import annotations

from compaction import charts


def curve(peak: int, calls: int = 20) -> list[dict[str, object]]:
    return [
        {
            "seq": i,
            "context_tokens": peak * (i + 1) // calls,
            "billed_tokens": 10 * peak,
            "fill": 0.0,
            "estimated": False,
        }
        for i in range(calls)
    ]


def test_a_session_at_two_percent_of_its_window_is_scaled_to_its_data():
    figure = charts.token_curve(curve(4_000), window=200_000)
    low, high = figure["layout"]["yaxis"]["range"]
    assert low == 0
    assert 4_000 < high < 5_000
    assert figure["layout"]["shapes"] == []  # the window is far off scale: not drawn...
    notes = [n["text"] for n in figure["layout"]["annotations"]]
    assert notes == ["off scale: window 200,000"]  # ...but named


def test_a_window_in_range_is_drawn_and_the_axis_reaches_it():
    figure = charts.token_curve(curve(150_000), window=200_000)
    assert figure["layout"]["yaxis"]["range"][1] >= 200_000
    assert [s["y0"] for s in figure["layout"]["shapes"]] == [200_000]


def test_hard_and_soft_limit_labels_sit_on_opposite_sides_of_their_lines():
    figure = charts.token_curve(
        curve(150_000), window=200_000, hard_limit=160_000, soft_limit=150_000
    )
    notes = {n["text"].rsplit(" ", 1)[0]: n for n in figure["layout"]["annotations"]}
    assert (notes["hard limit"]["yanchor"], notes["soft limit"]["yanchor"]) == ("bottom", "top")
    assert notes["window"]["xanchor"] == "right"
    assert notes["hard limit"]["xanchor"] == "left"
    # room above the plot for Plotly's modebar, so it never covers the window's label
    assert figure["layout"]["margin"]["t"] >= 30


def test_the_hidden_billed_line_does_not_stretch_the_axis():
    figure = charts.token_curve(curve(50_000), window=60_000)
    assert figure["layout"]["yaxis"]["range"][1] < 100_000


def test_experiment_points_at_the_same_place_share_one_tag():
    rows = [
        {"input_tokens_saved": 1000, "retention_score": 0.5, "label": "a"},
        {"input_tokens_saved": 1000, "retention_score": 0.5, "label": "b"},
        {"input_tokens_saved": 9000, "retention_score": 1.0, "label": "c"},
    ]
    figure = charts.savings_vs_retention(rows)
    assert figure is not None
    trace = figure["data"][0]
    assert trace["text"] == ["#1 #2", "", "#3"]
    assert trace["customdata"] == ["#1", "#2", "#3"]  # hover still names each policy
    assert trace["textposition"][0] != trace["textposition"][2]


def test_a_policy_without_a_retention_figure_is_not_drawn_at_100_percent():
    rows = [
        {"input_tokens_saved": 1000, "retention_score": 0.5, "label": "a"},
        {"input_tokens_saved": 0, "retention_score": None, "label": "never summarized"},
        {"input_tokens_saved": 9000, "retention_score": 0.8, "label": "c"},
    ]
    figure = charts.savings_vs_retention(rows)
    assert figure is not None
    trace = figure["data"][0]
    assert trace["y"] == [0.5, 0.8]
    assert trace["customdata"] == ["#1", "#3"]  # numbered as in the table
    assert trace["text"] == ["#1", "#3"]


def test_a_chart_needs_at_least_two_points():
    one = [{"input_tokens_saved": 1_815_285, "retention_score": 0.9, "label": "a"}]
    assert charts.savings_vs_retention(one) is None
    same = [*one, {"input_tokens_saved": 1_815_285, "retention_score": 0.9, "label": "b"}]
    assert charts.savings_vs_retention(same) is None
    unscored = [*one, {"input_tokens_saved": 5, "retention_score": None, "label": "c"}]
    assert charts.savings_vs_retention(unscored) is None
    two = [*one, {"input_tokens_saved": 5, "retention_score": 0.5, "label": "c"}]
    assert charts.savings_vs_retention(two) is not None
