// The assertions promptfoo grades with code of its own (markup and SQL grammars, tool calls as
// its providers shape them, log-probabilities, traces, ruby, meteor: coalmine.promptfoo.own_code)
// for coalmine's worker (node_worker.js, op "check"). No Python library reproduces them, so the
// verdict is asked of promptfoo itself, through its public API (`assertions.runAssertion`),
// from the promptfoo package found first in: the config's folder (its node_modules), the
// promptfoo install coalmine found, NODE_PATH. Nothing of promptfoo is copied here.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");
const { pathToFileURL } = require("node:url");

class MissingPackage extends Error {}

const loaded = new Map();

async function loadPromptfoo(dirs) {
  const key = dirs.join("\n");
  if (loaded.has(key)) return loaded.get(key);
  let resolved;
  for (const dir of dirs) {
    try {
      // a promptfoo install's own folder resolves itself by name, as a config's node_modules does
      resolved = createRequire(path.join(dir, "__coalmine__.js")).resolve("promptfoo");
      break;
    } catch {}
  }
  if (!resolved) {
    throw new MissingPackage(
      "is graded by promptfoo's own code: install promptfoo 0.121.20 (npm install " +
        "promptfoo@0.121.20 in the config's folder, or put its promptfoo on PATH)");
  }
  // promptfoo reads these when it loads: no telemetry, no update check from a grading worker
  process.env.PROMPTFOO_DISABLE_TELEMETRY = "1";
  process.env.PROMPTFOO_DISABLE_UPDATE = "1";
  const mod = await import(pathToFileURL(resolved).href);
  const api = mod.assertions || (mod.default && mod.default.assertions);
  if (!api || typeof api.runAssertion !== "function") {
    throw new MissingPackage(`found promptfoo at ${resolved}, but it has no assertions.runAssertion`);
  }
  loaded.set(key, api);
  return api;
}

// One assertion: {assertion, output, response, provider, vars, latencyMs, prompt}; dirs: where
// to look for promptfoo.
async function runCheck(req, dirs) {
  const api = await loadPromptfoo(dirs);
  const given = req.provider || {};
  // promptfoo hands its handlers the provider object, whose id is a method
  const provider = { id: () => given.id, label: given.label, config: given.config || {} };
  const result = await api.runAssertion({
    prompt: req.prompt,
    provider,
    assertion: req.assertion,
    test: { vars: req.vars || {}, assert: [req.assertion] },
    vars: req.vars || {},
    latencyMs: req.latencyMs,
    providerResponse: { ...(req.response || {}), output: req.output },
  });
  return { pass: result.pass, score: result.score, reason: result.reason };
}

module.exports = { runCheck, MissingPackage };
