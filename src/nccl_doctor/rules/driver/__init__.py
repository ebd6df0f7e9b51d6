"""Rules of the `driver.*` ids."""
