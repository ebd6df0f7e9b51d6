"""Active probes: per-GPU smoke and bandwidth, P2P, NCCL collectives, each under a watchdog.

Nothing here imports torch at import time; workers load it (see
:mod:`nccl_doctor.probe.device`). Layout: :mod:`.formulas` (nccl-tests
bandwidth arithmetic, expected figures), :mod:`.worker`, :mod:`.tasks`,
:mod:`.collective` (what runs in a worker), :mod:`.launch` (the watchdog),
:mod:`.isolate` (transports, bisection), :mod:`.runner` (one node),
:mod:`.distributed` (torchrun/srun), :mod:`.result` (the evidence file),
:mod:`.cli` (the subcommand).
"""
