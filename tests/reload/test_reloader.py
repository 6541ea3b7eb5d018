"""Hot reload without an API server: the reload worker (applies a good set, never a broken one, coalesces
triggers) and the directory watcher (the kubelet's ``..data`` symlink swap)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from policyscheduler.loader import load_layered
from policyscheduler.reload import DirectoryWatcher, Outcome, Reloader, fingerprint

GOOD = 'filter no_xy\n  reason "node(s) have x=y"\n  require node.labels["x"] != "y"\n'
OTHER = 'filter no_xz\n  reason "node(s) have x=z"\n  require node.labels["x"] != "z"\n'
BROKEN = 'filter no_xy\n  reason "x"\n  require node.allocatable["memory"] >= 5Xi\n'


class Target:
    """What the reloader drives: the cycle's set_policy_set and a report sink."""

    def __init__(self) -> None:
        self.applied: list[str] = []
        self.outcomes: list[Outcome] = []

    def apply(self, policy_set: Any) -> int:
        self.applied.append(policy_set.digest)
        return 3

    def report(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)


def _reloader(texts: list[tuple[str, str]] | None = None, paths: list[Path] | None = None) -> tuple[Reloader, Target]:
    start = load_layered(paths or [], texts=texts or [])
    assert start.policy_set is not None
    target = Target()
    return Reloader(start.policy_set, target.apply, target.report, paths=paths or [], texts=texts), target


def test_good_set_is_applied_broken_one_is_not_and_errors_are_reported_once() -> None:
    reloader, target = _reloader([("site.policy", GOOD)])
    first = reloader.current.digest
    assert not reloader.set_texts([("site.policy", GOOD)], "same texts")  # nothing to do

    assert reloader.set_texts([("site.policy", OTHER)], "edit")
    ok = reloader.process("edit")
    assert (ok.result, ok.changed, ok.notify, ok.requeued) == ("success", True, True, 3)
    assert target.applied == [ok.digest] and ok.previous == first and reloader.current.digest == ok.digest

    reloader.set_texts([("site.policy", BROKEN)], "broken")
    bad = reloader.process("broken")
    assert bad.result == "error" and bad.notify and not bad.changed
    assert bad.digest == ok.digest and target.applied == [ok.digest]  # the last good set stays
    assert next(str(d) for d in bad.errors).startswith("site.policy:3:")
    assert "bad-quantity" in str(bad.errors[0])
    again = reloader.process("resync")
    assert again.result == "error" and not again.notify  # the same error is not news

    reloader.set_texts([("site.policy", OTHER)], "fixed back")
    back = reloader.process("fixed back")
    assert back.result == "success" and back.recovered and back.notify and not back.changed
    assert target.applied == [ok.digest]  # same digest: nothing to swap


def test_missing_configmap_keeps_the_set_and_is_reported_once_then_recreation_loads() -> None:
    reloader, _target = _reloader([("site.policy", GOOD)])
    digest = reloader.current.digest
    reloader.missing("deleted")
    gone = reloader.process("deleted")
    assert (gone.result, gone.digest, gone.notify) == ("missing", digest, True)
    reloader.missing("deleted again")
    assert reloader.process("relist").notify is False
    assert reloader.set_texts([("site.policy", GOOD)], "recreated")  # same texts, but it is back
    back = reloader.process("recreated")
    assert back.result == "success" and back.recovered and back.notify and back.digest == digest


def test_the_worker_thread_coalesces_triggers_and_loads_the_latest_texts() -> None:
    loads: list[tuple[tuple[str, str], ...]] = []
    gate = threading.Event()
    start = load_layered([], texts=[("site.policy", GOOD)])
    assert start.policy_set is not None
    target = Target()

    def slow_load(paths: Any, texts: Any) -> Any:
        gate.wait(5)
        loads.append(tuple(texts))
        return load_layered(paths, texts=texts)

    reloader = Reloader(start.policy_set, target.apply, target.report, texts=[("site.policy", GOOD)], load=slow_load)
    reloader.start()
    try:
        reloader.set_texts([("site.policy", BROKEN)], "v2")
        time.sleep(0.05)  # the worker is inside the first load now
        reloader.set_texts([("site.policy", GOOD + "\n")], "v3")
        reloader.set_texts([("site.policy", OTHER)], "v4")
        gate.set()
        assert reloader.idle(10)
    finally:
        reloader.stop()
    assert loads[-1] == (("site.policy", OTHER),) and len(loads) == 2
    assert [o.result for o in target.outcomes] == ["error", "success"]
    assert target.outcomes[-1].trigger == "v3; v4"


def kubelet_volume(root: Path, files: dict[str, str], stamp: str) -> None:
    """A ConfigMap volume as the kubelet writes it: ``..<stamp>/`` with the files, ``..data`` -> it
    (swapped atomically by renaming a new symlink over it), and one symlink per key through ``..data``."""
    data_dir = root / f"..{stamp}"
    data_dir.mkdir()
    for key, text in files.items():
        (data_dir / key).write_text(text)
    tmp = root / "..data_tmp"
    tmp.symlink_to(data_dir.name)
    os.rename(tmp, root / "..data")
    for key in files:
        link = root / key
        if not link.is_symlink():
            link.symlink_to(f"..data/{key}")


def test_directory_watcher_sees_the_kubelet_data_symlink_swap(tmp_path: Path) -> None:
    kubelet_volume(tmp_path, {"site.policy": GOOD}, "2026_11_30_10_00_00.000000001")
    changes: list[str] = []
    watcher = DirectoryWatcher([tmp_path], changes.append, interval=0.05)
    before = fingerprint([tmp_path])
    assert [entry[0] for entry in before] == [str(tmp_path / "site.policy")]  # ..data and ..2026.. are hidden
    assert not watcher.poll()
    kubelet_volume(tmp_path, {"site.policy": GOOD}, "2026_11_30_10_01_00.000000002")  # same text, new target
    assert watcher.poll() and len(changes) == 1
    assert not watcher.poll()
    (tmp_path / "extra.policy").write_text(OTHER)
    assert watcher.poll()
    (tmp_path / "extra.policy").unlink()
    assert watcher.poll() and len(changes) == 3


def test_the_reloader_reads_the_swapped_volume(tmp_path: Path) -> None:
    kubelet_volume(tmp_path, {"site.policy": GOOD}, "2026_11_30_10_00_00.1")
    reloader, _target = _reloader(paths=[tmp_path])
    watcher = DirectoryWatcher([tmp_path], reloader.trigger, interval=0.05)
    kubelet_volume(tmp_path, {"site.policy": BROKEN}, "2026_11_30_10_00_00.2")
    assert watcher.poll()
    assert reloader.process("swap").result == "error"
    kubelet_volume(tmp_path, {"site.policy": OTHER}, "2026_11_30_10_00_00.3")
    assert watcher.poll()
    ok = reloader.process("swap")
    assert ok.result == "success" and ok.changed
    other = load_layered([], texts=[("site.policy", OTHER)]).policy_set
    assert other is not None and ok.digest == other.digest
