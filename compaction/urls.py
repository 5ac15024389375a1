from django.urls import path

from compaction import views

app_name = "compaction"

urlpatterns = [
    path("sessions/<int:pk>/compactions/<int:seq>/", views.compaction_detail, name="compaction"),
    path(
        "sessions/<int:pk>/compactions/<int:seq>/middle/",
        views.compaction_middle,
        name="compaction-middle",
    ),
    path(
        "replays/<int:pk>/compactions/<int:seq>/",
        views.replay_compaction_detail,
        name="replay-compaction",
    ),
    path(
        "replays/<int:pk>/compactions/<int:seq>/middle/",
        views.replay_compaction_middle,
        name="replay-compaction-middle",
    ),
    # the old addresses (a span's row id): redirected to the ones above
    path("sessions/<int:pk>/spans/<int:span_pk>/", views.span_moved, name="span"),
    path(
        "sessions/<int:pk>/spans/<int:span_pk>/middle/", views.span_middle_moved, name="span-middle"
    ),
    path("sessions/<int:pk>/replay/", views.replay_new, name="replay-new"),
    path("sessions/<int:pk>/reanalyze/", views.session_reanalyze, name="reanalyze"),
    path("sessions/<int:pk>/replays/compare/", views.replay_compare, name="replay-compare"),
    path("replays/<int:pk>/", views.replay_detail, name="replay"),
    path("replays/<int:pk>/status/", views.replay_status, name="replay-status"),
    path("advice/", views.advice_page, name="advice"),
    path("experiments/", views.experiment_list, name="experiments"),
    path("experiments/new/", views.experiment_new, name="experiment-new"),
    path("experiments/<int:pk>/", views.experiment_detail, name="experiment"),
    path("experiments/<int:pk>/status/", views.experiment_status, name="experiment-status"),
]
