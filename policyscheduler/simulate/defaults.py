"""Where the bundled default policy set and demo cluster live, installed or in a source checkout.

The wheel carries the repository's ``policies/`` as ``policyscheduler/policies`` (hatch
``force-include``); a source checkout or an editable install has them at ``<repo>/policies``. The demo
cluster is package data (``policyscheduler/data/demo``) in both cases.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["default_policies_dir", "demo_cluster_dir"]

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_REPO_ROOT = _PACKAGE_ROOT.parent


def _package_dir(*parts: str) -> Path | None:
    try:
        entry = resources.files("policyscheduler").joinpath(*parts)
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - zip imports without a path
        return None
    path = Path(str(entry))
    return path if path.is_dir() else None


def default_policies_dir() -> Path:
    """The bundled default policies (installed copy first, then the source checkout's ``policies/``).

    The loader owns this knowledge (every command layers user files on these); this is its name here.
    """
    from policyscheduler.loader import bundled_defaults_dir

    return bundled_defaults_dir()


def demo_cluster_dir() -> Path:
    """The bundled example cluster and workload used by ``simulate`` without PATHs."""
    return _package_dir("data", "demo") or (_PACKAGE_ROOT / "data" / "demo")
