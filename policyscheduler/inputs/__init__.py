"""Read Kubernetes objects from YAML/JSON files and folders (what ``simulate`` takes as PATHs), and other YAML
documents with positions (policy test files: :mod:`policyscheduler.inputs.document`)."""

from __future__ import annotations

from policyscheduler.inputs.document import Document, DocumentError, read_documents
from policyscheduler.inputs.reader import KEPT_KINDS, ReadResult, read_objects, read_texts

__all__ = ["KEPT_KINDS", "Document", "DocumentError", "ReadResult", "read_documents", "read_objects", "read_texts"]
