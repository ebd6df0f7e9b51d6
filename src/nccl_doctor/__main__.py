"""``python -m nccl_doctor`` runs the command line."""

from nccl_doctor.cli import main

raise SystemExit(main())
