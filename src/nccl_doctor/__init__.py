"""nccl-doctor: the expert for failed and hung distributed PyTorch/NCCL jobs.

The data path is the architecture: evidence -> parse -> facts -> rules ->
findings -> triage -> report. This package exposes the stages as plain
functions; ``cli`` is a thin layer over them.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
