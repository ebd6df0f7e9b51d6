"""Rules of the `app.*` ids."""
