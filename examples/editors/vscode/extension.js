// The client half: start `policyscheduler lsp` (stdio) for .policy files. Everything else -- diagnostics,
// completion, hover, definitions, symbols, formatting -- comes from the server.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("policyscheduler").get("command");
  const serverOptions = { command, args }; // stdio is the default transport
  const clientOptions = {
    documentSelector: [
      { scheme: "file", language: "policy" },
      { scheme: "untitled", language: "policy" },
    ],
  };
  client = new LanguageClient("policyscheduler", "policyscheduler", serverOptions, clientOptions);
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
