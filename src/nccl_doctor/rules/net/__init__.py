"""Rules of the `net.*` ids."""
