"""Shared fixtures: project sample data, the team's dataset copies (skipped when absent), fakes."""
from __future__ import annotations

from pathlib import Path

import pytest

from workbench.data import load_sample
from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO_DEV = SHARED_DATA / "locomo" / "locomo10_dev.json"
LME_DEV = SHARED_DATA / "longmemeval" / "longmemeval_oracle_dev.json"


@pytest.fixture(scope="session")
def tiny_conv():
    return load_sample("tiny_conversation")[0]


@pytest.fixture(scope="session")
def sample_data():
    return load_sample()


@pytest.fixture
def auto_llm():
    """Answers every call with a minimal schema-valid reply."""
    return ScriptedLLM([], default="auto")


@pytest.fixture
def hash_embedder():
    return HashEmbedder(dim=128)


@pytest.fixture(scope="session")
def locomo_dev_path():
    if not LOCOMO_DEV.exists():
        pytest.skip("../shared/data/locomo not present")
    return LOCOMO_DEV


@pytest.fixture(scope="session")
def lme_dev_path():
    if not LME_DEV.exists():
        pytest.skip("../shared/data/longmemeval not present")
    return LME_DEV
