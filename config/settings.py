"""Settings for Sawtooth. Every knob is an environment variable (docs/configuration.md)."""

import ipaddress
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from config import secret
from config.env import env_bool, env_float, env_int, env_json_object, env_list, env_str

# Lets admin and other generic classes be subscripted (ModelAdmin[Project]) at run time.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("SAWTOOTH_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", False)
# See config/secret.py: the environment's key, else one generated for this install under var/;
# production processes refuse to start without a key given in the environment.
SAWTOOTH_PRODUCTION = secret.is_production(debug=DEBUG)
SECRET_KEY = secret.secret_key(var_dir=VAR_DIR)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "template_partials",
    "ninja",
    "sessions.apps.TracesConfig",
    "compaction.apps.CompactionConfig",
    "team.apps.TeamConfig",
    "alerts.apps.AlertsConfig",
    "privacy.apps.PrivacyConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.DatabaseUnavailableMiddleware",
    "config.middleware.DegradedMiddleware",
    "sessions.security.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.NameScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # The masking filters (``masked``, ``session_label``) in every template without a
            # load tag, so no page can lack the one door personal data goes out through.
            "builtins": ["sessions.templatetags.traces"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "sessions.context_processors.navigation",
            ],
        },
    },
]

# SQLite under ./var/ unless DATABASE_URL points at PostgreSQL (postgres://...).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'sawtooth.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        # A persistent connection is checked before reuse, so the first request after a
        # PostgreSQL restart reconnects instead of failing on the dead socket.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while the worker writes.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # Tests get a file too, not Django's default shared-cache in-memory database: there a
    # second writer fails at once with "database table is locked" instead of waiting its turn,
    # so concurrency would be tested on a locking the product never runs with.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_sawtooth.sqlite3")}
elif DATABASES["default"]["ENGINE"].startswith("django.db.backends.postgresql"):
    # The planner's price of a random page read. PostgreSQL's default (4) is a spinning disk's;
    # on SSDs and a cache-resident working set 1.1 is the usual figure, and with it a rare
    # word's search checks its few hundred messages' sessions by index (4 ms at a million
    # messages) instead of hashing every session of the project (24 ms). Empty: the server's.
    random_page_cost = env_float("SAWTOOTH_PG_RANDOM_PAGE_COST", 1.1)
    if random_page_cost is not None:
        options = DATABASES["default"].setdefault("OPTIONS", {})
        setting = f"-c random_page_cost={random_page_cost}"
        options["options"] = f"{options.get('options', '')} {setting}".strip()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(VAR_DIR / "static")))
# SQLite, the filesystem broker and collected static files all live here; whitenoise warns
# at start-up when STATIC_ROOT is missing, so it is made before anything looks for it.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True

# HTTPS. Served over HTTPS, cookies are always marked Secure (sessions/security.py) and
# SecurityMiddleware sends HSTS; SAWTOOTH_HTTPS=1 (default with SAWTOOTH_PRODUCTION=1) also
# makes the settings say so (Secure cookies, redirect to HTTPS) for `check --deploy`. Behind a
# TLS-terminating proxy, DJANGO_SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto trusts its header.
SAWTOOTH_HTTPS = env_bool("SAWTOOTH_HTTPS", env_bool("SAWTOOTH_PRODUCTION", False))
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", SAWTOOTH_HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", SAWTOOTH_HTTPS)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
_proxy_header = env_str("DJANGO_SECURE_PROXY_SSL_HEADER", "")
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = (
        "HTTP_" + _proxy_header.upper().replace("-", "_"),
        "https",
    )
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000)  # sent on HTTPS only
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Content-Security-Policy on every page (sessions/security.py): scripts only from our own
# static files, never inline; Plotly and htmx inject styles, so inline styles stay allowed.
CONTENT_SECURITY_POLICY = env_str(
    "SAWTOOTH_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
)

# Login throttling (sessions/login_throttle.py), on /login/ and /admin/login/: after this
# many failed attempts in the window, an account (any address) or an address (any account) is locked
# out for the window, even with the right password. Counted in the cache (CACHE_URL=redis://
# shares it across processes).
LOGIN_MAX_FAILURES_PER_ACCOUNT = env_int("LOGIN_MAX_FAILURES_PER_ACCOUNT", 5)
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("LOGIN_MAX_FAILURES_PER_ADDRESS", 30)
LOGIN_LOCKOUT_SECONDS = env_int("LOGIN_LOCKOUT_SECONDS", 900)
AUTHENTICATION_BACKENDS = ["sessions.login_throttle.ThrottledModelBackend"]

# Ingest limits.
INGEST_MAX_BODY_BYTES = env_int("INGEST_MAX_BODY_BYTES", 10 * 1024 * 1024)
INGEST_MAX_JSON_DEPTH = env_int("INGEST_MAX_JSON_DEPTH", 64)
INGEST_MAX_MESSAGES_PER_BATCH = env_int("INGEST_MAX_MESSAGES_PER_BATCH", 10_000)
# Each compaction and probe costs analysis work (retention is checked per pair), so a batch
# carries a bounded number of each; more get 413 naming the limit.
INGEST_MAX_COMPACTIONS_PER_BATCH = env_int("INGEST_MAX_COMPACTIONS_PER_BATCH", 500)
INGEST_MAX_PROBES_PER_BATCH = env_int("INGEST_MAX_PROBES_PER_BATCH", 500)
# What one session may hold: one analysis pass reads all of it at once, so these bound a
# worker's memory. A batch that would pass one gets 413 naming it, and nothing is stored.
SESSION_MAX_MESSAGES = env_int("SESSION_MAX_MESSAGES", 200_000)
SESSION_MAX_COMPACTIONS = env_int("SESSION_MAX_COMPACTIONS", 2_000)
SESSION_MAX_PROBES = env_int("SESSION_MAX_PROBES", 2_000)
# A trace file imported through any door (the upload API and form, the import commands, the
# watcher's uploads), counted after each gzip layer is undone (compaction/engine/unpack.py).
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 100 * 1024 * 1024)
# What a reader holds in memory at once: one JSON line, or one whole JSON document (a Gemini
# chat, an OTLP dump, a Cline task file). Past it the file is refused with the limit named.
IMPORT_MAX_RECORD_BYTES = env_int("IMPORT_MAX_RECORD_BYTES", 32 * 1024 * 1024)
# An import through POST /api/v1/imports counts against INGEST_RATE_LIMIT_PER_MINUTE as one
# batch per started IMPORT_RATE_BYTES_PER_BATCH of its files (after gzip), not as one request.
IMPORT_RATE_BYTES_PER_BATCH = env_int("IMPORT_RATE_BYTES_PER_BATCH", 1024 * 1024)
# A background import whose worker died is run again from its chunks, at most this many runs
# in all; then it fails with the reason (sessions/import_jobs.py).
IMPORT_JOB_MAX_ATTEMPTS = env_int("IMPORT_JOB_MAX_ATTEMPTS", 3)
# The analysis budget of one pass over a session (compaction/budget.py): this many seconds,
# plus ANALYSIS_BUDGET_SECONDS_PER_MB per MiB of the session's text. A pass past it is ended,
# the session marked failed with the reason, and the worker's slot freed. 0: no budget.
ANALYSIS_BUDGET_SECONDS = env_float("ANALYSIS_BUDGET_SECONDS", 120.0)
ANALYSIS_BUDGET_SECONDS_PER_MB = env_float("ANALYSIS_BUDGET_SECONDS_PER_MB", 30.0)
# The hard stop behind the budget (Celery's time_limit on the analysis task): past it the
# pool process running the pass is killed, even inside C code that never returns to Python.
ANALYSIS_TIME_LIMIT_SECONDS = env_int("ANALYSIS_TIME_LIMIT_SECONDS", 1800)
# Each pass runs in a child process of the worker (compaction/child.py) with hard limits: the
# worker kills it at its budget (above), and its address space may grow by at most
# ANALYSIS_MEMORY_LIMIT_MB plus ANALYSIS_MEMORY_LIMIT_MB_PER_MB per MiB of the session's
# messages as stored (RLIMIT_AS). Past either, the session is marked failed with the limit
# named, and not retried. ANALYSIS_IN_CHILD=0 runs passes in the worker's own process (the
# budget's timer and Celery's time limit then hold, no memory limit).
ANALYSIS_IN_CHILD = env_bool("ANALYSIS_IN_CHILD", True)
ANALYSIS_MEMORY_LIMIT_MB = env_int("ANALYSIS_MEMORY_LIMIT_MB", 4096)
ANALYSIS_MEMORY_LIMIT_MB_PER_MB = env_int("ANALYSIS_MEMORY_LIMIT_MB_PER_MB", 256)
# Passes of one session whose worker died under them (killed by a hard limit: Celery's time
# limit, the OOM killer) before it is marked failed with the reason instead of queued again.
ANALYSIS_MAX_ATTEMPTS = env_int("ANALYSIS_MAX_ATTEMPTS", 3)
# The analysis slots of the deployment (all workers' concurrency on the analysis queue); with
# C >= 2 one project runs at most C - 1 analyses at once, so one slot is always free for the
# others (compaction/fair.py). 0: this worker's own concurrency.
ANALYSIS_SLOTS = env_int("ANALYSIS_SLOTS", 0)
# Replay runs a project may have queued or running at once (single replays and experiment
# runs alike); more get 429 (API) or a form error naming the quota.
REPLAY_QUOTA_PER_PROJECT = env_int("REPLAY_QUOTA_PER_PROJECT", 200)
# Batches a project may send per minute (0: no limit); more get 429 with Retry-After. Counted
# in the cache: per process by default, shared across processes with CACHE_URL=redis://...
# In production CACHE_URL must point at Redis, or each web process counts on its own.
INGEST_RATE_LIMIT_PER_MINUTE = env_int("INGEST_RATE_LIMIT_PER_MINUTE", 1200)
_cache_url = env_str("CACHE_URL", "")
# A cache outage is not an error for a request (sessions/counters.py): limits are counted in
# the process meanwhile and the response carries X-Sawtooth-Degraded. Each call to a cache
# that hangs gives up after CACHE_SOCKET_TIMEOUT_SECONDS; once one failed, the cache is tried
# again every CACHE_RETRY_SECONDS; the outage is logged once per CACHE_OUTAGE_LOG_SECONDS.
CACHE_SOCKET_TIMEOUT_SECONDS = env_int("CACHE_SOCKET_TIMEOUT_SECONDS", 1)
CACHE_RETRY_SECONDS = env_int("CACHE_RETRY_SECONDS", 5)
CACHE_OUTAGE_LOG_SECONDS = env_int("CACHE_OUTAGE_LOG_SECONDS", 60)
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _cache_url,
            "OPTIONS": {
                "socket_connect_timeout": CACHE_SOCKET_TIMEOUT_SECONDS,
                "socket_timeout": CACHE_SOCKET_TIMEOUT_SECONDS,
            },
        }
        if _cache_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# OTLP exports handled at once per process; more get 429 with Retry-After.
OTLP_MAX_CONCURRENT_EXPORTS = env_int("OTLP_MAX_CONCURRENT_EXPORTS", 8)
# Django's own cap applies to the raw body; ours is checked after gzip is undone.
DATA_UPLOAD_MAX_MEMORY_SIZE = INGEST_MAX_BODY_BYTES + 1024 * 1024

# Celery: a broker that needs no server by default (kombu's filesystem transport under
# ./var/broker); CELERY_BROKER_URL=redis://... or amqp://... for the distributed setup.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost//")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        "polling_interval": 0.25,
    }
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # How long an unacknowledged task waits before Redis hands it to another worker.
    # Replays and analyses claim their rows, so a redelivered copy does nothing; the work of
    # a killed worker is found far sooner by its silent heartbeat (WORKER_DEAD_SECONDS).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_SECONDS", 3600)
    }
# One queue per kind of work, so bulk replays never delay the analysis of new traces. A worker
# started without -Q consumes all of them; `celery -A config worker -Q analysis` only one.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "sawtooth")
CELERY_ANALYSIS_QUEUE = env_str("CELERY_ANALYSIS_QUEUE", "analysis")
CELERY_REPLAYS_QUEUE = env_str("CELERY_REPLAYS_QUEUE", "replays")
CELERY_WEBHOOKS_QUEUE = env_str("CELERY_WEBHOOKS_QUEUE", "webhooks")
CELERY_IMPORTS_QUEUE = env_str("CELERY_IMPORTS_QUEUE", "imports")
CELERY_TASK_QUEUES = {
    name: {"routing_key": name}
    for name in (
        CELERY_TASK_DEFAULT_QUEUE,
        CELERY_ANALYSIS_QUEUE,
        CELERY_REPLAYS_QUEUE,
        CELERY_WEBHOOKS_QUEUE,
        CELERY_IMPORTS_QUEUE,
    )
}
# Tasks are routed and scheduled by name; the alerts' tasks (alerts/tasks.py) kept the names
# they had in compaction/tasks.py, so queued work and beat entries still find them.
CELERY_TASK_ROUTES = {
    "compaction.tasks.session_analyse": {"queue": CELERY_ANALYSIS_QUEUE},
    "compaction.tasks.replay_run_execute": {"queue": CELERY_REPLAYS_QUEUE},
    "compaction.tasks.stale_findings_rescan": {"queue": CELERY_REPLAYS_QUEUE},
    "compaction.tasks.webhook_deliver": {"queue": CELERY_WEBHOOKS_QUEUE},
    "sessions.tasks.import_job_run": {"queue": CELERY_IMPORTS_QUEUE},
    "compaction.tasks.alert_email_send": {"queue": CELERY_WEBHOOKS_QUEUE},
    "compaction.tasks.alerts_reevaluate_project": {"queue": CELERY_REPLAYS_QUEUE},
}
# A request must not hang on a broker that is down: the outbox row is committed already and
# the beat task sends it later, so publishing gives up fast.
CELERY_BROKER_CONNECTION_TIMEOUT = env_int("CELERY_BROKER_CONNECTION_TIMEOUT_SECONDS", 2)
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Liveness (compaction/liveness.py): a worker beats for each analysis and replay it runs every
# WORKER_HEARTBEAT_SECONDS, from a thread of its own, so a long task never stops it; running
# work silent for WORKER_DEAD_SECONDS is abandoned, and beat queues it again (it looks every
# ABANDONED_WORK_REQUEUE_EVERY_SECONDS). A killed worker's work starts again within about
# DEAD + EVERY seconds. Silence counts only while the database is up: after an outage (a pause
# of the sweep longer than 2 x EVERY) running work gets DEAD seconds from its end, so a live
# worker's is not run twice. Keep 2 x EVERY below DEAD - 2 x HEARTBEAT (4 < 6 by default).
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 2)
WORKER_DEAD_SECONDS = env_int("WORKER_DEAD_SECONDS", 10)
ABANDONED_WORK_REQUEUE_EVERY_SECONDS = env_int("ABANDONED_WORK_REQUEUE_EVERY_SECONDS", 2)
if WORKER_DEAD_SECONDS < 2 * WORKER_HEARTBEAT_SECONDS:
    # One late beat would make live work look abandoned, and it would run twice.
    raise ImproperlyConfigured(
        f"WORKER_DEAD_SECONDS={WORKER_DEAD_SECONDS} must be at least twice "
        f"WORKER_HEARTBEAT_SECONDS={WORKER_HEARTBEAT_SECONDS}"
    )
CELERY_BEAT_SCHEDULE = {
    "requeue-abandoned-work": {
        "task": "compaction.tasks.abandoned_work_requeue",
        # No "expires" to drop the sweeps that wait behind busy workers: with it, a worker
        # stopped mid-task hung in its warm shutdown (Celery 5.7, filesystem broker). The
        # pile is cheap: a sweep with nothing to do is two indexed queries.
        "schedule": ABANDONED_WORK_REQUEUE_EVERY_SECONDS,
    },
    "requeue-abandoned-imports": {
        "task": "sessions.tasks.import_jobs_requeue_abandoned",
        "schedule": ABANDONED_WORK_REQUEUE_EVERY_SECONDS,
    },
    "requeue-stuck-replays": {
        "task": "compaction.tasks.replay_runs_requeue_stuck",
        "schedule": env_int("REPLAY_REQUEUE_EVERY_SECONDS", 10),
    },
    "drain-outbox": {
        "task": "compaction.tasks.outbox_drain",
        "schedule": env_int("OUTBOX_DRAIN_EVERY_SECONDS", 5),
    },
    "requeue-stuck-analyses": {
        "task": "compaction.tasks.analyses_requeue_stuck",
        "schedule": env_int("ANALYSIS_REQUEUE_EVERY_SECONDS", 15),
    },
    "unmute-expired-alerts": {
        "task": "compaction.tasks.alerts_unmute_expired",
        "schedule": env_int("ALERT_UNMUTE_EVERY_SECONDS", 60),
    },
    "rescan-stale-findings": {
        "task": "compaction.tasks.stale_findings_rescan",
        "schedule": env_int("FINDINGS_RESCAN_EVERY_SECONDS", 60),
    },
    "purge-expired-sessions": {
        "task": "sessions.tasks.sessions_purge_expired",
        "schedule": env_int("RETENTION_PURGE_EVERY_SECONDS", 3600),
    },
}

# When no replay has started for this long, the turns of queued runs were lost (a broker that
# lost its data) and are sent again; a spare turn does nothing (compaction/fair.py).
REPLAY_RESEND_QUEUED_SECONDS = env_int("REPLAY_RESEND_QUEUED_SECONDS", 60)
# The same for analyses: waiting ones get their turns again when none has started for this
# long; and one left "running" this long by a version that did not beat for it is queued again.
ANALYSIS_STALE_SECONDS = env_int("ANALYSIS_STALE_SECONDS", 60)
# Seconds a client is told to wait (Retry-After) when the database is unreachable.
DATABASE_RETRY_AFTER_SECONDS = env_int("DATABASE_RETRY_AFTER_SECONDS", 5)
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY", "")
ANTHROPIC_MODEL = env_str("ANTHROPIC_MODEL", "claude-sonnet-4-5")
# Empty: the SDK's default endpoint. Set for a proxy or gateway in front of the Anthropic API.
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "")

# Privacy: sessions scanned by an earlier personal data detector are scanned again by the
# current one, this many per beat (privacy/rescan.py); `scan_personal_data` does them all.
FINDINGS_RESCAN_BATCH = env_int("FINDINGS_RESCAN_BATCH", 20)
# Privacy: the server secret of the keyed hash (HMAC-SHA256) that findings and subject searches
# store instead of a personal value. Empty: derived from SECRET_KEY (privacy/findings.py).
SAWTOOTH_PII_KEY = env_str("SAWTOOTH_PII_KEY", "")

# Cost in money: USD per million tokens (input, output, cache read, cache write at the
# 5-minute rate), Anthropic's list prices as of early 2026. A model matches its key, or its key
# plus a date (claude-sonnet-4-5-20250929); an unknown model has no cost, never a guessed one.
# SAWTOOTH_MODEL_PRICES (a JSON object of the same shape) adds or replaces entries.
_OPUS_4 = {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_write": 18.75}
_OPUS_4_5 = {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25}
_SONNET = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}
_HAIKU_4_5 = {"input": 1.0, "output": 5.0, "cache_read": 0.1, "cache_write": 1.25}
_HAIKU_3_5 = {"input": 0.8, "output": 4.0, "cache_read": 0.08, "cache_write": 1.0}
MODEL_PRICES: dict[str, dict[str, float]] = {
    "claude-opus-4-6": _OPUS_4_5,
    "claude-opus-4-5": _OPUS_4_5,
    "claude-opus-4-1": _OPUS_4,
    "claude-opus-4-0": _OPUS_4,
    "claude-opus-4": _OPUS_4,
    "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET,
    "claude-sonnet-4-0": _SONNET,
    "claude-sonnet-4": _SONNET,
    "claude-3-7-sonnet": _SONNET,
    "claude-3-5-sonnet": _SONNET,
    "claude-haiku-4-5": _HAIKU_4_5,
    "claude-3-5-haiku": _HAIKU_3_5,
    **env_json_object("SAWTOOTH_MODEL_PRICES", {}),
}

# Advice: no policy is recommended on fewer sessions than this (DESIGN.md "Money and sizes").
ADVICE_MIN_SESSIONS = env_int("ADVICE_MIN_SESSIONS", 10)

# Alerts: webhook deliveries retry with exponential backoff (base, 2x, 4x...), e-mail goes
# through Django's mail backend (console by default), links point at SITE_URL.
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10)
WEBHOOK_BACKOFF_SECONDS = env_int("WEBHOOK_BACKOFF_SECONDS", 30)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6)
# Webhooks reach public addresses only: a destination that is (or resolves to) a private,
# loopback, link-local, multicast or reserved address is refused when added and again at each
# delivery, unless one of these CIDRs allows it ("127.0.0.0/8,10.1.0.0/16" for a receiver on
# this host or the office network). Cloud metadata addresses are refused even then.
WEBHOOK_ALLOWED_NETWORKS = env_list("WEBHOOK_ALLOWED_NETWORKS", [])
for _network in WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"WEBHOOK_ALLOWED_NETWORKS: {_network!r} is not a network (write CIDRs such as "
            "127.0.0.0/8 or fd12:3456::/48, separated by commas)"
        ) from None
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "config.mail.MaskedConsoleEmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "sawtooth@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"mask_personal_data": {"()": "privacy.log_masking.MaskPersonalData"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["mask_personal_data"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
