"""``python -m nccl_doctor`` runs the command line."""

import gc

gc.disable()  # importing makes long-lived objects only (~30 young collections, ~2 ms)
from nccl_doctor.cli import main  # noqa: E402

gc.enable()
raise SystemExit(main())
