"""Where the methods' modules went when each method became a subpackage, for saved memories.

A saved memory's ``state.pkl`` names every class it holds by module path. Memories saved while the
methods were flat modules (``workbench.methods.hmem_tree``, ``workbench.methods.recmem_trigger``,
...) name paths that no longer exist; ``load_state`` unpickles them through ``MOVED_MODULES``, a
table from each old path to its new one, instead of keeping shim modules at the old paths. A
class that cannot be found even then fails with ``SavedStateError``, naming the version that saved
the memory and the version reading it.

The same table keeps the methods' prompt hashes stable: ``prompt_key`` gives each module the flat
name it had, which is the key ``eval.manifest.method_prompt_hashes`` has always written, so a
result row's ``prompt_hash`` does not change because a module moved (a changed hash re-answers).
"""
from __future__ import annotations

import io
import pickle

from .. import __version__

# old module path -> new module path (the classes and functions kept their names)
MOVED_MODULES: dict[str, str] = {
    "workbench.methods.ama": "workbench.methods.ama.method",
    "workbench.methods.ama_agents": "workbench.methods.ama.agents",
    "workbench.methods.ama_prompts": "workbench.methods.ama.prompts",
    "workbench.methods.hmem": "workbench.methods.hmem.method",
    "workbench.methods.hmem_graph": "workbench.methods.hmem.graph",
    "workbench.methods.hmem_prompts": "workbench.methods.hmem.prompts",
    "workbench.methods.hmem_retrieval": "workbench.methods.hmem.retrieval",
    "workbench.methods.hmem_tree": "workbench.methods.hmem.tree",
    "workbench.methods.hymem": "workbench.methods.hymem.method",
    "workbench.methods.hymem_prompts": "workbench.methods.hymem.prompts",
    "workbench.methods.hymem_segment": "workbench.methods.hymem.segment",
    "workbench.methods.memr3": "workbench.methods.memr3.method",
    "workbench.methods.memr3_prompts": "workbench.methods.memr3.prompts",
    "workbench.methods.memr3_state": "workbench.methods.memr3.state",
    "workbench.methods.recmem": "workbench.methods.recmem.method",
    "workbench.methods.recmem_inspect": "workbench.methods.recmem.inspection",
    "workbench.methods.recmem_prompts": "workbench.methods.recmem.prompts",
    "workbench.methods.recmem_trigger": "workbench.methods.recmem.trigger",
    "workbench.methods.baselines": "workbench.methods.baselines.simple",
    "workbench.methods.baselines_prompts": "workbench.methods.baselines.simple_prompts",
    "workbench.methods.mem0_style": "workbench.methods.baselines.mem0_style",
    "workbench.methods.mem0_style_prompts": "workbench.methods.baselines.mem0_style_prompts",
}
_KEYS = {new: old.rsplit(".", 1)[-1] for old, new in MOVED_MODULES.items()}


def prompt_key(module: str) -> str:
    """The name a module's prompt hash is stored under: its flat name from before the move
    (``hmem_tree`` for ``workbench.methods.hmem.tree``), else its last dotted component."""
    return _KEYS.get(module, module.rsplit(".", 1)[-1])


class SavedStateError(RuntimeError):
    """A saved state names a class this version of the workbench does not have."""


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, saved_by: str, reading: str):
        super().__init__(io.BytesIO(data))
        self.saved_by, self.reading = saved_by, reading

    def find_class(self, module: str, name: str):
        target = MOVED_MODULES.get(module, module)
        try:
            return super().find_class(target, name)
        except (ImportError, AttributeError) as exc:
            where = f"{module}.{name}" + (f" (moved to {target})" if target != module else "")
            raise SavedStateError(f"this memory was saved by {self.saved_by} and names {where}, which "
                                  f"memory-workbench {self.reading} does not have ({exc}); load it with the "
                                  "version that saved it, or rebuild it with ingest()") from exc


def load_state(data: bytes, *, saved_by: str | None) -> dict:
    """Unpickle a saved ``state.pkl``, reading module paths from before the move at their new place.

    ``saved_by``: the version recorded in its ``params.json`` (None for memories saved before
    versions were recorded), named in the error when a class cannot be found."""
    who = f"memory-workbench {saved_by}" if saved_by else "a memory-workbench version that did not record itself"
    return _StateUnpickler(data, who, __version__).load()
