"""Comparing runs: a run's fingerprint (from its facts), the diff of two, why the retry passed."""
