# The two commands of the README:
#   make demo   build memories for a sample conversation offline and open the app over them
#   make test   run the whole test suite (unit, contract, integration with the local model, notebooks, browser)
.PHONY: setup demo test bench app browser

VENV := .venv
PY := $(VENV)/bin/python

setup:
	bash scripts/setup_env.sh

browser:
	bash scripts/install_browser.sh

demo: setup
	$(VENV)/bin/workbench demo

test: setup browser
	$(PY) -m pytest -q

bench: setup browser
	$(VENV)/bin/workbench bench

app: setup
	$(VENV)/bin/workbench app
