#!/usr/bin/env python3
"""The playground in a real browser: Debian's chromium (WebGPU on its built-in SwiftShader
Vulkan, headless) driven by Playwright, the page served by a local http.server.

    python3 playground/tests/browser.py [--site DIR] [--cli PATH] [--artifacts DIR] [--measure]

Checks (each failure is listed, exit 1):

- every corpus launch (`@run` directive) of a kernel WGSL can express compiles in the page,
  and its WebGPU results equal `sarek run --backend interp` on the same inputs (the CLI's
  `--out` files, compared as `sarek verify` does: integers and bools exactly, floats within
  1e-5 or 256 ulps, variant payloads only where live); a kernel the page refuses is one
  `sarek compile --target wgsl` refuses too, or a warp kernel on a device without 32-lane
  subgroups, and the refusal is located and names WGSL;
- the inputs the page generates equal the CLI's for every element type (a kernel that writes
  nothing, run on `interp` with `--out`);
- typed vector values are used as given;
- an error kernel typed into the editor shows its located message, a marker in the gutter
  and a squiggle; a refusal and a trap at run time come back located;
- a screenshot of the page after running the Mandelbrot example goes to the artifacts folder.

With `--measure`, also prints the figures of docs/playground.md (page load to first
compile, median compile time per corpus kernel, wasm size raw and gzipped); they are printed,
never asserted.
"""

import argparse
import functools
import gzip
import http.server
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "kernels"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--enable-unsafe-webgpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# The same no-op kernel as crates/sarek-wasm/tests/harness_parity.rs: every element type.
ALL_TYPES = """
type point = { x : float32; y : float64 }
type shape = Circle of float32 | Rect of float32 * int64 | Dot of point | Empty
type item = { p : point; s : shape; k : int32; on : bool }

let%kernel all_types (a : int32 vector) (b : int64 vector) (c : float32 vector)
    (d : float64 vector) (e : bool vector) (f : point vector) (g : (int32 * float32) vector)
    (h : shape vector) (i : item vector) (n : int32) =
  let t = global_thread_id in
  if t < n then a.(t) <- a.(t) + 1
"""

ERROR_KERNEL = "tests/errors/conv_barrier_atomic.sarek"
ARTIFACTS = None  # set by main


class Failures(list):
    def check(self, ok, message):
        if not ok:
            self.append(message)
            print(f"FAIL: {message}", file=sys.stderr)
        return ok


def serve(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def directives(text):
    """(kernel, size, grid, block, args) of every `@run` line, as the harness reads them."""
    out = []
    for line in text.splitlines():
        body = line.strip()
        if body.startswith("(*"):
            body = body[2:].strip()
        if not (body == "@run" or body.startswith("@run ") or body.startswith("@run\t")):
            continue
        body = body[4:].split("*)")[0]
        words = body.split()
        d = {"kernel": words[0], "size": 1024, "grid": None, "block": None, "args": {}}
        for w in words[1:]:
            k, v = w.split("=", 1)
            if k in ("size", "grid", "block"):
                d[k] = int(v) if k == "size" else v
            else:
                d["args"][k] = v
        out.append(d)
    return out


def cli(cli_path, *args):
    return subprocess.run([str(cli_path), *args], capture_output=True, text=True, cwd=ROOT)


def cli_run(cli_path, file, d, out_dir):
    argv = ["run", str(file), "--kernel", d["kernel"], "--backend", "interp", "--size", str(d["size"]), "--out", str(out_dir)]
    for k, v in d["args"].items():
        argv += ["--arg", f"{k}={v}"]
    if d["grid"]:
        argv += ["--grid", d["grid"]]
    if d["block"]:
        argv += ["--block", d["block"]]
    return cli(cli_path, *argv)


def f32_key(x):
    i = struct.unpack("<i", struct.pack("<f", x))[0]
    return -(2**31) - i if i < 0 else i


def f64_key(x):
    i = struct.unpack("<q", struct.pack("<d", x))[0]
    return -(2**63) - i if i < 0 else i


def agree(a, b, ty):
    """`Tolerance::default().agree` (docs/cli.md): floats within atol or ulps, others exact."""
    if ty in ("float32", "float64"):
        a, b = float(a), float(b)
        if a == b or (a != a and b != b):
            return True
        if not (np.isfinite(a) and np.isfinite(b)):
            return False
        atol, ulps, key = (1e-5, 256, f32_key) if ty == "float32" else (1e-12, 4096, f64_key)
        return abs(a - b) <= atol or abs(key(a) - key(b)) <= ulps
    return int(a) == int(b)


def expected_columns(npy, param, leaves):
    """{key: (values, type)} of one `--out` file, keyed as the page keys its outputs."""
    arr = np.load(npy)
    out = {}
    for leaf in leaves:
        key = param if leaf["name"] == "" else f"{param}.{leaf['name']}"
        values = arr if leaf["name"] == "" else arr[leaf["name"]]
        out[key] = (values.tolist(), leaf["type"])
    return out


def compare(page_cols, expected, params, label, failures):
    """Compare every leaf of every vector; a payload leaf only where its constructor is live."""
    for p in params:
        if p["kind"] != "vector":
            continue
        keys = [p["name"] if l["name"] == "" else f"{p['name']}.{l['name']}" for l in p["leaves"]]
        for leaf, key in zip(p["leaves"], keys):
            want, ty = expected[key]
            got = page_cols.get(key)
            if not failures.check(got is not None and len(got) == len(want), f"{label}: `{key}` missing or of another length"):
                continue
            bad = []
            for i, (g, w) in enumerate(zip(got, want)):
                live = all(int(expected[keys[tag]][0][i]) == ctor for tag, ctor in leaf["when"])
                if live and not agree(g, w, ty):
                    bad.append(i)
            failures.check(not bad, f"{label}: `{key}` differs at {len(bad)} element(s), first {bad[:1]}: "
                           f"page {[got[i] for i in bad[:3]]} vs interp {[want[i] for i in bad[:3]]}")


def corpus_runs(page, cli_path, tmp, failures, timings):
    ran = refused = 0
    for file in sorted(CORPUS.glob("*.sarek")):
        text = file.read_text()
        rel = f"tests/kernels/{file.name}"
        started = time.perf_counter()
        compiled = page.evaluate("([s, f]) => window.sarek.compile(s, 'wgsl', {file: f})", [text, rel])
        desc = page.evaluate("([s, f]) => window.sarek.describe(s, f)", [text, rel])
        failures.check(desc["ok"], f"{file.name}: describe failed: {desc.get('rendered')}")
        cli_ok = cli(cli_path, "compile", rel, "--target", "wgsl").returncode == 0
        if not compiled["ok"]:
            rendered = compiled["rendered"]
            warp_only = "32-lane subgroups" in rendered
            failures.check(not cli_ok or warp_only, f"{file.name}: the page refuses WGSL the CLI generates:\n{rendered}")
            failures.check("WGSL" in rendered and f"{rel}:" in rendered, f"{file.name}: refusal not located or not naming WGSL:\n{rendered}")
            failures.check(compiled["failure"] == "refused", f"{file.name}: failure kind {compiled['failure']}")
            refused += 1
            continue
        failures.check(cli_ok, f"{file.name}: the page compiles WGSL the CLI refuses")
        kernels = {k["name"]: k for k in desc["kernels"]}
        for n, d in enumerate(directives(text)):
            label = f"{file.name} @run {d['kernel']} #{n}"
            out_dir = tmp / f"{file.stem}-{n}"
            r = cli_run(cli_path, rel, d, out_dir)
            if not failures.check(r.returncode == 0, f"{label}: sarek run --backend interp failed: {r.stderr}"):
                continue
            options = {"file": rel, "size": d["size"], "args": d["args"], "grid": d["grid"] or "", "block": d["block"] or ""}
            res = page.evaluate("([s, k, o]) => window.sarek.run(s, k, o)", [text, d["kernel"], options])
            if not failures.check(res["ok"], f"{label}: run failed in the page:\n{res.get('rendered')}"):
                continue
            params = kernels[d["kernel"]]["params"]
            expected = {}
            for p in params:
                if p["kind"] == "vector":
                    expected.update(expected_columns(out_dir / f"{p['name']}.npy", p["name"], p["leaves"]))
            compare(res["outputs"], expected, params, label, failures)
            ran += 1
    return ran, refused


def inputs_equal_the_clis(page, cli_path, tmp, failures):
    src = tmp / "all_types.sarek"
    src.write_text(ALL_TYPES)
    for size, seed in [(37, 42), (200, 7)]:
        out_dir = tmp / f"inputs-{size}-{seed}"
        r = cli(cli_path, "run", str(src), "--kernel", "all_types", "--backend", "interp", "--size", str(size),
                "--seed", str(seed), "--arg", "n=0", "--out", str(out_dir))
        if not failures.check(r.returncode == 0, f"all_types: sarek run failed: {r.stderr}"):
            return
        got = page.evaluate("([s, o]) => window.sarek.inputs(s, 'all_types', o)", [ALL_TYPES, {"size": size, "seed": seed, "args": {"n": 0}}])
        desc = page.evaluate("(s) => window.sarek.describe(s)", ALL_TYPES)
        for p in desc["kernels"][0]["params"]:
            if p["kind"] != "vector":
                continue
            want = expected_columns(out_dir / f"{p['name']}.npy", p["name"], p["leaves"])
            for key, (values, ty) in want.items():
                g = got["inputs"][key]
                same = len(g) == len(values) and all(
                    (float(a) == float(b)) if ty.startswith("float") else int(a) == int(b) for a, b in zip(g, values))
                failures.check(same, f"generated input `{key}` (size {size}, seed {seed}) differs from the CLI's")


def error_kernel_is_located(page, failures):
    text = (ROOT / ERROR_KERNEL).read_text()
    expected = (ROOT / ERROR_KERNEL).with_suffix(".expected").read_text()
    first_line = expected.splitlines()[0]
    place = next(l for l in expected.splitlines() if "┌─" in l).split(":")
    line = int(place[-2])
    page.fill("#editor textarea", text)
    page.wait_for_function("(msg) => document.getElementById('diagnostics').innerText.includes(msg)", arg=first_line[len("error: "):], timeout=20000)
    shown = page.inner_text("#diagnostics")
    failures.check(first_line in shown, f"error kernel: message missing from the panel: {shown}")
    failures.check(f"playground.sarek:{place[-2]}:{place[-1]}" in shown or f":{place[-2]}:{place[-1]}" in shown,
                   f"error kernel: location {place[-2]}:{place[-1]} not shown: {shown}")
    marker = page.locator(f"#editor .gutter .line:nth-child({line})")
    failures.check("marker-error" in (marker.get_attribute("class") or ""), "error kernel: no gutter marker on its line")
    failures.check(page.locator("#editor .squiggle-error").count() > 0, "error kernel: no squiggle in the editor")
    failures.check("error" in page.inner_text("#status"), "error kernel: status does not say error")
    page.screenshot(path=str(ARTIFACTS / "playground-error.png"))


def runtime_errors_are_located(page, failures):
    f64 = (CORPUS / "float64_arith.sarek").read_text()
    r = page.evaluate("(s) => window.sarek.run(s, 'float64_arith', {file: 'float64_arith.sarek', size: 64, args: {n: 64, scale: 0.5}})", f64)
    failures.check(not r["ok"] and r["failure"] == "refused" and "WGSL" in r["rendered"] and "float64_arith.sarek:" in r["rendered"],
                   f"float64 run: not a located WGSL refusal: {r.get('rendered')}")
    trap = (ROOT / "tests" / "traps" / "inline_depth.sarek").read_text()
    r = page.evaluate("(s) => window.sarek.run(s, 'chain', {file: 'inline_depth.sarek', size: 256, args: {m: 9, n: 256}})", trap)
    failures.check(not r["ok"] and r["failure"] == "fault" and "inline_depth.sarek:" in r["rendered"],
                   f"trap run: not a located fault: {r.get('rendered')}")
    ok = page.evaluate("(s) => window.sarek.run(s, 'chain', {file: 'inline_depth.sarek', size: 256, args: {m: 5, n: 256}})", trap)
    failures.check(ok["ok"], f"trap kernel within its depth failed: {ok.get('rendered')}")


def typed_vectors(page, failures):
    """Typed values are used as given: y <- 2 x + y on three elements, computed here."""
    src = (CORPUS / "saxpy.sarek").read_text()
    r = page.evaluate("(s) => window.sarek.run(s, 'saxpy', {args: {a: 2, n: 3}, vectors: {x: [1, 2, 3.5], y: '10, 20, 30'}})", src)
    ok = r["ok"] and r["outputs"]["y"] == [2 * x + y for x, y in [(1, 10), (2, 20), (3.5, 30)]] and r["block"][0] == 3
    failures.check(ok, f"typed vectors: {r.get('outputs') or r.get('rendered')}")


def screenshot(page, artifacts, failures):
    page.select_option("#examples", "mandelbrot.sarek")
    page.wait_for_function("() => window.sarekPage.description && window.sarekPage.description.kernels.some(k => k.name === 'mandelbrot')", timeout=20000)
    page.click("button[data-tab=run]")
    page.click("#run")
    page.wait_for_function("() => document.getElementById('run-status').innerText.startsWith('ran on')", timeout=30000)
    failures.check(page.locator("#images canvas").count() > 0, "mandelbrot: no image of the 2-D output")
    failures.check(page.locator("#results table tr").count() > 10, "mandelbrot: no table of outputs")
    artifacts.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(artifacts / "playground.png"))


def measure(page, site):
    """The figures of docs/playground.md: per corpus file, the median of 7 compiles to WGSL
    divided by its number of kernels, and the median of 7 rounds of what the page does on
    each edit (every target, then describe)."""
    sources = [(f.name, f.read_text()) for f in sorted(CORPUS.glob("*.sarek"))]
    per_file = page.evaluate("""async (files) => {
        const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
        const out = [];
        for (const [name, s] of files) {
          const d = await window.sarek.describe(s);
          const kernels = d.ok ? d.kernels.length : 1;
          const wgsl = [], edit = [];
          for (let rep = 0; rep < 7; rep++) {
            let t0 = performance.now();
            await window.sarek.compile(s, 'wgsl');
            wgsl.push(performance.now() - t0);
            t0 = performance.now();
            for (const t of window.sarek.targets) await window.sarek.compile(s, t);
            await window.sarek.describe(s);
            edit.push(performance.now() - t0);
          }
          out.push({name, kernels, perKernel: median(wgsl) / kernels, edit: median(edit)});
        }
        return out;
    }""", sources)
    per_kernel = statistics.median(f["perKernel"] for f in per_file)
    edit = statistics.median(f["edit"] for f in per_file)
    slowest = max(per_file, key=lambda f: f["edit"])
    raw = (site / "sarek.wasm").stat().st_size
    gz = len(gzip.compress((site / "sarek.wasm").read_bytes(), 9))
    return per_kernel, edit, slowest, raw, gz


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", default=str(ROOT / "target" / "playground"))
    ap.add_argument("--cli", default=str(ROOT / "target" / "debug" / "sarek"))
    ap.add_argument("--artifacts", default=str(ROOT / "target" / "playground-test"))
    ap.add_argument("--chromium", default=os.environ.get("SAREK_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--measure", action="store_true")
    a = ap.parse_args()
    site, cli_path, artifacts = Path(a.site), Path(a.cli), Path(a.artifacts)
    global ARTIFACTS
    ARTIFACTS = artifacts
    artifacts.mkdir(parents=True, exist_ok=True)
    for need in (site / "sarek.wasm", cli_path, Path(a.chromium)):
        if not need.exists():
            sys.exit(f"browser.py: {need} is missing (scripts/playground.sh --build, cargo build -p sarek, apt chromium)")
    failures = Failures()
    server = serve(site)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    tmp = Path(tempfile.mkdtemp(prefix="sarek-playground-"))
    profile = tmp / "profile"  # a fresh --user-data-dir
    started = time.perf_counter()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch_persistent_context(
                str(profile), executable_path=a.chromium, headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 900})
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_function("() => window.sarekPage && window.sarekPage.firstCompileMs !== null", timeout=60000)
            first_compile = page.evaluate("window.sarekPage.firstCompileMs")
            dev = page.evaluate("window.sarek.device()")
            failures.check(dev["available"], f"WebGPU unavailable in chromium: {dev.get('reason')}")
            print(f"browser.py: WebGPU adapter {dev.get('name')}, options {dev.get('options')}")
            ran, refused = corpus_runs(page, cli_path, tmp, failures, None)
            print(f"browser.py: {ran} corpus launches equal interp on WebGPU; {refused} corpus files refused by WGSL (located)")
            failures.check(ran >= 40, f"only {ran} corpus launches ran")
            inputs_equal_the_clis(page, cli_path, tmp, failures)
            runtime_errors_are_located(page, failures)
            typed_vectors(page, failures)
            error_kernel_is_located(page, failures)
            screenshot(page, artifacts, failures)
            failures.check(not errors, f"uncaught page errors: {errors}")
            if a.measure:
                # A fresh load for the first-compile figure (caches warm, as a returning visitor).
                page.goto(url + "?reload#saxpy.sarek")
                page.wait_for_function("() => window.sarekPage && window.sarekPage.firstCompileMs !== null", timeout=60000)
                again = page.evaluate("window.sarekPage.firstCompileMs")
                per_kernel, edit, slowest, raw, gz = measure(page, site)
                print(f"measure: page load to first compile: {first_compile:.0f} ms (first load), {again:.0f} ms (reload)")
                print(f"measure: median WGSL compile time per corpus kernel: {per_kernel:.2f} ms")
                print(f"measure: median per corpus file of one edit (7 targets + describe): {edit:.1f} ms;"
                      f" slowest {slowest['name']} {slowest['edit']:.1f} ms")
                print(f"measure: sarek.wasm {raw} bytes raw, {gz} bytes gzipped (-9)")
            browser.close()
    finally:
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"browser.py: {'FAILED' if failures else 'ok'} in {time.perf_counter() - started:.0f} s"
          f" (screenshots: {artifacts}/playground.png, playground-error.png)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
