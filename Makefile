# Sawtooth: `make demo` to try it, `make test` to run the whole suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install demo test lint format bench benchmarks vs-anchors clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# Web on $(HOST):$(PORT) (`make demo PORT=8001 HOST=0.0.0.0`) plus two single-slot Celery workers
# (analyses and replays with beat; webhooks and e-mail) on the embedded defaults: SQLite and a
# filesystem broker under ./var/. One line per step; the steps' output goes to $(DEMO_LOG) and
# its end is shown when a step fails. The login is the last line. Ctrl-C stops all three.
VAR_DIR := $(or $(SAWTOOTH_VAR_DIR),var)
DEMO_LOG := $(VAR_DIR)/demo.log
DEMO_URL := http://$(HOST):$(PORT)/
demo_step = { $(1); } >>$(DEMO_LOG) 2>&1 || { \
	echo "      failed. The end of $(DEMO_LOG):"; tail -n 30 $(DEMO_LOG); exit 1; }

demo:
	@mkdir -p $(VAR_DIR) && : > $(DEMO_LOG)
	@echo "[1/4] Python packages in $(VENV) (a few minutes the first time; log: $(DEMO_LOG))"
	@$(call demo_step,$(MAKE) --no-print-directory install)
	@echo "[2/4] Database tables (migrate)"
	@$(call demo_step,$(PY) manage.py migrate --no-input)
	@echo "[3/4] Demo login and example traces"
	@$(call demo_step,$(PY) manage.py demo_setup --url $(DEMO_URL))
	@echo "[4/4] Web server and two workers"
	@login=$$(grep '^Log in at ' $(DEMO_LOG) | tail -n 1); \
		SITE_URL=$(DEMO_URL) $(PY) manage.py rundemo $(HOST):$(PORT) --login "$$login"

# The whole suite. On PostgreSQL when DATABASE_URL is set, otherwise on SQLite.
test: install
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports --no-logo

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The fast benchmarks at small sizes, each figure against benchmarks/baselines.json: fails
# when one is over 3x slower. `$(PY) benchmarks/guard.py --update` rewrites the baselines.
bench: install
	$(PY) benchmarks/guard.py

# Every benchmark at its full default size (minutes); prints the figures, judges nothing.
benchmarks: install
	@for b in benchmarks/[!_]*.py; do \
		case "$$b" in benchmarks/guard.py|benchmarks/vs_anchors.py) continue;; esac; \
		echo "== $$b"; $(PY) $$b || exit 1; \
	done

# Us beside Arize Phoenix and MLflow on one OTLP payload (about 10 minutes). They live in their
# own venv, never this one: benchmarks/vs_anchors.py prints how to create it when it is missing.
vs-anchors: install
	$(PY) benchmarks/vs_anchors.py

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
