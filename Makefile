# irc-proxy: `make serve` runs the proxy, `make test` runs the whole suite. Both set up everything.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DEPS_STAMP := $(VENV)/.deps-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
TEST_STAMP := $(VENV)/.test-deps-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# Debian packages the Spark end-to-end tests need to build the Iceberg runtime's shim jar, and the browser
# the console's tests drive (Playwright uses Debian's chromium, never a downloaded one).
JAVA_DEBS := libhttpclient5-java libhttpcore5-java libjarjar-java
BROWSER_DEBS := chromium
# The C load generator the HTTP benchmark rows use (benchmarks/wrk.py).
BENCH_DEBS := wrk
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=
# `make test` runs two pytest processes side by side (the machine has two CPUs): the engine lane (the Spark,
# Java, browser and client tests of tests/e2e, and a few long modules to balance it) and the main lane (everything
# else). Each lane runs its modules in order in one process, as a single run would, in its own temporary folder
# (two runs at once never share one). LANES=1 runs one process (needed when PYTEST_ARGS names test paths).
LANES ?= 2
ENGINE_LANE := tests/e2e tests/integration/test_schemathesis.py tests/integration/test_trash.py \
	tests/integration/test_maintenance_cli.py tests/integration/test_cli.py \
	tests/integration/test_replica_rollout.py tests/integration/test_glue_specifics.py \
	tests/integration/test_server_workers.py tests/integration/test_maintenance_schedule.py

.PHONY: serve test fast lint typecheck check bench bench-quick bench-deps clean system-deps docs docs-build

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(DEPS_STAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e .
	rm -f $(VENV)/.deps-* && touch $@

$(TEST_STAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e ".[test]"
	rm -f $(VENV)/.test-deps-* $(VENV)/.deps-* && touch $@ $(DEPS_STAMP)

## Start the proxy on 127.0.0.1:8181 with the embedded local catalog. CONFIG=file.toml uses a config file;
## PORT=18403 and HOST=0.0.0.0 override server.port and server.host (as `irc-proxy serve --port/--host` do).
serve: $(DEPS_STAMP)
	$(VENV)/bin/irc-proxy serve $(if $(CONFIG),--config $(CONFIG)) $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

system-deps:
	@if [ ! -f /usr/share/java/httpclient5.jar ] || [ ! -f /usr/share/java/jarjar.jar ] || [ ! -f /usr/share/java/httpcore5-h2.jar ]; then \
		echo "installing $(JAVA_DEBS) (for the Spark end-to-end tests)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(JAVA_DEBS) >/dev/null; \
	fi
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing $(BROWSER_DEBS) (for the console's browser tests)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(BROWSER_DEBS) >/dev/null; \
	fi
	@command -v java >/dev/null || { echo "java (JDK 17) is required for the Spark tests"; exit 1; }

## Install test dependencies (Python, Java pieces) and run the whole suite.
test: $(TEST_STAMP) system-deps
	$(PY) -m tests.e2e.spark_jars >/dev/null
ifeq ($(LANES),1)
	$(PY) -m pytest $(PYTEST_ARGS)
else
	@echo "engine lane: $(ENGINE_LANE) (its output follows the main lane's)"
	@lanes=$$(mktemp -d "$${TMPDIR:-/tmp}/irc-proxy-lanes.XXXXXX"); \
	( $(PY) -m pytest $(ENGINE_LANE) --basetemp=$$lanes/engines $(PYTEST_ARGS) >$$lanes/engines.log 2>&1; \
	  echo $$? >$$lanes/engines.rc ) & \
	$(PY) -m pytest $(addprefix --ignore=,$(ENGINE_LANE)) --basetemp=$$lanes/main $(PYTEST_ARGS); main=$$?; \
	wait; echo "---- engine lane ----"; cat $$lanes/engines.log; engines=$$(cat $$lanes/engines.rc); \
	echo "main lane exit $$main, engine lane exit $$engines"; rm -rf "$$lanes"; [ $$main = 0 ] && [ $$engines = 0 ]
endif

## The fast lane (CI runs it first, under 3 minutes): lint, types, unit tests and the behaviour suite on the
## embedded local catalog on SQLite only (IRC_BEHAVIOUR_BACKENDS, tests/behaviour/conftest.py). The three run
## side by side (two CPUs: ruff and mypy take one while pytest takes the other); the tests' output comes
## first, then lint's and mypy's, each under its own heading, and any failure fails the lane.
FAST_TESTS := tests/unit tests/behaviour
LINT := $(VENV)/bin/ruff check irc_proxy tests benchmarks && $(VENV)/bin/ruff format --check irc_proxy tests benchmarks
TYPECHECK := $(VENV)/bin/mypy
fast: $(TEST_STAMP)
	@logs=$$(mktemp -d "$${TMPDIR:-/tmp}/irc-proxy-fast.XXXXXX"); \
	( { $(LINT); } >$$logs/lint.log 2>&1; echo $$? >$$logs/lint.rc ) & \
	( $(TYPECHECK) >$$logs/typecheck.log 2>&1; echo $$? >$$logs/typecheck.rc ) & \
	IRC_BEHAVIOUR_BACKENDS=local-sqlite $(PY) -m pytest $(FAST_TESTS) $(PYTEST_ARGS); tests=$$?; \
	wait; for part in lint typecheck; do echo "---- $$part (exit $$(cat $$logs/$$part.rc)) ----"; \
	cat $$logs/$$part.log; done; lint=$$(cat $$logs/lint.rc); types=$$(cat $$logs/typecheck.rc); rm -rf "$$logs"; \
	echo "fast lane: tests exit $$tests, lint exit $$lint, typecheck exit $$types"; \
	[ $$tests = 0 ] && [ $$lint = 0 ] && [ $$types = 0 ]

## The documentation site (docs/, mkdocs.yml, Material theme): `make docs` serves it at http://127.0.0.1:8000 and
## rebuilds on edits; `make docs-build` builds it into site/ with --strict (a broken link or page fails; CI runs it).
docs: $(DEPS_STAMP)
	$(PIP) install --quiet -e ".[docs]"
	$(VENV)/bin/mkdocs serve -a 127.0.0.1:8000

docs-build: $(DEPS_STAMP)
	$(PIP) install --quiet -e ".[docs]"
	$(PY) -m irc_proxy.settings_doc --check
	$(VENV)/bin/mkdocs build --strict

## Run the side-by-side benchmarks: one table of ratios, benchmarks/results/latest.{json,png}.
## BENCH_ARGS="--quick" for a smoke run, BENCH_ARGS="--only local_load" for one benchmark.
bench: $(TEST_STAMP) system-deps bench-deps
	$(PIP) install --quiet -e ".[test,bench]"
	$(PY) -m tests.e2e.spark_jars >/dev/null
	$(PY) -m benchmarks.run $(BENCH_ARGS)

## The short bench lane (under 3 minutes): this working tree's HTTP and loadTable ratios against the previous
## commit's (HEAD if the tree is dirty, else HEAD~1), measured side by side in one run; fails when a ratio regresses
## by more than 15%. AGAINST=<rev> compares with another commit. Run it before landing a hot-path change.
bench-quick: $(TEST_STAMP) bench-deps
	$(PIP) install --quiet -e ".[test,bench]"
	$(PY) -m benchmarks.quick $(if $(AGAINST),--against $(AGAINST))

bench-deps:
	@command -v wrk >/dev/null || { echo "installing $(BENCH_DEBS) (the benchmarks' load generator)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(BENCH_DEBS) >/dev/null; }

lint: $(TEST_STAMP)
	$(LINT)

typecheck: $(TEST_STAMP)
	$(TYPECHECK)

check: lint typecheck test

clean:
	rm -rf $(VENV) .cache irc-proxy-data .pytest_cache .mypy_cache .ruff_cache site
