// The playground page: wires the editor, the target tabs and the Run form to window.sarek
// (sarek.js). Everything the page does goes through that public API.
"use strict";

(function () {
  const TAB_NAMES = { wgsl: "WGSL", cuda: "CUDA", opencl: "OpenCL C", glsl: "GLSL", metal: "Metal", ptx: "PTX", ir: "IR" };
  const ROWS_SHOWN = 64;
  const $ = (id) => document.getElementById(id);

  const state = {
    file: "playground.sarek",
    tab: "wgsl",
    results: {}, // target -> compile result for the current text
    description: null, // describe() of the last text that checked
    generation: 0, // bumps on each edit, so a slow compile never overwrites a newer one
    firstCompileMs: null,
  };
  window.sarekPage = state; // for tests and curious users

  const editor = new SarekEditor.Editor($("editor"), () => schedule());

  // ----------------------------------------------------------------------------------
  // Examples

  const examples = window.SAREK_EXAMPLES || [];
  for (const ex of examples) {
    const o = document.createElement("option");
    o.value = ex.name;
    o.textContent = ex.name;
    $("examples").appendChild(o);
  }
  $("examples").addEventListener("change", () => loadExample($("examples").value));

  function loadExample(name) {
    const ex = examples.find((e) => e.name === name);
    if (!ex) return;
    $("examples").value = name;
    state.file = ex.name;
    editor.value = ex.source;
    history.replaceState(null, "", "#" + encodeURIComponent(ex.name));
    schedule(0);
  }

  // ----------------------------------------------------------------------------------
  // Tabs

  for (const t of window.sarek.targets.concat(["run"])) {
    const b = document.createElement("button");
    b.type = "button";
    b.role = "tab";
    b.dataset.tab = t;
    b.textContent = t === "run" ? "▶ Run" : TAB_NAMES[t];
    if (t === "run") b.classList.add("run");
    b.addEventListener("click", () => selectTab(t));
    $("tabs").appendChild(b);
  }

  function selectTab(t) {
    state.tab = t;
    for (const b of $("tabs").children) b.setAttribute("aria-selected", String(b.dataset.tab === t));
    $("code-view").hidden = t === "run";
    $("run-view").hidden = t !== "run";
    showTarget();
  }

  function showTarget() {
    const t = state.tab === "run" ? "wgsl" : state.tab;
    const r = state.results[t];
    const code = $("code");
    if (!r) {
      code.textContent = "";
      return;
    }
    code.className = r.ok ? "" : "refusal";
    code.textContent = r.ok ? r.code : r.rendered;
    $("abi").textContent = r.ok ? JSON.stringify(r.kernels.map((k) => ({ kernel: k.name, ...k.abi })), null, 2) : "";
    $("abi-box").hidden = !r.ok;
    // Markers: source errors, or this target's refusal, in the editor.
    editor.setDiagnostics(r.diagnostics);
    showDiagnostics(r.ok ? [] : r.diagnostics);
  }

  function showDiagnostics(diagnostics) {
    const box = $("diagnostics");
    box.innerHTML = "";
    for (const d of diagnostics) {
      const pre = document.createElement("pre");
      pre.textContent = d.rendered.trimEnd();
      if (d.at) pre.addEventListener("click", () => editor.reveal(d.at.line, d.at.column));
      box.appendChild(pre);
    }
  }

  // ----------------------------------------------------------------------------------
  // Compiling

  let timer = null;
  function schedule(delay = 150) {
    state.generation++;
    clearTimeout(timer);
    timer = setTimeout(compileAll, delay);
  }

  async function compileAll() {
    const generation = state.generation;
    const source = editor.value;
    const started = performance.now();
    const results = {};
    // The tab on screen first, then the others (their tabs turn red when they refuse).
    const order = [state.tab === "run" ? "wgsl" : state.tab].concat(window.sarek.targets);
    for (const t of order) {
      if (results[t]) continue;
      results[t] = await window.sarek.compile(source, t, { file: state.file });
      if (generation !== state.generation) return;
      if (Object.keys(results).length === 1) {
        state.results = results;
        showTarget();
        if (state.firstCompileMs === null) state.firstCompileMs = performance.now();
      }
    }
    const ms = performance.now() - started;
    state.results = results;
    for (const b of $("tabs").children) {
      const r = results[b.dataset.tab];
      b.classList.toggle("refused", !!r && !r.ok);
      b.title = r && !r.ok ? r.diagnostics.map((d) => d.message).join("\n") : "";
    }
    showTarget();
    const failed = Object.values(results).find((r) => !r.ok && r.failure === "source");
    const status = $("status");
    if (failed) {
      const n = failed.diagnostics.length;
      status.textContent = `${n} error${n === 1 ? "" : "s"}`;
      status.className = "status error";
    } else {
      const refused = Object.entries(results).filter(([, r]) => !r.ok).map(([t]) => TAB_NAMES[t]);
      status.textContent = `checked; ${window.sarek.targets.length} targets in ${ms.toFixed(0)} ms` +
        (refused.length ? ` (refused by ${refused.join(", ")})` : "");
      status.className = "status ok";
      const d = await window.sarek.describe(source, state.file);
      if (generation === state.generation && d.ok) {
        state.description = d;
        updateRunForm();
      }
    }
  }

  // ----------------------------------------------------------------------------------
  // Run

  function updateRunForm() {
    const d = state.description;
    const select = $("kernel");
    const previous = select.value;
    select.innerHTML = "";
    for (const k of d.kernels) {
      const o = document.createElement("option");
      o.value = o.textContent = k.name;
      select.appendChild(o);
    }
    if (d.kernels.some((k) => k.name === previous)) select.value = previous;
    fillArgs(select.value !== previous);
  }

  // The argument fields of the selected kernel, from its first @run directive when `fresh`.
  function fillArgs(fresh) {
    const d = state.description;
    const k = d && d.kernels.find((x) => x.name === $("kernel").value);
    const box = $("args");
    const kept = {};
    for (const input of box.querySelectorAll("input")) kept[input.name] = input.value;
    box.innerHTML = "";
    if (!k) return;
    const directive = d.directives.find((x) => x.kernel === k.name);
    if (fresh) {
      $("size").value = directive ? directive.size : 1024;
      $("grid").value = directive && directive.grid ? dims(directive.grid) : "";
      $("block").value = directive && directive.block ? dims(directive.block) : "";
    }
    for (const p of k.params) {
      // Vectors of scalars may be typed (`1, 2, 3`); empty, or any other vector, is seeded.
      if (p.kind === "vector" && p.leaves.length !== 1) continue;
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.name = p.name;
      input.dataset.kind = p.kind;
      if (p.kind === "vector") {
        input.placeholder = "seeded";
        input.title = "values separated by commas; empty: the seeded generator";
        input.value = fresh ? "" : kept[p.name] || "";
      } else {
        input.placeholder = p.kind === "value" ? p.syntax : p.type;
        input.value = fresh ? (directive && directive.args[p.name]) || "" : kept[p.name] || "";
      }
      label.append(`${p.name} `, input);
      const ty = document.createElement("span");
      ty.textContent = `: ${p.type}`;
      label.append(ty);
      box.appendChild(label);
    }
  }

  // `16,16` for [16, 16, 1], as directives write it.
  function dims(d) {
    const v = d.slice();
    while (v.length > 1 && v[v.length - 1] === 1) v.pop();
    return v.join(",");
  }

  $("kernel").addEventListener("change", () => fillArgs(true));

  $("run-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const args = {};
    const vectors = {};
    for (const input of $("args").querySelectorAll("input")) {
      if (input.value.trim() === "") continue;
      (input.dataset.kind === "vector" ? vectors : args)[input.name] = input.value.trim();
    }
    const options = {
      file: state.file,
      size: $("size").value,
      seed: $("seed").value,
      args,
      vectors,
      grid: $("grid").value.trim(),
      block: $("block").value.trim(),
    };
    const status = $("run-status");
    status.className = "run-status";
    status.textContent = "running…";
    $("results").innerHTML = "";
    $("images").innerHTML = "";
    const r = await window.sarek.run(editor.value, $("kernel").value, options);
    showRun(r, args);
  });

  function showRun(r, args) {
    const status = $("run-status");
    if (!r.ok) {
      status.className = "run-status";
      status.innerHTML = "";
      const pre = document.createElement("pre");
      pre.textContent = r.rendered.trimEnd();
      status.appendChild(pre);
      editor.setDiagnostics(r.diagnostics);
      showDiagnostics(r.diagnostics.filter((d) => d.at));
      return;
    }
    status.className = "run-status ok";
    status.textContent =
      `ran on ${r.device}: grid ${r.grid.join("×")}, block ${r.block.join("×")}, ` +
      `kernel ${r.kernelMs.toFixed(2)} ms, total ${r.totalMs.toFixed(1)} ms`;
    showImages(r, args);
    showTable(r);
  }

  function fmt(x, type) {
    if (type === "float32" || type === "float64") {
      if (Number.isNaN(x)) return "NaN";
      return Number.isInteger(x) ? x.toFixed(1) : String(Number(x.toPrecision(type === "float32" ? 8 : 16)));
    }
    if (type === "bool") return x ? "true" : "false";
    return String(x);
  }

  function showTable(r) {
    const keys = Object.keys(r.outputs);
    const n = Math.max(0, ...keys.map((k) => r.outputs[k].length));
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    head.appendChild(Object.assign(document.createElement("th"), { textContent: "i" }));
    for (const k of keys) {
      const th = document.createElement("th");
      th.textContent = k;
      head.appendChild(th);
      const input = document.createElement("th");
      input.className = "input";
      input.textContent = `${k} (input)`;
      head.appendChild(input);
    }
    const body = table.createTBody();
    for (let i = 0; i < Math.min(n, ROWS_SHOWN); i++) {
      const row = body.insertRow();
      row.insertCell().textContent = i;
      for (const k of keys) {
        row.insertCell().textContent = fmt(r.outputs[k][i], r.types[k]);
        const c = row.insertCell();
        c.className = "input";
        c.textContent = fmt(r.inputs[k][i], r.types[k]);
      }
    }
    const box = $("results");
    box.appendChild(table);
    if (n > ROWS_SHOWN) {
      const more = document.createElement("div");
      more.className = "more";
      more.textContent = `… ${n - ROWS_SHOWN} more rows (window.sarek.run returns them all)`;
      box.appendChild(more);
    }
  }

  // A 2-D launch's outputs as images: width × height from the arguments when the kernel takes
  // them (width/height, cols/rows, nx/ny), else the launch's threads along x and y.
  function showImages(r, args) {
    const threads = [r.grid[0] * r.block[0], r.grid[1] * r.block[1]];
    if (threads[1] <= 1) return;
    const pick = (names, fallback) => {
      for (const n of names) if (args[n] !== undefined && /^\d+$/.test(args[n])) return Number(args[n]);
      return fallback;
    };
    const w = pick(["width", "cols", "nx", "w"], threads[0]);
    const h = pick(["height", "rows", "ny", "h"], threads[1]);
    for (const [k, data] of Object.entries(r.outputs)) {
      if (data.length < w * h || w * h === 0) continue;
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < w * h; i++) if (Number.isFinite(data[i])) { lo = Math.min(lo, data[i]); hi = Math.max(hi, data[i]); }
      const canvas = document.createElement("canvas");
      canvas.width = w;
      canvas.height = h;
      const ctx = canvas.getContext("2d");
      const img = ctx.createImageData(w, h);
      for (let i = 0; i < w * h; i++) {
        const t = hi > lo ? (data[i] - lo) / (hi - lo) : 0;
        // A warm ramp: dark brown to pale yellow.
        img.data[4 * i] = Math.round(255 * Math.min(1, 0.1 + 1.2 * t));
        img.data[4 * i + 1] = Math.round(255 * Math.max(0, Math.min(1, 1.3 * t - 0.2)));
        img.data[4 * i + 2] = Math.round(255 * Math.max(0, 1.6 * t - 0.8));
        img.data[4 * i + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
      const fig = document.createElement("figure");
      const cap = document.createElement("figcaption");
      cap.textContent = `${k}: ${w}×${h}, ${fmt(lo, r.types[k])} … ${fmt(hi, r.types[k])}`;
      fig.append(canvas, cap);
      $("images").appendChild(fig);
    }
  }

  // ----------------------------------------------------------------------------------
  // Start

  (async () => {
    selectTab("wgsl");
    try {
      await window.sarek.ready;
    } catch (e) {
      $("status").textContent = `the compiler did not load: ${e.message || e}`;
      $("status").className = "status error";
      return;
    }
    const wanted = decodeURIComponent(location.hash.slice(1));
    loadExample(examples.some((e) => e.name === wanted) ? wanted : examples.some((e) => e.name === "mandelbrot.sarek") ? "mandelbrot.sarek" : (examples[0] || {}).name);
    if (!examples.length) editor.value = "";
    const dev = await window.sarek.device();
    const gpu = $("gpu");
    if (dev.available) {
      const sg = dev.options.subgroups ? "warps: yes" : `warps: no (subgroups ${dev.subgroupSize.filter((x) => x).join("–") || "absent"})`;
      gpu.textContent = `WebGPU: ${dev.name} · ${sg} · no float64`;
    } else {
      gpu.textContent = `WebGPU unavailable: ${dev.reason}`;
      gpu.style.color = "var(--err)";
    }
  })();
})();
