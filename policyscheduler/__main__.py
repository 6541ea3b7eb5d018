"""``python -m policyscheduler`` runs the command line."""

from __future__ import annotations

import sys

from policyscheduler.cli import main

if __name__ == "__main__":
    sys.exit(main())
