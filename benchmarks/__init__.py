"""Benchmarks: numbers written to benchmarks/results/, never asserted in tests."""
