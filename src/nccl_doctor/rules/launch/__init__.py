"""Rules of the `launch.*` ids."""
