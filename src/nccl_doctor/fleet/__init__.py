"""Fleet memory: ..."""
