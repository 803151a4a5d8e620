// coalmine's Node.js worker: runs a promptfoo config's JavaScript (assertions and transforms)
// the way promptfoo 0.121.20 runs it, answering one JSON line for each JSON line on stdin.
//
// Started by coalmine.promptfoo.node; see that module for the protocol and the rules mirrored.
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

  // The protocol owns stdout: whatever the config's code prints goes to stderr instead.
  const reply = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  process.on("uncaughtException", (err) => {
    process.stderr.write(`uncaught exception in a config's JavaScript: ${err && err.stack}\n`);
  });
  process.on("unhandledRejection", (err) => {
    process.stderr.write(`unhandled rejection in a config's JavaScript: ${err && err.stack}\n`);
  });

  // --- promptfoo's process shim (src/util/processShim.ts): process.mainModule.require ---
  const shims = new Map();
  function processShim(baseDir) {
    let shim = shims.get(baseDir);
    if (!shim) {
      // promptfoo's require resolves from its own install folder; ours from the config's
      const req = createRequire(path.join(baseDir, "__coalmine__.js"));
      shim = new Proxy(process, {
        get(target, prop) {
          if (prop === "mainModule") {
            return { require: req, exports: {}, id: ".", filename: "", loaded: true, children: [], paths: [] };
          }
          return Reflect.get(target, prop);
        },
      });
      shims.set(baseDir, shim);
    }
    return shim;
  }

  // --- module loading (src/esm.ts importModule) ---
  const JAVASCRIPT_FILE = /\.(js|cjs|mjs|ts|cts|mts)$/i;
  const CJS_IN_ESM = [
    "require is not defined", "module is not defined", "exports is not defined",
    "__dirname is not defined", "__filename is not defined", "Cannot use import statement",
    "ERR_REQUIRE_ESM",
  ];

  class Unsupported extends Error {}

  function loadCjsModule(modulePath) {
    const code = fs.readFileSync(modulePath, "utf-8");
    const moduleObj = { exports: {} };
    const context = vm.createContext({
      module: moduleObj, exports: moduleObj.exports,
      require: createRequire(pathToFileURL(modulePath).href),
      __dirname: path.dirname(modulePath), __filename: modulePath,
      global: globalThis, globalThis, console, process, Buffer,
      setTimeout, setInterval, setImmediate, clearTimeout, clearInterval, clearImmediate,
      queueMicrotask, URL, URLSearchParams, TextEncoder, TextDecoder,
    });
    vm.runInContext(code, context, { filename: modulePath });
    return moduleObj.exports;
  }

  // promptfoo registers the tsx loader (a package it depends on) before it imports a .ts,
  // .cts or .mts file; tsx is resolved beside the config, then in the promptfoo installs found
  // by coalmine (loaderDirs of each request)
  let loaderDirs = [];
  let baseDir = process.cwd();
  let tsxLoading;

  function findTsx() {
    for (const dir of [baseDir, ...loaderDirs]) {
      try {
        return createRequire(path.join(dir, "__coalmine__.js")).resolve("tsx");
      } catch {
        // not installed there
      }
    }
    return null;
  }

  async function ensureTypescriptLoader(modulePath) {
    if (!/\.[cm]?ts$/.test(modulePath)) return;
    if (!tsxLoading) {
      const found = findTsx();
      if (!found) {
        throw new Unsupported(
          `${modulePath} is TypeScript, which promptfoo loads through the tsx package: install ` +
          "it beside the config (npm install tsx), or put promptfoo's own install on PATH");
      }
      tsxLoading = import(pathToFileURL(found).href).catch((err) => {
        tsxLoading = undefined;
        throw err;
      });
    }
    await tsxLoading;
  }

  async function importModule(modulePath, functionName) {
    await ensureTypescriptLoader(modulePath);
    const pick = (mod) => (functionName ? mod[functionName] : mod);
    try {
      const imported = await import(pathToFileURL(path.resolve(modulePath)).href);
      return pick(imported?.default?.default || imported?.default || imported);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (modulePath.endsWith(".js") && CJS_IN_ESM.some((p) => message.includes(p))) {
        return pick(loadCjsModule(path.resolve(modulePath)));
      }
      if (err && err.code === "ERR_MODULE_NOT_FOUND" && !fs.existsSync(path.resolve(modulePath))) {
        const missing = new Error(`ENOENT: no such file or directory, open '${path.resolve(modulePath)}'`);
        missing.code = "ENOENT";
        throw missing;
      }
      throw err;
    }
  }

  // --- javascript assertions (src/assertions/javascript.ts) ---
  function isCharEscaped(code, index) {
    let count = 0;
    for (let i = index - 1; i >= 0 && code[i] === "\\"; i--) count++;
    return count % 2 === 1;
  }

  function lastStatementSemicolon(code) {
    let single = false, double = false, template = false, last = -1;
    for (let i = 0; i < code.length; i++) {
      const c = code[i];
      if (!isCharEscaped(code, i)) {
        if (c === "'" && !double && !template) single = !single;
        else if (c === '"' && !single && !template) double = !double;
        else if (c === "`" && !single && !double) template = !template;
      }
      if (c === ";" && !single && !double && !template) last = i;
    }
    return last;
  }

  function functionBody(code) {
    const trimmed = code.trim().replace(/;+\s*$/, "");
    if (/^(const|let|var)\s/.test(trimmed)) {
      const at = lastStatementSemicolon(trimmed);
      if (at !== -1) {
        const expression = trimmed.slice(at + 1).trim();
        if (expression) return `${trimmed.slice(0, at + 1)} return ${expression}`;
      }
      return trimmed;
    }
    return `return ${trimmed}`;
  }

  function isGradingResult(r) {
    return typeof r === "object" && r !== null && typeof r.pass === "boolean" &&
      typeof r.score === "number" && typeof r.reason === "string" &&
      (r.namedScores === undefined || typeof r.namedScores === "object") &&
      (r.namedScoreWeights === undefined || typeof r.namedScoreWeights === "object") &&
      (r.tokensUsed === undefined || typeof r.tokensUsed === "object") &&
      (r.componentResults === undefined || Array.isArray(r.componentResults)) &&
      (r.assertion === undefined || r.assertion === null || typeof r.assertion === "object") &&
      (r.comment === undefined || typeof r.comment === "string");
  }

  async function validated(result) {
    result = await Promise.resolve(result);
    if (typeof result === "boolean" || typeof result === "number" || isGradingResult(result)) return result;
    throw new Error(
      "Custom function must return a boolean, number, or GradingResult object. " +
      `Got type ${typeof result}: ${JSON.stringify(result)}`);
  }

  function withValue(reason, renderedValue) {
    return typeof renderedValue === "string" && renderedValue ? `${reason}\n${renderedValue}` : reason;
  }

  function normalized(result, inverse, threshold, renderedValue) {
    const failed = (rawPass) => withValue(`Custom function returned ${rawPass ? "true" : "false"}`, renderedValue);
    if (typeof result === "boolean") {
      const pass = result !== inverse;
      return { pass, score: pass ? 1 : 0, reason: pass ? "Assertion passed" : failed(result) };
    }
    if (typeof result === "number") {
      const rawPass = threshold === undefined ? result > 0 : result >= threshold;
      const pass = rawPass !== inverse;
      return { pass, score: result, reason: pass ? "Assertion passed" : failed(rawPass) };
    }
    const pass = result.pass !== inverse;
    const reason = pass === result.pass ? result.reason
      : pass ? "Assertion passed" : `Custom function returned ${result.pass ? "true" : "false"}`;
    const { pass: _p, score, reason: _r, assertion: _a, ...extra } = result;
    return { pass, score, reason, extra };
  }

  async function callFile(filePath, functionName, args) {
    const mod = await importModule(filePath, functionName);
    if (functionName && typeof mod[functionName] === "function") return mod[functionName](...args);
    if (typeof mod === "function") return mod(...args);
    if (mod.default && typeof mod.default === "function") return mod.default(...args);
    throw new Error(`Assertion malformed: ${filePath} must export a function or have a default export as a function`);
  }

  async function assertion(req, output, context, shim) {
    const inverse = req.inverse;
    const threshold = req.threshold === null ? undefined : req.threshold;
    let renderedValue = req.code;
    let fromScript;
    if (typeof renderedValue === "string" && renderedValue.startsWith("file://")) {
      const ref = renderedValue.slice(7);
      const colon = ref.indexOf(":");
      const filePath = path.resolve(req.baseDir, colon === -1 ? ref : ref.slice(0, colon));
      if (JAVASCRIPT_FILE.test(filePath)) {
        // outside promptfoo's try: a file that throws or does not load makes the row an ERROR
        fromScript = await callFile(filePath, colon === -1 ? undefined : ref.slice(colon + 1), [output, context]);
      } else if (/\.(py|rb|ya?ml)$/.test(filePath)) {
        throw new Unsupported(`a javascript assertion whose value is ${path.basename(filePath)} does not run in Node.js`);
      } else {
        // promptfoo's processFileReference (the whole reference, colon included): a .txt file
        // holds the code itself, a .json file a value that is not code
        const whole = path.resolve(req.baseDir, ref);
        if (whole.endsWith(".txt")) renderedValue = fs.readFileSync(whole, "utf8").trim();
        else if (whole.endsWith(".json")) renderedValue = JSON.parse(fs.readFileSync(whole, "utf8"));
        else throw new Error(`Unsupported file type: ${whole}`);
      }
    }
    try {
      if (typeof renderedValue !== "string") {
        throw new Error("Invariant failed: javascript assertion must have a string value");
      }
      renderedValue = renderedValue.trimEnd();
      let result;
      if (fromScript === undefined) {
        const body = renderedValue.includes("\n") ? renderedValue : functionBody(renderedValue);
        result = await validated(new Function("output", "context", "process", body)(output, context, shim));
      } else {
        if (!["boolean", "number", "object"].includes(typeof fromScript)) {
          throw new Error(`Invariant failed: Javascript assertion script must return a boolean, number, or object (${req.code})`);
        }
        result = await validated(fromScript);
      }
      return normalized(result, inverse, threshold, renderedValue);
    } catch (err) {
      return {
        pass: false,
        score: 0,
        reason: withValue(`Custom function threw error: ${err.message}\nStack Trace: ${err.stack}`, renderedValue),
      };
    }
  }

  // a file's function as the value of a type that is not a script (runAssertion's
  // valueFromScript): undefined leaves the value as written, a function is rejected
  async function scriptValue(req, output, context) {
    const ref = req.code.slice(7);
    const colon = ref.indexOf(":");
    const filePath = path.resolve(req.baseDir, colon === -1 ? ref : ref.slice(0, colon));
    const value = await callFile(filePath, colon === -1 ? undefined : ref.slice(colon + 1), [output, context]);
    if (value === undefined) return { undefined: true };
    if (typeof value === "function") return { function: true };
    return { value };
  }

  // --- transforms (src/util/transform.ts) ---
  function transformLabel(code) {
    if (code.startsWith("file://")) return "[file transform]";
    const line = code.replace(/\s+/g, " ").trim();
    return `[inline transform]: ${line.length > 80 ? `${line.slice(0, 79)}…` : line}`;
  }

  async function transformFunction(code, baseDir, inputName) {
    if (!code.startsWith("file://")) {
      return new Function(inputName, "context", "process", code.includes("\n") ? code : `return ${code}`);
    }
    const ref = code.slice(7);
    const colon = ref.lastIndexOf(":");
    const [file, name] = colon > 1 ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, undefined];
    const fullPath = path.isAbsolute(file) ? file : path.join(baseDir, file);
    if (!JAVASCRIPT_FILE.test(fullPath)) {
      if (fullPath.endsWith(".py")) throw new Unsupported(`Python transforms do not run in Node.js: file://${file}`);
      throw new Error(`Unsupported transform file format: file://${file}`);
    }
    const mod = await importModule(fullPath);
    if (name && Object.prototype.hasOwnProperty.call(mod, name) && typeof mod[name] === "function") return mod[name];
    if (typeof mod === "function") return mod;
    if (mod.default && typeof mod.default === "function") return mod.default;
    throw new Error(`Transform ${fullPath} must export a function, have a default export as a function, or export the specified function "${name}"`);
  }

  async function transform(req, output, context, shim) {
    const fn = await transformFunction(req.code, req.baseDir, req.inputName);
    let ret;
    try {
      ret = await Promise.resolve(fn(output, context, shim));
    } catch (err) {
      if (err instanceof Error) {
        const wrapped = new Error(`Transform failed (${transformLabel(req.code)}): ${err.message}`);
        wrapped.cause = err;
        throw wrapped;
      }
      throw err;
    }
    if (ret === null || ret === undefined) {
      throw new Error(`Transform function did not return a value\n\n${transformLabel(req.code)}`);
    }
    if (typeof ret === "function") {
      throw new Unsupported(
        "the transform returned a function, which promptfoo would pass on as the output itself; " +
        "write an expression of `output` (e.g. output.trim()), not a function expression");
    }
    return ret;
  }

  // --- functions a config names (src/util/functions/loadFunction.ts): assertScoringFunction ---
  class LoadError extends Error {}

  async function loadFunction(reference, baseDir) {
    // parseFileUrl: the name after the last ":" only when what is before it is a code file
    const ref = reference.startsWith("file://") ? reference.slice(7) : reference;
    const colon = ref.lastIndexOf(":");
    let [file, name] = [ref, undefined];
    if (colon > 1 && /\.(js|cjs|mjs|ts|cts|mts|py)$/i.test(ref.slice(0, colon))) {
      [file, name] = [ref.slice(0, colon), ref.slice(colon + 1)];
    }
    const fullPath = path.resolve(baseDir, file);
    if (!JAVASCRIPT_FILE.test(fullPath)) {
      throw new LoadError("File must be a JavaScript (.js, .cjs, .mjs, .ts, .cts, .mts) or Python (.py) file");
    }
    let mod;
    try {
      mod = await importModule(fullPath, name);
    } catch (err) {
      if (err instanceof Unsupported) throw err;
      throw new LoadError(err instanceof Error ? err.message : String(err));
    }
    const fn = name ? mod : typeof mod === "function" ? mod : mod?.default?.default || mod?.default || mod?.func || mod;
    if (typeof fn !== "function") {
      throw new LoadError(name ? `JavaScript file must export a "${name}" function`
        : 'JavaScript file must export a function (as default export or named export "func")');
    }
    return fn;
  }

  async function callFunction(req) {
    const fn = await loadFunction(req.code, req.baseDir);
    return await Promise.resolve(fn(...req.args));
  }

  // --- code that makes prompts, vars, tests and filters (src/prompts/processors/javascript.ts,
  // renderPrompt's var loaders, readJavascriptTestCases, readFilters) ---
  function providerObject(provider) {
    // what promptfoo hands this code is the provider object itself, whose id is a method
    if (!provider || typeof provider !== "object") return provider;
    const id = provider.id;
    return { ...provider, id: () => id };
  }

  const filters = new Map();

  async function callCode(req) {
    const file = path.resolve(req.baseDir, req.file);
    if (req.op === "prompt") {
      const promptFunction = await importModule(file, req.functionName);
      return promptFunction(req.promptContext);
    }
    if (req.op === "var") {
      const loader = await importModule(file);
      return loader(req.varName, req.prompt, req.vars, providerObject(req.provider));
    }
    if (req.op === "tests") {
      const mod = await importModule(file, req.functionName);
      return typeof mod === "function" ? mod(req.hasConfig ? req.config : undefined) : mod;
    }
    // a filter: imported once, as promptfoo imports it when it reads the config
    if (!filters.has(file)) filters.set(file, await importModule(file));
    const filter = filters.get(file);
    if (req.load) return typeof filter;
    // values cross as JSON text, so undefined (null here) stays undefined
    const args = req.args.map((text) => (text === null ? undefined : JSON.parse(text)));
    const result = filter(...args);
    return result === undefined ? { undefined: true } : { json: JSON.stringify(result) ?? null };
  }

  // --- the protocol ---
  function errorOf(err, kind) {
    if (err instanceof Error) {
      return { kind, name: err.name, message: err.message, stack: err.stack || String(err) };
    }
    return { kind, name: "", message: String(err), stack: String(err) }; // thrown as is
  }

  function contextOf(raw) {
    const context = raw && typeof raw === "object" ? raw : {};
    // promptfoo hands code the provider object itself, whose id is a method
    const provider = context.provider;
    if (provider && typeof provider === "object" && typeof provider.id === "string") {
      const id = provider.id;
      provider.id = () => id;
    }
    return context;
  }

  function encodeScore(score) {
    return Number.isFinite(score) ? score : String(score); // NaN and ±Infinity are not JSON
  }

  // promptfoo's markup and SQL assertions, on the npm packages promptfoo grades them with
  let checks;
  async function check(req) {
    checks = checks || createRequire(path.resolve(process.argv[1]))("./node_checks.cjs");
    try {
      return { id: req.id, ok: true, result: await checks.runCheck(req.check, [req.baseDir, ...req.packageDirs]) };
    } catch (err) {
      return { id: req.id, ok: false, error: errorOf(err, err instanceof checks.MissingPackage ? "unsupported" : "error") };
    }
  }

  async function handle(req) {
    if (req.op === "ping") return { id: req.id, ok: true, result: process.version };
    if (process.cwd() !== req.baseDir) process.chdir(req.baseDir);
    if (req.op === "check") return check(req);
    baseDir = req.baseDir;
    loaderDirs = req.loaderDirs || [];
    const shim = processShim(req.baseDir);
    const context = contextOf(req.context);
    try {
      if (req.op === "assert") {
        const r = await assertion(req, req.output, context, shim);
        return { id: req.id, ok: true, result: { ...r, score: encodeScore(r.score) } };
      }
      if (req.op === "call") return { id: req.id, ok: true, result: await callFunction(req) };
      if (req.op === "value") {
        return { id: req.id, ok: true, result: await scriptValue(req, req.output, context) };
      }
      if (["prompt", "var", "tests", "filter"].includes(req.op)) {
        return { id: req.id, ok: true, result: await callCode(req) };
      }
      return { id: req.id, ok: true, result: await transform(req, req.output, context, shim) };
    } catch (err) {
      const kind = err instanceof Unsupported ? "unsupported" : err instanceof LoadError ? "load" : "error";
      return { id: req.id, ok: false, error: errorOf(err, kind) };
    }
  }

  function send(message) {
    let line;
    try {
      line = JSON.stringify(message);
    } catch (err) {
      line = JSON.stringify({
        id: message.id, ok: false,
        error: errorOf(new Error(`the result cannot be written as JSON: ${err.message}`), "error"),
      });
    }
    reply(line + "\n");
  }

  // stdin closed: answer what is in flight, then exit
  let inFlight = 0;
  let closed = false;
  const settle = () => {
    if (closed && inFlight === 0) process.exit(0);
  };
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    let req;
    try {
      req = JSON.parse(line);
    } catch (err) {
      send({ id: null, ok: false, error: errorOf(err, "protocol") });
      return;
    }
    inFlight++;
    handle(req)
      .then(send, (err) => send({ id: req.id, ok: false, error: errorOf(err, "error") }))
      .finally(() => {
        inFlight--;
        settle();
      });
  });
  lines.on("close", () => {
    closed = true;
    settle();
  });
})();
