// window.sarek: the Sarek compiler (sarek.wasm) and a WebGPU launcher, as a small JS API.
// The page's buttons use exactly this API; docs/playground.md documents it.
//
// The wasm module exports a plain C ABI (crates/sarek-wasm/src/lib.rs): a request is a list
// of length-prefixed fields written into module memory, a reply is JSON plus a binary part
// (buffer bytes and vector columns). Nothing is kept in the module between calls; if a call
// traps (a compiler bug), the module is instantiated again so the next call starts clean.
"use strict";

(function () {
  const TARGETS = ["wgsl", "cuda", "opencl", "glsl", "metal", "ptx", "ir"];
  const CLI_OPTIONS = { subgroups: true, float64: true, int64Atomics: true };
  const DEFAULT_FILE = "playground.sarek";
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();

  let wasmBytes = null; // the fetched module, kept to re-instantiate after a trap
  let instance = null;
  let reloading = null; // a fresh instance on its way after a trap

  async function loadWasm(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`cannot load ${url}: HTTP ${response.status}`);
    wasmBytes = await response.arrayBuffer();
    instance = (await WebAssembly.instantiate(wasmBytes, {})).instance;
  }

  function toBytes(field) {
    if (field instanceof Uint8Array) return field;
    return encoder.encode(String(field));
  }

  // One call into the module: encode the fields, call `sarek_<op>`, decode the reply.
  function call(op, fields) {
    const parts = fields.map(toBytes);
    const total = parts.reduce((n, p) => n + 4 + p.length, 0);
    const ex = instance.exports;
    let ptr = 0;
    try {
      ptr = ex.sarek_alloc(total);
      let view = new DataView(ex.memory.buffer);
      let at = ptr;
      for (const p of parts) {
        view.setUint32(at, p.length, true);
        new Uint8Array(ex.memory.buffer, at + 4, p.length).set(p);
        at += 4 + p.length;
      }
      const reply = ex["sarek_" + op](ptr, total);
      ex.sarek_free(ptr, total);
      ptr = 0;
      view = new DataView(ex.memory.buffer);
      const jsonLen = view.getUint32(reply, true);
      const binLen = view.getUint32(reply + 4, true);
      const json = decoder.decode(new Uint8Array(ex.memory.buffer, reply + 8, jsonLen));
      const binary = ex.memory.buffer.slice(reply + 8 + jsonLen, reply + 8 + jsonLen + binLen);
      ex.sarek_free(reply, 8 + jsonLen + binLen);
      const result = JSON.parse(json);
      result.binary = binary;
      return result;
    } catch (e) {
      // A trap leaves the module's memory in an unknown state: the next call waits for a
      // fresh instance (compiled asynchronously: browsers refuse large synchronous compiles).
      instance = null;
      reloading = WebAssembly.instantiate(wasmBytes, {}).then((r) => {
        instance = r.instance;
        reloading = null;
      });
      const message = `internal error in the compiler (a bug in Sarek, please report it): ${e}`;
      return failure("internal", message);
    }
  }

  function failure(kind, message) {
    const rendered = `error: ${message}\n`;
    return {
      ok: false,
      failure: kind,
      diagnostics: [{ severity: "error", message, at: null, label: "", secondary: [], notes: [], help: [], rendered }],
      rendered,
    };
  }

  // Binary columns -> { key: number[] } (bools as 0/1; int64 as numbers).
  function columns(described, binary) {
    const out = {};
    for (const c of described || []) {
      const Ty = {
        bool: Uint8Array,
        int32: Int32Array,
        int64: BigInt64Array,
        float32: Float32Array,
        float64: Float64Array,
      }[c.type];
      const typed = new Ty(binary, c.offset, c.length);
      out[c.key] = c.type === "int64" ? Array.from(typed, Number) : Array.from(typed);
    }
    return out;
  }

  function columnTypes(described) {
    const out = {};
    for (const c of described || []) out[c.key] = c.type;
    return out;
  }

  function optionsText(o) {
    const b = (x) => (x ? "1" : "0");
    return `${b(o.subgroups)},${b(o.float64)},${b(o.int64Atomics)}`;
  }

  // Typed vectors of scalars: { x: [1, 2, 3] } or { x: "1,2,3" }.
  function vectorsText(vectors) {
    if (!vectors) return "";
    return Object.entries(vectors)
      .map(([k, v]) => `${k}=${Array.isArray(v) ? v.map((x) => (typeof x === "boolean" ? String(x) : x)).join(",") : v}`)
      .join("\n");
  }

  function dimsText(d) {
    if (d === undefined || d === null || d === "") return "";
    return Array.isArray(d) ? d.join(",") : String(d);
  }

  function argsText(args) {
    if (!args) return "";
    if (Array.isArray(args)) return args.map(([k, v]) => `${k}=${v}`).join("\n");
    return Object.entries(args)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n");
  }

  // ------------------------------------------------------------------------------------
  // WebGPU

  let gpu = null; // { device, adapterInfo, options, limits, name, features } or { error }

  async function openGpu() {
    if (gpu) return gpu;
    if (!navigator.gpu) {
      gpu = { error: "this browser has no WebGPU (navigator.gpu is missing)" };
      return gpu;
    }
    try {
      const adapter = await navigator.gpu.requestAdapter();
      if (!adapter) {
        gpu = { error: "WebGPU found no adapter" };
        return gpu;
      }
      const info = adapter.info || {};
      // Warp operations need 32-lane subgroups: the language's warps are 32 wide, and a
      // kernel written for them computes something else on narrower subgroups (the same
      // rule as the native wgpu backend).
      const warp32 = info.subgroupMinSize === 32 && info.subgroupMaxSize === 32;
      const subgroups = adapter.features.has("subgroups") && warp32;
      const l = adapter.limits;
      const limits = {
        maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
        maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
        maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
        maxComputeWorkgroupSizeY: l.maxComputeWorkgroupSizeY,
        maxComputeWorkgroupSizeZ: l.maxComputeWorkgroupSizeZ,
        maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        maxBufferSize: l.maxBufferSize,
      };
      const device = await adapter.requestDevice({
        requiredFeatures: subgroups ? ["subgroups"] : [],
        requiredLimits: limits,
      });
      const name =
        [info.vendor, info.architecture, info.description].filter((x) => x).join(" ") || "WebGPU adapter";
      gpu = {
        device,
        name,
        features: [...adapter.features].sort(),
        subgroupSize: [info.subgroupMinSize, info.subgroupMaxSize],
        // WGSL has no 64-bit types; the generator refuses them whatever the options say.
        options: { subgroups, float64: false, int64Atomics: false },
        limits,
        pipelines: new Map(),
      };
      device.lost.then((e) => {
        gpu = { error: `the WebGPU device was lost: ${e.message || e.reason}` };
      });
    } catch (e) {
      gpu = { error: `WebGPU could not open a device: ${e.message || e}` };
    }
    return gpu;
  }

  function limitsText(g) {
    const l = g.limits;
    return [
      g.name.replace(/;/g, ","),
      l.maxStorageBuffersPerShaderStage,
      l.maxComputeInvocationsPerWorkgroup,
      `${l.maxComputeWorkgroupSizeX},${l.maxComputeWorkgroupSizeY},${l.maxComputeWorkgroupSizeZ}`,
      l.maxComputeWorkgroupsPerDimension,
    ].join(";");
  }

  async function pipelineFor(g, plan) {
    const key = plan.wgsl + "\u0000" + plan.block.join(",");
    const cached = g.pipelines.get(key);
    if (cached) return cached;
    const device = g.device;
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ code: plan.wgsl });
    const entries = [];
    if (plan.uniform)
      entries.push({ binding: plan.uniform.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } });
    for (const b of plan.buffers)
      entries.push({ binding: b.binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: "storage" } });
    const layout = device.createBindGroupLayout({ entries });
    const pipeline = device.createComputePipeline({
      layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: {
        module,
        entryPoint: plan.entryPoint,
        constants: { sarek_block_x: plan.block[0], sarek_block_y: plan.block[1], sarek_block_z: plan.block[2] },
      },
    });
    const error = await device.popErrorScope();
    if (error) {
      const info = await module.getCompilationInfo();
      const log = info.messages.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`).join("\n");
      throw new GeneratedSourceRejected(`${error.message}${log ? "\n" + log : ""}`);
    }
    const compiled = { pipeline, layout };
    g.pipelines.set(key, compiled);
    return compiled;
  }

  class GeneratedSourceRejected extends Error {}

  // Run a prepared launch; resolves to the read-back bytes of every storage buffer, in order.
  async function launch(g, plan, compiled) {
    const device = g.device;
    device.pushErrorScope("validation");
    device.pushErrorScope("out-of-memory");
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const buffers = plan.buffers.map((b) => {
      const buf = device.createBuffer({ size: b.size, usage });
      device.queue.writeBuffer(buf, 0, plan.binary, b.offset, b.size);
      return buf;
    });
    const entries = plan.buffers.map((b, i) => ({ binding: b.binding, resource: { buffer: buffers[i] } }));
    let uniform = null;
    if (plan.uniform) {
      uniform = device.createBuffer({ size: plan.uniform.size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(uniform, 0, plan.binary, plan.uniform.offset, plan.uniform.size);
      entries.push({ binding: plan.uniform.binding, resource: { buffer: uniform } });
    }
    const bindGroup = device.createBindGroup({ layout: compiled.layout, entries });
    await device.queue.onSubmittedWorkDone(); // uploads finish before the dispatch is timed
    const started = performance.now();
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(compiled.pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(plan.grid[0], plan.grid[1], plan.grid[2]);
    pass.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const kernelMs = performance.now() - started;
    const enc2 = device.createCommandEncoder();
    const staging = buffers.map((b, i) => {
      const s = device.createBuffer({ size: plan.buffers[i].size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      enc2.copyBufferToBuffer(b, 0, s, 0, plan.buffers[i].size);
      return s;
    });
    device.queue.submit([enc2.finish()]);
    const oom = await device.popErrorScope();
    const validation = await device.popErrorScope();
    const problem = validation || oom;
    if (problem) throw new Error(`WebGPU failed to run the kernel: ${problem.message}`);
    const total = plan.buffers.reduce((n, b) => n + b.size, 0);
    const readback = new Uint8Array(total);
    let at = 0;
    for (const s of staging) {
      await s.mapAsync(GPUMapMode.READ);
      readback.set(new Uint8Array(s.getMappedRange()), at);
      at += s.size;
      s.unmap();
      s.destroy();
    }
    for (const b of buffers) b.destroy();
    if (uniform) uniform.destroy();
    return { readback, kernelMs };
  }

  // ------------------------------------------------------------------------------------
  // The API

  async function loaded() {
    await ready;
    while (reloading) await reloading;
  }

  const ready = (async () => {
    const script = document.currentScript;
    const url = (script && script.dataset.wasm) || "sarek.wasm";
    await loadWasm(url);
  })();

  // Options not given default to the CLI's (every capability), except for WGSL: the
  // device's own (subgroups only with 32 lanes, never 64-bit types).
  async function compile(source, target, options) {
    await loaded();
    target = String(target);
    let defaults = CLI_OPTIONS;
    if (target === "wgsl") {
      const g = await openGpu();
      if (g.options) defaults = g.options;
    }
    const opts = { ...defaults, ...(options || {}) };
    const r = call("compile", [opts.file || DEFAULT_FILE, source, target, optionsText(opts)]);
    delete r.binary;
    if (!r.ok) r.code = "";
    return r;
  }

  async function describe(source, file) {
    await loaded();
    const r = call("describe", [file || DEFAULT_FILE, source]);
    delete r.binary;
    return r;
  }

  function runFields(source, kernel, o) {
    return [
      o.file || DEFAULT_FILE,
      source,
      kernel,
      o.size === undefined ? "" : String(o.size),
      o.seed === undefined ? "" : String(o.seed),
      argsText(o.args),
      vectorsText(o.vectors),
    ];
  }

  async function inputs(source, kernel, o = {}) {
    await loaded();
    const r = call("inputs", runFields(source, kernel, o));
    if (r.ok) {
      r.types = columnTypes(r.inputs);
      r.inputs = columns(r.inputs, r.binary);
    }
    delete r.binary;
    return r;
  }

  async function run(source, kernel, o = {}) {
    await loaded();
    const g = await openGpu();
    if (g.error) return failure("unavailable", `the WebGPU device is unavailable: ${g.error}`);
    const fields = runFields(source, kernel, o).concat([
      dimsText(o.grid),
      dimsText(o.block),
      optionsText(g.options),
      limitsText(g),
    ]);
    const started = performance.now();
    const plan = call("prepare", fields);
    if (!plan.ok) {
      delete plan.binary;
      return plan;
    }
    let compiled;
    try {
      compiled = await pipelineFor(g, plan);
    } catch (e) {
      // Not a refusal: Sarek generated WGSL the browser rejects, a bug (as `sarek run`).
      return failure("compile", `WebGPU rejected the generated WGSL (a bug in Sarek, please report it): ${e.message}`);
    }
    let launched;
    try {
      launched = await launch(g, plan, compiled);
    } catch (e) {
      return failure("launch", e.message || String(e));
    }
    const done = call("finish", fields.concat([launched.readback]));
    if (!done.ok) {
      delete done.binary;
      return done;
    }
    return {
      ok: true,
      outputs: columns(done.outputs, done.binary),
      inputs: columns(plan.inputs, plan.binary),
      types: columnTypes(done.outputs),
      diagnostics: [],
      rendered: "",
      device: g.name,
      grid: plan.grid,
      block: plan.block,
      wgsl: plan.wgsl,
      kernelMs: launched.kernelMs,
      totalMs: performance.now() - started,
    };
  }

  async function device() {
    const g = await openGpu();
    if (g.error) return { available: false, reason: g.error, options: { subgroups: false, float64: false, int64Atomics: false } };
    return {
      available: true,
      name: g.name,
      features: g.features,
      subgroupSize: g.subgroupSize,
      options: { ...g.options },
      limits: { ...g.limits },
    };
  }

  window.sarek = { ready, targets: TARGETS, compile, describe, inputs, run, device };
})();
