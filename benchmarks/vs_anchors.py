"""Side by side with the anchors: us, Arize Phoenix and MLflow fed the same OTLP payload.

Each system in turn is started on 127.0.0.1 (a free port, scratch data of its own), sent the
same OTLP/HTTP bytes by the same client (a few threads; each request holds whole sessions),
and measured:

- spans/s until queryable: from the first send until the product's own read API shows every
  span (Phoenix: the span count of its GraphQL API, as its UI reads it; MLflow: the traces
  listed by its trace search API, each trace arriving whole in one request that MLflow stores
  in one call; us: ``message_count`` in the sessions list, two messages per span);
- for us also spans/s until analysed: until every session's analysis is done and current
  (read from the database: polling every session's curve endpoint would load the very web
  workers being measured);
- for us also spans/s until searchable: until every message has the masked search text its
  search document is built from, and no session's analysis is queued or running (the pass
  writes that text; searchable and analysed may lag queryable by a bounded, visible amount);
- fetch latency p50/p95 over ``--fetches`` reads of one session, once all is queryable (and for
  us analysed), through each product's normal read API: Phoenix
  ``GET /v1/projects/default/spans?trace_id=`` (the spans with their attributes, as its client
  reads a trace); MLflow ``GET /api/3.0/mlflow/traces/get`` (what ``mlflow.get_trace`` calls);
  us the session detail, curve and first messages page the session page needs, one after the
  other and timed together. Every fetch also checks that the session is complete;
- peak RSS of each server's whole process tree, sampled every 0.2 s from /proc, and peak PSS
  (pages that forked workers share counted once). Ours is gunicorn plus the Celery worker;
  PostgreSQL's backends are not counted, while Phoenix and MLflow hold SQLite in-process;
- disk per 10k spans: the growth of the data directory (Phoenix, MLflow: SQLite with its WAL)
  or of ``pg_database_size`` (us) from the empty server to the end of the run;
- for us also ``us_search_document_cpu_s``: the seconds PostgreSQL takes to build the full-text
  search document of every stored message from its masked search text (timed apart after the
  run; the analysis pass built each once when it wrote that text), a share of our work that
  the anchors, which have no content search, do not pay.

Payload: ``--sessions`` conversations of ``--spans-per-session`` GenAI chat spans, one trace per
session, each span with gen_ai.operation.name, gen_ai.system, gen_ai.request.model,
gen_ai.conversation.id, gen_ai.usage.input_tokens/output_tokens and gen_ai.input.messages /
gen_ai.output.messages (JSON in the conventions' ``parts`` shape, which our door reads): a 2 KB
user message in and a 3 KB answer out; every 5th span's input is instead a 20 KB tool output
answering the call the span before made (about 100 MB at the default size). OTLP protobuf,
because Phoenix's /v1/traces accepts nothing else; all three get identical bytes. Each span's
input holds that turn's new message only, not the whole history (which would make the payload
grow with the square of the session length). Our door reads such a span, one that shares
nothing with the known context while its token count grew, as continuing the context
(sessions/importers/calls.py), so each session is one growing context:
``us_observed_compactions`` counts the compactions we inferred, and should be 0.

Setup, once, in a venv of its own (never the project's; the versions measured with):

    python3 -m venv .venv-anchors
    .venv-anchors/bin/pip install arize-phoenix==20.26.1 mlflow==3.17.2

Nothing is downloaded at run time: Phoenix runs with PHOENIX_ALLOW_EXTERNAL_RESOURCES=false and
telemetry off, MLflow with MLFLOW_DISABLE_TELEMETRY. Our side needs PostgreSQL and Redis as
benchmarks/load.py does. Run:

    .venv/bin/python benchmarks/vs_anchors.py [--sessions 200] [--spans-per-session 50]
        [--only us,phoenix,mlflow] [--repeat 1] [--anchors-venv .venv-anchors]

The last line is JSON: per system the figures above (medians over ``--repeat`` runs), the
ratios of ours to each, the versions and the load average.

(About 950 lines, over the usual 600: the payload, the three servers behind one interface and
the harness that measures them must stay together, so that every figure is taken the same way
for each product.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis
from _scratch import drop_database, free_port, fresh_database, manage
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_vs_anchors"
REDIS_URL = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
ANCHORS_VENV = os.environ.get("SAWTOOTH_ANCHORS_VENV", str(ROOT / ".venv-anchors"))
SYSTEMS = ("us", "phoenix", "mlflow")
SETUP = "python3 -m venv {venv} && {venv}/bin/pip install arize-phoenix==20.26.1 mlflow==3.17.2"

PROTOBUF = "application/x-protobuf"
MODEL = "claude-sonnet-4-5"
INPUT_BYTES = 2_000
OUTPUT_BYTES = 3_000
TOOL_OUTPUT_BYTES = 20_000
TOOL_EVERY = 5
MESSAGES_PER_SPAN = 2  # on our side: the span's one input message and its answer
POLL_SECONDS = 0.5
SAMPLE_SECONDS = 0.2
SEND_ATTEMPTS = 20
PROSE = (
    "the billing client adapter returns a charge object with amount and currency retry the "
    "invoice ledger when the webhook times out then check the refund schema migration tests"
)


# --- the payload ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    batches: list[bytes]  # ExportTraceServiceRequest protobufs, whole sessions each
    conversations: list[str]
    trace_ids: list[str]  # hex, one per conversation
    spans_per_session: int

    @property
    def spans(self) -> int:
        return len(self.conversations) * self.spans_per_session

    @property
    def megabytes(self) -> float:
        return sum(len(b) for b in self.batches) / 1e6


def _attribute(key: str, value: str | int) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


class _Text:
    """Distinct prose of a given size, cut from one pool of random words (fast to make)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        words = PROSE.split()
        self.pool = " ".join(rng.choice(words) for _ in range(60_000))

    def __call__(self, label: str, size: int) -> str:
        start = self.rng.randrange(len(self.pool) - size)
        return f"{label}: {self.pool[start : start + size - len(label) - 2]}"


def _turn(text: _Text, session: int, k: int) -> tuple[list[Any], list[Any]]:
    """Span k's input (the turn's new message) and output, in the GenAI ``parts`` shape."""
    if k % TOOL_EVERY == TOOL_EVERY - 1:
        part = {
            "type": "tool_call_response",
            "id": f"call_{session}_{k - 1}",
            "response": text(f"billing/mod_{k - 1}.py", TOOL_OUTPUT_BYTES),
        }
        inputs = [{"role": "tool", "parts": [part]}]
    else:
        inputs = [
            {"role": "user", "parts": [{"type": "text", "content": text("ask", INPUT_BYTES)}]}
        ]
    answer: list[dict[str, Any]] = [{"type": "text", "content": text("answer", OUTPUT_BYTES)}]
    calls_tool = k % TOOL_EVERY == TOOL_EVERY - 2
    if calls_tool:
        answer.append(
            {
                "type": "tool_call",
                "id": f"call_{session}_{k}",
                "name": "read_file",
                "arguments": {"path": f"billing/mod_{k}.py"},
            }
        )
    finish = "tool_call" if calls_tool else "stop"
    return inputs, [{"role": "assistant", "parts": answer, "finish_reason": finish}]


def _session_spans(
    text: _Text, session: int, conversation: str, trace_id: str, spans: int, base_ns: int
) -> list[Span]:
    out = []
    for k in range(spans):
        inputs, outputs = _turn(text, session, k)
        start = base_ns + k * 3_000_000_000
        out.append(
            Span(
                trace_id=bytes.fromhex(trace_id),
                span_id=(session * 100_000 + k + 1).to_bytes(8, "big"),
                name=f"chat {MODEL}",
                kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=start,
                end_time_unix_nano=start + 2_000_000_000,
                attributes=[
                    _attribute("gen_ai.operation.name", "chat"),
                    _attribute("gen_ai.system", "anthropic"),
                    _attribute("gen_ai.request.model", MODEL),
                    _attribute("gen_ai.conversation.id", conversation),
                    _attribute("gen_ai.usage.input_tokens", 4_000 + 1_500 * k),
                    _attribute("gen_ai.usage.output_tokens", 700),
                    _attribute("gen_ai.input.messages", json.dumps(inputs)),
                    _attribute("gen_ai.output.messages", json.dumps(outputs)),
                ],
            )
        )
    return out


def payload_build(*, sessions: int, spans_per_session: int, per_batch: int) -> Payload:
    rng = random.Random(7)
    text = _Text(rng)
    base_ns = time.time_ns() - 3_600_000_000_000  # an hour ago: recent for every retention rule
    conversations = [f"conv-{uuid.UUID(int=rng.getrandbits(128))}" for _ in range(sessions)]
    trace_ids = [f"{rng.getrandbits(128):032x}" for _ in range(sessions)]
    resource = Resource(attributes=[_attribute("service.name", "bench-agent")])
    batches = []
    for first in range(0, sessions, per_batch):
        spans = []
        for s in range(first, min(first + per_batch, sessions)):
            spans += _session_spans(
                text, s, conversations[s], trace_ids[s], spans_per_session, base_ns + s * 10**9
            )
        request = ExportTraceServiceRequest(
            resource_spans=[
                ResourceSpans(
                    resource=resource,
                    scope_spans=[ScopeSpans(scope=InstrumentationScope(name="bench"), spans=spans)],
                )
            ]
        )
        batches.append(request.SerializeToString())
    return Payload(batches, conversations, trace_ids, spans_per_session)


# --- processes and memory ------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # exited while we looked
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the name may hold spaces and ')'
        out.setdefault(parent, []).append(int(entry.name))
    return out


def process_tree(roots: list[int]) -> list[int]:
    children = _children()
    out: list[int] = []
    todo = list(roots)
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _rss_pss(pid: int) -> tuple[int, int]:
    """Resident and proportional set size in bytes (0, 0 if it has exited)."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return rss, pss


class TreeMemory(threading.Thread):
    """The peak RSS and PSS, summed over every process under the roots, sampled on a timer."""

    def __init__(self, roots: list[int]) -> None:
        super().__init__(daemon=True)
        self.roots = roots
        self.peak_rss = self.peak_pss = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(SAMPLE_SECONDS):
            sizes = [_rss_pss(pid) for pid in process_tree(self.roots)]
            self.peak_rss = max(self.peak_rss, sum(rss for rss, _ in sizes))
            self.peak_pss = max(self.peak_pss, sum(pss for _, pss in sizes))

    def stop(self) -> None:
        self.halt.set()
        self.join()


def spawn(
    command: list[str], *, env: dict[str, str], cwd: Path, log: Path
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server and whatever it forked that outlives it."""
    tree = process_tree([process.pid])
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    for pid in tree[1:]:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    # the log goes with the scratch directory: show its end here
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    sys.exit(f"{url} did not come up within {seconds:.0f} s; the end of its log:\n{tail}")


def _allocated(path: Path) -> int:
    try:
        return path.stat().st_blocks * 512
    except FileNotFoundError:
        return 0  # a WAL or journal removed while we walked


def directory_bytes(path: Path) -> int:
    """Bytes allocated on disk under path, as du counts them."""
    return sum(
        _allocated(Path(folder, name)) for folder, _, names in os.walk(path) for name in names
    )


# --- the systems -------------------------------------------------------------------------


class System:
    """One product under test: started, fed, read and stopped by the same harness."""

    name = ""

    def start(self, data: Path, logs: Path) -> None:
        raise NotImplementedError

    def roots(self) -> list[int]:
        raise NotImplementedError

    def otlp(self) -> tuple[str, dict[str, str]]:
        raise NotImplementedError

    def queryable_spans(self, payload: Payload) -> int:
        raise NotImplementedError

    def fetch(self, http: httpx.Client, payload: Payload, index: int) -> bool:
        """Read session ``index`` as its page would; True when it is complete."""
        raise NotImplementedError

    def disk_bytes(self) -> int:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class Us(System):
    name = "us"

    def __init__(
        self,
        *,
        web_workers: int,
        web_threads: int,
        worker_concurrency: int,
        worker_pool: str,
        worker_nice: int = 0,
    ) -> None:
        self.worker_nice = worker_nice
        self.web_workers = web_workers
        self.web_threads = web_threads
        self.worker_concurrency = worker_concurrency
        self.worker_pool = worker_pool
        self.processes: list[subprocess.Popen[bytes]] = []
        self.prefix = f"vs-anchors-{uuid.uuid4().hex[:8]}"

    def start(self, data: Path, logs: Path) -> None:
        self.database_url = fresh_database(DB_NAME)
        self.env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "SAWTOOTH_PRODUCTION": "0",  # a local benchmark server, on this install's own key
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "CELERY_BROKER_URL": REDIS_URL,
            "CACHE_URL": REDIS_URL,
            "CELERY_TASK_DEFAULT_QUEUE": self.prefix,
            "CELERY_ANALYSIS_QUEUE": f"{self.prefix}.analysis",
            "CELERY_REPLAYS_QUEUE": f"{self.prefix}.replays",
            "CELERY_WEBHOOKS_QUEUE": f"{self.prefix}.webhooks",
        }
        manage(self.env, "migrate", "--no-input")
        manage(self.env, "createproject", "bench")
        self.key = manage(self.env, "createapikey", "bench").splitlines()[-1]
        self.base = f"http://127.0.0.1:{free_port()}"
        log = logs / "us.log"
        web = [
            *(sys.executable, "-m", "gunicorn", "config.wsgi:application"),
            *("--bind", self.base.removeprefix("http://"), "--workers", str(self.web_workers)),
            *("--threads", str(self.web_threads), "--log-level", "warning"),
        ]
        worker = [
            *(("nice", "-n", str(self.worker_nice)) if self.worker_nice else ()),
            *(sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING"),
            *(
                "-Q",
                f"{self.prefix}.analysis,{self.prefix}",
                "--hostname",
                f"{self.prefix}@localhost",
            ),
            *(
                "--concurrency",
                str(self.worker_concurrency),
                "--pool",
                self.worker_pool,
                "--without-gossip",
                "--without-mingle",
            ),
        ]
        self.processes = [spawn(cmd, env=self.env, cwd=ROOT, log=log) for cmd in (web, worker)]
        wait_until_up(f"{self.base}/healthz", self.processes[0], log, 60)
        self.api = httpx.Client(
            base_url=f"{self.base}/api/v1",
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=60,
        )

    def roots(self) -> list[int]:
        return [p.pid for p in self.processes]

    def otlp(self) -> tuple[str, dict[str, str]]:
        return f"{self.base}/v1/traces", {"Authorization": f"Bearer {self.key}"}

    def _sessions(self) -> Iterator[dict[str, Any]]:
        offset = 0
        while True:
            page = self.api.get("/sessions", params={"offset": offset, "limit": 1000})
            page.raise_for_status()
            sessions = page.json()["sessions"]
            yield from sessions
            offset += len(sessions)
            if not sessions or offset >= page.json()["count"]:
                return

    def queryable_spans(self, payload: Payload) -> int:
        return sum(int(s["message_count"]) for s in self._sessions()) // MESSAGES_PER_SPAN

    def _row(self, query: str) -> tuple[Any, ...]:
        """One row of a query on our database, read directly (not through the web workers
        being measured)."""
        with psycopg.connect(self.database_url.replace("postgres://", "postgresql://")) as db:
            row = db.execute(query).fetchone()
        assert row is not None, query
        return tuple(row)

    def analysed_sessions(self) -> int:
        """Sessions whose analysis has finished (done or failed) for their latest batch."""
        return int(
            self._row(
                "SELECT count(*) FROM compaction_sessionanalysis"
                " WHERE status IN ('done', 'failed')"
                " AND analysed_generation >= requested_generation"
            )[0]
        )

    def searchable_spans(self) -> int:
        """Spans (two messages each) whose messages search can find, counted only once every
        session's analysis is current: the pass writes each message's masked ``search_text``,
        from which PostgreSQL builds the stored search document, so a message with none is one
        search does not reach yet (the search page says how many)."""
        searchable, waiting = self._row(
            "SELECT"
            " (SELECT count(*) FROM traces_message WHERE search_text IS NOT NULL),"
            " (SELECT count(*) FROM compaction_sessionanalysis"
            "  WHERE queued_at IS NOT NULL OR status = 'running'"
            "  OR analysed_generation < requested_generation)"
        )
        return int(searchable) // MESSAGES_PER_SPAN if waiting == 0 else 0

    def analysis_failures(self) -> int:
        return int(
            self._row("SELECT count(*) FROM compaction_sessionanalysis WHERE status = 'failed'")[0]
        )

    def observed_compactions(self) -> int:
        return sum(int(s["compaction_count"]) for s in self._sessions())

    def fetch(self, http: httpx.Client, payload: Payload, index: int) -> bool:
        path = f"{self.base}/api/v1/sessions/{payload.conversations[index]}"
        headers = {"Authorization": f"Bearer {self.key}"}
        detail = http.get(path, headers=headers)
        curve = http.get(f"{path}/curve", headers=headers)
        messages = http.get(f"{path}/messages", params={"limit": 100}, headers=headers)
        for response in (detail, curve, messages):
            response.raise_for_status()
        expected = payload.spans_per_session * MESSAGES_PER_SPAN
        return (
            detail.json()["message_count"] == expected
            and len(messages.json()["messages"]) == min(expected, 100)
            and curve.json()["status"] == "done"
        )

    def disk_bytes(self) -> int:
        return int(self._row("SELECT pg_database_size(current_database())")[0])

    def search_document_seconds(self) -> float:
        """What building the messages' search documents costs PostgreSQL, once the run is
        over: the stored column's own expression (sessions/search_sql.py) over every message,
        timed (best of 3). Part of the analysis this run measured (the pass writes the masked
        ``search_text`` the column is built from), set apart to show its share."""
        sys.path.insert(0, str(ROOT))
        from sessions.search_sql import MASKED_DOCUMENT

        query = f"SELECT sum(length({MASKED_DOCUMENT})) FROM traces_message"  # noqa: S608 (our own constant)
        best = float("inf")
        with psycopg.connect(self.database_url.replace("postgres://", "postgresql://")) as db:
            for _ in range(3):
                started = time.perf_counter()
                db.execute(query).fetchone()
                best = min(best, time.perf_counter() - started)
        return round(best, 2)

    def stop(self) -> None:
        for process in self.processes:
            stop(process)
        broker = redis.Redis.from_url(REDIS_URL)
        # the queues and kombu's bindings of them (``_kombu.binding.<queue>``)
        names = list(broker.scan_iter(f"*{self.prefix}*"))
        if names:
            broker.delete(*names)
        drop_database(DB_NAME)


class Phoenix(System):
    name = "phoenix"

    def __init__(self, venv: Path) -> None:
        self.venv = venv
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, data: Path, logs: Path) -> None:
        self.base = f"http://127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(data),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": self.base.rsplit(":", 1)[1],
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # no WASM or docs fetched at startup
        }
        log = logs / "phoenix.log"
        self.data = data
        self.process = spawn(
            [str(self.venv / "bin" / "phoenix"), "serve"], env=env, cwd=data, log=log
        )
        wait_until_up(f"{self.base}/healthz", self.process, log, 180)

    def roots(self) -> list[int]:
        return [self.process.pid] if self.process else []

    def otlp(self) -> tuple[str, dict[str, str]]:
        return f"{self.base}/v1/traces", {}

    def queryable_spans(self, payload: Payload) -> int:
        query = "{ projects { edges { node { recordCount } } } }"
        response = httpx.post(f"{self.base}/graphql", json={"query": query}, timeout=60)
        response.raise_for_status()
        edges = response.json()["data"]["projects"]["edges"]
        return sum(int(edge["node"]["recordCount"]) for edge in edges)

    def fetch(self, http: httpx.Client, payload: Payload, index: int) -> bool:
        response = http.get(
            f"{self.base}/v1/projects/default/spans",
            params={"trace_id": payload.trace_ids[index], "limit": 1000},
        )
        response.raise_for_status()
        return len(response.json()["data"]) == payload.spans_per_session

    def disk_bytes(self) -> int:
        return directory_bytes(self.data)

    def stop(self) -> None:
        if self.process:  # None when it failed to start: that error is the one to see
            stop(self.process)


class MLflow(System):
    name = "mlflow"

    def __init__(self, venv: Path) -> None:
        self.venv = venv
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, data: Path, logs: Path) -> None:
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
        command = [
            *(
                str(self.venv / "bin" / "mlflow"),
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ),
            *("--backend-store-uri", f"sqlite:///{data}/mlflow.db"),
            *("--default-artifact-root", str(data / "artifacts")),
            *("--artifacts-destination", str(data / "mlartifacts")),
        ]
        log = logs / "mlflow.log"
        self.data = data
        self.process = spawn(command, env=env, cwd=data, log=log)
        wait_until_up(f"{self.base}/health", self.process, log, 180)
        created = httpx.post(
            f"{self.base}/api/2.0/mlflow/experiments/create", json={"name": "vs-anchors"}
        )
        created.raise_for_status()
        self.experiment_id = str(created.json()["experiment_id"])

    def roots(self) -> list[int]:
        return [self.process.pid] if self.process else []

    def otlp(self) -> tuple[str, dict[str, str]]:
        return f"{self.base}/v1/traces", {"x-mlflow-experiment-id": self.experiment_id}

    def queryable_spans(self, payload: Payload) -> int:
        traces = 0
        token = None
        while True:
            body: dict[str, Any] = {
                "locations": [
                    {
                        "type": "MLFLOW_EXPERIMENT",
                        "mlflow_experiment": {"experiment_id": self.experiment_id},
                    }
                ],
                "max_results": 500,
            }
            if token:
                body["page_token"] = token
            response = httpx.post(
                f"{self.base}/api/3.0/mlflow/traces/search", json=body, timeout=60
            )
            response.raise_for_status()
            answer = response.json()
            traces += len(answer.get("traces", []))
            token = answer.get("next_page_token")
            if not token:
                return traces * payload.spans_per_session

    def fetch(self, http: httpx.Client, payload: Payload, index: int) -> bool:
        response = http.get(
            f"{self.base}/api/3.0/mlflow/traces/get",
            params={"trace_id": f"tr-{payload.trace_ids[index]}"},
        )
        response.raise_for_status()
        return len(response.json()["trace"]["spans"]) == payload.spans_per_session

    def disk_bytes(self) -> int:
        return directory_bytes(self.data)

    def stop(self) -> None:
        if self.process:  # None when it failed to start: that error is the one to see
            stop(self.process)


# --- one measured run ------------------------------------------------------------------------


def _rejected(response: httpx.Response) -> int:
    if not response.headers.get("content-type", "").startswith(PROTOBUF):
        return 0
    answer = ExportTraceServiceResponse()
    answer.ParseFromString(response.content)
    return int(answer.partial_success.rejected_spans)


def _post_each(url: str, headers: dict[str, str], bodies: list[bytes]) -> tuple[int, int]:
    """Send bodies in order as an OTLP exporter does (429/503 and lost connections retried
    after Retry-After); returns (retries, spans rejected)."""
    retries = rejected = 0
    with httpx.Client(headers={**headers, "Content-Type": PROTOBUF}, timeout=300) as http:
        for body in bodies:
            for _ in range(SEND_ATTEMPTS):
                try:
                    response = http.post(url, content=body)
                except httpx.TransportError:
                    retries += 1
                    time.sleep(1)
                    continue
                if response.status_code in (429, 503):
                    retries += 1
                    time.sleep(float(response.headers.get("Retry-After", "1")))
                    continue
                response.raise_for_status()
                rejected += _rejected(response)
                break
            else:
                raise RuntimeError(f"{url}: a batch was refused {SEND_ATTEMPTS} times")
    return retries, rejected


def _watch(read: Callable[[], int], target: int, started: float, timeout: float) -> float | None:
    """Seconds from ``started`` until ``read()`` reaches target; None if it never does."""
    while time.perf_counter() - started < timeout:
        try:
            if read() >= target:
                return time.perf_counter() - started
        except httpx.HTTPError:
            pass  # a busy server answering late is polled again
        time.sleep(POLL_SECONDS)
    return None


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _fetches(system: System, payload: Payload, count: int) -> tuple[list[float], int]:
    order = list(range(len(payload.conversations)))
    random.Random(11).shuffle(order)
    latencies: list[float] = []
    incomplete = 0
    with httpx.Client(timeout=60) as http:
        for n in range(count):
            started = time.perf_counter()
            complete = system.fetch(http, payload, order[n % len(order)])
            latencies.append((time.perf_counter() - started) * 1000)
            incomplete += not complete
    return latencies, incomplete


@contextmanager
def _running(system: System) -> Iterator[Path]:
    scratch = Path(tempfile.mkdtemp(prefix=f"vs-anchors-{system.name}-"))
    (scratch / "data").mkdir()
    try:
        system.start(scratch / "data", scratch)
        yield scratch
    finally:
        system.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _rate(spans: int, seconds: float | None) -> float | None:
    return round(spans / seconds, 1) if seconds else None


def measure(system: System, payload: Payload, args: argparse.Namespace) -> dict[str, Any]:
    """One system, fresh: send, wait until queryable (and analysed), fetch, size."""
    with _running(system):
        memory = TreeMemory(system.roots())
        memory.start()
        disk_before = system.disk_bytes()
        url, headers = system.otlp()
        shares = [payload.batches[i :: args.clients] for i in range(args.clients)]
        started = time.perf_counter()
        with ThreadPoolExecutor(args.clients + 2) as pool:
            queryable = pool.submit(
                _watch,
                lambda: system.queryable_spans(payload),
                payload.spans,
                started,
                args.timeout,
            )
            analysed = searchable = None
            if isinstance(system, Us):
                sessions = len(payload.conversations)
                analysed = pool.submit(
                    _watch, system.analysed_sessions, sessions, started, args.timeout
                )
                searchable = pool.submit(
                    _watch, system.searchable_spans, payload.spans, started, args.timeout
                )
            sent = list(pool.map(lambda bodies: _post_each(url, headers, bodies), shares))
            sent_seconds = time.perf_counter() - started
            queryable_seconds = queryable.result()
            analysed_seconds = analysed.result() if analysed else None
            searchable_seconds = searchable.result() if searchable else None
        latencies, incomplete = _fetches(system, payload, args.fetches)
        disk_grown = system.disk_bytes() - disk_before
        memory.stop()
        p = system.name
        figures: dict[str, Any] = {
            f"{p}_sent_spans_per_s": _rate(payload.spans, sent_seconds),
            f"{p}_queryable_spans_per_s": _rate(payload.spans, queryable_seconds),
            f"{p}_fetch_p50_ms": round(statistics.median(latencies), 1),
            f"{p}_fetch_p95_ms": round(_percentile(latencies, 0.95), 1),
            f"{p}_fetch_incomplete": incomplete,
            f"{p}_peak_rss_mb": round(memory.peak_rss / 1e6),
            f"{p}_peak_pss_mb": round(memory.peak_pss / 1e6),
            f"{p}_disk_mb_per_10k_spans": round(disk_grown / 1e6 / payload.spans * 10_000, 1),
            f"{p}_retries": sum(r for r, _ in sent),
            f"{p}_rejected_spans": sum(r for _, r in sent),
        }
        if isinstance(system, Us):
            figures["us_analysed_spans_per_s"] = _rate(payload.spans, analysed_seconds)
            figures["us_searchable_spans_per_s"] = _rate(payload.spans, searchable_seconds)
            figures["us_analysis_failed"] = system.analysis_failures()
            figures["us_observed_compactions"] = system.observed_compactions()
            figures["us_search_document_cpu_s"] = system.search_document_seconds()
        return figures


# --- the report ------------------------------------------------------------------------------


def _median(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    if not known:
        return None
    middle = statistics.median(known)
    return round(middle, 1) if isinstance(middle, float) else middle


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    return round(ours / theirs, 2) if ours and theirs else None


def ratios(figures: dict[str, Any], anchors: list[str]) -> dict[str, Any]:
    """Ours over theirs: above 1 is better for rates, below 1 for latency, memory and disk."""
    out: dict[str, Any] = {}
    for a in anchors:
        theirs_rate = figures.get(f"{a}_queryable_spans_per_s")
        out[f"ratio_us_vs_{a}_queryable"] = _ratio(
            figures.get("us_queryable_spans_per_s"), theirs_rate
        )
        out[f"ratio_us_analysed_vs_{a}_queryable"] = _ratio(
            figures.get("us_analysed_spans_per_s"), theirs_rate
        )
        out[f"ratio_us_searchable_vs_{a}_queryable"] = _ratio(
            figures.get("us_searchable_spans_per_s"), theirs_rate
        )
        for name, key in (
            ("fetch_p95", "fetch_p95_ms"),
            ("peak_rss", "peak_rss_mb"),
            ("disk", "disk_mb_per_10k_spans"),
        ):
            out[f"ratio_us_vs_{a}_{name}"] = _ratio(
                figures.get(f"us_{key}"), figures.get(f"{a}_{key}")
            )
    return out


COLUMNS = (
    ("queryable/s", "queryable_spans_per_s"),
    ("analysed/s", "analysed_spans_per_s"),
    ("searchable/s", "searchable_spans_per_s"),
    ("fetch p50 ms", "fetch_p50_ms"),
    ("fetch p95 ms", "fetch_p95_ms"),
    ("peak RSS MB", "peak_rss_mb"),
    ("peak PSS MB", "peak_pss_mb"),
    ("disk MB/10k", "disk_mb_per_10k_spans"),
)
# The targets, ratios to MLflow taken in the same run so that no machine decides them, and two
# limits: (figure, limit, True when the figure must reach the limit)
TARGETS = (
    ("ratio_us_vs_mlflow_queryable", 2.0, True),
    ("ratio_us_searchable_vs_mlflow_queryable", 1.5, True),
    ("us_fetch_p95_ms", 50, False),
    ("us_peak_rss_mb", 300, False),
)


def print_table(report: dict[str, Any], names: list[str]) -> None:
    print(f"{'':8}" + "".join(f"{title:>14}" for title, _ in COLUMNS))
    for name in names:
        cells = [report.get(f"{name}_{key}") for _, key in COLUMNS]
        print(f"{name:8}" + "".join(f"{'-' if c is None else c:>14}" for c in cells))
    for key, limit, at_least in TARGETS:
        if key in report:
            value = report[key]
            met = value is not None and (value >= limit if at_least else value <= limit)
            sign = ">=" if at_least else "<="
            print(f"target {key} {sign} {limit}: {value} ({'met' if met else 'NOT met'})")


def anchor_versions(venv: Path) -> dict[str, str]:
    script = "import importlib.metadata as m;print(m.version('arize-phoenix'), m.version('mlflow'))"
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], check=True, capture_output=True, text=True
    )
    phoenix, mlflow = found.stdout.split()
    return {"phoenix_version": phoenix, "mlflow_version": mlflow}


def _systems(args: argparse.Namespace) -> list[System]:
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(chosen) - set(SYSTEMS)
    if unknown:
        sys.exit(f"--only: unknown system(s) {', '.join(sorted(unknown))}; choose from {SYSTEMS}")
    venv = Path(args.anchors_venv).resolve()  # the servers run in their own directory
    if {"phoenix", "mlflow"} & set(chosen) and not (
        (venv / "bin" / "phoenix").exists() and (venv / "bin" / "mlflow").exists()
    ):
        sys.exit(
            f"no Phoenix and MLflow in {venv}; create that venv (never the project's) with\n"
            f"    {SETUP.format(venv=venv)}\n"
            "or pass --anchors-venv PATH, or run --only us"
        )
    makers: dict[str, Callable[[], System]] = {
        "us": lambda: Us(
            web_workers=args.web_workers,
            web_threads=args.web_threads,
            worker_concurrency=args.worker_concurrency,
            worker_pool=args.worker_pool,
            worker_nice=args.worker_nice,
        ),
        "phoenix": lambda: Phoenix(venv),
        "mlflow": lambda: MLflow(venv),
    }
    return [makers[name]() for name in chosen]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--spans-per-session", type=int, default=50)
    parser.add_argument(
        "--only", default=",".join(SYSTEMS), help="comma-separated: us,phoenix,mlflow"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per system; medians reported")
    parser.add_argument(
        "--anchors-venv",
        default=ANCHORS_VENV,
        help="venv holding arize-phoenix and mlflow (default $SAWTOOTH_ANCHORS_VENV or "
        f".venv-anchors beside the repo); create it with: {SETUP.format(venv='PATH')}",
    )
    parser.add_argument("--clients", type=int, default=4, help="sending threads")
    parser.add_argument("--sessions-per-batch", type=int, default=2)
    parser.add_argument("--fetches", type=int, default=200)
    # The default layout, for this 2-core size: one gunicorn process of 4 threads, and one
    # Celery process running 2 tasks on threads (while one waits on PostgreSQL the other
    # computes) at nice 10, so that the web's requests come first and the analysis takes what
    # they leave. --repeat 3 in one sitting at 77af840, queryable and searchable spans/s: at
    # nice 10, 1,002 and 483 (MLflow 551); at nice 0, 697 and 403 (MLflow 497); all at 322 to
    # 325 MB. Single runs of the solo pool: about 30% fewer searchable. The price of nice:
    # under a load that keeps the web busy without a pause the worker gets a fraction of a
    # core, so its lag grows faster while the load lasts (benchmarks/load.py: 26.6 s at the
    # end of 60 s, against 13.5 s at nice 0) and is back under 5 s within about 11 s after.
    parser.add_argument("--web-workers", type=int, default=1, help="our gunicorn workers")
    parser.add_argument("--web-threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="our Celery worker")
    parser.add_argument(
        "--worker-pool",
        default="threads",
        choices=("prefork", "solo", "threads"),
        help="our Celery pool (threads and solo: tasks run in the worker's own process)",
    )
    parser.add_argument(
        "--worker-nice",
        type=int,
        default=10,
        help="run our Celery worker under nice -n N (the web's requests first, on a shared host)",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait per system")
    args = parser.parse_args()

    systems = _systems(args)
    load_start = os.getloadavg()[0]
    payload = payload_build(
        sessions=args.sessions,
        spans_per_session=args.spans_per_session,
        per_batch=args.sessions_per_batch,
    )
    runs: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        run: dict[str, Any] = {}
        for system in systems:
            measured = measure(system, payload, args)
            print(f"{system.name}: {json.dumps(measured)}", file=sys.stderr)
            run.update(measured)
        runs.append(run)
    figures = {key: _median([run[key] for run in runs]) for key in runs[0]}
    anchors = [s.name for s in systems if s.name != "us"]
    report: dict[str, Any] = {
        "spans": payload.spans,
        "sessions": args.sessions,
        "spans_per_session": args.spans_per_session,
        "payload_mb": round(payload.megabytes, 1),
        "encoding": "otlp-protobuf",
        "batches": len(payload.batches),
        "clients": args.clients,
        "repeat": args.repeat,
        "us_web_workers": args.web_workers,
        "us_worker_concurrency": args.worker_concurrency,
        "us_web_threads": args.web_threads,
        "us_worker_pool": args.worker_pool,
        "us_worker_nice": args.worker_nice,
        **figures,
        **(ratios(figures, anchors) if "us" in args.only and anchors else {}),
        **(anchor_versions(Path(args.anchors_venv).resolve()) if anchors else {}),
        "loadavg_1m_start": round(load_start, 2),
        "loadavg_1m_end": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    print_table(report, [s.name for s in systems])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
