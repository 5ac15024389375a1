from django.urls import path

from compaction import views

app_name = "compaction"

urlpatterns = [
    path("sessions/<int:pk>/spans/<int:span_pk>/", views.span_detail, name="span"),
    path("sessions/<int:pk>/spans/<int:span_pk>/middle/", views.span_middle, name="span-middle"),
    path("sessions/<int:pk>/replay/", views.replay_new, name="replay-new"),
    path("sessions/<int:pk>/replays/compare/", views.replay_compare, name="replay-compare"),
    path("replays/<int:pk>/", views.replay_detail, name="replay"),
    path("replays/<int:pk>/status/", views.replay_status, name="replay-status"),
    path("experiments/", views.experiment_list, name="experiments"),
    path("experiments/new/", views.experiment_new, name="experiment-new"),
    path("experiments/<int:pk>/", views.experiment_detail, name="experiment"),
    path("experiments/<int:pk>/status/", views.experiment_status, name="experiment-status"),
]
