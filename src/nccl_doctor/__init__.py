"""nccl-doctor: the expert for failed and hung distributed PyTorch/NCCL jobs.

The data path is the architecture: evidence -> parse -> facts -> rules ->
findings -> triage -> report. This package exposes the stages as plain
functions; ``cli`` is a thin layer over them.
"""

__version__ = "0.1.0"

#: The name every report names as its writer (text and Markdown headings, the
#: JSON report's ``tool.name``, the HTML page's generator): intake knows its own
#: reports by it and never reads them as evidence.
GENERATOR = "nccl-doctor"

__all__ = ["GENERATOR", "__version__"]

from nccl_doctor.cache import keep_dataclass_code  # noqa: E402 -- after the names it may read

keep_dataclass_code()  # before any of the package's classes is made
