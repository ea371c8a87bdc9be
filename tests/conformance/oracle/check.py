#!/usr/bin/env python3
"""Independent oracle for tests/conformance: runs kernels through `sarek run` with inputs
made here (`--input`), reads the `--out` .npy files back, and compares with NumPy
computations written from LANGUAGE.md (not from the interpreter).

usage: check.py SAREK_BINARY [BACKEND...]   (default backends: interp cpu)
SAREK_ORACLE_CASES=name,name,... runs only the cases of those names.
"""
import os, subprocess, sys, tempfile
import numpy as np

SAREK = sys.argv[1]
BACKENDS = sys.argv[2:] or ["interp", "cpu"]
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rng = np.random.default_rng(7)
failures = []


def run(file, kernel, backend, size, args=(), inputs=None, extra=(), modules=()):
    d = tempfile.mkdtemp()
    cmd = [SAREK, "run", os.path.join(HERE, file)] + [os.path.join(HERE, m) for m in modules]
    cmd += ["--kernel", kernel, "--backend", backend, "--size", str(size), "--out", d] + list(extra)
    for a in args:
        cmd += ["--arg", a]
    for name, arr in (inputs or {}).items():
        p = os.path.join(d, "in_" + name + ".npy")
        np.save(p, arr)
        cmd += ["--input", f"{name}={p}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()[-800:]
    return {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d)
            if f.endswith(".npy") and not f.startswith("in_")}, None


def check(tag, got, want, rtol=0.0, atol=0.0):
    got = np.asarray(got); want = np.asarray(want)
    if got.shape != want.shape:
        failures.append(f"{tag}: shape {got.shape} vs {want.shape}"); return
    if rtol or atol:
        bad = ~np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
    else:
        bad = got != want
        if got.dtype.kind == "f":
            bad &= ~(np.isnan(got) & np.isnan(want))  # an expected NaN is any NaN
    if bad.any():
        i = np.argwhere(bad)[0]
        failures.append(f"{tag}: {bad.sum()} differ, first at {tuple(i)}: got {got[tuple(i)]!r} want {want[tuple(i)]!r}")


def i32(n, lo=0, hi=1000):
    return rng.integers(lo, hi, n).astype(np.int32)


def cdiv(a, b):  # C truncating division
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def cmod(a, b):
    return a - cdiv(a, b) * b


def wrap32(x):
    return np.asarray(x).astype(np.int64).astype(np.int32)


F32 = np.float32


ONLY = [c for c in os.environ.get("SAREK_ORACLE_CASES", "").split(",") if c]
ran = []


def case(fn):
    if ONLY and fn.__name__ not in ONLY:
        return fn
    ran.append(fn.__name__)
    for b in BACKENDS:
        try:
            fn(b)
        except Exception as e:  # a crash of the oracle itself is a failure too
            failures.append(f"{fn.__name__}[{b}]: oracle error {e!r}")
    return fn


@case
def int_precedence(b):
    n = 1000
    a, bb, c = i32(n), i32(n), i32(n)
    o, err = run("c01_int_precedence.sarek", "int_precedence", b, n, ["n=1000"], {"a": a, "b": bb, "c": c})
    if err: return failures.append(f"int_precedence[{b}]: {err}")
    x, y, z = a.astype(np.int64), bb.astype(np.int64) + 1, c.astype(np.int64)
    check(f"int_precedence[{b}].ok", o["ok"], np.ones(n, np.int32))
    check(f"int_precedence[{b}].value", o["value"], wrap32(x + y * z - ((x << 2) + 1) + ((x | y) & z) - (x % 7) * 3))


@case
def bool_precedence(b):
    n, size = 1000, 1024
    p, q, r = (rng.integers(0, 2, size).astype(bool) for _ in range(3))
    v = i32(size)
    o, err = run("c02_bool_precedence.sarek", "bool_precedence", b, size, ["n=1000"], {"p": p, "q": q, "r": r, "v": v})
    if err: return failures.append(f"bool_precedence[{b}]: {err}")
    s = slice(0, n)
    check(f"bool_precedence[{b}].o1", o["o1"][s], (~p & q)[s])
    check(f"bool_precedence[{b}].o2", o["o2"][s], (p | (q & r))[s])
    check(f"bool_precedence[{b}].o3", o["o3"][s], ((p == q) | ((q == r) & (v % 2 == 0)))[s])
    want = (v > 500) * 1 + (v < 250) * 10 + (~p) * 100 + 1000
    check(f"bool_precedence[{b}].o4", o["o4"][s], want[s].astype(np.int32))


@case
def float_ops(b):
    n = 1024
    x = rng.uniform(-1, 1, n).astype(np.float32); y = rng.uniform(-1, 1, n).astype(np.float32)
    o, err = run("c03_float_ops.sarek", "float_ops", b, n, ["n=1024"], {"x": x, "y": y})
    if err: return failures.append(f"float_ops[{b}]: {err}")
    d = y * y + np.float32(1)
    check(f"float_ops[{b}].out", o["out"], x + y * np.float32(2) - x / d + (-x) + y, rtol=1e-5, atol=1e-6)
    check(f"float_ops[{b}].iout", o["iout"], np.full(n, 6, np.int32))
    check(f"float_ops[{b}].flags", o["flags"], np.ones(n, bool))


@case
def literals(b):
    o, err = run("c04_literals.sarek", "literals", b, 64, ["n=64"])
    if err: return failures.append(f"literals[{b}]: {err}")
    k = np.arange(64) % 8
    check(f"literals[{b}].i32s", o["i32s"], np.array([1, 1, 255, 0x7fffffff, -5, 255, 0, 255], np.int32)[k])
    check(f"literals[{b}].i64s", o["i64s"], np.where(k < 4, 1 + k, 0x100000001).astype(np.int64))
    check(f"literals[{b}].f32s", o["f32s"], np.where(k == 0, 1.5, np.where(k == 1, 0.25, -2.0)).astype(np.float32))
    check(f"literals[{b}].f64s", o["f64s"], np.where(k < 4, 2.5, 1.0 / 3.0))
    check(f"literals[{b}].bs", o["bs"], k % 2 == 0)


@case
def literals_ocaml(b):
    o, err = run("c05_literals_ocaml.sarek", "literals_ocaml", b, 32, ["n=32"])
    if err: return failures.append(f"literals_ocaml[{b}]: {err}")
    i = np.arange(32)
    check(f"literals_ocaml[{b}].a", o["a"], (1020 + i).astype(np.int32))
    check(f"literals_ocaml[{b}].b", o["b"], np.full(32, 255 + 10**12, np.int64))
    check(f"literals_ocaml[{b}].f", o["f"], (np.float32(1002.25) + i).astype(np.float32))


@case
def conversions(b):
    n = 1024
    x = rng.uniform(-1, 1, n).astype(np.float32); k = i32(n); d = rng.uniform(-1, 1, n)
    o, err = run("c06_conversions.sarek", "conversions", b, n, ["n=1024"], {"x": x, "k": k, "d": d})
    if err: return failures.append(f"conversions[{b}]: {err}")
    f = x * np.float32(100); j = k.astype(np.int64) - 500; g = d * 1000.0
    tf, tg = np.trunc(f).astype(np.int64), np.trunc(g).astype(np.int64)
    check(f"conversions[{b}].to_i32", o["to_i32"], (tf + tg + j - 2).astype(np.int32))
    check(f"conversions[{b}].to_i64", o["to_i64"], tf + j * 3000000 + tg - 7)
    check(f"conversions[{b}].to_f32", o["to_f32"], (j.astype(np.float32) + g.astype(np.float32) + j.astype(np.float32)), rtol=1e-6)
    check(f"conversions[{b}].to_f64", o["to_f64"], f.astype(np.float64) + 2 * j + g, rtol=1e-12)
    check(f"conversions[{b}].alias_i", o["alias_i"], (3 * tf).astype(np.int32))
    jf = j.astype(np.float32)
    check(f"conversions[{b}].alias_f", o["alias_f"], jf + jf + jf + g.astype(np.float32) + f, rtol=1e-5, atol=1e-4)


@case
def round_halves(b):
    o, err = run("c08_round_halves.sarek", "round_halves", b, 64, ["n=64"])
    if err: return failures.append(f"round_halves[{b}]: {err}")
    h = np.arange(64) - 32 + 0.5
    want = np.sign(h) * np.floor(np.abs(h) + 0.5)
    check(f"round_halves[{b}].o32", o["o32"], want.astype(np.float32))
    check(f"round_halves[{b}].o64", o["o64"], want)


def clz32(v):
    v = np.asarray(v).astype(np.uint32)
    return np.array([32 - int(t).bit_length() for t in v], np.int64)


def clz64(v):
    v = np.asarray(v).astype(np.uint64)
    return np.array([64 - int(t).bit_length() for t in v], np.int64)


def pop(v, bits):
    m = (1 << bits) - 1
    return np.array([bin(int(t) & m).count("1") for t in v], np.int64)


@case
def numeric_bits(b):
    n = 1024
    a, bb = i32(n), i32(n)
    f = rng.uniform(-1, 1, n).astype(np.float32); d = rng.uniform(-1, 1, n)
    o, err = run("c10_numeric_bits.sarek", "numeric_bits", b, n, ["n=1024"], {"a": a, "b": bb, "f": f, "d": d})
    if err: return failures.append(f"numeric_bits[{b}]: {err}")
    x = a.astype(np.int64) - 500; y = bb.astype(np.int64) - 500
    want = (np.abs(x) + np.minimum(x, y) * 3 + np.maximum(x, y) * 7 + clz32(a) + pop(a, 32) * 100
            + clz32(x) * 1000 + 0 + 32 * 100000)
    check(f"numeric_bits[{b}].oi", o["oi"], want.astype(np.int32))
    lx = x * 100000; ly = y
    wl = np.abs(lx) + np.minimum(lx, ly) + np.maximum(lx, ly) + clz64(lx) + pop(lx, 64) + 64 * 1000 + 64 * 100000
    check(f"numeric_bits[{b}].ol", o["ol"], wl)
    check(f"numeric_bits[{b}].of32", o["of32"], np.abs(f) + np.minimum(f, np.float32(0.25)) * np.float32(3) + np.maximum(f, np.float32(-0.25)) * np.float32(5), rtol=1e-6, atol=1e-6)
    check(f"numeric_bits[{b}].of64", o["of64"], np.abs(d) + np.minimum(d, 0.25) * 3 + np.maximum(d, -0.25) * 5, rtol=1e-12)


@case
def mutable_loops(b):
    n = 1024
    a = i32(n)
    o, err = run("c17_mutable_loops.sarek", "mutable_loops", b, n, ["n=1024"], {"a": a})
    if err: return failures.append(f"mutable_loops[{b}]: {err}")
    su, sd, st = [], [], []
    for v in a.tolist():
        m = v % 20
        su.append(m * (m + 1) // 2)
        t = 0
        for j in range(m, 0, -1):
            t = t * 2 % 1009 + j
        sd.append(t + 5)
        x, c = v + 1, 0
        while x != 1 and c < 500:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            c += 1
        st.append(c)
    acc = 0
    for r in range(3):
        for q in range(r, 3):
            acc = acc * 3 + q
    check(f"mutable_loops[{b}].sum_up", o["sum_up"], np.array(su, np.int32))
    check(f"mutable_loops[{b}].sum_down", o["sum_down"], np.array(sd, np.int32))
    check(f"mutable_loops[{b}].steps", o["steps"], np.array(st, np.int32))
    check(f"mutable_loops[{b}].order", o["order"], np.full(n, 3000 + acc, np.int32))


@case
def match_patterns(b):
    n = 1024
    a = i32(n); bb = rng.integers(0, 2, n).astype(bool)
    o, err = run("c18_match_patterns.sarek", "match_patterns", b, n, ["n=1024"], {"a": a, "b": bb})
    if err: return failures.append(f"match_patterns[{b}]: {err}")
    def cl(x):
        return {0: 100, 1: 200, 2: 200, 3: 200, -1: 300, 42: 400}.get(x, 500)
    x = a % 6 - 1
    check(f"match_patterns[{b}].o", o["o"], np.array([cl(int(u)) + cl(int(v) % 50) for u, v in zip(x, a)], np.int32))
    check(f"match_patterns[{b}].ob", o["ob"], np.where(bb, 1, np.where(x == 4, 7, x * 2)).astype(np.int32))


@case
def shared_reduce(b):
    n = 1000
    a = i32(n)
    o, err = run("c19_shared_reduce.sarek", "shared_reduce", b, n, ["n=1000"], {"a": a}, ["--block", "64"])
    if err: return failures.append(f"shared_reduce[{b}]: {err}")
    nb = (n + 63) // 64
    sums = [int(a[k * 64:(k + 1) * 64].sum()) for k in range(nb)]
    maxs = [int(a[k * 64:(k + 1) * 64].max()) for k in range(nb)]
    check(f"shared_reduce[{b}].sums", o["sums"][:nb], np.array(sums, np.int32))
    check(f"shared_reduce[{b}].maxs", o["maxs"][:nb], np.array(maxs, np.int32))


@case
def atomics_int32(b):
    n = 1024
    a = i32(n); acc = i32(n, -1000, 1000); own = i32(n); olds = np.zeros(n, np.int32)
    o, err = run("c21_atomics_int32.sarek", "atomics_int32", b, n, ["n=1024"], {"a": a, "acc": acc, "own": own, "olds": olds})
    if err: return failures.append(f"atomics_int32[{b}]: {err}")
    v = a.astype(np.int64); w = acc.astype(np.int64).copy()
    w[0] += v.sum(); w[1] -= v.sum(); w[2] = min(w[2], (v - 500).min()); w[3] = max(w[3], (v + 7).max())
    m = 0xFFFFFFFF
    for t in v.tolist():
        w[4] &= ~(1 << (t % 31)); w[5] |= (1 << (t % 31)); w[6] ^= t
    w[7] += n; w[8] -= n; w[9] += n; w[10] += 2 * n; w[11] += n
    check(f"atomics_int32[{b}].acc", o["acc"], wrap32(w))
    check(f"atomics_int32[{b}].own", o["own"], (a + 1).astype(np.int32))
    check(f"atomics_int32[{b}].olds", o["olds"], wrap32(own.astype(np.int64) + 2 * v * 3 + (v + 1) * 5))


@case
def shifts(b):
    n = 1024
    a = i32(n)
    o, err = run("c25_shifts.sarek", "shifts", b, 8 * n, ["n=1024"], {"a": np.concatenate([a, i32(7 * n)])})
    if err: return failures.append(f"shifts[{b}]: {err}")
    av = a.astype(np.int64)
    x = -(av + 1); y = av * 7919 - 3000000; k = av % 32; m = av % 64
    u32 = lambda t: np.asarray(t).astype(np.int64) & 0xFFFFFFFF
    e32 = np.stack([u32(x) >> 1, x >> 1, u32(x) >> k, y >> k, u32(y) >> k,
                    np.full(n, 0xFFFFFFFF >> 28), (~y) ^ (x << 3), x], axis=1).reshape(-1)
    check(f"shifts[{b}].o32", o["o32"], wrap32(e32 & 0xFFFFFFFF))
    lx = [int(t) * 1000003 for t in x.tolist()]
    U = (1 << 64) - 1
    def s64(t):
        t &= U
        return t - (1 << 64) if t >> 63 else t
    e64 = []
    for L, mm in zip(lx, m.tolist()):
        e64 += [s64((L & U) >> 1), L >> 7, s64((L & U) >> mm), L >> mm, s64(U >> 60), s64(L << (mm % 16)), ~L, L]
    check(f"shifts[{b}].o64", o["o64"], np.array(e64, np.int64))


@case
def int_arith(b):
    n = 1024
    a, bb = i32(n), i32(n)
    o, err = run("c26_int_arith.sarek", "int_arith", b, n, ["n=1024"], {"a": a, "b": bb})
    if err: return failures.append(f"int_arith[{b}]: {err}")
    x = a.astype(np.int64) - 500; y = bb.astype(np.int64) % 13 - 6; y = np.where(y == 0, 7, y)
    check(f"int_arith[{b}].q32", o["q32"], cdiv(x, y).astype(np.int32))
    check(f"int_arith[{b}].r32", o["r32"], cmod(x, y).astype(np.int32))
    big = a.astype(np.int64) * 10000000000 + bb; neg = -big
    check(f"int_arith[{b}].w64", o["w64"], big * 3 - cdiv(neg, 7) + 9223372036854775807 // 1000000)
    check(f"int_arith[{b}].q64", o["q64"], cdiv(neg, y))
    check(f"int_arith[{b}].r64", o["r64"], cmod(neg, y) + big % 1000)


@case
def geometry(b):
    o, err = run("c31_geometry.sarek", "geometry2d", b, 4096, ["w=64", "h=16"], None, ["--grid", "4,2", "--block", "16,8"])
    if err: return failures.append(f"geometry2d[{b}]: {err}")
    want = np.zeros(4096, np.int64)
    for y in range(16):
        for x in range(64):
            want[y * 64 + x] = x % 16 + 100 * (y % 8) + 10000 * (x // 16) + 100000 * (y // 8)
    check(f"geometry2d[{b}].o", o["o"][:1024], want[:1024].astype(np.int32))
    check(f"geometry2d[{b}].dims", o["dims"][:7], np.array([16, 8, 1, 4, 2, 1, 0], np.int32))
    o, err = run("c31_geometry.sarek", "geometry3d", b, 4096, ["w=16", "h=8", "d=4"], None, ["--grid", "2,2,2", "--block", "8,4,2"])
    if err: return failures.append(f"geometry3d[{b}]: {err}")
    want = np.zeros(16 * 8 * 4, np.int64)
    for z in range(4):
        for y in range(8):
            for x in range(16):
                want[(z * 8 + y) * 16 + x] = z % 2 + 10 * (z // 2) + 100 * 2 + 1000 * 2 + 10000 * (x + y + z)
    check(f"geometry3d[{b}].o", o["o"][:512], want.astype(np.int32))


@case
def recursion(b):
    n = 1024
    a, bb = i32(n), i32(n)
    o, err = run("c32_recursion.sarek", "recursion", b, n, ["n=1024"], {"a": a, "b": bb})
    if err: return failures.append(f"recursion[{b}]: {err}")
    import math
    fib = [0, 1, 1, 2, 3, 5, 8]
    want = [math.gcd(int(u) + 1, int(v) + 1) + (int(u) % 50) * (int(u) % 50 + 1) // 2 * 1000
            + fib[int(u) % 7] * 100000 + 2 ** (int(v) % 5) * 1000000 for u, v in zip(a, bb)]
    check(f"recursion[{b}].o", o["o"], np.array(want, np.int32))


@case
def names(b):
    n = 1024
    x = rng.uniform(-1, 1, n).astype(np.float32)
    o, err = run("c33_names.sarek", "names", b, n, ["n=1024"], {"input": x})
    if err: return failures.append(f"names[{b}]: {err}")
    s = x + np.float32(1); s1 = s * np.float32(2); s2 = s1 - s
    check(f"names[{b}].output", o["output"], s2 * np.float32(0.5) * np.float32(4) + np.sqrt(np.abs(s)), rtol=1e-6)
    check(f"names[{b}].ints", o["ints"], np.full(n, 1024 + sum(range(3, 19)), np.int32))


@case
def variants_npy(b):
    # variant vectors through .npy: tag + <Ctor>_<k> fields (ARCHITECTURE.md)
    n = 256
    dt = np.dtype([("tag", "<i4"), ("Circle_0", "<f4"), ("Rect_0", "<f4"), ("Rect_1", "<f4")])
    s = np.zeros(n, dt)
    s["tag"] = np.arange(n) % 3
    s["Circle_0"] = 2.0; s["Rect_0"] = 3.0; s["Rect_1"] = 5.0
    dto = np.dtype([("tag", "<i4"), ("Nop", "<i4")]) if False else None
    o, err = run("c13_variants.sarek", "variants", b, n, ["n=256"], {"shapes": s})
    if err: return failures.append(f"variants_npy[{b}]: {err}")
    check(f"variants_npy[{b}].areas", o["areas"], np.array([12.0, 15.0, 0.0] * 86, np.float32)[:n])
    g = o["grown"]
    check(f"variants_npy[{b}].grown.tag", g["tag"], np.array([1, 0, 2] * 86, np.int32)[:n])
    check(f"variants_npy[{b}].kinds", o["kinds"], np.array([1, 2, 1] * 86, np.int32)[:n])


@case
def matmul_tiled(b):
    n = 32
    a = rng.uniform(-1, 1, 1024).astype(np.float32); m = rng.uniform(-1, 1, 1024).astype(np.float32)
    o, err = run("c36_matmul_tiled.sarek", "matmul_tiled", b, 1024, ["n=32"], {"a": a, "b": m}, ["--grid", "4,4", "--block", "8,8"])
    if err: return failures.append(f"matmul_tiled[{b}]: {err}")
    want = (a.reshape(n, n).astype(np.float64) @ m.reshape(n, n).astype(np.float64)).reshape(-1)
    check(f"matmul_tiled[{b}].c", o["c"], want, rtol=1e-4, atol=1e-5)


@case
def scalar_params(b):
    o, err = run("c37_scalar_params.sarek", "scalar_params", b, 256,
                 ["flag=true", "big=5000000000", "wide=0.125", "f=1.5", "p=2,0.5", "n=256"])
    if err: return failures.append(f"scalar_params[{b}]: {err}")
    i = np.arange(256)
    check(f"scalar_params[{b}].o64", o["o64"], (5000000000 + i).astype(np.int64))
    check(f"scalar_params[{b}].od", o["od"], 0.125 * i)
    check(f"scalar_params[{b}].of32", o["of32"], (np.float32(1.5) * (2 * i).astype(np.float32) + np.float32(0.5)).astype(np.float32))



# ---- second QA pass (q* kernels) ----

@case
def seq_precedence(b):
    n = 512
    a = i32(n)
    o, err = run("q01_seq_precedence.sarek", "seq_precedence", b, n, ["n=512"], {"a": a})
    if err: return failures.append(f"seq_precedence[{b}]: {err}")
    A = a.astype(np.int64)
    x = np.where(A % 2 == 0, 1, 0); y = np.full(n, 2)
    z = A % 3
    x = np.where(z == 0, x + 10, np.where(z == 1, x + 100, x)); y = np.where(z == 0, y + 10, y)
    y = y * 2
    check(f"seq_precedence[{b}].o", o["o"], x * 1000 + y)
    w = A + 1
    w = np.where(w > 500, (w - 500) * 2, w + 7)
    w = (w + 1) * 3
    check(f"seq_precedence[{b}].p", o["p"], w)
    r = A * 2
    check(f"seq_precedence[{b}].q", o["q"], r + (r > 1000) + 25)


@case
def let_mut_forms(b):
    n = 256
    a = i32(n)
    o, err = run("q02_let_mut_forms.sarek", "let_mut_forms", b, n, ["n=256"], {"a": a})
    if err: return failures.append(f"let_mut_forms[{b}]: {err}")
    acc = 0
    for k in range(10, 0, -1): acc = acc * 3 + k % 7
    check(f"let_mut_forms[{b}].o", o["o"], np.full(n, acc + 9))
    def steps(m):
        s = 0
        while m != 1 and s < 200:
            m = m // 2 if m % 2 == 0 else 3 * m + 1; s += 1
        return s
    check(f"let_mut_forms[{b}].p", o["p"], np.array([steps(int(v)) for v in a]))
    big = 1
    for k in range(1, 21): big = big * 3 + k
    check(f"let_mut_forms[{b}].q", o["q"], big + a.astype(np.int64))


@case
def precedence_deep(b):
    n = 256
    a = i32(n); bb = rng.integers(0, 2, n).astype(bool); f = rng.uniform(-1, 1, n).astype(np.float32)
    o, err = run("q11_precedence_deep.sarek", "precedence_deep", b, n, ["n=256"], {"a": a, "b": bb, "f": f})
    if err: return failures.append(f"precedence_deep[{b}]: {err}")
    x = a.astype(np.int64); y = x % 17
    # OCaml: lsl/lsr right-assoc above * land lor (left, one level), above + -; prefix - above lsl
    t5 = ((~y) & 0xFF) | (x << (2 >> 1))
    want = x - y - (3 * 2) % 5 + (-y) * (2 << 1) + t5 + (x // 3) // 2 - (x - 1 - 2) + (1 << (2 << 1)) + 3
    check(f"precedence_deep[{b}].o", o["o"], wrap32(want))
    want_b = ((x < 500) == bb) | (~bb & (y > 8)) | ((y == 3) & ~(x > 10))
    check(f"precedence_deep[{b}].ob", o["ob"], want_b)
    F = np.float32
    v = (((-f * F(2.0)) + F(0.75)) - f - F(1.0)) + F(-1.5) * (-f)
    check(f"precedence_deep[{b}].of32", o["of32"], v.astype(np.float32), rtol=1e-6, atol=1e-6)


@case
def bool_vectors(b):
    n = 512
    bb = rng.integers(0, 2, n).astype(bool); c = rng.integers(0, 2, n).astype(bool)
    r = np.zeros(n, dtype=[("on", "?"), ("cnt", "<i4"), ("off", "?")])
    r["on"] = rng.integers(0, 2, n).astype(bool); r["cnt"] = i32(n); r["off"] = rng.integers(0, 2, n).astype(bool)
    t = np.zeros(n, dtype=[("_0", "?"), ("_1", "<i4")])
    t["_0"] = rng.integers(0, 2, n).astype(bool); t["_1"] = i32(n)
    o, err = run("q12_bool_vectors.sarek", "bool_vectors", b, n, ["flip=true", "n=512"],
                 {"b": bb, "c": c, "r": r, "t": t})
    if err: return failures.append(f"bool_vectors[{b}]: {err}")
    check(f"bool_vectors[{b}].o", o["o"], ~(bb & c))
    check(f"bool_vectors[{b}].c", o["c"], bb != c)
    check(f"bool_vectors[{b}].r.on", o["r"]["on"], r["off"])
    check(f"bool_vectors[{b}].r.cnt", o["r"]["cnt"], r["cnt"] + r["on"])
    check(f"bool_vectors[{b}].r.off", o["r"]["off"], ~r["on"])
    check(f"bool_vectors[{b}].t._0", o["t"]["_0"], ~t["_0"])
    check(f"bool_vectors[{b}].t._1", o["t"]["_1"], t["_1"] + np.where(bb & c, 1, np.where(bb, 2, 3)))
    check(f"bool_vectors[{b}].k", o["k"], np.where(bb == c, 10, 20) + (bb != True))


@case
def geo3d(b):
    o, err = run("q13_geometry.sarek", "geo3d", b, 512, ["n=512"], None,
                 ["--grid", "2,2,2", "--block", "4,4,4"])
    if err: return failures.append(f"geo3d[{b}]: {err}")
    lin = np.arange(512); x = lin % 8; y = (lin // 8) % 8; z = lin // 64
    check(f"geo3d[{b}].o", o["o"], x % 4 + 10 * (y % 4) + 100 * (z % 4))
    check(f"geo3d[{b}].g", o["g"], x // 4 + 10 * (y // 4) + 100 * (z // 4) + 2000)


@case
def tuples_destructure(b):
    n = 512
    v = np.zeros(n, dtype=[("_0", "<i4"), ("_1", "<f4")]); v["_0"] = i32(n); v["_1"] = rng.uniform(-1, 1, n)
    w = np.zeros(n, dtype=[("_0", "<i4"), ("_1", "<i8"), ("_2", "<f4")])
    w["_0"] = i32(n); w["_1"] = i32(n); w["_2"] = rng.uniform(-1, 1, n)
    o, err = run("q03_tuples_destructure.sarek", "tuples_destructure", b, n, ["n=512"], {"v": v, "w": w})
    if err: return failures.append(f"tuples_destructure[{b}]: {err}")
    x = v["_0"].astype(np.int64); y = v["_1"]
    q = (x + 17) // 7; r = (x + 17) % 7
    s = np.where(x > 500, x, r); t = np.where(x > 500, q, x)
    u = np.where(r == 0, 1, np.where((r == 1) | (r == 2), 3, 5))
    check(f"tuples_destructure[{b}].o._0", o["o"]["_0"], q * 10 + r + s - t)
    check(f"tuples_destructure[{b}].o._1", o["o"]["_1"], u + 1)
    check(f"tuples_destructure[{b}].w._0", o["w"]["_0"], w["_0"] + 1)
    check(f"tuples_destructure[{b}].w._1", o["w"]["_1"], w["_1"] * 2)
    check(f"tuples_destructure[{b}].w._2", o["w"]["_2"], (w["_2"] + y).astype(np.float32))
    F = np.float32
    want = ((w["_0"].astype(F) + w["_1"].astype(F)) + w["_2"]) + y
    check(f"tuples_destructure[{b}].f", o["f"], want.astype(F), rtol=1e-6, atol=1e-6)


@case
def shared_atomics(b):
    n, blk = 1024, 128
    a = i32(n); f = rng.uniform(-1, 1, n).astype(np.float32)
    o, err = run("q07_shared_atomics.sarek", "shared_atomics", b, n, ["n=1024"], {"a": a, "f": f, "blk": np.zeros(n, np.int32),
                 "hist": np.zeros(n, np.int32), "fs": np.zeros(n, np.float32)}, ["--block", "128"])
    if err: return failures.append(f"shared_atomics[{b}]: {err}")
    A = a.reshape(-1, blk).astype(np.int64)
    want = np.zeros(n, np.int64)
    for g in range(n // blk):
        v = A[g]; xo = 0
        for tid in range(blk): xo ^= 1 << (tid % 31)
        want[g * 8:(g + 1) * 8] = [v.sum(), min(1000000, v.min()), max(0, v.max()),
                                   np.bitwise_or.reduce(v & 0xFF), blk, 7, xo, 42]
    check(f"shared_atomics[{b}].blk", o["blk"], wrap32(want))
    hist = np.zeros(n, np.int64); hist[:16] = np.bincount(a % 16, minlength=16)
    check(f"shared_atomics[{b}].hist", o["hist"], hist)
    fs = np.zeros(n, np.float32); fs[:n // blk] = (A % 4).sum(axis=1)
    check(f"shared_atomics[{b}].fs", o["fs"], fs)


@case
def loop_hints(b):
    n = 256
    a = i32(n)
    o, err = run("q15_loop_hints.sarek", "loop_hints", b, n, ["n=256"], {"a": a})
    if err: return failures.append(f"loop_hints[{b}]: {err}")
    def f(v):
        s = 0
        for k in range(7, -1, -1): s = s * 2 + ((v >> k) & 1)
        for p in range(3):
            for q in range(3, 0, -1): s += p * q
        w = 0
        while w < 5: w += 1; s += w
        for k in range(8, 0, -1): s ^= k * 37
        s += 0 + 1
        return s
    check(f"loop_hints[{b}].o", o["o"], np.array([f(int(v)) for v in a]))


@case
def names_comments(b):
    n = 256
    a = i32(n)
    o, err = run("q10_names_comments.sarek", "names_comments", b, n, ["n=256"], {"float4": a})
    if err: return failures.append(f"names_comments[{b}]: {err}")
    x = a.astype(np.int64); x2 = (x + 1) * 2; _x = x2 - x; xs = x + _x
    want = np.zeros(n, np.int64)
    idx = np.minimum(np.arange(n), n - 1)
    want[idx] = (xs + 1) + 12 + x2 + (n - 1)
    check(f"names_comments[{b}].kernel", o["kernel"], want)


@case
def guards_patterns(b):
    n = 512
    a = i32(n); l = rng.integers(-1000, 1000, n).astype(np.int64)
    s = np.zeros(n, dtype=[("tag", "<i4"), ("Circle_0", "<f4"), ("Rect_0", "<f4"), ("Rect_1", "<f4")])
    s["tag"] = rng.integers(0, 3, n); s["Circle_0"] = rng.uniform(-1, 1, n); s["Rect_0"] = rng.uniform(-1, 1, n)
    s["Rect_1"] = rng.uniform(-1, 1, n)
    o, err = run("q18_guards_patterns.sarek", "guards_patterns", b, n, ["n=512"], {"a": a, "s": s, "l": l})
    if err: return failures.append(f"guards_patterns[{b}]: {err}")
    def grade(x):
        if x == 0: return 1
        if x % 2 == 0 and x < 100: return 2
        if x > 900: return 3
        if x in (7, 77, 777): return 4
        return 5
    check(f"guards_patterns[{b}].o", o["o"], np.array([grade(int(x)) + 10 * grade(int(x) % 10) for x in a]))
    F = np.float32
    def shape(t, c, w):
        if t == 0 and c > 0.5: return F(c) * F(2.0)
        if t == 0 and c < -0.5: return F(c)
        if t == 1 and w > 0.0: return F(w)
        if t in (1, 2): return F(10.0)
        return F(20.0)
    check(f"guards_patterns[{b}].f", o["f"], np.array([shape(t, c, w) for t, c, w in zip(s["tag"], s["Circle_0"], s["Rect_0"])], F))
    r = cmod(l, 4)  # C-style remainder: negative for negative l
    check(f"guards_patterns[{b}].p", o["p"], np.where(r == 0, 100, np.where((r == 1) | (r == 2), 200, r * 1000)))
    check(f"guards_patterns[{b}].q", o["q"], (a % 13) * 10000 + a + 12)


@case
def poly_recursion(b):
    n = 256
    a = i32(n)
    c = np.zeros(n, dtype=[("v", "<i4"), ("w", "<f4")]); c["v"] = i32(n); c["w"] = rng.uniform(-1, 1, n)
    o, err = run("q19_poly_recursion.sarek", "poly_recursion", b, n, ["n=256"], {"a": a, "c": c})
    if err: return failures.append(f"poly_recursion[{b}]: {err}")
    A = a.astype(np.int64); k = A % 5
    s = A > 300
    zv = np.where(s, c["v"], 0); zw = np.where(s, c["w"], np.float32(0)).astype(np.float32)
    sums = np.array([A[(i // 16) * 16:min(n, (i // 16) * 16 + 16)].sum() for i in range(n)])
    check(f"poly_recursion[{b}].o", o["o"], wrap32(sums + np.where(k % 2 == 0, 1, 2) + k * (k + 1) // 2 + zv - A))
    r = np.where(np.arange(n) % 2 == 0, np.float32(1.5), np.float32(-1.5)).astype(np.float32)
    check(f"poly_recursion[{b}].f", o["f"], ((c["w"] + r) + zw).astype(np.float32))


@case
def language_example(b):
    n = 512
    F = np.float32
    p = np.zeros(n, dtype=[("x", "<f4"), ("y", "<f4")]); p["x"] = rng.uniform(-1, 1, n); p["y"] = rng.uniform(-1, 1, n)
    q = p.copy(); q["x"] = rng.uniform(-1, 1, n)
    s = np.zeros(n, dtype=[("tag", "<i4"), ("Circle_0", "<f4"), ("Rect_0", "<f4"), ("Rect_1", "<f4")])
    s["tag"] = rng.integers(0, 3, n); s["Circle_0"] = rng.uniform(-1, 1, n)
    s["Rect_0"] = rng.uniform(-1, 1, n); s["Rect_1"] = rng.uniform(-1, 1, n)
    g = i32(n)
    o, err = run("q20_language_example.sarek", "use_items", b, n, ["n=512"], {"p": p, "q": q, "s": s, "g": g})
    if err: return failures.append(f"language_example[{b}]: {err}")
    c = np.clip(p["x"] * F(2.0), F(-1.0), F(1.0))
    m = np.where(s["tag"] == 0, s["Circle_0"], np.where(s["tag"] == 1, s["Rect_0"] * s["Rect_1"], F(0.0)))
    check(f"language_example[{b}].f", o["f"], (c + m).astype(F))
    check(f"language_example[{b}].g", o["g"], np.gcd(g, np.arange(1, n + 1)))
    want_q = q.copy(); want_q[0::2], want_q[1::2] = q[1::2], q[0::2]
    check(f"language_example[{b}].q.x", o["q"]["x"], want_q["x"])
    check(f"language_example[{b}].p.x", o["p"]["x"], p["x"])
    x = rng.uniform(-1, 1, 1024).astype(F); y = rng.uniform(-1, 1, 1024).astype(F)
    o, err = run("q20_language_example.sarek", "saxpy", b, 1024, ["a=2.0", "n=1000"], {"x": x, "y": y})
    if err: return failures.append(f"language_example[{b}]: {err}")
    want = y.copy(); want[:1000] = F(2.0) * x[:1000] + y[:1000]
    check(f"language_example[{b}].saxpy", o["y"], want)


@case
def float_widening(b):
    n = 64
    F = np.float32
    f = rng.uniform(-1, 1, n).astype(F)
    o, err = run("q21_float_widening.sarek", "float_widening", b, n, ["n=64"], {"f": f})
    if err: return failures.append(f"float_widening[{b}]: {err}")
    cases = [F(0.1) * F(3.0), F(1.0) / F(3.0), -F(0.7) + F(0.2), F(0.1)]
    want = np.array([float(cases[i % 6]) if i % 6 < 4 else
                     float((f[i] * F(0.0) + F(0.1)) if i % 6 == 4 else f[i] / F(3.0)) for i in range(n)])
    check(f"float_widening[{b}].o", o["o"], want)

@case
def prelude_scoping(b):
    n = 64
    i = np.arange(n)
    o, err = run("q22_prelude_scoping.sarek", "capture", b, n)
    if err: return failures.append(f"prelude_scoping capture[{b}]: {err}")
    # h a = a + b with b = 1 + 10 (the outer a), g 2 = 2 * 1, plus 1000 * a.
    check(f"prelude_scoping capture[{b}].o", o["o"], (i + 11 + 200 + 1000).astype(F32))
    o, err = run("q22_prelude_scoping.sarek", "kernel_shadow", b, n, ["scale=3"])
    if err: return failures.append(f"prelude_scoping kernel_shadow[{b}]: {err}")
    check(f"prelude_scoping kernel_shadow[{b}].o", o["o"], (3 + 200 + i).astype(F32))
    o, err = run("q22_prelude_scoping.sarek", "inline_after_values", b, n)
    if err: return failures.append(f"prelude_scoping inline[{b}]: {err}")
    check(f"prelude_scoping inline[{b}].o", o["o"], (2 * (i % 4 + 1) + 10 * (i % 7)).astype(np.int32))
    src = rng.uniform(-1, 1, n).astype(F32)
    o, err = run("q22_prelude_scoping.sarek", "field_slots", b, n, [], {"src": src}, ["--block", "64"])
    if err: return failures.append(f"prelude_scoping field_slots[{b}]: {err}")
    check(f"prelude_scoping field_slots[{b}].own", o["own"], src + src * F32(2))
    check(f"prelude_scoping field_slots[{b}].nb", o["nb"], np.roll(src, -1) + F32(100))


@case
def pow_edges(b):
    base = np.array([-0.0, 0.0, -2.0, -3.0, 2.0, -1.0], np.float32)
    expo = np.array([-1.0, -2.0, 3.0, 2.0, 0.5, -0.5, 0.0, np.inf, -np.inf, 1e30], np.float32)
    x = np.repeat(base, len(expo)); y = np.tile(expo, len(base))
    o, err = run("q24_pow_zero_base.sarek", "pow_edges", b, len(x), [], {"x": x, "y": y})
    if err: return failures.append(f"pow_edges[{b}]: {err}")
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    got = o["r"]
    same = (np.isnan(got) & np.isnan(want)) | (np.isclose(got, want, rtol=1e-6) & (np.signbit(got) == np.signbit(want)))
    if not same.all():
        i = int(np.argwhere(~same)[0][0])
        failures.append(f"pow_edges[{b}]: pow({x[i]!r}, {y[i]!r}) = {got[i]!r}, want {want[i]!r}")


@case
def math_edges(b):
    for kernel, dt, big, rtol in [("math_edges32", np.float32, 89.0, 1e-5),
                                  ("math_edges64", np.float64, 710.0, 1e-13)]:
        small = np.geomspace(1e-7, 0.9, 120)
        x = np.concatenate([small, -small[:60], np.linspace(0.5, 12, 30),
                            np.linspace(big - 5, big + 0.4, 46)]).astype(dt)
        o, err = run("q23_math_edges.sarek", kernel, b, 256, [], {"x": x})
        if err: return failures.append(f"math_edges {kernel}[{b}]: {err}")
        w = x.astype(np.float64)
        with np.errstate(all="ignore"):
            for name, f, ok in [("em1", np.expm1, w < big - 1), ("l1p", np.log1p, w > -1),
                                ("sh", np.sinh, w == w), ("ch", np.cosh, w == w),
                                ("th", np.tanh, w == w)]:
                check(f"math_edges {kernel}[{b}].{name}", o[name][ok], f(w).astype(dt)[ok], rtol=rtol)


# Upstream Sarek's end-to-end kernels (tests/upstream/e2e_more.sarek, modules/worklist.sarek),
# against the references of upstream's own tests.
UP = "../upstream/e2e_more.sarek"


@case
def upstream_ematch(b):
    n = 1024
    src = ((np.arange(n) + 1) * 0.5).astype(F32)
    for k, want in [("kirc", np.where(np.arange(n) % 2 == 0, src * F32(2), src + F32(7))),
                    ("silent_kirc", np.where(np.arange(n) % 2 == 0, src * F32(2), src + F32(7))),
                    ("capture_kirc", src)]:
        o, err = run(UP, k, b, n, ["n=1024"], {"src": src}, ["--block", "64"])
        if err: return failures.append(f"upstream_ematch {k}[{b}]: {err}")
        check(f"upstream_ematch {k}[{b}].dst", o["dst"], want.astype(F32))


@case
def upstream_field_store(b):
    n = 64
    t = np.dtype([("a", F32), ("b", F32), ("c", F32)])
    v = np.zeros(n, t)
    for f in t.names:
        v[f] = rng.uniform(-4, 4, n).astype(F32)
    for k in ["scale_b", "scale_mb"]:
        vv = v.copy()
        if k == "scale_mb":
            vv = vv.astype(np.dtype([("ma", F32), ("mb", F32), ("mc", F32)]))
        o, err = run(UP, k, b, n, ["n=64"], {"v": vv})
        if err: return failures.append(f"upstream_field_store {k}[{b}]: {err}")
        names = vv.dtype.names
        check(f"upstream_field_store {k}[{b}].first", o["v"][names[0]], vv[names[0]])
        check(f"upstream_field_store {k}[{b}].second", o["v"][names[1]], vv[names[1]] * F32(2))
        check(f"upstream_field_store {k}[{b}].third", o["v"][names[2]], vv[names[2]])
    for k, names in [("scale_nested", ["tag", "mid_a", "mid_b", "mid_c"]),
                     ("scale_nested_mut", ["mtag", "mmid_ma", "mmid_mb", "mmid_mc"])]:
        w = np.zeros(n, np.dtype([(f, F32) for f in names]))
        for f in names:
            w[f] = rng.uniform(-4, 4, n).astype(F32)
        o, err = run(UP, k, b, n, ["n=64"], {"v": w})
        if err: return failures.append(f"upstream_field_store {k}[{b}]: {err}")
        for j, f in enumerate(names):
            check(f"upstream_field_store {k}[{b}].{f}", o["v"][f], w[f] * F32(2) if j == 2 else w[f])


@case
def upstream_variant_field(b):
    n = 64
    i = np.arange(n)
    tag = np.where(i % 3 == 0, 0, np.where(i % 3 == 1, 1, 2)).astype(np.int32)
    shade = np.where(tag == 2, i, 0).astype(F32)
    cell = np.zeros(n, np.dtype([("kind_tag", np.int32), ("kind_Shade_0", F32), ("scale", F32)]))
    cell["kind_tag"], cell["kind_Shade_0"], cell["scale"] = tag, shade, i.astype(F32)
    o, err = run(UP, "cell_kirc", b, n, ["n=64"], {"src": cell})
    if err: return failures.append(f"upstream_variant_field cell[{b}]: {err}")
    s = np.where(tag == 0, F32(10), np.where(tag == 1, F32(20), shade)).astype(F32)
    check(f"upstream_variant_field cell[{b}].tag", o["out"]["kind_tag"], tag)
    check(f"upstream_variant_field cell[{b}].shade", o["out"]["kind_Shade_0"][tag == 2], shade[tag == 2])
    check(f"upstream_variant_field cell[{b}].scale", o["out"]["scale"], i.astype(F32) + s)
    col = np.zeros(n, np.dtype([("tag", np.int32), ("Shade_0", F32)]))
    col["tag"], col["Shade_0"] = tag, shade
    o, err = run(UP, "color_kirc", b, n, ["n=64"], {"src": col})
    if err: return failures.append(f"upstream_variant_field color[{b}]: {err}")
    check(f"upstream_variant_field color[{b}].tag", o["out"]["tag"], np.array([1, 0, 2], np.int32)[tag])
    check(f"upstream_variant_field color[{b}].shade", o["out"]["Shade_0"][tag == 2], shade[tag == 2] + F32(1))


@case
def upstream_shared_record_slots(b):
    src = np.arange(4).astype(F32)
    o, err = run(UP, "k", b, 4, [], {"src": src}, ["--block", "4"])
    if err: return failures.append(f"upstream_shared_record_slots k[{b}]: {err}")
    check(f"upstream_shared_record_slots k[{b}].own", o["out_own"], src)
    check(f"upstream_shared_record_slots k[{b}].nb", o["out_nb"], np.roll(src, -1) + F32(100))
    o, err = run(UP, "k_slot", b, 4, [], {"src": src}, ["--block", "4"])
    if err: return failures.append(f"upstream_shared_record_slots k_slot[{b}]: {err}")
    check(f"upstream_shared_record_slots k_slot[{b}].out", o["out"], np.roll(src, -1))
    o, err = run(UP, "k_local", b, 4, [], {"src": src}, ["--block", "4"])
    if err: return failures.append(f"upstream_shared_record_slots k_local[{b}]: {err}")
    check(f"upstream_shared_record_slots k_local[{b}].out0", o["out0"], src)
    check(f"upstream_shared_record_slots k_local[{b}].out1", o["out1"], src + F32(10))


@case
def upstream_mod_single_eval(b):
    n = 4096
    o, err = run(UP, "single_eval_kernel", b, n, ["n=4096"],
                 {"counter": np.zeros(n, np.int32), "r": np.zeros(n, np.int32)}, ["--block", "256"])
    if err: return failures.append(f"upstream_mod_single_eval[{b}]: {err}")
    # Each thread's atomic fires once: the counter ends at n, the old values are 0..n-1.
    check(f"upstream_mod_single_eval[{b}].counter", o["counter"][0], np.int32(n))
    check(f"upstream_mod_single_eval[{b}].r", np.sort(o["r"]), np.sort(np.arange(n) % 1000).astype(np.int32))


@case
def upstream_probe(b):
    for p, tag in [("At,1.5,2.5", 1), ("Nowhere", 0)]:
        o, err = run(UP, "probe_k", b, 8, ["n=8", f"p={p}"])
        if err: return failures.append(f"upstream_probe {p}[{b}]: {err}")
        check(f"upstream_probe {p}[{b}].tag", o["dst"]["tag"], np.full(8, tag, np.int32))
        if tag:
            check(f"upstream_probe {p}[{b}].px", o["dst"]["At2_0_px"], np.full(8, 1.5, F32))
            check(f"upstream_probe {p}[{b}].py", o["dst"]["At2_0_py"], np.full(8, 2.5, F32))


@case
def upstream_tuple_and_helpers(b):
    n = 64
    t = np.zeros(n, np.dtype([("_0", F32), ("_1", np.int32)]))
    t["_0"], t["_1"] = np.arange(n).astype(F32), n - np.arange(n)
    o, err = run(UP, "tuple_copy_kirc", b, n, ["n=64"], {"src": t})
    if err: return failures.append(f"upstream_tuple[{b}]: {err}")
    check(f"upstream_tuple[{b}]._0", o["dst"]["_0"], t["_0"] + F32(1))
    check(f"upstream_tuple[{b}]._1", o["dst"]["_1"], t["_1"])
    src = (np.arange(32) + 1).astype(F32)
    for k, want in [("collision_kernel", src * F32(2)), ("prefixing_kernel", src + F32(7))]:
        o, err = run(UP, k, b, 32, ["n=32"], {"src": src}, ["--block", "32"])
        if err: return failures.append(f"upstream_helpers {k}[{b}]: {err}")
        check(f"upstream_helpers {k}[{b}].out", o["out"], want)
    src = rng.uniform(-8, 8, 4)
    other = rng.uniform(-8, 8, 4)
    for k in ["single_helper_kernel", "shadowing_kernel", "multi_param_kernel", "body_local_kernel"]:
        inputs = {"src": src, "other": other} if k == "shadowing_kernel" else {"src": src}
        o, err = run(UP, k, b, 4, ["n=4"], inputs, ["--block", "1", "--grid", "1"])
        if err: return failures.append(f"upstream_scoping {k}[{b}]: {err}")
        folded = other if k == "shadowing_kernel" else src
        want = ((folded[0] + folded[1]) + folded[2]) + folded[3]
        check(f"upstream_scoping {k}[{b}].out", o["out"][0], want)


@case
def upstream_bare_f64_and_divrem(b):
    n = 64
    inp = np.arange(n) * 0.5 - 8.0
    o, err = run(UP, "bare_f64_kernel", b, n, ["n=64"], {"inp": inp}, ["--block", "64"])
    if err: return failures.append(f"upstream_bare_f64[{b}]: {err}")
    check(f"upstream_bare_f64[{b}].out", o["out"], inp * 2.0 + 1.0)
    cases = [(-7, 2), (7, -2), (-7, -2), (7, 2), (-2147483648, 3), (-100, 7), (100, -7), (-1, 2),
             (0, 5), (-999, -13)]
    a = np.array([c[0] for c in cases], np.int32)
    d = np.array([c[1] for c in cases], np.int32)
    o, err = run(UP, "signed_divrem_kernel", b, 10, ["n=10"], {"a": a, "b": d}, ["--block", "10"])
    if err: return failures.append(f"upstream_divrem[{b}]: {err}")
    check(f"upstream_divrem[{b}].q", o["q"], cdiv(a.astype(np.int64), d).astype(np.int32))
    check(f"upstream_divrem[{b}].r", o["r"], cmod(a.astype(np.int64), d).astype(np.int32))


@case
def upstream_mod_and_nan(b):
    a = np.array([-7, 7, -100, 100, -1, 0, 123, -123], np.int32)
    o, err = run(UP, "mod_collision_kernel", b, 8, ["n=8", "sarek_smod=-3"], {"a": a})
    if err: return failures.append(f"upstream_mod_collision[{b}]: {err}")
    check(f"upstream_mod_collision[{b}].r", o["r"], cmod(a.astype(np.int64), -3).astype(np.int32))
    nan, inf = np.nan, np.inf
    cases = [(nan, 1.0), (1.0, nan), (nan, nan), (nan, 0.0), (nan, inf), (1.0, 1.0), (1.0, 2.0),
             (0.0, 0.0), (inf, inf)]
    for k, dt in [("float_ne_kernel_f32", np.float32), ("float_ne_kernel_f64", np.float64)]:
        x = np.array([c[0] for c in cases], dt)
        y = np.array([c[1] for c in cases], dt)
        o, err = run(UP, k, b, 9, ["n=9"], {"a": x, "b": y})
        if err: return failures.append(f"upstream_float_ne {k}[{b}]: {err}")
        # OCaml's (and C's) `<>` is true when either side is NaN; `=` is false.
        check(f"upstream_float_ne {k}[{b}].ne", o["ne"], (x != y).astype(np.int32))
        check(f"upstream_float_ne {k}[{b}].eq", o["eq"], (x == y).astype(np.int32))


@case
def upstream_decl_order(b):
    for k, want in [("k_variant_payload", 1.5 + 2.25), ("k_record_variant_field", 4.75 + 2.0)]:
        o, err = run(UP, k, b, 64, ["n=64"])
        if err: return failures.append(f"upstream_decl_order {k}[{b}]: {err}")
        check(f"upstream_decl_order {k}[{b}].dst", o["dst"], np.full(64, want, F32))


@case
def upstream_mixed_align(b):
    # NumPy's aligned layout (tag@0, value@8, 16 bytes), as upstream's aligned ABI.
    n = 64
    src = np.zeros(n, np.dtype([("tag", "<i4"), ("value", "<f8")], align=True))
    src["tag"], src["value"] = np.arange(n), n - np.arange(n) + 0.5
    o, err = run(UP, "boxed_copy_kirc", b, n, ["n=64"], {"src": src})
    if err: return failures.append(f"upstream_mixed_align[{b}]: {err}")
    check(f"upstream_mixed_align[{b}].tag", o["dst"]["tag"], src["tag"] + 1)
    check(f"upstream_mixed_align[{b}].value", o["dst"]["value"], src["value"])


@case
def upstream_worklist(b):
    # Sarek_worklist's persistent single-thread traversal of a 50-node list through a ring of
    # 4 slots (upstream's scenario D): the sum of the values, no overflow.
    n, cap = 50, 4
    ctrl = np.zeros(n, np.int32); ctrl[1] = 1
    slots = np.full(n, -1, np.int32); slots[0] = 0
    nxt = np.array([i + 1 if i < n - 1 else -1 for i in range(n)], np.int32)
    inputs = {"ctrl": ctrl, "slots": slots, "values": np.arange(1, n + 1, dtype=np.int32),
              "nxt": nxt, "acc": np.zeros(n, np.int32)}
    o, err = run("../upstream/modules/worklist.sarek", "persistent_wrap_kernel", b, n, [f"cap={cap}"],
                 inputs, ["--block", "1", "--grid", "1"], modules=["../upstream/modules/sarek_worklist.sarek"])
    if err: return failures.append(f"upstream_worklist[{b}]: {err}")
    check(f"upstream_worklist[{b}].acc", o["acc"][0], np.int32(n * (n + 1) // 2))
    check(f"upstream_worklist[{b}].ctrl", o["ctrl"][:4], np.array([n + 1, n, 0, 0], np.int32))


# --- session 6 -------------------------------------------------------------------------------

def bits_equal(tag, got, want, skip=()):
    """Floats compared bit for bit (signed zeros, NaN payload aside): NaN == NaN here."""
    got = np.asarray(got); want = np.asarray(want, got.dtype)
    for i in range(len(want)):
        if i in skip: continue
        g, w = got[i], want[i]
        if np.isnan(w) and np.isnan(g): continue
        if g != w or np.signbit(g) != np.signbit(w):
            failures.append(f"{tag}: element {i}: got {g!r} want {w!r}"); return


NAN, INF = float("nan"), float("inf")
I32MIN, I32MAX, I64MIN, I64MAX = -2**31, 2**31 - 1, -2**63, 2**63 - 1
CONST_OI = [0, I32MAX, I32MIN, I32MAX, I32MIN, 0, I32MIN, I32MIN, 0, I32MIN, 1, I32MIN, 1, -4, 5,
            32 + 0 * 100 + 32 * 10000, I32MAX, I32MAX, 2147483520, I32MIN, I32MIN, 1, 16777216,
            -31, I32MIN, I32MIN, 0, I32MAX]
CONST_OL = [0, I64MAX, I64MIN, I64MIN, I64MIN, I64MIN, 1, I64MIN, 1, I64MAX, I64MIN, 2**62, 128]
F32MAX = float(np.finfo(np.float32).max)
CONST_OF = [F32MAX, INF, 2.0**-149, -0.0, -0.0, 9.223372036854775807e18, INF, 16777216.0, -1.0,
            -0.0, -0.0, -0.0, -1.0, -INF, -0.0, 1.0, 1.0, 1.5, -1.5, 0.0,
            float(np.float32(1.17549435e-38)), 2.0**-149, INF]
CONST_OD = [1.7976931348623157e308, 5e-324, -0.0, -0.0, 9.223372036854775807e18,
            float(np.float32(3.4028235e38)), INF, -3.0]
CONST_OB = [False, True, False, False, True, True, True, True, True, True]


@case
def const_edges(b):
    o, err = run("r01_const_edges.sarek", "const_edges", b, 32)
    if err: return failures.append(f"const_edges[{b}]: {err}")
    check(f"const_edges[{b}].oi", o["oi"][:len(CONST_OI)], np.array(CONST_OI, np.int32))
    check(f"const_edges[{b}].ol", o["ol"][:len(CONST_OL)], np.array(CONST_OL, np.int64))
    bits_equal(f"const_edges[{b}].of", o["of_"][:len(CONST_OF)], np.array(CONST_OF, np.float32))
    bits_equal(f"const_edges[{b}].od", o["od"][:len(CONST_OD)], np.array(CONST_OD))
    check(f"const_edges[{b}].ob", o["ob"][:len(CONST_OB)], np.array(CONST_OB))


@case
def const_edges32(b):
    o, err = run("r01_const_edges.sarek", "const_edges32", b, 32)
    if err: return failures.append(f"const_edges32[{b}]: {err}")
    # The same slots as `const_edges`, less those computed from int64/float64 values.
    for name, want, left_out, cmp in [("oi", CONST_OI, (14, 17, 26, 27), check), ("ob", CONST_OB, (7, 9), check)]:
        keep = [k for k in range(len(want)) if k not in left_out]
        cmp(f"const_edges32[{b}].{name}", o[name if name != "of" else "of_"][keep], np.array(want)[keep].astype(o[name].dtype))
    keep = [k for k in range(len(CONST_OF)) if k not in (5, 6, 20)]
    # WGSL lets an implementation ignore the sign of a zero: lavapipe computes 0 * -1 = +0 and
    # abs(-0) = -0 (FINDINGS.md, N10). Every other backend keeps the signs.
    if b == "wgpu":
        keep = [k for k in keep if k not in (4, 19)]
    bits_equal(f"const_edges32[{b}].of", o["of_"][keep], np.array(CONST_OF, np.float32)[keep])


def agg_mix_model(a, n, block=64):
    def mk(k):
        if k % 3 == 0: return ("Dot", k, float(k))
        if k % 3 == 1: return ("Seg", k * 2, k + 1)
        return ("Nil",)
    O = np.zeros(n, np.int64); F = np.zeros(n, np.float32)
    for base in range(0, n, block):
        vs = [int(x) for x in a[base:base + block]]
        sp = [v if v % 2 == 0 else -v for v in vs]
        ss = [mk(v) if v > 500 else ("Nil",) for v in vs]
        st = [(v, F32(v) * F32(2)) if v < 100 else (0, F32(0)) for v in vs]
        for t, v in enumerate(vs):
            acc, facc, loc = 0, F32(0), [0] * 4
            for r in range(4):
                j = (t + r) % block; s = ss[j]
                if s[0] == "Dot": acc += s[1]; facc = F32(facc + F32(s[2]))
                elif s[0] == "Seg" and s[2] == 0: acc += 1
                elif s[0] == "Seg": acc += s[1] + s[2]
                else: acc -= 1
                u, w = st[j]
                loc[r] = 10 if (u == 0 and r == 0) else 20 if u == 0 else u if r == 3 else sp[j]
                facc = F32(facc + w)
            m = mk(v + 1)
            bb = m[1] if m[0] == "Dot" else m[1] - m[2] if m[0] == "Seg" else 0
            O[base + t] = acc + sum(loc) + bb + 1002 + 10 + 5  # max 1 2, sqrt 3, Std.max 4 5
            F[base + t] = facc + F32(2)
    return O.astype(np.int32), F


@case
def agg_mix(b):
    n = 256
    a = i32(n)
    o, err = run("r02_aggregate_memories.sarek", "agg_mix", b, n, ["n=256"], {"a": a}, ["--block", "64"])
    if err: return failures.append(f"agg_mix[{b}]: {err}")
    wo, wf = agg_mix_model(a, n)
    check(f"agg_mix[{b}].o", o["o"], wo)
    check(f"agg_mix[{b}].f", o["f"], wf)


@case
def atomic_returns(b):
    n = 256  # one block (the kernel sets its global slots first)
    o, err = run("r03_atomic_returns.sarek", "atomic_returns", b, n, (), None, ["--block", str(n)])
    if err: return failures.append(f"atomic_returns[{b}]: {err}")
    tag = f"atomic_returns[{b}]"
    for h in ["h_inc", "h_dec", "h_sub", "h_add64", "h_dec64", "h_addf", "hs_inc", "hs_dec64", "hs_addf", "hs_exch"]:
        check(f"{tag}.{h} (every returned value once)", o[h], np.ones(n, np.int32))
    check(f"{tag}.cnt (one cas succeeds)", o["cnt"][:3], np.array([1, 1, 0], np.int32))
    check(f"{tag}.g", o["g"][[0, 1, 2, 4]], np.array([n, -n, -3 * n, 7], np.int32))
    check(f"{tag}.g64", o["g64"][:2], np.array([n << 32, -n], np.int64))
    check(f"{tag}.gf", o["gf"][0], F32(n))
    check(f"{tag}.fin", o["fin"][:4], np.array([n, 9, 127, 0], np.int32))
    check(f"{tag}.fin64", o["fin64"][:2], np.array([-n, -(n - 1) << 32], np.int64))


@case
def atomic_returns32(b):
    n = 256
    o, err = run("r03_atomic_returns.sarek", "atomic_returns32", b, n, (), None, ["--block", str(n)])
    if err: return failures.append(f"atomic_returns32[{b}]: {err}")
    tag = f"atomic_returns32[{b}]"
    for h in ["h_inc", "h_dec", "h_addf", "hs_addf", "hs_exch"]:
        check(f"{tag}.{h} (every returned value once)", o[h], np.ones(n, np.int32))
    check(f"{tag}.cnt (one cas succeeds)", o["cnt"][:2], np.array([1, 1], np.int32))
    check(f"{tag}.g", o["g"][[0, 1, 4]], np.array([n, -n, 7], np.int32))
    check(f"{tag}.gf", o["gf"][0], F32(n))


@case
def atomic_bits(b):
    # One thread per bit; w_t = (37 t mod n - n/2) << (bits - 8), distinct.
    for kern, bits, dt in [("bits64", 64, np.int64), ("bits32", 32, np.int32)]:
        n = bits
        o, err = run("r03_atomic_returns.sarek", kern, b, n, (), None, ["--block", str(n)])
        if err: failures.append(f"atomic_bits {kern}[{b}]: {err}"); continue
        w = [((t * 37) % n - n // 2) << (bits - 8) for t in range(n)]
        tag = f"atomic_bits {kern}[{b}]"
        for h in ["h_or", "h_and", "h_xor", "hs_or", "hs_and"]:
            check(f"{tag}.{h} (every popcount once)", o[h], np.ones(n, np.int32))
        check(f"{tag}.bad", o["bad"][:8], np.zeros(8, np.int32))
        check(f"{tag}.g", o["g"][:5], np.array([-1, 0, -1, max(w), min(w)], dt))
        check(f"{tag}.fin", o["fin"][:3], np.array([-1, 0, max(w)], dt))


@case
def shadow_steps(b):
    n, B = 128, 32
    o, err = run("r04_shadowing_supersteps.sarek", "shadow_steps", b, n, ["length=5", "thread_idx_x=7"],
                 None, ["--block", str(B)])
    if err: return failures.append(f"shadow_steps[{b}]: {err}")
    want = np.zeros(n, np.int32)
    for i in range(n):
        t = i % B
        acc = 5 + 7 + 2 * 3                      # length + thread_idx_x + block_dim_x 2
        for r in range(3):
            s = [u * (r + 1) for u in range(B)]
            if t % 2 == 0: acc += s[(t + 1) % B]
            for j in range(2):
                s = [x + j for x in s]
                acc += s[(t + 3) % B]
        want[i] = acc + 2
    check(f"shadow_steps[{b}].p", o["p"], want)
    check(f"shadow_steps[{b}].o", o["o"], np.full(n, 2 * n, np.int32))


HEX32 = ["0x1.8p3", "0x1p-149", "0x1.fffffep127", "0xA.", "-0x1p-126", "0x.8", "0x10p0", "0x1p+1"]
HEX64 = ["0x1p-1074", "0x1.fffffffffffffp1023", "0x1.00000000000008p0", "0x1.00000000000018p0",
         "0x1.00000000000008000000000000000001p0", "0x0.0000000000000000000000001p0", "0x1.8p-1074",
         "0x3p-1076", "0x1p-1075", "0x1.00000000000000000000000000000000000001p-1075", "inf",
         "0xfffffffffffffffffffffffffffffffffffffffp0"]


@case
def hex_floats(b):
    o, err = run("r05_hex_floats.sarek", "hex_floats32", b, 8)
    if err: failures.append(f"hex_floats32[{b}]: {err}")
    else: bits_equal(f"hex_floats32[{b}].o", o["o"], np.array([float.fromhex(x) for x in HEX32], np.float32))
    o, err = run("r05_hex_floats.sarek", "hex_floats64", b, 16)
    if err: return failures.append(f"hex_floats64[{b}]: {err}")
    bits_equal(f"hex_floats64[{b}].d", o["d"][:len(HEX64)], np.array([float.fromhex(x) for x in HEX64]))


@case
def const_records(b):
    n = 64
    o, err = run("r06_const_records.sarek", "const_records", b, n, ["m=4"])
    if err: return failures.append(f"const_records[{b}]: {err}")
    d = np.arange(n) % 4
    qx = d * (d + 1) // 2                     # build d: x = 1 + 2 + ... + d, y = 0.5 * 2^d
    check(f"const_records[{b}].o", o["o"], (2 + 3 + qx * 10).astype(np.int32))
    check(f"const_records[{b}].f", o["f"], (F32(0.5) + F32(1.5) + F32(0.5) * 2.0 ** d).astype(F32))


@case
def generated_names(b):
    n = 64
    x = rng.uniform(-3, 3, n).astype(F32)
    buf = np.zeros(n, [(f, "<i4" if f != "output" else "<f4") for f in
                       ["input", "output", "precise", "sample", "patch", "uniform", "layout", "main"]])
    for f in buf.dtype.names:
        buf[f] = rng.integers(0, 1000, n) if f != "output" else rng.uniform(-1, 1, n)
    d = np.zeros(n, [("tag", "<i4"), ("Kernel_0", "<i4"), ("Global_0", "<f4"), ("Shared_0", "<i4"), ("Shared_1", "<i4")])
    d["tag"] = np.arange(n) % 4
    d["Kernel_0"], d["Global_0"] = rng.integers(-50, 50, n), rng.uniform(-9, 9, n)
    d["Shared_0"], d["Shared_1"] = rng.integers(0, 9, n), rng.integers(0, 9, n)
    o, err = run("r07_generated_names.sarek", "main", b, n, (), {"blockIdx": buf, "d": d, "f": x})
    if err: return failures.append(f"generated_names[{b}]: {err}")
    rnd = np.sign(x) * np.floor(np.abs(x) + F32(0.5))
    want_f = (x + F32(1)) + np.fmod(x, F32(0.75)) + x * F32(3) + (rnd.astype(F32) - F32(1))
    check(f"generated_names[{b}].f", o["f"], want_f.astype(F32), rtol=1e-6, atol=1e-6)
    g = (buf["input"].astype(np.int64) * 3 + cdiv(buf["input"].astype(np.int64), buf["main"].astype(np.int64) + 1)
         + np.arange(n) + 100 + buf["patch"] + 1000 + buf["precise"] + buf["sample"] + buf["uniform"] + buf["layout"])
    check(f"generated_names[{b}].gl_GlobalInvocationID", o["gl_GlobalInvocationID"], g.astype(np.int32))
    w = o["d"]
    tag = d["tag"]
    check(f"generated_names[{b}].d.tag", w["tag"], np.array([3, 0, 1, 2], np.int32)[tag])
    k0 = tag == 0
    check(f"generated_names[{b}].d.Shared", np.stack([w["Shared_0"][k0], w["Shared_1"][k0]]),
          np.stack([d["Kernel_0"][k0], buf["input"][k0]]))
    check(f"generated_names[{b}].d.Kernel", w["Kernel_0"][tag == 1], np.trunc(d["Global_0"][tag == 1]).astype(np.int32))
    check(f"generated_names[{b}].d.Global", w["Global_0"][tag == 2], buf["output"][tag == 2])


@case
def mutable_fields(b):
    n = 64
    o, err = run("r08_mutable_fields.sarek", "mf", b, n)
    if err: return failures.append(f"mutable_fields[{b}]: {err}")
    i = np.arange(n)
    # p.x <- 10 i, then p.x + bump p where bump adds 100 to its own copy.
    check(f"mutable_fields[{b}].o", o["o"], np.where(i % 2 == 0, 10 * i + 10 * i + 100, -1).astype(np.int32))
    v = o["v"]
    check(f"mutable_fields[{b}].v.tag", v["tag"], (i % 2).astype(np.int32))
    check(f"mutable_fields[{b}].v.x (not stored through)", v["Dot_0_x"][i % 2 == 0], i[i % 2 == 0].astype(np.int32))


UP3 = "../upstream/e2e_third.sarek"
UPF = "../upstream/e2e_field_tag_erasure.sarek"


@case
def upstream_nested_records(b):
    n = 64
    f = np.arange(n, dtype=F32)
    outer = np.zeros(n, [("tag", "<f4"), ("mid_a", "<f4"), ("mid_b", "<f4"), ("mid_c", "<f4")])
    outer["tag"], outer["mid_a"], outer["mid_b"], outer["mid_c"] = f, f, f + 0.5, f + 1
    chain = np.zeros(n, [("s_r_p", "<f4")]); chain["s_r_p"] = f * 2
    twin = np.zeros(n, [("left_a", "<f4"), ("left_b", "<f4"), ("left_c", "<f4"), ("right_p", "<f4")])
    twin["left_a"], twin["right_p"] = f, f * 10
    for k, src, want in [("k_outer", outer, f + 0.5), ("k_chain", chain, f * 2), ("k_twin", twin, f + f * 10)]:
        o, err = run(UP3, k, b, n, ["n=64"], {"src": src}, ["--block", "64"])
        if err: return failures.append(f"upstream_nested_records {k}[{b}]: {err}")
        check(f"upstream_nested_records {k}[{b}].dst", o["dst"], want)


@case
def upstream_tag_erasure(b):
    n = 64
    v = np.arange(1, n + 1, dtype=F32)
    even = np.arange(n) % 2 == 0
    cases = [(UP3, "unary_kirc", v * v + v), (UP3, "nullary_kirc", np.ones(n, F32)),
             (UP3, "multiarg_kirc", v + (v + v)), (UP3, "retained_kirc", np.where(even, v * v, v)),
             (UPF, "unary_kirc", v * v * 2), (UPF, "nullary_kirc", v + 1),
             (UPF, "allscalar_kirc", v * (v + 1)), (UPF, "runtime_kirc", v * 2)]
    for file, k, want in cases:
        o, err = run(file, k, b, n, ["n=64"], {"src": v})
        if err: return failures.append(f"upstream_tag_erasure {file} {k}[{b}]: {err}")
        check(f"upstream_tag_erasure {file} {k}[{b}].dst", o["dst"], want.astype(F32))


@case
def upstream_local_alias(b):
    # A record bound to a local is a copy: the store through it lands in the local only.
    n = 64
    f = np.arange(n, dtype=F32)
    l1 = np.zeros(n, [("p", "<f4"), ("q", "<f4")]); l1["p"], l1["q"] = f, f + 100
    l2 = np.zeros(n, [("tag", "<f4"), ("sub_p", "<f4"), ("sub_q", "<f4")])
    l2["tag"], l2["sub_p"], l2["sub_q"] = f + 1000, f, f + 100
    for k, v in [("k_local_depth1", l1), ("k_local_nested", l2)]:
        o, err = run(UP3, k, b, n, ["n=64"], {"v": v})
        if err: return failures.append(f"upstream_local_alias {k}[{b}]: {err}")
        check(f"upstream_local_alias {k}[{b}].out", o["out"], np.full(n, 42, F32))
        check(f"upstream_local_alias {k}[{b}].v", o["v"].tobytes() == v.tobytes(), True)


@case
def upstream_tailrec_vector(b):
    o, err = run(UP3, "probe_kernel", b, 10, ["n=10"], {"src": np.arange(10, dtype=np.float64)},
                 ["--block", "1", "--grid", "1"])
    if err: return failures.append(f"upstream_tailrec_vector[{b}]: {err}")
    check(f"upstream_tailrec_vector[{b}].out", o["out"][:3], np.full(3, 45.0))


@case
def upstream_reserved_prefix(b):
    a = (np.arange(64) * 3 - 50).astype(np.int32)
    o, err = run(UP3, "boundary_kernel", b, 64, ["mysarek_=7"], {"a": a})
    if err: return failures.append(f"upstream_reserved_prefix[{b}]: {err}")
    check(f"upstream_reserved_prefix[{b}].r", o["r"], 2 * a + 7)


@case
def upstream_param_identity(b):
    # combine a b c d = a + b + c with distinct arguments: 6, not 9 (an off-by-one binding).
    o, err = run(UP3, "off_by_one_kernel", b, 4, (), {"src": np.array([1, 2, 3, 4], F32)},
                 ["--block", "1", "--grid", "1"])
    if err: return failures.append(f"upstream_param_identity[{b}]: {err}")
    check(f"upstream_param_identity[{b}].out", o["out"][0], F32(6))


@case
def upstream_record_f64_arith(b):
    n = 64
    i = np.arange(n)
    v = np.zeros(n, [("x", "<f8"), ("y", "<f8"), ("z", "<f8")])
    v["x"], v["y"], v["z"] = i + 0.25, n - i - 0.5, i * 0.5 + 0.125
    o, err = run(UP3, "scale_kirc", b, n, ["n=64"], {"src": v})
    if err: return failures.append(f"upstream_record_f64_arith[{b}]: {err}")
    d = o["dst"]
    check(f"upstream_record_f64_arith[{b}].x", d["x"], v["x"] * 2 + v["z"])
    check(f"upstream_record_f64_arith[{b}].y", d["y"], (v["y"] - 0.5) * v["x"])
    check(f"upstream_record_f64_arith[{b}].z", d["z"], v["z"] + 1.25)


@case
def upstream_helper_scoping(b):
    # A helper's local (or formal) named like a scalar kernel parameter, and prelude values
    # (constant, and thread-dependent) read from a helper (codegen_golden tests).
    for k, args, want in [("shadowing_kernel", ["n=5"], (5 + 1) * 2), ("formal_kernel", ["n=5"], 5 * 3),
                          ("dynamic_const_kernel", [], 10 + 0)]:
        o, err = run(UP3, k, b, 4, args)
        if err: failures.append(f"upstream_helper_scoping {k}[{b}]: {err}"); continue
        check(f"upstream_helper_scoping {k}[{b}].out", o["out"][0], np.int32(want))
    src = np.array([1.25, 0, 0, 0], F32)
    o, err = run(UP3, "static_const_kernel", b, 4, (), {"src": src})
    if err: return failures.append(f"upstream_helper_scoping static_const_kernel[{b}]: {err}")
    check(f"upstream_helper_scoping static_const_kernel[{b}].out", o["out"][0], F32(2.5))



@case
def zero_divisors(b):
    # IEEE 754: x / +0 is +inf for x > 0, -inf for x < 0, NaN for x = 0 or NaN; x / -0 the
    # opposite infinities. The integer conversion saturates (docs/backends.md).
    n = 64
    x = rng.uniform(-4, 4, n).astype(F32)
    x[:4] = [0.0, -0.0, np.nan, np.inf]
    o, err = run("r09_zero_divisors.sarek", "zero_divisors", b, n, (), {"x": x})
    if err: return failures.append(f"zero_divisors[{b}]: {err}")
    pos = np.where(np.isnan(x) | (x == 0), np.nan, np.where(x > 0, np.inf, -np.inf)).astype(F32)
    for name, want in [("a", pos), ("b", -pos), ("c", pos), ("e", np.full(n, np.nan, F32))]:
        check(f"zero_divisors[{b}].{name}", o[name], want)
    sat = np.where(np.isnan(pos), 0, np.where(pos > 0, 2**31 - 1, -2**31)).astype(np.int32)
    check(f"zero_divisors[{b}].d", o["d"], sat)


@case
def zero_divisors64(b):
    n = 64
    x = rng.uniform(-4, 4, n)
    x[:3] = [0.0, -0.0, np.nan]
    o, err = run("r09_zero_divisors.sarek", "zero_divisors64", b, n, (), {"x": x})
    if err: return failures.append(f"zero_divisors64[{b}]: {err}")
    pos = np.where(np.isnan(x) | (x == 0), np.nan, np.where(x > 0, np.inf, -np.inf))
    for name, want in [("a", pos), ("b", -pos)]:
        check(f"zero_divisors64[{b}].{name}", o[name], want)
    sat = np.where(np.isnan(pos), 0, np.where(pos > 0, 2**63 - 1, -2**63)).astype(np.int64)
    check(f"zero_divisors64[{b}].d", o["d"], sat)


@case
def component_variance(b):
    # Each thread adds, for k = 1..n, the value k * ((tid + 1) mod 64) its neighbour stored.
    n, k = 128, 3
    o, err = run("r10_component_variance.sarek", "component_variance", b, n, [f"n={k}"], extra=["--block", "64"])
    if err: return failures.append(f"component_variance[{b}]: {err}")
    tid = np.arange(n) % 64
    check(f"component_variance[{b}].o", o["o"], (((tid + 1) % 64) * (k * (k + 1) // 2)).astype(np.int32))


def same_bits(tag, got, want, skip=()):
    """Equal floats with the sign of zero, NaN equal to NaN; `skip`: slots not compared."""
    got = np.asarray(got)[:len(want)]; want = np.asarray(want, got.dtype)
    for k in range(len(want)):
        if k in skip: continue
        g, w = got[k], want[k]
        if not ((np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w))):
            failures.append(f"{tag}[{k}]: got {g!r} want {w!r}")


I32MAX, I32MIN, I64MAX, I64MIN = 2**31 - 1, -2**31, 2**63 - 1, -2**63
INF, NAN = np.inf, np.nan
# r11_runtime_edges, slot by slot (LANGUAGE.md, docs/backends.md "Operations with one meaning
# everywhere", IEEE 754 and two's complement):
RT_I32 = [
    0, I32MAX, I32MIN,      # int32 of NaN, +inf, -inf: NaN -> 0, saturating
    I32MAX, I32MIN, 0,      # 3e9, -3e9 saturate; -0.99 truncates toward zero
    I32MIN, 0,              # min_int / -1 wraps, min_int mod -1 = 0
    I32MIN, I32MIN,         # abs and negation of min_int wrap
    1, I32MIN, 1, -4,       # 1 lsl 32 = 1 lsl 0; 1 lsl 31; -1 lsr 31 = 1; -8 asr 33 = -8 asr 1
    I32MIN,                 # 1 lsl -1 = 1 lsl 31 (count land 31)
    32 + 0 * 100 + 32 * 10000,   # clz 0 = 32, clz -1 = 0, popcount -1 = 32
    I32MAX,                 # 2147483647.0 is 2^31 as a float32: saturates
    I32MAX,                 # 2147483647.0d is exact: fits
    2147483520,             # the largest float32 below 2^31
    I32MIN, I32MAX,         # -2147483648.9d, 2147483647.9d truncate into range
    16777216,               # float32 16777217 rounds to even: 2^24
    0, I32MAX,              # int32 of a float64 NaN, of 1e300
    31 + 16 * 100,          # clz 1 = 31, popcount 0x55555555 = 16
    I32MIN, 1, I32MIN,      # max_int + 1 wraps; (-1) * (-1); min min_int max_int + max 0 (-1)
    5,                      # int32 (0x1_0000_0005L) keeps the low 32 bits
    -3 * 10 - 1,            # -7 / 2 = -3 (truncating), -7 mod 2 = -1 (sign of the dividend)
]
RT_I64 = [0, I64MAX, I64MIN, I64MIN, 0, 1, I64MIN, 1, I64MAX, I64MIN, I64MIN,
          64 + 64 * 1000,   # clz 0L = 64, popcount -1L = 64
          -4,               # -8L asr 65 = -8L asr 1
          0, 2**62]         # int64 of a NaN; (-2^31)^2
RT_F32 = [
    0.0, 8388609.0, -0.0, 3.0, -3.0,   # round: 0.49999997 -> 0, 2^23 + 1 exact, -0.49999997 -> -0, halves away from 0
    -2.0**-46,              # fma (1 + 2^-23) (1 - 2^-23) (-1) = -2^-46 exactly (one rounding)
    2.0**62 + 2.0**39,      # 2^62 + 2^38 + 1 rounds up once (through float64 it would tie to 2^62)
    1.0, 1.0, 1.0, 1.0,     # fmin/fmax/min/max ignore the NaN operand
    -INF, -INF, -INF,       # 1 / round (-0.4), 1 / trunc (-0.5), 1 / ceil (-0.5): results are -0
    -INF, INF, -1.0,        # sqrt (-0) = -0; abs_float (-0) = +0; copysign 1 (-0) = -1
    1.5, -1.5,              # fmod: the sign of the dividend
    1.0 + 2.0**-23,         # float32 (1 + 2^-24 + 1e-15): above the tie, rounds up
    2.0**31,                # float32 max_int
    INF, INF, -INF, -INF,   # 1 / abs (-0); rsqrt 0; log 0; 1 / floor (-0)
    16777216.0, 2.0**63,    # float32 16777217; float32 max_int64
    3.5,                    # fabs (-3.5)
    None,                   # hypot 1e30 1e30 (compared with a tolerance below)
    -INF,                   # 1 / (0 * -1)
]
RT_F64 = [0.0, 4503599627370497.0,   # round 0.49999999999999994 = 0, 2^52 + 1 exact
          -2.0**-104,              # fma (1 + 2^-52) (1 - 2^-52) (-1)
          2.0**62 + 2.0**10,       # 2^62 + 2^9 + 1 rounds up
          1.0, 1.0, -INF,          # fmin, max with a NaN; 1 / round (-0.4)
          float(F32(3.4028235e38)), 2.0**-149]   # float32 max and its smallest subnormal, widened exactly
RT_BOOL = [False, True, False, False, True,   # NaN: =, <>, <, >=, not >
           True, True, False,                 # -0 = 0; NaN != NaN (float64); NaN <= NaN
           False]                             # true < false
# `fma` on vulkan and wgpu (lavapipe) rounds the product first: FINDINGS F37 (open).
FMA_UNFUSED = {"vulkan", "wgpu"}


def runtime_edges_check(b, o, tag, wide):
    i32 = [k for k in range(len(RT_I32)) if wide or k not in (17, 19, 20, 22, 23, 28)]
    check(f"{tag}.oi", o["oi"][i32], np.array([RT_I32[k] for k in i32], np.int32))
    f32 = RT_F32[:]
    f32[28] = float(F32(np.sqrt(2.0) * float(F32(1e30))))
    skip = {28} | ({5} if b in FMA_UNFUSED else set()) | (set() if wide else {6, 19, 26})
    same_bits(f"{tag}.of_", o["of_"].astype(F32), np.array(f32, F32), skip)
    check(f"{tag}.of_[28] hypot", o["of_"][28:29], np.array(f32[28:29], F32), rtol=2e-7)
    bools = [k for k in range(len(RT_BOOL)) if wide or k != 6]
    check(f"{tag}.ob", o["ob"][bools], np.array([RT_BOOL[k] for k in bools]))
    if wide:
        check(f"{tag}.ol", o["ol"][:len(RT_I64)], np.array(RT_I64, np.int64))
        same_bits(f"{tag}.od", o["od"], np.array(RT_F64), {2} if b in FMA_UNFUSED else ())


@case
def runtime_edges(b):
    o, err = run("r11_runtime_edges.sarek", "runtime_edges", b, 32,
                 ["o1=1", "l1=1", "f1=1.0", "d1=1.0", "f0=0.0", "d0=0.0"])
    if err: return failures.append(f"runtime_edges[{b}]: {err}")
    runtime_edges_check(b, o, f"runtime_edges[{b}]", True)


@case
def runtime_edges32(b):
    o, err = run("r11_runtime_edges.sarek", "runtime_edges32", b, 32, ["o1=1", "f1=1.0", "f0=0.0"])
    if err: return failures.append(f"runtime_edges32[{b}]: {err}")
    runtime_edges_check(b, o, f"runtime_edges32[{b}]", False)

def fmod_operands(dt):
    """Pairs (x, y) for C's fmod at its edges, then random ones (both signs, exponent
    differences up to the whole range, subnormals)."""
    info = np.finfo(dt)
    tiny, big = info.smallest_subnormal, info.max
    edges = [(5.5, 2.0), (-5.5, 2.0), (5.5, -2.0), (-5.5, -2.0), (6.0, 2.0), (-6.0, 2.0),
             (0.0, 1.0), (-0.0, 1.0), (1.0, 0.0), (1.0, -0.0), (0.0, 0.0), (INF, 1.0),
             (-INF, 1.0), (1.0, INF), (-1.0, -INF), (NAN, 1.0), (1.0, NAN), (3.0, 1e30),
             (1e30, 3.0), (-1e30, 3.0), (big, tiny), (-big, tiny), (big, 3.0), (tiny, big),
             (tiny * 7, tiny * 2), (0.1, 0.01), (1.0, 0.1), (7.25, 0.25), (-7.3, 0.25),
             (info.tiny, tiny * 3), (info.tiny * 1.5, info.tiny), (2.0 ** 20 + 0.5, 1.0)]
    x = np.array([e[0] for e in edges], dt); y = np.array([e[1] for e in edges], dt)
    n = 256 - len(edges)
    mags = 2.0 ** rng.uniform(info.minexp, info.maxexp - 1, (2, n))
    signs = np.where(rng.integers(0, 2, (2, n)) == 1, -1.0, 1.0)
    rx, ry = (mags * signs).astype(dt)
    near = rng.integers(0, 2, n) == 1  # half of them with exponents close together
    ry = np.where(near, (rx / rng.uniform(1.0, 1e4, n)).astype(dt), ry)
    return np.concatenate([x, rx]), np.concatenate([y, ry])


@case
def soft_fmod(b):
    for kernel, dt in [("fmod32", F32), ("fmod64", np.float64)]:
        x, y = fmod_operands(dt)
        o, err = run("r12_soft_float.sarek", kernel, b, len(x), (), {"x": x, "y": y})
        if err: return failures.append(f"soft_fmod {kernel}[{b}]: {err}")
        with np.errstate(all="ignore"):
            same_bits(f"soft_fmod {kernel}[{b}].r", o["r"], np.fmod(x, y))


# Operands of the float64 math functions (the second one for pow, atan2, mod): zeros,
# subnormals, ±1, the overflow and underflow edges of exp, multiples of pi/2, |x| near 1
# for asin/acos, infinities and NaN, then random magnitudes up to 2^80 (1e22, 1e300 for the
# far reduction of sin/cos/tan past 2^90).
MATH64_X = [0.0, -0.0, 5e-324, -5e-324, 1e-300, 1e-8, -1e-8, 0.5, -0.5, 1.0, -1.0, 2.0, 3.0,
            -3.0, 10.0, 100.0, 700.0, 709.5, 709.8, 710.0, -700.0, -745.0, -746.0, 1e10,
            1e22, 2.0 ** 60, np.pi / 2, np.pi, 3 * np.pi / 2, 1e6 * np.pi, 0.9999999999,
            -0.9999999999, 1.0 - 2.0 ** -53, 1e300, INF, -INF, NAN, 8.0, -8.0, 0.1, 1e-320]
MATH64_Y = [2.0, 3.0, -1.0, 0.5, 1.0 / 3.0, 0.0, -0.0, INF, -INF, NAN, 10.0, -2.5, 1e-5,
            1e5, 7.0, -7.0, 1e300, 1.0]


@case
def soft_math64(b):
    n = 320
    fixed = [(x, 2.0) for x in MATH64_X] + \
            [(x, y) for x in [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, INF, -INF, NAN, -8.0]
             for y in MATH64_Y]
    fixed = fixed[:n - 56]
    rx = 2.0 ** rng.uniform(-30, 1000, 28) * np.where(rng.integers(0, 2, 28) == 1, -1.0, 1.0)
    ux = rng.uniform(-20, 20, 28)
    x = np.concatenate([[p[0] for p in fixed], rx, ux])
    y = np.concatenate([[p[1] for p in fixed], rng.uniform(-4, 4, 56)])
    m = len(x)
    xs = np.zeros(20 * n); ys = np.zeros(20 * n); xs[:m] = x; ys[:m] = y
    o, err = run("r12_soft_float.sarek", "math64", b, 20 * n, [f"n={m}"], {"x": xs, "y": ys})
    if err: return failures.append(f"soft_math64[{b}]: {err}")
    got = o["o"][:20 * m].reshape(m, 20)
    with np.errstate(all="ignore"):
        want = [np.exp(x), np.exp2(x), np.expm1(x), np.log(x), np.log2(x), np.log10(x),
                np.log1p(x), np.sin(x), np.cos(x), np.tan(x), np.arcsin(x), np.arccos(x),
                np.arctan(x), np.sinh(x), np.cosh(x), np.tanh(x), np.power(x, y),
                np.arctan2(x, y), 1.0 / np.sqrt(x), np.fmod(x, y)]
    names = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
             "asin", "acos", "atan", "sinh", "cosh", "tanh", "pow", "atan2", "rsqrt", "mod"]
    for k, (name, w) in enumerate(zip(names, want)):
        g = got[:, k]
        special = ~np.isfinite(w) | (w == 0)
        same_bits(f"soft_math64[{b}].{name} special", g[special], w[special])
        # mod is exact everywhere. rsqrt is exact where it is sqrt then divide (interp, cpu,
        # ptx) but a device's own rsqrt has up to 2 ulps (CUDA, OpenCL). Results in the
        # subnormal range may be flushed to zero by a device's libm (CUDA exp, PoCL log1p).
        if name == "mod":
            check(f"soft_math64[{b}].{name}", g[~special], w[~special])
        else:
            rtol = 4.5e-16 if name == "rsqrt" else 1e-14
            check(f"soft_math64[{b}].{name}", g[~special], w[~special], rtol=rtol,
                  atol=np.finfo(np.float64).tiny)
# lavapipe's `wgpu` path still rewrites `(a + b) - a` to `b`: FINDINGS F40 (open there).
REASSOCIATES = {"wgpu"}


def two_sum_err(a, b):
    # every operation rounded to the operands' type, as IEEE 754 evaluates it
    s = a + b
    bb = s - a
    return (a - (s - bb)) + (b - bb)


@case
def compensated_sums(b):
    if b in REASSOCIATES: return
    n = 64
    x = np.concatenate([np.ones(32, F32), rng.uniform(-1, 1, 32).astype(F32)])
    y = (rng.uniform(-1, 1, n) * 1e-7).astype(F32)
    o, err = run("r12_compensated_sums.sarek", "compensated_sums", b, n, (), {"x": x, "y": y})
    if err: return failures.append(f"compensated_sums[{b}]: {err}")
    same_bits(f"compensated_sums[{b}].err", o["err"], two_sum_err(x, y))
    same_bits(f"compensated_sums[{b}].quick", o["quick"], y - ((x + y) - x))
    total, c = x.copy(), np.zeros(n, F32)
    for k in range(n):
        t = y[k] - c
        s2 = total + t
        c = (s2 - total) - t
        total = s2
    same_bits(f"compensated_sums[{b}].kahan", o["kahan"], total)
    same_bits(f"compensated_sums[{b}].comp", o["comp"], c)
    same_bits(f"compensated_sums[{b}].assoc", o["assoc"], (x + F32(0.33333334)) + F32(0.000000013))
    # the error terms are not all 0 (the rewrite F40 made them so)
    if not (two_sum_err(x, y) != 0).any() or not (c != 0).any():
        failures.append(f"compensated_sums[{b}]: inputs with no rounding error test nothing")


@case
def compensated_sums64(b):
    if b in REASSOCIATES: return
    n = 64
    x = np.concatenate([np.ones(32), rng.uniform(-1, 1, 32)])
    y = rng.uniform(-1, 1, n) * 1e-16
    o, err = run("r12_compensated_sums.sarek", "compensated_sums64", b, n, (), {"x": x, "y": y})
    if err: return failures.append(f"compensated_sums64[{b}]: {err}")
    same_bits(f"compensated_sums64[{b}].err", o["err"], two_sum_err(x, y))
    same_bits(f"compensated_sums64[{b}].quick", o["quick"], y - ((x + y) - x))


def fma32(a, b, c):
    """float32 fma rounded once (ties to even): the product of two float32 is exact in
    float64, the sum is made exact with fractions."""
    from fractions import Fraction
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:
        return F32(0.0) if not (np.signbit(F32(a) * F32(b)) and np.signbit(c)) else F32(-0.0)
    near = F32(float(exact))
    cands = [near, np.nextafter(near, F32(np.inf)), np.nextafter(near, F32(-np.inf))]
    return min(cands, key=lambda x: (abs(Fraction(float(x)) - exact), int(F32(x).view(np.uint32)) & 1))


class Df64Model:
    """Upstream's Sarek_df64 op for op (its Host module's mirror of the device code), every
    float32 operation rounded, `fma` rounded once."""
    def two_sum(self, a, b):
        s = a + b; bb = s - a
        return (s, (a - (s - bb)) + (b - bb))
    def quick_two_sum(self, a, b):
        s = a + b
        return (s, b - (s - a))
    def two_prod(self, a, b):
        p = fma32(a, b, F32(0.0))
        return (p, fma32(a, b, F32(0.0) - p))
    def neg(self, a): return (F32(0.0) - a[0], F32(0.0) - a[1])
    def add(self, a, b):
        s = self.two_sum(a[0], b[0]); t = self.two_sum(a[1], b[1])
        r = self.quick_two_sum(s[0], s[1] + t[0])
        return self.quick_two_sum(r[0], r[1] + t[1])
    def sub(self, a, b): return self.add(a, self.neg(b))
    def add_f32(self, a, b):
        s = self.two_sum(a[0], b)
        return self.quick_two_sum(s[0], s[1] + a[1])
    def mul(self, a, b):
        p = self.two_prod(a[0], b[0])
        return self.quick_two_sum(p[0], fma32(a[0], b[1], fma32(a[1], b[0], p[1])))
    def mul_f32(self, a, b):
        p = self.two_prod(a[0], b)
        return self.quick_two_sum(p[0], fma32(a[1], b, p[1]))
    def div(self, a, b):
        q1 = a[0] / b[0]; r1 = self.sub(a, self.mul_f32(b, q1))
        q2 = r1[0] / b[0]; r2 = self.sub(r1, self.mul_f32(b, q2))
        q3 = r2[0] / b[0]
        return self.add_f32(self.quick_two_sum(q1, q2), q3)
    def sqrt(self, a):
        if a[0] <= 0: return (F32(0.0), F32(0.0))
        y = F32(np.sqrt(a[0])); s = self.two_prod(y, y)
        e = a[0] - s[0] - s[1] + a[1]
        return self.quick_two_sum(y, e / (y + y))
    def abs(self, a): return self.neg(a) if a[0] < 0 else a


@case
def upstream_df64(b):
    # test_df64.ml's elementwise test: log-uniform operands (decimal exponents -8..8 and
    # -4..4) split into hi + lo as its Host.encode does.
    n = 256
    def logu(emin, emax):
        e = rng.uniform(emin, emax, n); m = rng.uniform(1, 10, n)
        return np.where(rng.integers(0, 2, n) == 1, 1.0, -1.0) * m * 10.0 ** e
    xa, xb = logu(-8, 8), logu(-4, 4)
    def encode(x):
        hi = x.astype(F32)
        return np.array(list(zip(hi, (x - hi).astype(F32))), [("hi", F32), ("lo", F32)])
    a, bv = encode(xa), encode(xb)
    o, err = run("../upstream/modules/df64.sarek", "ops_kernel", b, n, [f"n={n}"], {"a": a, "b": bv},
                 modules=["../upstream/modules/sarek_df64.sarek"])
    if err: return failures.append(f"upstream_df64[{b}]: {err}")
    m = Df64Model()
    with np.errstate(all="ignore"):
        pairs = [((a["hi"][i], a["lo"][i]), (bv["hi"][i], bv["lo"][i])) for i in range(n)]
        want = {"add_out": [m.add(x, y) for x, y in pairs], "sub_out": [m.sub(x, y) for x, y in pairs],
                "mul_out": [m.mul(x, y) for x, y in pairs], "div_out": [m.div(x, y) for x, y in pairs],
                "sqrt_out": [m.sqrt(m.abs(x)) for x, _ in pairs]}
    dec = lambda v: v["hi"].astype(np.float64) + v["lo"].astype(np.float64)
    ref = {"add_out": dec(a) + dec(bv), "sub_out": dec(a) - dec(bv), "mul_out": dec(a) * dec(bv),
           "div_out": dec(a) / dec(bv), "sqrt_out": np.sqrt(np.abs(dec(a)))}
    # upstream's contract: 2^-47 relative for add/sub, 2^-46 for mul/div/sqrt
    tol = {"add_out": 2.0**-47, "sub_out": 2.0**-47, "mul_out": 2.0**-46, "div_out": 2.0**-46,
           "sqrt_out": 2.0**-46}
    for name, w in want.items():
        if b in REASSOCIATES or (b in FMA_UNFUSED and name not in ("add_out", "sub_out")):
            continue
        got = o[name]
        same_bits(f"upstream_df64[{b}].{name}.hi", got["hi"], np.array([p[0] for p in w], F32))
        same_bits(f"upstream_df64[{b}].{name}.lo", got["lo"], np.array([p[1] for p in w], F32))
        check(f"upstream_df64[{b}].{name} contract", np.abs(dec(got) - ref[name]) / np.abs(ref[name]),
              np.zeros(n), atol=tol[name])
    check(f"upstream_df64[{b}].lt_out", o["lt_out"], (dec(a) < dec(bv)).astype(np.int32))
    check(f"upstream_df64[{b}].conv_out", o["conv_out"], np.arange(n, dtype=F32))
    # f64_poly_kernel: acc <- acc * x + x, `iters` times, in float64 (no contraction)
    x = rng.uniform(0.5, 0.501, 64)
    o, err = run("../upstream/modules/df64.sarek", "f64_poly_kernel", b, 64, ["n=64", "iters=16"], {"x": x},
                 modules=["../upstream/modules/sarek_df64.sarek"])
    if err: return failures.append(f"upstream_df64 f64_poly[{b}]: {err}")
    acc = np.zeros(64)
    for _ in range(16):
        acc = acc * x + x
    same_bits(f"upstream_df64[{b}].f64_poly", o["out"], acc)


@case
def upstream_real64(b):
    # test_real64.ml: one algorithm at float64 (IEEE, bit for bit) and over double-floats
    # (op for op as Df64Model, and upstream's contract), on its log-uniform operands.
    n = 128
    def logu(emin, emax):
        e = rng.uniform(emin, emax, n); m = rng.uniform(1, 10, n)
        return np.where(rng.integers(0, 2, n) == 1, 1.0, -1.0) * m * 10.0 ** e
    xa, xb = logu(-6, 6), logu(-3, 3)
    xc = np.abs(xa)
    lib = ["../upstream/modules/sarek_df64.sarek"]
    o, err = run("../upstream/modules/real64.sarek", "f64_ops_kernel", b, n, [f"nn={n}"],
                 {"a": xa, "b": xb, "c": xc}, modules=lib)
    if err: failures.append(f"upstream_real64 f64[{b}]: {err}")
    else:
        for name, want in [("add_o", xa + xb), ("sub_o", xa - xb), ("mul_o", xa * xb),
                           ("div_o", xa / xb), ("sqrt_o", np.sqrt(xc))]:
            same_bits(f"upstream_real64[{b}].f64.{name}", o[name], want)
    def encode(x):
        hi = x.astype(F32)
        return np.array(list(zip(hi, (x - hi).astype(F32))), [("hi", F32), ("lo", F32)])
    a, bv, c = encode(xa), encode(xb), encode(xc)
    o, err = run("../upstream/modules/real64.sarek", "df64_ops_kernel", b, n, [f"nn={n}"],
                 {"a": a, "b": bv, "c": c}, modules=lib)
    if err: return failures.append(f"upstream_real64 df64[{b}]: {err}")
    m = Df64Model()
    pair = lambda v, i: (v["hi"][i], v["lo"][i])
    with np.errstate(all="ignore"):
        want = {"add_o": [m.add(pair(a, i), pair(bv, i)) for i in range(n)],
                "sub_o": [m.sub(pair(a, i), pair(bv, i)) for i in range(n)],
                "mul_o": [m.mul(pair(a, i), pair(bv, i)) for i in range(n)],
                "div_o": [m.div(pair(a, i), pair(bv, i)) for i in range(n)],
                "sqrt_o": [m.sqrt(pair(c, i)) for i in range(n)]}
    dec = lambda v: v["hi"].astype(np.float64) + v["lo"].astype(np.float64)
    ref = {"add_o": dec(a) + dec(bv), "sub_o": dec(a) - dec(bv), "mul_o": dec(a) * dec(bv),
           "div_o": dec(a) / dec(bv), "sqrt_o": np.sqrt(dec(c))}
    for name, w in want.items():
        if b in REASSOCIATES or (b in FMA_UNFUSED and name not in ("add_o", "sub_o")):
            continue
        got = o[name]
        same_bits(f"upstream_real64[{b}].df64.{name}.hi", got["hi"], np.array([p[0] for p in w], F32))
        same_bits(f"upstream_real64[{b}].df64.{name}.lo", got["lo"], np.array([p[1] for p in w], F32))
        tol = 2.0**-47 if name in ("add_o", "sub_o") else 2.0**-46
        check(f"upstream_real64[{b}].df64.{name} contract",
              np.abs(dec(got) - ref[name]) / np.abs(ref[name]), np.zeros(n), atol=tol)


@case
def upstream_spoc_scan(b):
    # SPOC's test_scan.ml: an inclusive prefix sum of one block of 256 (n = 200: the rest
    # of the block scans zeros and writes nothing); wrapping int32 sums.
    n = 200
    x = rng.integers(-2**31, 2**31 - 1, 256, dtype=np.int64).astype(np.int32)
    o, err = run("../upstream/spoc_samples.sarek", "inclusive_scan_kernel", b, 256, [f"n={n}"],
                 {"input": x, "output": np.full(256, 9, np.int32)}, ["--grid", "1", "--block", "256"])
    if err: return failures.append(f"upstream_spoc_scan[{b}]: {err}")
    want = np.full(256, 9, np.int32)
    want[:n] = wrap32(np.cumsum(x[:n].astype(np.int64)))
    check(f"upstream_spoc_scan[{b}]", o["output"], want)


@case
def upstream_spoc_recursion(b):
    # SPOC's test_bounded_recursion.ml, values by hand: 10! = 3628800 (upstream's), 13! =
    # 6227020800 wraps to 6227020800 - 2^32 = 1932053504; 2^10 = 1024 (upstream's), 3^20 =
    # 3486784401 wraps to -808182895; gcd 48 18 = 6 (upstream's), gcd 1071 462 = 21.
    cases = [("factorial_kernel", ["n=10"], 3628800), ("factorial_kernel", ["n=13"], 1932053504),
             ("power_kernel", ["base=2", "exp=10"], 1024),
             ("power_kernel", ["base=3", "exp=20"], -808182895),
             ("gcd_kernel", ["a=48", "b=18"], 6), ("gcd_kernel", ["a=1071", "b=462"], 21)]
    for kernel, args, want in cases:
        o, err = run("../upstream/spoc_samples.sarek", kernel, b, 1, args, None, ["--grid", "1", "--block", "1"])
        if err: failures.append(f"upstream_spoc_recursion {kernel}[{b}]: {err}"); continue
        check(f"upstream_spoc_recursion {kernel} {args}[{b}]", o["output"], np.array([want], np.int32))


@case
def upstream_spoc_supersteps(b):
    # SPOC's test_superstep.ml, read from its kernels: a copy through the shared tile, + 1.0
    # in a second superstep, only thread 0 writing element 0, block 0 storing 0.0, and
    # tile1 + tile2 = 2 x + 1 (float32, each sum rounded once).
    n = 256
    x = rng.uniform(-100, 100, n).astype(F32)
    cases = [("kernel_shared_basic", 64, x), ("kernel_shared_sized", 64, x),
             ("kernel_superstep_basic", 64, x), ("kernel_superstep_chain", 64, x + F32(1.0)),
             # one block's worth is compared: thread 0 of every block stores `output.(0)`
             ("kernel_superstep_divergent", 64, np.concatenate([x[:1], np.full(n - 1, 5.0, F32)])),
             ("kernel_superstep_uniform_condition", 64, np.concatenate([np.zeros(64, F32), x[64:]])),
             ("kernel_multi_shared", 32, x + (x + F32(1.0)))]
    for kernel, block, want in cases:
        grid = ["--grid", "1"] if kernel == "kernel_superstep_divergent" else []
        o, err = run("../upstream/spoc_samples.sarek", kernel, b, n, (),
                     {"input": x, "output": np.full(n, 5.0, F32)}, ["--block", str(block)] + grid)
        if err: failures.append(f"upstream_spoc_supersteps {kernel}[{b}]: {err}"); continue
        check(f"upstream_spoc_supersteps {kernel}[{b}]", o["output"], want)


@case
def upstream_spoc_polymorphism(b):
    # SPOC's test_polymorphism.ml: x + 1, x + x (wrapping int32), identity at int32 and float32.
    n = 1024
    x = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    f = rng.uniform(-1e6, 1e6, n).astype(F32)
    for kernel, want in [("basic_kernel", wrap32(x.astype(np.int64) + 1)),
                         ("times_two_kernel", wrap32(2 * x.astype(np.int64)))]:
        o, err = run("../upstream/spoc_samples.sarek", kernel, b, n, (), {"src": x})
        if err: failures.append(f"upstream_spoc_polymorphism {kernel}[{b}]: {err}"); continue
        check(f"upstream_spoc_polymorphism {kernel}[{b}]", o["dst"], want)
    o, err = run("../upstream/spoc_samples.sarek", "identity_kernel", b, n, (), {"src_i": x, "src_f": f})
    if err: return failures.append(f"upstream_spoc_polymorphism identity[{b}]: {err}")
    check(f"upstream_spoc_polymorphism identity_i[{b}]", o["dst_i"], x)
    same_bits(f"upstream_spoc_polymorphism identity_f[{b}]", o["dst_f"], f)


@case
def upstream_spoc_bitwise(b):
    # SPOC's test_bitwise_ops.ml on random int32 (negatives included): land/lor/lxor, shifts
    # by 0..31 (lsr zero-filling), popcount by a lsr loop, binary to Gray code and back.
    n = 1000
    u32 = lambda v: v.astype(np.int64) & 0xFFFFFFFF
    x = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    y = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    o, err = run("../upstream/spoc_samples.sarek", "bitwise_basic_kernel", b, n, [f"n={n}"], {"a": x, "b": y})
    if err: failures.append(f"upstream_spoc_bitwise basic[{b}]: {err}")
    else:
        for name, want in [("and_out", x & y), ("or_out", x | y), ("xor_out", x ^ y)]:
            check(f"upstream_spoc_bitwise {name}[{b}]", o[name], want)
    s = (np.arange(n) % 32).astype(np.int32)
    o, err = run("../upstream/spoc_samples.sarek", "shift_kernel", b, n, [f"n={n}"], {"input": x, "shift_amt": s})
    if err: failures.append(f"upstream_spoc_bitwise shift[{b}]: {err}")
    else:
        check(f"upstream_spoc_bitwise left[{b}]", o["left_out"], wrap32((u32(x) << s) & 0xFFFFFFFF))
        check(f"upstream_spoc_bitwise right[{b}]", o["right_out"], wrap32(u32(x) >> s))
    o, err = run("../upstream/spoc_samples.sarek", "popcount_kernel", b, n, [f"n={n}"], {"input": x})
    if err: failures.append(f"upstream_spoc_bitwise popcount[{b}]: {err}")
    else:
        check(f"upstream_spoc_bitwise popcount[{b}]", o["output"],
              np.array([bin(int(v)).count("1") for v in u32(x)], np.int32))
    o, err = run("../upstream/spoc_samples.sarek", "gray_code_kernel", b, n, [f"n={n}"], {"input": x})
    if err: return failures.append(f"upstream_spoc_bitwise gray[{b}]: {err}")
    gray = u32(x) ^ (u32(x) >> 1)
    check(f"upstream_spoc_bitwise to_gray[{b}]", o["to_gray"], wrap32(gray))
    check(f"upstream_spoc_bitwise from_gray[{b}]", o["from_gray"], x)  # Gray decoding inverts


@case
def upstream_spoc_inline(b):
    # SPOC's test_inline_pragma.ml: upstream's values pow2 5 = 32, fib 0 1 5 7 = 0 1 5 13, and
    # by hand pow2 6 = 64; pow2 7 and fib 8 recurse past the 6 inlined levels: a located error.
    for kernel, n, want in [("pow2_kernel", 5, 32), ("pow2_kernel", 6, 64), ("fib_kernel", 0, 0),
                            ("fib_kernel", 1, 1), ("fib_kernel", 5, 5), ("fib_kernel", 7, 13)]:
        o, err = run("../upstream/spoc_samples.sarek", kernel, b, 1, [f"n={n}"], None, ["--grid", "1", "--block", "1"])
        if err: failures.append(f"upstream_spoc_inline {kernel} {n}[{b}]: {err}"); continue
        check(f"upstream_spoc_inline {kernel} {n}[{b}]", o["output"], np.array([want], np.int32))
    for kernel, n in [("pow2_kernel", 7), ("fib_kernel", 8)]:
        o, err = run("../upstream/spoc_samples.sarek", kernel, b, 1, [f"n={n}"], None, ["--grid", "1", "--block", "1"])
        if not err or "recursed deeper than the 6 levels" not in err or "spoc_samples.sarek:" not in err:
            failures.append(f"upstream_spoc_inline {kernel} {n}[{b}]: expected the located depth error, got {err!r}")


@case
def upstream_spoc_stencils(b):
    # SPOC's test_stencil.ml and test_convolution.ml, every float32 operation rounded as
    # written; 1000 elements launched as 1024 threads (the guards), elements they skip keep 7.
    n = 1000
    x = rng.uniform(-10, 10, n).astype(F32)
    o, err = run("../upstream/spoc_samples.sarek", "stencil_1d_kernel", b, n, [f"n={n}"],
                 {"input": x, "output": np.full(n, 7.0, F32)})
    if err: failures.append(f"upstream_spoc_stencils stencil[{b}]: {err}")
    else:
        want = np.full(n, 7.0, F32)
        want[1:-1] = (x[:-2] + x[1:-1] + x[2:]) / F32(3.0)
        same_bits(f"upstream_spoc_stencils stencil[{b}]", o["output"], want)
    o, err = run("../upstream/spoc_samples.sarek", "conv1d_3point_kernel", b, n, [f"n={n}"],
                 {"input": x, "output": np.full(n, 7.0, F32)})
    if err: return failures.append(f"upstream_spoc_stencils conv[{b}]: {err}")
    want = x.copy()
    want[1:-1] = (F32(0.25) * x[:-2]) + (F32(0.5) * x[1:-1]) + (F32(0.25) * x[2:])
    same_bits(f"upstream_spoc_stencils conv[{b}]", o["output"], want)


@case
def upstream_spoc_histogram(b):
    # SPOC's test_histogram.ml: 5000 values in [0, 256) (as upstream's Random.int bins), 256
    # bins; the strided kernel runs 4 blocks of 256 over all of them.
    n, bins = 5000, 256
    x = rng.integers(0, bins, n).astype(np.int32)
    want = np.bincount(x, minlength=bins).astype(np.int32)
    for kernel, grid in [("histogram_kernel", (n + 255) // 256), ("histogram_strided_kernel", 4)]:
        o, err = run("../upstream/spoc_samples.sarek", kernel, b, n, [f"n={n}", f"num_bins={bins}"],
                     {"input": x, "histogram": np.zeros(bins, np.int32)},
                     ["--grid", str(grid), "--block", "256", "--len", f"histogram={bins}"])
        if err: failures.append(f"upstream_spoc_histogram {kernel}[{b}]: {err}"); continue
        check(f"upstream_spoc_histogram {kernel}[{b}]", o["histogram"], want)


@case
def upstream_spoc_mandelbrot(b):
    # SPOC's Mandelbrot_ppx.ml: every float32 operation rounded as written; threads past the
    # 40 x 40 image (a 48 x 48 launch) write nothing.
    w = h = 40; max_iter = 200; sx, sy = -8, -4; zoom = F32(1.5)
    o, err = run("../upstream/spoc_samples.sarek", "make_mandelbrot", b, w * h,
                 [f"width={w}", f"height={h}", f"max_iter={max_iter}", f"shiftx={sx}",
                  f"shifty={sy}", f"zoom={zoom}"], {"img": np.full(w * h, -7, np.int32)},
                 ["--grid", "3,3", "--block", "16,16"])
    if err: return failures.append(f"upstream_spoc_mandelbrot[{b}]: {err}")
    y, x = np.mgrid[0:h, 0:w]
    a = (F32(4.0) * ((x + sx).astype(F32) / F32(w)) / zoom) - F32(2.0)
    bb = (F32(4.0) * ((y + sy).astype(F32) / F32(h)) / zoom) - F32(2.0)
    cpt = np.zeros((h, w), np.int32); x1 = np.zeros((h, w), F32); y1 = np.zeros((h, w), F32)
    norm = np.zeros((h, w), F32)
    for _ in range(max_iter):
        live = norm <= F32(4.0)
        cpt = np.where(live, cpt + 1, cpt)
        x2 = (x1 * x1) - (y1 * y1) + a
        y2 = (F32(2.0) * x1 * y1) + bb
        x1 = np.where(live, x2, x1); y1 = np.where(live, y2, y1)
        norm = np.where(live, (x1 * x1) + (y1 * y1), norm)
    check(f"upstream_spoc_mandelbrot[{b}]", o["img"], cpt.reshape(-1))


@case
def late_float64_literals(b):
    # Each literal is the float64 nearest its text (Python's float), never float32 widened;
    # d.(5) = 0.1 + d.(5) * 0.0 with d.(5) = 0.0 given; 1e-320 is a float64 subnormal.
    o, err = run("r13_inference_divisions.sarek", "late_float64_literals", b, 12,
                 inputs={"d": np.zeros(12, np.float64)})
    if err: return failures.append(f"late_float64_literals[{b}]: {err}")
    want = [0.1, 16777217.0, 0.1, 0.1, 16777217.0, 0.1, 0.1, 0.1, 0.2, 1e-40,
            float(np.float32(0.1)), 1e-320]
    check(f"late_float64_literals[{b}]", o["d"], np.array(want, np.float64))


@case
def power_of_two_divisions(b):
    # Truncating division and a remainder with the dividend's sign (cdiv/cmod), wrapped to the
    # type: min_int / min_int = 1, 2^30 * -2 / 2^30; int64 min / int64 min = 1.
    x = np.array([-2**31, -9, -8, -7, -1, 0, 1, 7, 8, 9, 2**31 - 1, -2**30], np.int64)
    l = np.array([-2**63, -17, -16, -1, 0, 1, 15, 17, 2**63 - 1, -2**32 - 1, 2**32 + 1, -2**32],
                 dtype=object)
    xs = np.zeros(96, np.int32); xs[:12] = x
    ls = np.zeros(96, np.int64); ls[:12] = np.array([int(v) for v in l], np.int64)
    o, err = run("r13_inference_divisions.sarek", "power_of_two_divisions", b, 96,
                 inputs={"x": xs, "l": ls, "o": np.zeros(96, np.int32), "q": np.zeros(96, np.int64)})
    if err: return failures.append(f"power_of_two_divisions[{b}]: {err}")
    def div(a, d):
        q = abs(a) // abs(d)
        return q if (a < 0) == (d < 0) else -q
    def rem(a, d):
        return a - div(a, d) * d
    def wrap(v, bits):
        return (v + 2**(bits - 1)) % 2**bits - 2**(bits - 1)
    want_o = []
    for v in x.tolist():
        want_o += [div(v, 4), rem(v, 4), div(v, -8), rem(v, -8), div(v, -2**31),
                   rem(v, -2**31), div(v, 2**30), rem(v, -1)]
    want_q = []
    for w in [int(v) for v in l]:
        want_q += [div(w, 16), rem(w, 16), div(w, -2**63), rem(w, 2**32)]
    check(f"power_of_two_divisions[{b}].o", o["o"],
          np.array([wrap(v, 32) for v in want_o], np.int64).astype(np.int32))
    check(f"power_of_two_divisions[{b}].q", o["q"],
          np.array([wrap(v, 64) for v in want_q] + [0] * 48, dtype=object).astype(np.int64))


@case
def upstream_float64_mandelbrot(b):
    # test_float64_kernel_arith.ml: upstream's OCaml binary64 reference, as NumPy float64
    # scalars (every operation rounded as written), compared bit for bit.
    n = 64
    cx = np.array([(3.5 * i / n) - 2.5 for i in range(n)])
    cy = np.array([(2.0 * (i % 8) / 8.0) - 1.0 for i in range(n)])
    o, err = run("../upstream/e2e_float64.sarek", "f64_mandelbrot_kernel", b, n, ["n=64"],
                 {"cx": cx, "cy": cy})
    if err: return failures.append(f"upstream_float64_mandelbrot[{b}]: {err}")
    iters, mags = [], []
    for c_re, c_im in zip(cx.tolist(), cy.tolist()):
        x = y = 0.0; it = 0
        while (x * x) + (y * y) <= 4.0 and it < 1000:
            xt = (x * x) - (y * y) + c_re
            y = (2.0 * x * y) + c_im
            x = xt; it += 1
        iters.append(it); mags.append(np.sqrt((x * x) + (y * y)))
    check(f"upstream_float64_mandelbrot[{b}].iter", o["iter_out"], np.array(iters, np.int32))
    check(f"upstream_float64_mandelbrot[{b}].mag", o["mag_out"], np.array(mags, np.float64))


# A filter naming no case is a typo, not a pass.
for c in ONLY:
    if c not in ran:
        failures.append(f"SAREK_ORACLE_CASES names no case `{c}`")

# A backend that refuses a kernel with a located error (float64 on PTX, say) is not wrong.
refusals = [f for f in failures if ("does not support" in f or "has no 64-bit" in f) and "\u2502" in f]
failures = [f for f in failures if f not in refusals]
for f in refusals:
    print("REFUSED", f.splitlines()[0])
for f in failures:
    print("FAIL", f)
print(f"{len(failures)} failures, {len(refusals)} located refusals")
sys.exit(1 if failures else 0)
