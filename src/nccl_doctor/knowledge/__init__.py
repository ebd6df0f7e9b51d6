"""Domain tables the diagnosis rules consult: typed data, no logic beyond small lookups.

- :mod:`~nccl_doctor.knowledge.xid`: NVIDIA Xid codes (meaning, severity, action, diagnosis);
- :mod:`~nccl_doctor.knowledge.nccl_env`: NCCL_*, TORCH_NCCL_*, launcher and CUDA variables
  (kinds, defaults, valid values, harmful settings, misspellings);
- :mod:`~nccl_doctor.knowledge.nccl_results`: ``ncclResult_t`` codes and the text printed for them;
- :mod:`~nccl_doctor.knowledge.cuda_errors`: ``cudaError_t``/``CUresult`` numbers and messages;
- :mod:`~nccl_doctor.knowledge.nccl_versions`: version parsing, known NCCL bugs, torch's NCCL;
- :mod:`~nccl_doctor.knowledge.gpu_memory`: total memory of common GPU models (for pictures);
- :mod:`~nccl_doctor.knowledge.workarounds`: switches that mask a cause (what each trades), and
  the kind of a fix step (repair, check, workaround).

Each module's docstring names its sources and when they were read.
"""
