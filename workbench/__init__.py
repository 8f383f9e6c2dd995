"""Memory Workbench: faithful implementations of long-term memory methods for LLM agents,
an honest evaluation harness, and views that show what each method stores, retrieves and decides.

The core package imports no Jupyter or Panel module; interactive views live in ``widgets``.
"""
__version__ = "0.1.0"
