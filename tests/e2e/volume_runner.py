"""``policyscheduler run`` with a short volume bind timeout (for the e2e tests).

Everything is ``policyscheduler run`` itself -- the same argument parsing, settings, planning (the storage
rules, ``ClusterSnapshot.assume``), claim binding, start-up and shutdown
(``python -m tests.e2e.volume_runner --kubeconfig ... [run flags]``) -- except that
``POLICYSCHEDULER_TEST_BIND_TIMEOUT`` sets the bind timeout (seconds; kube's VolumeBindingArgs
``bindTimeoutSeconds``, 600 by default), so a test of the timeout does not wait ten minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

TIMEOUT_ENV = "POLICYSCHEDULER_TEST_BIND_TIMEOUT"


def main(argv: Sequence[str] | None = None) -> int:
    from policyscheduler.app import run as run_app
    from policyscheduler.cli.config import run_profiles
    from policyscheduler.cli.run import add_arguments, settings_from

    parser = argparse.ArgumentParser(prog="python -m tests.e2e.volume_runner")
    add_arguments(parser)
    args = parser.parse_args(argv)
    settings = settings_from(args, run_profiles(args))
    timeout = os.environ.get(TIMEOUT_ENV)
    if timeout:
        settings.options.volume_bind_timeout = float(timeout)
    return run_app(settings, sys.stderr, exit_process=True)


if __name__ == "__main__":
    sys.exit(main())
