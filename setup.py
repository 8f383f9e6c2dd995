"""Packaging beyond what pyproject.toml can say: the top-level ``sample_data/`` folder (it stays at
the top of the checkout) is also shipped inside the wheel as ``workbench/sample_data``, where
``workbench.data.sample_dir`` finds it through ``importlib.resources`` after a non-editable install.
Everything else about the project is in pyproject.toml.
"""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["workbench", "workbench.*", "widgets", "widgets.*"])
    + ["workbench.sample_data", "workbench.sample_data.cassettes", "workbench.sample_data.cassettes.gallery",
       "workbench.sample_data.labels"],
    package_dir={"workbench.sample_data": "sample_data"},
    # Data files beside the code in every package (the MiniLM tokenizer, the app's JS/CSS, JSON tables,
    # the entity graph's page template).
    package_data={"": ["*.json", "*.txt", "*.js", "*.css"], "workbench.sample_data": ["*.md"],
                  "workbench.methods": ["calibrations/*.json"], "widgets": ["templates/*.html"],
                  "workbench.sample_data.cassettes": ["*.jsonl"],
                  # the mechanism gallery's recordings (scripts/record_gallery.py)
                  "workbench.sample_data.cassettes.gallery": ["*.jsonl"],
                  # labelled real answers, their protocol and licence notice (workbench.eval.labels)
                  "workbench.sample_data.labels": ["*.jsonl", "*.md", "*.txt", "*.json"]},
)
