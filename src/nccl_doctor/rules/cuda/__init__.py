"""Rules of the `cuda.*` ids."""
