"""An LSP client session against a real ``policyscheduler lsp`` subprocess (pygls's client, stdio).

The tests talk to the server exactly as an editor does: JSON-RPC over the server's stdin/stdout. One
server serves a whole test module (starting one costs the imports); each test drives it with
:meth:`Session.run` on the session's own event loop.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def uri(path: Path) -> str:
    out = from_fs_path(str(path))
    assert out is not None
    return str(out)


class Session:
    """The client, the diagnostics it received (with arrival times) and the loop it runs on."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = LanguageClient("pytest", "1")
        self.received: list[tuple[float, str, list[types.Diagnostic]]] = []
        self.changed: asyncio.Event | None = None
        self.versions: dict[str, int] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # type: ignore[untyped-decorator,unused-ignore]  # pygls: typed in some versions
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.received.append((time.monotonic(), params.uri, list(params.diagnostics)))
            if self.changed is not None:
                self.changed.set()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    async def start(self) -> None:
        self.changed = asyncio.Event()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        await self.client.start_io(sys.executable, "-m", "policyscheduler", "lsp", "--stdio", env=env, cwd=str(ROOT))
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=uri(ROOT), process_id=os.getpid()))
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()  # type: ignore[no-untyped-call,unused-ignore]  # pygls: typed in some versions

    def open(self, path: Path, text: str) -> str:
        u = uri(path)
        self.versions[u] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=u, language_id="policy", version=1, text=text)))
        return u

    def change(self, u: str, text: str) -> float:
        """Replace the whole text; returns the time the change was sent."""
        self.versions[u] += 1
        sent = time.monotonic()
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=u, version=self.versions[u]),
            [types.TextDocumentContentChangeWholeDocument(text=text)]))
        return sent

    async def diagnostics(self, u: str, since: float, accept: Callable[[list[types.Diagnostic]], bool],
                          timeout: float = 20.0) -> tuple[float, list[types.Diagnostic]]:
        """The first diagnostics for ``u`` received after ``since`` that ``accept`` takes, and when."""
        assert self.changed is not None
        deadline = time.monotonic() + timeout
        while True:
            for at, target, ds in self.received:
                if target == u and at >= since and accept(ds):
                    return at, ds
            left = deadline - time.monotonic()
            assert left > 0, f"no matching diagnostics for {u}; got {[(t, len(d)) for _, t, d in self.received][-5:]}"
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except TimeoutError:
                pass

    def close(self) -> None:
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()
