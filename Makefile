# assay: `make demo` (the embedded stack and a real eval run), `make test` (every test).
# Both set up a Python 3.12 virtualenv in .venv first: the Lambda runtime follows the local
# Python, and on 3.11 `chalice package` silently ships no scipy.

VENV := .venv
PY := $(VENV)/bin/python
PY312 := $(shell for c in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /root/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	if [ -x "$$(command -v $$c 2>/dev/null)" ] && $$c -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then command -v $$c; break; fi; done)

.PHONY: setup lock browser demo dev lint test test-fast bench clean

setup: $(VENV)/.installed

# requirements.lock pins every package (and pip itself) at the versions CI tested; `make setup`
# installs exactly those. `make lock` resolves it again from pyproject.toml's ranges, on purpose.
$(VENV)/.installed: pyproject.toml requirements.lock
	@if [ -z "$(PY312)" ]; then \
		echo "assay needs Python 3.12 (found none: tried python3.12 and ~/.pyenv/versions/3.12*)."; \
		echo "Install it (e.g. 'pyenv install 3.12') and run make again."; exit 1; fi
	@if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then \
		rm -rf $(VENV); $(PY312) -m venv $(VENV); fi
	$(PY) -m pip install --quiet -c requirements.lock pip  # chalice 1.34 requires pip<26.3
	$(PY) -m pip install --quiet -c requirements.lock -e '.[local,dev]'  # moto is the local extra
	@touch $@

lock: setup
	$(VENV)/bin/uv pip compile pyproject.toml --extra local --extra dev --extra docs \
		--python-version 3.12 --universal --upgrade --quiet --custom-compile-command "make lock" \
		-o requirements.lock
	@echo "requirements.lock resolved again: run make setup and make test before committing it"

demo: setup
	$(VENV)/bin/assay demo $(ARGS)

dev: setup
	$(VENV)/bin/assay dev $(ARGS)

lint: setup
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

# The console's browser tests drive Debian's Chromium (never a browser download); installed once.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing Debian's chromium for the console's browser tests"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null \
		|| { $(SUDO) apt-get update -q >/dev/null && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null; }; \
	fi

test: lint browser
	$(PY) -m pytest $(ARGS)

test-fast: lint
	$(PY) -m pytest -m "not e2e and not browser" -n 2 $(ARGS)

bench: setup
	$(PY) -m bench.pipeline $(ARGS)

clean:
	rm -rf $(VENV) .assay .pytest_cache .mypy_cache .ruff_cache test-output
