# The two commands a newcomer needs: `make test` and `make demo`.
# Both build .venv and install everything (.[all,dev]) with PYTHON: by default the first
# Python >= 3.11 on PATH; `make test PYTHON=python3.11` (a name or a path) picks one, and a
# .venv made by another interpreter is then rebuilt. `make wheel-check` builds the wheel and
# sdist and runs the README and the docs from the wheel installed outside the repository.
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

.PHONY: test demo lint docs bench wheel-check venv clean FORCE

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
