"""Rules of the `host.*` ids."""
