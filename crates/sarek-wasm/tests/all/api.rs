//! The replies of the compiler module, through the same byte protocol the page uses
//! (`sarek_wasm::dispatch`): compile output equals the compiler's own, diagnostics render as
//! the CLI does and carry the place the editor marks, a launch plan round-trips through
//! read-back, a trap comes back located, and malformed requests are answers, not traps.

use crate::support;

use sarek_compiler::{SourceMap, Target, TargetOptions};
use sarek_wasm::{dispatch, encode};
use support::Value;

fn call(op: &str, fields: &[&str]) -> (Value, Vec<u8>) {
    let bytes: Vec<&[u8]> = fields.iter().map(|f| f.as_bytes()).collect();
    let reply = dispatch(op, &encode(&bytes));
    (support::parse(&reply.json), reply.binary)
}

fn corpus(name: &str) -> String {
    std::fs::read_to_string(support::corpus().join(name)).unwrap()
}

/// What `sarek compile FILE --target T` prints (crates/sarek/src/cli/compile.rs).
fn cli_compile(text: &str, target: Target) -> Result<String, String> {
    let mut sources = SourceMap::new();
    let file = sources.add("k.sarek", text);
    let program = sarek_compiler::check(&sources, file).map_err(|d| format!("{d:?}"))?;
    let mut out = String::new();
    let n = program.kernels.len();
    for k in &program.kernels {
        let ir = sarek_compiler::lower_kernel(&program, &k.name).unwrap();
        let g = sarek_compiler::generate(&ir, target, &TargetOptions::default())
            .map_err(|d| format!("{d:?}"))?;
        if n > 1 {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("// ==== kernel {} ====\n", k.name));
        }
        out.push_str(&g.source);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

#[test]
fn compile_prints_what_the_cli_prints_for_every_target() {
    for (name, text) in support::corpus_files() {
        for target in Target::ALL {
            let (r, _) = call("compile", &["k.sarek", &text, target.name(), "1,1,1"]);
            match cli_compile(&text, target) {
                Ok(code) => {
                    assert!(r.get("ok").bool(), "{name} {target}: {r:?}");
                    assert_eq!(r.get("code").str(), code, "{name} {target}");
                    assert_eq!(r.get("diagnostics").arr().len(), 0);
                }
                Err(_) => {
                    assert!(!r.get("ok").bool(), "{name} {target}");
                    assert_eq!(r.get("failure").str(), "refused", "{name} {target}");
                    let first = &r.get("diagnostics").arr()[0];
                    assert!(first.get("rendered").str().contains(target.display_name()));
                }
            }
        }
    }
}

#[test]
fn the_abi_descriptor_comes_with_the_code() {
    let (r, _) = call(
        "compile",
        &["saxpy.sarek", &corpus("saxpy.sarek"), "wgsl", "0,0,0"],
    );
    let k = &r.get("kernels").arr()[0];
    assert_eq!(k.get("name").str(), "saxpy");
    let abi = k.get("abi");
    assert_eq!(abi.get("entryPoint").str(), "saxpy");
    assert!(!abi.get("blockSizeInSource").bool());
    let params = abi.get("params").arr();
    let names: Vec<&str> = params.iter().map(|p| p.get("name").str()).collect();
    assert_eq!(names, ["x", "y", "a", "n"]);
    let x = &params[0];
    assert_eq!(x.get("kind").str(), "vector");
    assert_eq!(x.get("buffer").get("binding").num(), 1.0);
    assert_eq!(x.get("layout").get("stride").num(), 4.0);
    assert!(x.get("length").has("uniformOffset"));
    assert_eq!(params[2].get("slot").get("uniformOffset").num(), 0.0);
    assert_eq!(abi.get("uniformBinding").get("binding").num(), 0.0);
}

#[test]
fn diagnostics_render_as_the_goldens_and_locate_the_editor_markers() {
    let dir = support::corpus().join("../errors");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "sarek") {
            continue;
        }
        let name = format!(
            "tests/errors/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let expected = std::fs::read_to_string(path.with_extension("expected")).unwrap();
        let (r, _) = call("compile", &[&name, &text, "wgsl", "0,0,0"]);
        assert!(!r.get("ok").bool(), "{name}");
        assert_eq!(r.get("failure").str(), "source");
        assert_eq!(r.get("rendered").str(), expected, "{name}");
        for d in r.get("diagnostics").arr() {
            // `┌─ FILE:LINE:COL` of the rendering is where the marker goes.
            let rendered = d.get("rendered").str();
            let Some(at) = rendered.lines().find_map(|l| l.trim().strip_prefix("┌─ ")) else {
                assert_eq!(*d.get("at"), Value::Null, "{name}: unlocated");
                continue;
            };
            let mut parts = at.rsplitn(3, ':');
            let col: f64 = parts.next().unwrap().parse().unwrap();
            let line: f64 = parts.next().unwrap().parse().unwrap();
            let place = d.get("at");
            assert_eq!(
                (place.get("line").num(), place.get("column").num()),
                (line, col),
                "{name}"
            );
            assert!(place.get("endLine").num() >= line);
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} located diagnostics");
}

fn run_fields<'a>(
    file: &'a str,
    text: &'a str,
    kernel: &'a str,
    size: &'a str,
    args: &'a str,
) -> Vec<&'a str> {
    vec![
        file,
        text,
        kernel,
        size,
        "",
        args,
        "",
        "",
        "",
        "0,0,0",
        "WebGPU;8;256;256,256,64;65535",
    ]
}

#[test]
fn a_refusal_merges_each_reason_as_the_runtime_does() {
    let text = corpus("float64_arith.sarek");
    let (r, _) = call(
        "prepare",
        &run_fields(
            "float64_arith.sarek",
            &text,
            "float64_arith",
            "64",
            "n=64\nscale=0.5",
        ),
    );
    assert!(!r.get("ok").bool());
    assert_eq!(r.get("failure").str(), "refused");
    // The runtime's merge of the same generator diagnostics, rendered.
    let mut sources = SourceMap::new();
    let file = sources.add("float64_arith.sarek", text.as_str());
    let program = sarek_compiler::check(&sources, file).unwrap();
    let ir = sarek_compiler::lower_kernel(&program, "float64_arith").unwrap();
    let options = TargetOptions {
        subgroups: false,
        float64: false,
        int64_atomics: false,
        ..TargetOptions::default()
    };
    // As the runtime's wgpu backend refuses: WGSL's support refined by the device (named).
    let support = sarek_compiler::back::support::wgsl(&options).on_device("WebGPU");
    let diags = sarek_compiler::ir::analysis::check(&ir, &support).unwrap_err();
    // The analysis words one error per reason (float64 here), its uses as places.
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(diags.iter().all(|d| !d.secondary.is_empty()), "{diags:?}");
    let sarek_runtime::RuntimeError::Refused { diagnostics, .. } =
        sarek_runtime::RuntimeError::refused(Target::Wgsl, "float64_arith", diags)
    else {
        unreachable!()
    };
    let expected = sarek_compiler::diag::render_all(&diagnostics, &sources, false);
    assert_eq!(r.get("rendered").str(), expected);
    assert!(expected.contains("WGSL"), "{expected}");
    assert_eq!(r.get("diagnostics").arr().len(), diagnostics.len());
}

/// Read back the buffers of a plan unchanged: the outputs are then the inputs.
#[test]
fn a_plan_round_trips_through_read_back() {
    let text = corpus("records.sarek");
    let fields = run_fields("records.sarek", &text, "normalize_points", "100", "n=100");
    let (plan, binary) = call("prepare", &fields);
    assert!(plan.get("ok").bool(), "{plan:?}");
    assert_eq!(plan.get("grid").arr().len(), 3);
    assert_eq!(plan.get("block").arr()[0].num(), 100.0);
    let uniform = plan.get("uniform");
    assert_eq!(uniform.get("size").num() as usize % 16, 0);
    let mut readback = Vec::new();
    for b in plan.get("buffers").arr() {
        let (at, size) = (b.get("offset").num() as usize, b.get("size").num() as usize);
        assert_eq!(size % 4, 0);
        readback.extend(&binary[at..at + size]);
    }
    let mut finish_fields: Vec<&[u8]> = fields.iter().map(|f| f.as_bytes()).collect();
    finish_fields.push(&readback);
    let done = dispatch("finish", &encode(&finish_fields));
    let out = support::parse(&done.json);
    assert!(out.get("ok").bool(), "{out:?}");
    let column = |v: &Value, bin: &[u8], key: &str| -> Vec<u8> {
        let c = v.arr().iter().find(|c| c.get("key").str() == key).unwrap();
        assert_eq!(c.get("length").num(), 100.0);
        let at = c.get("offset").num() as usize;
        bin[at..at + 400].to_vec()
    };
    // `pts` is a vector of records: one column per field, keyed `param.leaf`.
    for key in ["pts.x", "pts.y", "out.x", "window"] {
        assert_eq!(
            column(out.get("outputs"), &done.binary, key),
            column(plan.get("inputs"), &binary, key),
            "{key}"
        );
    }
    // The same inputs as the `inputs` request, which needs no device.
    let (inputs, ibin) = call("inputs", &fields[..7]);
    assert_eq!(
        column(inputs.get("inputs"), &ibin, "pts.y"),
        column(plan.get("inputs"), &binary, "pts.y")
    );
}

#[test]
fn a_trap_word_comes_back_as_a_located_fault() {
    let text =
        std::fs::read_to_string(support::corpus().join("../traps/inline_depth.sarek")).unwrap();
    let fields = run_fields("inline_depth.sarek", &text, "chain", "8", "m=9\nn=8");
    let (plan, binary) = call("prepare", &fields);
    assert!(plan.get("ok").bool(), "{plan:?}");
    let buffers = plan.get("buffers").arr();
    let trap = buffers
        .iter()
        .position(|b| *b.get("param") == Value::Null)
        .expect("a trap word");
    let mut readback = Vec::new();
    for (k, b) in buffers.iter().enumerate() {
        let (at, size) = (b.get("offset").num() as usize, b.get("size").num() as usize);
        if k == trap {
            readback.extend(1i32.to_le_bytes()); // the code of the kernel's first trap
        } else {
            readback.extend(&binary[at..at + size]);
        }
    }
    let mut f: Vec<&[u8]> = fields.iter().map(|f| f.as_bytes()).collect();
    f.push(&readback);
    let out = support::parse(&dispatch("finish", &encode(&f)).json);
    assert!(!out.get("ok").bool());
    assert_eq!(out.get("failure").str(), "fault");
    let rendered = out.get("rendered").str();
    assert!(rendered.contains("inline_depth.sarek:"), "{rendered}");
    assert!(
        rendered.contains("reported by the WebGPU device"),
        "{rendered}"
    );
    assert!(out.get("diagnostics").arr()[0].get("at").has("line"));
}

#[test]
fn launch_and_argument_errors_are_the_clis() {
    let text = corpus("saxpy.sarek");
    let ask = |kernel: &str, args: &str, block: &str| {
        let mut f = run_fields("saxpy.sarek", &text, kernel, "64", args);
        f[8] = block;
        call("prepare", &f).0
    };
    let r = ask("saxpi", "", "");
    assert_eq!(
        r.get("rendered").str(),
        "error: no kernel `saxpi` in saxpy.sarek; did you mean `saxpy`?\n"
    );
    let r = ask("saxpy", "a=2.0", "");
    assert_eq!(
        r.get("rendered").str(),
        "error: missing value for scalar parameter `n` of type int32 (give it as n=VALUE)\n"
    );
    let r = ask("saxpy", "a=2.0\nn=64", "512");
    assert!(
        r.get("rendered")
            .str()
            .contains("exceeds this WebGPU device's limits")
    );
    let r = ask("saxpy", "a=2.0\nn=64", "0");
    assert!(
        r.get("rendered")
            .str()
            .contains("--block: `0` is not X[,Y[,Z]] of positive integers")
    );
    let r = ask("saxpy", "a=2.0\nn", "");
    assert_eq!(r.get("rendered").str(), "error: `n` is not NAME=VALUE\n");
}

#[test]
fn more_vectors_than_the_device_binds_are_refused_located() {
    let text = "let%kernel many (a : int32 vector) (b : int32 vector) (c : int32 vector) =\n  \
                let i = global_thread_id in\n  a.(i) <- b.(i) + c.(i)\n";
    let mut f = run_fields("many.sarek", text, "many", "8", "");
    f[10] = "Tiny GPU;2;256;256,256,64;65535";
    let (r, _) = call("prepare", &f);
    assert_eq!(r.get("failure").str(), "refused");
    let rendered = r.get("rendered").str();
    assert!(
        rendered.contains("needs 3 storage buffers, the device `Tiny GPU` (WGSL) binds at most 2"),
        "{rendered}"
    );
    assert!(rendered.contains("many.sarek:1:"), "{rendered}");
}

#[test]
fn malformed_requests_are_answered() {
    let r = dispatch("compile", &[1, 0, 0]);
    assert!(r.json.contains("\"failure\":\"request\""));
    let r = dispatch("compile", &encode(&[b"f", b"let", b"wgsl"]));
    assert!(
        r.json.contains("field 3 (options) is missing"),
        "{}",
        r.json
    );
    let r = dispatch(
        "compile",
        &encode(&[b"f", &[0xff, 0xfe], b"wgsl", b"1,1,1"]),
    );
    assert!(r.json.contains("source is not UTF-8"));
    let r = dispatch("nope", &encode(&[]));
    assert!(r.json.contains("unknown operation"));
    let (r, _) = call("compile", &["f", "", "spirv", "1,1,1"]);
    assert!(
        r.get("rendered")
            .str()
            .starts_with("error: unknown target `spirv`")
    );
}

#[test]
fn the_c_abi_frees_what_it_allocates() {
    let request = encode(&[b"k.sarek", b"let%kernel k (v : int32 vector) = v.(0) <- 1"]);
    let ptr = sarek_wasm::sarek_alloc(request.len());
    // SAFETY: `ptr` holds `request.len()` bytes from `sarek_alloc`; the reply is read within
    // its length and freed once, with the length its header gives.
    unsafe {
        std::ptr::copy_nonoverlapping(request.as_ptr(), ptr, request.len());
        let reply = sarek_wasm::sarek_describe(ptr, request.len());
        sarek_wasm::sarek_free(ptr, request.len());
        let header = std::slice::from_raw_parts(reply, 8);
        let json_len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
        let bin_len = u32::from_le_bytes(header[4..].try_into().unwrap()) as usize;
        let json = std::str::from_utf8(std::slice::from_raw_parts(reply.add(8), json_len)).unwrap();
        let v = support::parse(json);
        assert!(v.get("ok").bool());
        assert_eq!(v.get("kernels").arr()[0].get("name").str(), "k");
        sarek_wasm::sarek_free(reply, 8 + json_len + bin_len);
    }
}

#[test]
fn typed_vectors_set_the_size_and_come_back() {
    let text = corpus("saxpy.sarek");
    let mut f = run_fields("saxpy.sarek", &text, "saxpy", "", "a=2\nn=3");
    f[6] = "x=1,2,3\ny=10 20 30";
    let (plan, binary) = call("prepare", &f);
    assert!(plan.get("ok").bool(), "{plan:?}");
    assert_eq!(
        plan.get("block").arr()[0].num(),
        3.0,
        "the size is the typed vectors' length"
    );
    let x = plan
        .get("inputs")
        .arr()
        .iter()
        .find(|c| c.get("key").str() == "x")
        .unwrap();
    assert_eq!(x.get("length").num(), 3.0);
    let at = x.get("offset").num() as usize;
    let xs: Vec<f32> = binary[at..at + 12]
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(xs, [1.0, 2.0, 3.0]);
    f[6] = "x=1,2,zz";
    let (r, _) = call("prepare", &f);
    assert_eq!(
        r.get("rendered").str(),
        "error: vector `x`, element 2: `zz` is not a float32\n"
    );
}
