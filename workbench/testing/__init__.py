"""Test helpers shipped with the package: the method contract suite (``check_method``, docs/method-contract.md)
and small fixtures."""
from .check_method import ContractError, check_method

__all__ = ["ContractError", "check_method"]
