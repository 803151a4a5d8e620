// coalmine's JavaScript agent worker: loads one provider module as promptfoo 0.121.20 loads a
// `file://provider.js` provider, then answers its calls: one JSON line per request on stdin,
// one JSON line per answer on stdout, calls running concurrently as promptfoo runs them.
//
// Started by coalmine.providers.javascript; see that module for the protocol and the rules.
// Written to run as CommonJS or as an ES module (only globals and dynamic import()), since
// the type of a .js file depends on the package.json nearest to where coalmine is installed.
"use strict";

(async () => {
  const path = await import("node:path");
  const fs = await import("node:fs");
  const vm = await import("node:vm");
  const readline = await import("node:readline");
  const { createRequire } = await import("node:module");
  const { pathToFileURL } = await import("node:url");

  // The protocol owns stdout: whatever the provider prints goes to stderr instead.
  const reply = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  process.on("uncaughtException", (err) => {
    process.stderr.write(`uncaught exception in the provider: ${err && err.stack}\n`);
  });
  process.on("unhandledRejection", (err) => {
    process.stderr.write(`unhandled rejection in the provider: ${err && err.stack}\n`);
  });

  const MIN_NODE_MAJOR = 18;

  class LoadError extends Error {}

  // --- module loading (promptfoo's src/esm.ts importModule, no export name) ---
  const CJS_IN_ESM = [
    "require is not defined", "module is not defined", "exports is not defined",
    "__dirname is not defined", "__filename is not defined", "Cannot use import statement",
    "ERR_REQUIRE_ESM",
  ];

  function loadCjsModule(modulePath) {
    const moduleObj = { exports: {} };
    const context = vm.createContext({
      module: moduleObj, exports: moduleObj.exports,
      require: createRequire(pathToFileURL(modulePath).href),
      __dirname: path.dirname(modulePath), __filename: modulePath,
      global: globalThis, globalThis, console, process, Buffer, fetch: globalThis.fetch,
      setTimeout, setInterval, setImmediate, clearTimeout, clearInterval, clearImmediate,
      queueMicrotask, URL, URLSearchParams, TextEncoder, TextDecoder, AbortController,
    });
    vm.runInContext(fs.readFileSync(modulePath, "utf-8"), context, { filename: modulePath });
    return moduleObj.exports;
  }

  async function typescriptLoader(modulePath) {
    // promptfoo registers the tsx loader from its own install; here it is found as Node finds
    // a package, from the provider's folder up
    let loader;
    try {
      loader = createRequire(modulePath).resolve("tsx");
    } catch {
      throw new LoadError(
        `a TypeScript provider needs the tsx package: run \`npm install tsx\` in ` +
        `${path.dirname(modulePath)} (or a folder above it), or write the provider in JavaScript`);
    }
    await import(pathToFileURL(loader).href);
  }

  async function importModule(modulePath) {
    if (/\.[cm]?ts$/i.test(modulePath)) await typescriptLoader(modulePath);
    try {
      const imported = await import(pathToFileURL(modulePath).href);
      return imported?.default?.default || imported?.default || imported;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (modulePath.endsWith(".js") && CJS_IN_ESM.some((p) => message.includes(p))) {
        return loadCjsModule(modulePath);
      }
      if (err && err.code === "ERR_MODULE_NOT_FOUND" && !fs.existsSync(modulePath)) {
        const missing = new LoadError(`ENOENT: no such file or directory, open '${modulePath}'`);
        missing.code = "ENOENT";
        throw missing;
      }
      throw err;
    }
  }

  // --- the provider (promptfoo's loadApiProvider, the JavaScript file factory) ---
  let provider;

  async function load(req) {
    const major = Number(process.versions.node.split(".")[0]);
    if (major < MIN_NODE_MAJOR) {
      throw new LoadError(`JavaScript agents need Node.js >= ${MIN_NODE_MAJOR}; this is ${process.version}`);
    }
    const Provider = await importModule(req.file);
    const instance = new Provider({ ...req.options });
    if (typeof instance.id !== "function") {
      // promptfoo names every row by it, and stops the whole eval without it
      throw new TypeError("provider.id is not a function: the provider needs an id() method");
    }
    if (!instance.label) instance.label = req.label || "";
    provider = instance;
    return process.version;
  }

  const logger = {};
  for (const level of ["debug", "info", "warn", "error"]) {
    logger[level] = (...args) => process.stderr.write(`[${level}] ${args.join(" ")}\n`);
  }
  const memory = new Map();
  const cache = {
    get: async (key) => memory.get(key),
    set: async (key, value) => void memory.set(key, value),
    del: async (key) => void memory.delete(key),
    clear: async () => memory.clear(),
    wrap: async (key, fn) => (memory.has(key) ? memory.get(key) : memory.set(key, await fn()).get(key)),
  };

  function callContext(raw) {
    // in promptfoo's order; filters, the provider, logger and getCache exist only in Node
    const given = raw && typeof raw === "object" ? raw : {};
    const context = { vars: given.vars || {} };
    if ("prompt" in given) context.prompt = given.prompt;
    context.filters = {};
    context.originalProvider = provider;
    if ("test" in given) context.test = given.test;
    context.logger = logger;
    context.getCache = () => cache;
    if ("repeatIndex" in given) context.repeatIndex = given.repeatIndex;
    return context;
  }

  // What promptfoo's evaluator makes of the response (runEvalInternal and what it calls).
  function answerOf(response) {
    if (response === null || response === undefined) {
      throw new TypeError("Cannot convert undefined or null to object");
    }
    if (response.error) {
      return { error: typeof response.error === "string" ? response.error : JSON.stringify(response.error) };
    }
    const output = response.output;
    if (output === null || output === undefined) return { noOutput: true };
    const answer = {};
    if (typeof output === "string") answer.text = output;
    else {
      const json = JSON.stringify(output); // undefined for a function or a symbol
      answer.text = json === undefined ? String(output) : json;
      if (json !== undefined) answer.data = JSON.parse(json);
    }
    if (response.tokenUsage && typeof response.tokenUsage === "object") answer.tokenUsage = response.tokenUsage;
    if (typeof response.cost === "number" && Number.isFinite(response.cost)) answer.cost = response.cost;
    if (typeof response.finishReason === "string") answer.finishReason = response.finishReason;
    // the rest (guardrails, logProbs, metadata, sessionId …) as JSON: promptfoo's graders read it
    const { output: _o, error: _e, tokenUsage: _t, cost: _c, finishReason: _f, ...rest } = response;
    const fields = JSON.parse(JSON.stringify(rest) ?? "{}");
    if (Object.keys(fields).length) answer.fields = fields;
    return answer;
  }

  const calls = new Map(); // id -> the AbortController of a call in flight

  async function call(req) {
    const controller = new AbortController();
    calls.set(req.id, controller);
    try {
      const response = await provider.callApi(req.prompt, callContext(req.context), { abortSignal: controller.signal });
      return answerOf(response);
    } finally {
      calls.delete(req.id);
    }
  }

  // --- the protocol ---
  function errorOf(err, kind) {
    if (err instanceof Error) {
      return { kind, name: err.name, message: err.message, text: String(err), stack: err.stack || String(err) };
    }
    return { kind, name: "", message: String(err), text: String(err), stack: String(err) }; // thrown as is
  }

  async function handle(req) {
    if (req.op === "ping") return { id: req.id, ok: true, result: process.version };
    if (req.op === "abort") {
      const controller = calls.get(req.target);
      if (controller) controller.abort();
      return null;
    }
    if (req.op === "load") {
      try {
        return { id: req.id, ok: true, result: await load(req) };
      } catch (err) {
        return { id: req.id, ok: false, error: errorOf(err, err instanceof LoadError ? "config" : "load") };
      }
    }
    try {
      return { id: req.id, ok: true, result: await call(req) };
    } catch (err) {
      return { id: req.id, ok: false, error: errorOf(err, "threw") };
    }
  }

  function send(message) {
    if (message === null) return;
    let line;
    try {
      line = JSON.stringify(message);
    } catch (err) {
      line = JSON.stringify({
        id: message.id, ok: false,
        error: errorOf(new Error(`the answer cannot be written as JSON: ${err.message}`), "threw"),
      });
    }
    reply(line + "\n");
  }

  // stdin closed: coalmine is done with this agent (or gone); nothing waits for an answer
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    let req;
    try {
      req = JSON.parse(line);
    } catch (err) {
      send({ id: null, ok: false, error: errorOf(err, "protocol") });
      return;
    }
    handle(req).then(send, (err) => send({ id: req.id, ok: false, error: errorOf(err, "threw") }));
  });
  lines.on("close", () => process.exit(0));
})();
