"""Data model and loaders: LoCoMo, LongMemEval and the project's own sample conversations."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from .locomo import CATEGORY_NAMES, load_locomo
from .longmemeval import load_longmemeval
from .types import QA, Conversation, Dataset, DatasetError, Session, Turn


def sample_dir() -> Path:
    """The project's ``sample_data`` folder: inside the installed package after a wheel install
    (setup.py ships it as ``workbench/sample_data``), else at the top of the source checkout."""
    packaged = resources.files("workbench") / "sample_data"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "sample_data"


SAMPLE_DIR = sample_dir()


def sample_path(name: str = "sample_conversations") -> Path:
    """Path of a project sample file (``sample_conversations``, ``tiny_conversation`` or ``gallery_conversations``)."""
    return SAMPLE_DIR / f"{name}.json"


def load_sample(name: str = "sample_conversations") -> Dataset:
    return load_locomo(sample_path(name))


#: The data spec of each sample file: ``--data sample`` loads ``sample_conversations.json`` (a dataset
#: named after the file) while the demo names its slice of that file ``sample``; both are the same data.
SAMPLE_SPECS = {"sample_conversations": "sample", "tiny_conversation": "tiny", "gallery_conversations": "gallery"}


def same_dataset(a: str | None, b: str | None) -> bool:
    """Whether two dataset names denote the same data (a sample file's name and its spec do)."""
    if not a or not b:
        return False
    return SAMPLE_SPECS.get(a, a) == SAMPLE_SPECS.get(b, b)


def load_dataset(spec: str) -> Dataset:
    """Load from a spec: ``sample``, ``tiny``, ``gallery``, ``locomo:<path>`` or ``longmemeval:<path>``."""
    if spec == "sample":
        return load_sample()
    if spec == "tiny":
        return load_sample("tiny_conversation")
    if spec == "gallery":  # the mechanism gallery: one short conversation per paper's signature mechanism
        return load_sample("gallery_conversations")
    kind, _, path = spec.partition(":")
    if kind == "locomo" and path:
        return load_locomo(path)
    if kind == "longmemeval" and path:
        return load_longmemeval(path)
    raise ValueError(f"unknown data spec {spec!r}: use sample, tiny, gallery, locomo:<path> or longmemeval:<path>")


__all__ = ["QA", "Conversation", "Dataset", "DatasetError", "Session", "Turn", "CATEGORY_NAMES",
           "load_locomo", "load_longmemeval", "load_sample", "load_dataset", "sample_path", "sample_dir",
           "same_dataset", "SAMPLE_SPECS", "SAMPLE_DIR"]
