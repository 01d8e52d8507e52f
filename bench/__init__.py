"""Benchmarks that print figures (ratios to a floor), never pass/fail on time."""
