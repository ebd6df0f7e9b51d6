"""Rules of the `gpu.*` ids."""
