"""Test suite for policyscheduler (a package so `python -m tests.controlplane` works)."""
