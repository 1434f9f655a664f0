# The two commands a newcomer needs: `make test` and `make demo`.
# Both build .venv with the first Python >= 3.11 they find and install everything (.[all,dev]).

PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { command -v $$p; break; }; \
	done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo lint bench clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: toolcards needs Python >= 3.11 on PATH" >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade uv >/dev/null 2>&1 || true
	@if [ -x $(BIN)/uv ]; then \
		$(BIN)/uv pip install -q --python $(BIN)/python -e '.[all,dev]'; \
	else \
		$(BIN)/python -m pip install -q -e '.[all,dev]'; \
	fi
	@touch $(STAMP)

test: $(STAMP)
	@$(BIN)/python -m toolcards.vector.assets >/dev/null || echo "warning: no MiniLM tokenizer; local-embedding tests will skip" >&2
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples
	$(BIN)/mypy --strict src
	$(BIN)/coverage erase
	$(BIN)/coverage run -m pytest -q -p no:cacheprovider
	$(BIN)/coverage combine -q
	$(BIN)/coverage report

demo: $(STAMP)
	$(BIN)/toolcards demo

bench: $(STAMP)
	@$(BIN)/python -m toolcards.vector.assets >/dev/null || echo "warning: no MiniLM tokenizer; local embeddings unavailable" >&2
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples
	$(BIN)/mypy --strict src

clean:
	rm -rf $(VENV) .coverage .coverage.* .pytest_cache .mypy_cache .ruff_cache
