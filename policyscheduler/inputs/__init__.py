"""Read Kubernetes objects from YAML/JSON files and folders (what ``simulate`` takes as PATHs)."""

from __future__ import annotations

from policyscheduler.inputs.reader import KEPT_KINDS, ReadResult, read_objects, read_texts

__all__ = ["KEPT_KINDS", "ReadResult", "read_objects", "read_texts"]
