# The two commands a newcomer needs: `make test` and `make demo` (`make help` lists the rest).
# Both build .venv and install everything (.[all,dev]) with PYTHON: by default the first
# Python >= 3.11 on PATH; `make test PYTHON=python3.11` (a name or a path) picks one, and a
# .venv made by another interpreter is then rebuilt. `make venv` does only that: the
# environment, every extra included, without running anything (then .venv/bin/toolcards).
# `make test` first checks the system packages the tests use (bubblewrap, ripgrep, chromium,
# PostgreSQL: scripts/system_packages.sh) and installs the missing ones when run as root with
# apt-get, else names them in one line (their tests skip). `make wheel-check` builds the wheel
# and sdist and runs the README and the docs from the wheel installed outside the repository.
# `make docs` builds the documentation site into site/ (make test builds it too, strictly).

PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { command -v $$p; break; }; \
	done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Which interpreter .venv was made from: "<version> <base prefix>" (the same for a venv and its base).
IDENTITY := import sys; print(sys.version.split()[0], sys.base_prefix)
LINT_PATHS := .  # everything ruff reads, README.md's Python blocks included

.PHONY: help test demo lint docs bench wheel-check venv clean FORCE

help:
	@echo "make test         .venv, the system packages the tests use, then lint, types and the suite"
	@echo "make demo         .venv, then the demo (offline; OPENAI_API_KEY or --model for a real LLM)"
	@echo "make venv         only the environment: .venv with every extra (.[all,dev]); then .venv/bin/toolcards"
	@echo "make lint         ruff and mypy"
	@echo "make bench        the benchmarks (python -m bench)"
	@echo "make docs         build the documentation site into site/"
	@echo "make wheel-check  build the wheel and sdist, run the README, the docs and the demo from the installed wheel"
	@echo "make clean        remove .venv and caches"
	@echo "PYTHON=python3.11 picks the interpreter (default: the first Python >= 3.11 on PATH)"

# Rewritten only when the interpreter changes, so the install below reruns only then.
$(VENV)/.python: FORCE
	@test -n "$(PYTHON)" || { echo "error: toolcards needs Python >= 3.11 on PATH, or PYTHON=..." >&2; exit 1; }
	@want="$$($(PYTHON) -c '$(IDENTITY)')" || { echo "error: PYTHON=$(PYTHON) does not run" >&2; exit 1; }; \
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "error: PYTHON=$(PYTHON) is older than 3.11" >&2; exit 1; }; \
	have="$$($(BIN)/python -c '$(IDENTITY)' 2>/dev/null)"; \
	if [ -n "$$have" ] && [ "$$have" != "$$want" ] && [ "$(origin PYTHON)" != "file" ]; then \
		echo "rebuilding $(VENV): it runs $$have, PYTHON=$(PYTHON) is $$want"; rm -rf $(VENV); have=""; \
	fi; \
	if [ -z "$$have" ]; then rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) && have="$$($(BIN)/python -c '$(IDENTITY)')"; fi; \
	[ "$$(cat $@ 2>/dev/null)" = "$$have" ] || echo "$$have" > $@

$(STAMP): pyproject.toml $(VENV)/.python
	@$(BIN)/python -m pip install -q --upgrade uv >/dev/null 2>&1 || true
	@if [ -x $(BIN)/uv ]; then \
		$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -e '.[all,dev]'; \
	else \
		$(BIN)/python -m pip install -q -e '.[all,dev]'; \
	fi
	@touch $(STAMP)

venv: $(STAMP)
	@echo "$(VENV) runs $$($(BIN)/python --version) ($$(readlink -f $(BIN)/python))"

test: venv
	@bash scripts/system_packages.sh
	@$(BIN)/toolcards fetch-models || echo "warning: the local embedding model is missing; its tests will skip" >&2
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy --strict src
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site
	$(BIN)/coverage erase
	$(BIN)/coverage run -m pytest -q -p no:cacheprovider
	$(BIN)/coverage combine -q
	$(BIN)/coverage report

demo: venv
	$(BIN)/toolcards demo

docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: venv
	@$(BIN)/toolcards fetch-models >/dev/null || echo "warning: the local embedding model is missing; its rows will say so" >&2
	$(BIN)/python -m bench

lint: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy --strict src

wheel-check: venv
	$(BIN)/python scripts/wheel_check.py

clean:
	rm -rf $(VENV) .coverage .coverage.* .pytest_cache .mypy_cache .ruff_cache dist site
