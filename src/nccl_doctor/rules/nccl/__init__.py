"""Rules of the `nccl.*` ids."""
