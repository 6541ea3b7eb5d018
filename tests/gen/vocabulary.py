"""The small, shared vocabulary random objects are drawn from.

Values are drawn from short lists on purpose: with only a handful of zones, apps and ports, random pods
collide with random nodes and running pods often enough that every rule's interesting branches
(matches, conflicts, ties, empty domains) show up in a few hundred cases instead of a few million.
The user-style policies in ``tests/gen/policies`` read the same label keys, so keep the two in step.
"""

from __future__ import annotations

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
RACK = "rack"
GPU_COUNT = "gpu-count"
KERNEL_MAJOR = "kernel-major"
NODE_ROLE = "node-role"
TEAM = "team"

ZONES = ("zone-a", "zone-b", "zone-c")
REGION_OF_ZONE = {"zone-a": "region-1", "zone-b": "region-1", "zone-c": "region-2"}
RACKS = ("rack-1", "rack-2", "rack-3")
GPU_COUNTS = ("0", "1", "2", "4", "8")
KERNELS = ("4", "5", "6", "10")  # "10" < "5" as strings: the classic user-policy surprise
ROLES = ("worker", "infra", "gpu", "edge")
TEAMS = ("alpha", "beta", "shared")

TOPOLOGY_KEYS = (HOSTNAME, ZONE, REGION, RACK)
"""Keys pods use as affinity / spread topology keys (plus, rarely, a key no node carries)."""
MISSING_KEY = "example.com/no-such-key"

GPU = "example.com/gpu"
HUGEPAGES = "hugepages-2Mi"

NAMESPACES = ("default", "team-a", "team-b")
NAMESPACE_LABELS = {
    "default": {},
    "team-a": {"team": "alpha", "env": "prod"},
    "team-b": {"team": "beta", "env": "dev"},
}

APPS = ("web", "db", "cache", "batch")
TIERS = ("frontend", "backend")
VERSIONS = ("v1", "v2")

IMAGES: dict[str, int] = {
    "nginx:1.25": 70 * 2**20,
    "redis:7": 40 * 2**20,
    "busybox:latest": 5 * 2**20,
    "example.com/app:v1": 300 * 2**20,
    "example.com/app:v2": 320 * 2**20,
    "example.com/ml/trainer:2024": 2 * 2**30,
    "postgres:16": 150 * 2**20,
}
"""Image name (as a node reports it) -> size in bytes. Pods may also name ``busybox`` (gets ``:latest``)."""
POD_IMAGES = (*IMAGES, "busybox", "example.com/unknown:1")

CPU_ALLOCATABLE = ("500m", "2", "4", "8", "16", "16", "32")
MEMORY_ALLOCATABLE = ("1Gi", "4Gi", "8Gi", "16Gi", "32Gi", "64Gi")
PODS_ALLOCATABLE = ("3", "5", "10", "110", "110")
CPU_REQUESTS = ("10m", "100m", "250m", "500m", "500m", "1", "2")
MEMORY_REQUESTS = ("16Mi", "128Mi", "256Mi", "512Mi", "1Gi", "3Gi")

TAINT_KEYS = ("dedicated", "spot", "example.com/gpu", "node.kubernetes.io/not-ready")
TAINT_VALUES = ("", "true", "team-a")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

PORTS = (80, 443, 8080)
PROTOCOLS = ("TCP", "UDP")
HOST_IPS = ("", "0.0.0.0", "10.0.0.1", "10.0.0.2")

SCHEDULER_NAMES = ("default-scheduler", "policy-scheduler")
