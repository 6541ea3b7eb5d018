"""End-to-end tests against the real control plane (all marked `e2e`)."""
