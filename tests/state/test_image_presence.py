"""The state's per-image node index (ImageLocality's column) equals a walk over the node records.

The first image asked for indexes every image the nodes hold in one pass; the images indexed so
follow node changes like one built on its own (a node gaining or losing images, nodes added and
removed), and an image no node held then is built when asked for.
"""

from __future__ import annotations

from typing import Any

from policyscheduler.state import ClusterSnapshot

Obj = dict[str, Any]
IMAGES = ["app:1", "app:2", "db:1", "cache:3"]


def _node(name: str, images: list[str]) -> Obj:
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "images": [{"names": [i], "sizeBytes": 100 * 2**20} for i in images]}}


def _held(i: int) -> list[str]:
    return [image for j, image in enumerate(IMAGES) if (i >> j) & 1]


def _check(snap: ClusterSnapshot, images: list[str]) -> None:
    for image in images:
        assert snap.state.image_presence(image).tolist() == [image in n.images for n in snap.nodes], image


def test_every_image_is_indexed_at_once_and_follows_changes() -> None:
    snap = ClusterSnapshot.from_objects([_node(f"n{i}", _held(i)) for i in range(16)])
    assert snap.state.image_presence("app:2").tolist() == [bool(i & 2) for i in range(16)]
    assert set(snap.state._image_slots) == set(IMAGES)  # one pass indexed every image held
    _check(snap, IMAGES)
    snap.add(_node("n3", ["db:1", "new:9"]))  # loses app:1 and app:2, gains db:1 and an image never seen
    snap.add(_node("n8", []))
    _check(snap, [*IMAGES, "new:9", "none:0"])
    snap.add(_node("n16", ["app:1", "new:9"]))
    snap.remove(_node("n0", []))
    _check(snap, [*IMAGES, "new:9", "none:0"])
