"""Evidence: raw material with provenance (files, bundles, stdin, live reads)."""
