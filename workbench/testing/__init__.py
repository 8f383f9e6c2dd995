"""Test helpers shipped with the package: the method contract suite and small fixtures."""
