"""Watch ``--policies`` paths on disk by polling (about once a second; the stdlib has no inotify).

The fingerprint of the paths is, for every ``*.policy`` file the loader would read (directories
recursively, hidden entries such as ``..data`` skipped, as :func:`policyscheduler.loader.load_layered`
does), its path, its resolved path, inode, size and mtime. A kubelet updating a mounted ConfigMap writes a
new ``..2026_..`` directory and renames a new ``..data`` symlink over the old one: every file's resolved
path changes at once, so the swap is one change, seen at the next poll. An edit in place changes the
mtime or size; a file added or removed changes the set. A path that does not exist is part of the
fingerprint too (so its reappearance is a change).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["DirectoryWatcher", "fingerprint"]

Fingerprint = tuple[tuple[str, ...], ...]


def _files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    found = []
    for f in path.rglob("*.policy"):
        if not any(part.startswith(".") for part in f.relative_to(path).parts):
            found.append(f)
    return sorted(found)


def fingerprint(paths: Sequence[str | Path]) -> Fingerprint:
    """What changes when anything the loader would read from ``paths`` changes (never raises)."""
    out: list[tuple[str, ...]] = []
    for p in paths:
        path = Path(p)
        try:
            files = _files(path)
        except OSError as exc:
            out.append((str(path), "error", type(exc).__name__))
            continue
        for f in files:
            try:
                st = f.stat()
                out.append((str(f), os.path.realpath(f), str(st.st_ino), str(st.st_size), str(st.st_mtime_ns)))
            except OSError as exc:
                out.append((str(f), "missing", type(exc).__name__))
    return tuple(out)


class DirectoryWatcher:
    """Polls ``paths`` every ``interval`` seconds in a daemon thread; ``on_change(reason)`` on a change."""

    def __init__(self, paths: Sequence[str | Path], on_change: Callable[[str], None], *,
                 interval: float = 1.0) -> None:
        self.paths = list(paths)
        self.on_change = on_change
        self.interval = interval
        self.polls = 0
        self._last = fingerprint(self.paths)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="policy-dirwatch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def poll(self) -> bool:
        """One poll; True (and ``on_change`` called) when the fingerprint changed."""
        now = fingerprint(self.paths)
        self.polls += 1
        if now == self._last:
            return False
        self._last = now
        self.on_change("files changed: " + ", ".join(str(p) for p in self.paths))
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - a watcher never dies; the next poll tries again
                continue
