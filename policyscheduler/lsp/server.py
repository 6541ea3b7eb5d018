"""The pygls wiring: document events -> debounced loads -> published diagnostics; requests -> features.

Loading a set is CPU work (parse, check, compile every rule of the folder), so it runs on one worker
thread, never on the event loop: hover and completion stay answerable while a load runs. Typing fires
``didChange`` per keystroke; a load starts only after ``debounce`` seconds without a change to the same
set (a newer change cancels the waiting one), and its diagnostics are published only if no newer load of
that set was started meanwhile, so stale squiggles never overwrite fresh ones. Opening and saving load at
once. The latest load of each set (with its ASTs) is kept for completion, hover and go-to-definition;
whatever parses text runs on the load thread, so the parser is never used by two threads at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from policyscheduler.loader import ParseCache
from policyscheduler.lsp import completion, diagnostics, formatting, hover, navigation
from policyscheduler.lsp.layers import Layered, LintChecks, defaults, load_for, set_key
from policyscheduler.lsp.reference import schema

__all__ = ["LintChecks", "PolicyLanguageServer", "build_server", "DEFAULT_DEBOUNCE"]

DEFAULT_DEBOUNCE = 0.1
"""Seconds of quiet after a keystroke before the set is reloaded (fast typists: one load per pause)."""

log = logging.getLogger(__name__)


class PolicyLanguageServer(LanguageServer):
    """The server's state: the latest load per set, the pending loads, what was published where."""

    def __init__(self, lint: LintChecks, debounce: float) -> None:
        super().__init__("policyscheduler", "1")
        self.lint = lint
        self.debounce = debounce
        self.sets: dict[str, Layered] = {}
        self.parses: dict[str, ParseCache] = {}
        self.pending: dict[str, asyncio.Future[None]] = {}
        self.generation: dict[str, int] = {}
        self.published: dict[str, set[str]] = {}
        self.loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="policy-load")

    # -- documents

    def buffers(self) -> dict[str, str]:
        """Every open document's current text, by URI."""
        return {uri: doc.source for uri, doc in self.workspace.text_documents.items()}

    def lines(self, uri: str) -> list[str]:
        return self.workspace.get_text_document(uri).source.splitlines()

    # -- loading

    def schedule(self, uri: str, delay: float) -> None:
        """Reload ``uri``'s set after ``delay`` seconds unless another change comes first."""
        key = set_key(uri)
        waiting = self.pending.get(key)
        if waiting is not None and not waiting.done():
            waiting.cancel()
        self.pending[key] = asyncio.ensure_future(self._refresh(uri, key, delay))

    async def _refresh(self, uri: str, key: str, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        gen = self.generation.get(key, 0) + 1
        self.generation[key] = gen
        layered = await self.load(uri)
        if layered is None or self.generation.get(key) != gen:
            return  # a newer load of the same set will publish
        self.sets[key] = layered
        found = diagnostics.by_uri(layered, uri)
        for stale in self.published.get(key, set()) - set(found):
            found[stale] = []
        self.published[key] = {u for u, ds in found.items() if ds}
        for target, ds in found.items():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=target, diagnostics=ds))

    async def load(self, uri: str) -> Layered | None:
        """Load ``uri``'s set on the worker thread (None, logged, if the load itself failed: a bug)."""
        buffers = self.buffers()
        cache = self.parses.setdefault(set_key(uri), {})
        try:
            return await asyncio.get_running_loop().run_in_executor(self.loader, load_for, uri, buffers, self.lint,
                                                                    cache)
        except Exception as exc:  # a bug must not take the editor's server down; it is logged
            log.exception("loading the policy set of %s failed", uri)
            self.window_log_message(types.LogMessageParams(types.MessageType.Error,
                                                           f"policyscheduler: internal error: {exc!r}"))
            return None

    async def current(self, uri: str) -> Layered | None:
        """The latest load of ``uri``'s set, loading it now when there is none yet."""
        key = set_key(uri)
        if key not in self.sets:
            layered = await self.load(uri)
            if layered is not None:
                self.sets.setdefault(key, layered)
        return self.sets.get(key)


def _warm_up() -> None:
    """Build the schema and read the bundled defaults before the first keystroke needs them."""
    schema()
    defaults()


def build_server(lint: LintChecks, debounce: float = DEFAULT_DEBOUNCE) -> PolicyLanguageServer:
    """A server that checks with the loader plus ``lint`` (the CLI passes ``cli.lint.with_lint_checks``)."""
    server = PolicyLanguageServer(lint, debounce)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: PolicyLanguageServer, params: types.InitializedParams) -> None:
        await asyncio.get_running_loop().run_in_executor(ls.loader, _warm_up)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PolicyLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PolicyLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PolicyLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PolicyLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)  # the file on disk counts again for the rest of the folder

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["."]))
    async def complete(ls: PolicyLanguageServer, params: types.CompletionParams) -> types.CompletionList:
        uri = params.text_document.uri
        items = completion.complete(await ls.current(uri), ls.lines(uri), params.position)
        return types.CompletionList(is_incomplete=False, items=items)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: PolicyLanguageServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        return hover.hover(await ls.current(uri), ls.lines(uri), params.position)

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: PolicyLanguageServer, params: types.DefinitionParams) -> Sequence[types.Location]:
        uri = params.text_document.uri
        layered = await ls.current(uri)
        if layered is None:
            return []
        return navigation.definitions(layered, ls.lines(uri), params.position, _open_by_real(ls))

    # these two parse the buffer: on the load thread, which owns the parser

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def symbols(ls: PolicyLanguageServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        doc = ls.workspace.get_text_document(params.text_document.uri)
        return await asyncio.get_running_loop().run_in_executor(
            ls.loader, navigation.document_symbols, doc.path or doc.uri, doc.source)

    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    async def format_doc(ls: PolicyLanguageServer,
                         params: types.DocumentFormattingParams) -> list[types.TextEdit] | None:
        doc = ls.workspace.get_text_document(params.text_document.uri)
        return await asyncio.get_running_loop().run_in_executor(
            ls.loader, formatting.format_document, doc.path or doc.uri, doc.source)

    return server


def _open_by_real(ls: PolicyLanguageServer) -> dict[str, str]:
    import os

    out: dict[str, str] = {}
    for uri, doc in ls.workspace.text_documents.items():
        if uri.startswith("file:") and doc.path:
            out[os.path.realpath(doc.path)] = uri
    return out
