"""Configuration: the ``--config`` file (:mod:`.model`) and the KubeSchedulerConfiguration importer
(:mod:`.kubeimport`), both reading YAML with positions (:mod:`.located`) so every error is located."""

from policyscheduler.config.located import ConfigError
from policyscheduler.config.model import (
    API_VERSION,
    KIND,
    Configuration,
    PolicySource,
    Profile,
    load_config,
    parse_config,
)

__all__ = ["API_VERSION", "KIND", "ConfigError", "Configuration", "PolicySource", "Profile", "load_config",
           "parse_config", "load_profile"]


def load_profile(profile: Profile, *, allow_empty: bool = False, texts: tuple[tuple[str, str], ...] = ()):  # type: ignore[no-untyped-def]
    """Load a profile's file sources (paths and inline text; ConfigMap texts passed in ``texts``) as every
    command layers them."""
    from policyscheduler.loader import load_layered

    return load_layered(profile.paths, texts=[*profile.texts, *texts], allow_empty=allow_empty)
