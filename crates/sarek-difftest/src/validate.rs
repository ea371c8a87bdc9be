//! Each generator's output through its real validator, found as `scripts/test.sh` installs
//! them: naga for WGSL (in process), glslangValidator + spirv-val for GLSL, clang for OpenCL C
//! (`-fsyntax-only`, OpenCL C 1.2; PoCL itself builds it when the `opencl` backend runs),
//! NVRTC for CUDA C (`sm_90`, loaded at run time), ptxas for PTX (`SAREK_PTXAS`, `PATH`, or
//! the `nvidia-cuda-nvcc` wheel), clang++ with the project's Metal shim header for Metal.
//! A validator that is not installed makes its column `unavailable`, never a failure.

use crate::exec::Target;
use sarek_runtime::spirv::SharedSpirv;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// What one validator said.
#[derive(Clone, Debug)]
pub enum Verdict {
    Accepted,
    /// The tool rejected the source: its message.
    Rejected(String),
}

/// The validators found on this machine.
pub struct Validators {
    scratch: PathBuf,
    glslang: bool,
    clang: bool,
    clangxx: bool,
    nvrtc: Result<(), String>,
    ptxas: Option<PathBuf>,
    metal_shim: PathBuf,
    /// The GLSL validator's SPIR-V, kept for the `vulkan` backend of the same harness.
    shared_spirv: Arc<SharedSpirv>,
}

/// The targets with a validator, in column order.
pub const TARGETS: [Target; 6] = [
    Target::Wgsl,
    Target::Glsl,
    Target::OpenCl,
    Target::Cuda,
    Target::Ptx,
    Target::Metal,
];

/// The Metal shim header (`crates/sarek-compiler/tests/all/support/metal_shim.h`), compiled in
/// so the release binary carries it.
const METAL_SHIM: &str = include_str!("../../sarek-compiler/tests/all/support/metal_shim.h");

fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// ptxas: `$SAREK_PTXAS`, `PATH`, or the `nvidia` wheel of the first `python3`.
fn find_ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SAREK_PTXAS") {
        return Some(PathBuf::from(p));
    }
    if runs("ptxas") {
        return Some(PathBuf::from("ptxas"));
    }
    let out = Command::new("python3")
        .args(["-c", "import nvidia; print(list(nvidia.__path__)[0])"])
        .output()
        .ok()?;
    let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin/ptxas")))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.pop()
}

impl Validators {
    pub fn find() -> Validators {
        // One folder per instance: several harnesses may live in one process (the tests run
        // on threads of one binary), and each removes its own folder when dropped.
        let scratch = std::env::temp_dir().join(format!(
            "sarek-difftest-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::create_dir_all(scratch.join("include"));
        let metal_shim = scratch.join("metal_shim.h");
        let _ = std::fs::write(&metal_shim, METAL_SHIM);
        let _ = std::fs::write(
            scratch.join("include/metal_stdlib"),
            format!("#include \"{}\"\n", metal_shim.display()),
        );
        Validators {
            glslang: sarek_runtime::spirv::glslang_available()
                && sarek_runtime::spirv::spirv_val_available(),
            clang: runs("clang"),
            clangxx: runs("clang++"),
            nvrtc: crate::exec::load_nvrtc(),
            ptxas: find_ptxas(),
            scratch,
            metal_shim,
            shared_spirv: Arc::default(),
        }
    }

    /// Why `target` cannot be validated here, if it cannot.
    pub fn unavailable(&self, target: Target) -> Option<String> {
        match target {
            Target::Wgsl | Target::Ir => None,
            Target::Glsl => (!self.glslang).then(|| "glslangValidator or spirv-val missing".into()),
            Target::OpenCl => (!self.clang).then(|| "clang missing".into()),
            Target::Cuda => self.nvrtc.clone().err(),
            Target::Ptx => self.ptxas.is_none().then(|| "ptxas missing".into()),
            Target::Metal => (!self.clangxx).then(|| "clang++ missing".into()),
        }
    }

    pub fn check(&self, target: Target, source: &str) -> Verdict {
        let result = match target {
            Target::Wgsl => naga_validate(source),
            Target::Glsl => self.glsl(source),
            Target::OpenCl => self.clang_cl(source),
            Target::Cuda => crate::exec::nvrtc_compile(source, 90),
            Target::Ptx => self.ptxas(source),
            Target::Metal => self.metal(source),
            Target::Ir => Ok(()),
        };
        match result {
            Ok(()) => Verdict::Accepted,
            Err(m) => Verdict::Rejected(m),
        }
    }

    /// [`Validators::check`] of each source, in order. CUDA C, Metal and PTX are checked as
    /// one program holding every source (one NVRTC program, one clang++ process, one ptxas
    /// process: the fixed cost of each is about as large as a generated kernel's own);
    /// when that program is rejected, each source is checked alone, so a verdict is always
    /// the source's own.
    pub fn check_many(&self, target: Target, sources: &[&str]) -> Vec<Verdict> {
        // OpenCL C with subgroups is checked as OpenCL C 2.0, the rest as 1.2: one batch each.
        let group = |s: &str| target == Target::OpenCl && s.contains("sub_group_");
        let mut verdicts = vec![None; sources.len()];
        for g in [false, true] {
            let members: Vec<usize> = (0..sources.len())
                .filter(|&k| group(sources[k]) == g)
                .collect();
            let joined: Vec<&str> = members.iter().map(|&k| sources[k]).collect();
            if joined.len() > 1
                && self.unavailable(target).is_none()
                && let Some(program) = batch_program(target, &joined)
                && matches!(self.check(target, &program), Verdict::Accepted)
            {
                for k in members {
                    verdicts[k] = Some(Verdict::Accepted);
                }
            }
        }
        verdicts
            .into_iter()
            .zip(sources)
            .map(|(v, s)| v.unwrap_or_else(|| self.check(target, s)))
            .collect()
    }

    fn file(&self, ext: &str, source: &str) -> Result<PathBuf, String> {
        let path = self.scratch.join(format!("k.{ext}"));
        std::fs::write(&path, source).map_err(|e| format!("writing {}: {e}", path.display()))?;
        Ok(path)
    }

    fn clang_cl(&self, source: &str) -> Result<(), String> {
        let path = self.file("cl", source)?;
        let mut cmd = Command::new("clang");
        cmd.args([
            "-x",
            "cl",
            "-fsyntax-only",
            "-Xclang",
            "-finclude-default-header",
        ]);
        // Subgroup built-ins are declared by clang's header for OpenCL C 2.0 only.
        if source.contains("sub_group_") {
            cmd.args(["-cl-std=CL2.0", "-target", "spir64"]);
        } else {
            cmd.arg("-cl-std=CL1.2");
        }
        tool_result(cmd.arg(&path), "clang")
    }

    fn ptxas(&self, source: &str) -> Result<(), String> {
        let path = self.file("ptx", source)?;
        let ptxas = self.ptxas.as_ref().ok_or("ptxas missing")?;
        tool_result(
            Command::new(ptxas)
                .args(["-arch=sm_90", "-o"])
                .arg(self.scratch.join("k.cubin"))
                .arg(&path),
            "ptxas",
        )
    }

    fn metal(&self, source: &str) -> Result<(), String> {
        let path = self.file("metal", source)?;
        tool_result(
            Command::new("clang++")
                .args([
                    "-x",
                    "c++",
                    "-std=c++17",
                    "-fsyntax-only",
                    "-Wno-unknown-attributes",
                    "-include",
                ])
                .arg(&self.metal_shim)
                .arg("-I")
                .arg(self.scratch.join("include"))
                .arg(&path),
            "clang++ (Metal shim)",
        )
    }

    /// GLSL -> SPIR-V with glslang, then spirv-val. The words are kept for the `vulkan`
    /// backend, which builds the same source when the device needs no other GLSL.
    fn glsl(&self, source: &str) -> Result<(), String> {
        use sarek_runtime::spirv;
        let words = self
            .shared_spirv
            .compile_and_keep(source)
            .map_err(|e| e.to_string())?;
        spirv::validate(&words).map_err(|e| e.to_string())
    }

    pub fn shared_spirv(&self) -> &Arc<SharedSpirv> {
        &self.shared_spirv
    }

    pub fn scratch(&self) -> &Path {
        &self.scratch
    }
}

impl Drop for Validators {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

fn tool_result(cmd: &mut Command, tool: &str) -> Result<(), String> {
    match cmd.output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "{tool}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("{tool} could not run: {e}")),
    }
}

/// naga with every validation flag and the SUBGROUP capability (as the WGSL tests use).
pub fn naga_validate(src: &str) -> Result<(), String> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP)
        .validate(&module)
        .map(|_| ())
        .map_err(|e| e.emit_to_string(src))
}

/// The sources of `target` joined into one program its validator checks at once, where
/// the target has such a form and the sources fit it.
pub fn batch_program(target: Target, sources: &[&str]) -> Option<String> {
    match target {
        Target::Cuda => cuda_batch(sources),
        Target::Metal => metal_batch(sources),
        Target::Ptx => ptx_batch(sources),
        Target::OpenCl => opencl_batch(sources),
        _ => None,
    }
}

/// Several generated OpenCL C sources as one translation unit: the `opencl` backend's own
/// joining ([`sarek_runtime::opencl::batch::join`], each source's file-scope names renamed
/// `NAME_batch<j>`), so the validator checks the program PoCL builds.
pub fn opencl_batch(sources: &[&str]) -> Option<String> {
    sarek_runtime::opencl::batch::join(sources)
}

/// Several generated CUDA C sources as one translation unit: each in its own namespace,
/// its one `extern "C"` kernel renamed `<name>_batch<j>` (C linkage ignores namespaces).
/// `None` when a source has preprocessor definitions or includes (they cannot sit in a
/// namespace) or not exactly one kernel.
pub fn cuda_batch(sources: &[&str]) -> Option<String> {
    const ENTRY: &str = "__global__ void ";
    let mut program = String::new();
    for (j, source) in sources.iter().enumerate() {
        if source.matches(ENTRY).count() != 1
            || source.lines().any(|l| {
                l.trim_start().starts_with("#include") || l.trim_start().starts_with("#define")
            })
        {
            return None;
        }
        let at = source.find(ENTRY)? + ENTRY.len();
        let name_len = source[at..].find('(')?;
        let (head, tail) = source.split_at(at + name_len);
        let _ = writeln!(
            program,
            "namespace sarek_batch{j} {{\n{head}_batch{j}{tail}\n}}"
        );
    }
    Some(program)
}

/// Several generated Metal sources as one translation unit: the common `#include` and
/// `using namespace metal;` once, then each source in its own namespace. `None` when a
/// source has other preprocessor lines.
pub fn metal_batch(sources: &[&str]) -> Option<String> {
    const HOISTED: [&str; 2] = ["#include <metal_stdlib>", "using namespace metal;"];
    let mut program = HOISTED.join("\n");
    for (j, source) in sources.iter().enumerate() {
        let _ = writeln!(program, "\nnamespace sarek_batch{j} {{");
        for line in source.lines() {
            if HOISTED.contains(&line.trim()) {
                continue;
            }
            if line.trim_start().starts_with('#') {
                return None;
            }
            let _ = writeln!(program, "{line}");
        }
        program.push('}');
    }
    program.push('\n');
    Some(program)
}

/// Several generated PTX modules as one: the first module's `.version`, `.target` and
/// `.address_size`, then every module's body with its entry, its functions (outlined helpers,
/// software math routines) and its module-scope shared arrays (`sarek_shared_<n>`) suffixed
/// `_batch<j>`. `None` when a module declares anything else at module scope (a `.global` or
/// `.const` whose name could collide), has not exactly one entry, or its header differs from
/// the first one.
pub fn ptx_batch(sources: &[&str]) -> Option<String> {
    const HEADER: [&str; 3] = [".version", ".target", ".address_size"];
    let mut header: Option<Vec<&str>> = None;
    let mut program = String::new();
    for (j, source) in sources.iter().enumerate() {
        let own: Vec<&str> = source
            .lines()
            .filter(|l| HEADER.iter().any(|h| l.starts_with(h)))
            .collect();
        match &header {
            None => {
                for l in &own {
                    let _ = writeln!(program, "{l}");
                }
                header = Some(own);
            }
            Some(h) if *h == own => {}
            Some(_) => return None,
        }
        if source.matches(".entry ").count() != 1 {
            return None;
        }
        let functions: Vec<&str> = source.lines().filter_map(ptx_function_name).collect();
        for line in source.lines() {
            let t = line.trim_start();
            if HEADER.iter().any(|h| line.starts_with(h)) {
                continue;
            }
            if [".global", ".const", ".extern", ".weak"]
                .iter()
                .any(|d| t.starts_with(d) || t.starts_with(&format!(".visible {d}")))
            {
                return None;
            }
            let _ = writeln!(program, "{}", rename_ptx_line(line, j, &functions));
        }
    }
    Some(program)
}

/// The name a `.func` line defines or declares: the identifier after `.func` and its optional
/// parenthesised return parameter.
fn ptx_function_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix(".func")?.trim_start();
    let rest = match rest.strip_prefix('(') {
        Some(ret) => ret.split_once(')')?.1.trim_start(),
        None => rest,
    };
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `line` with the entry's name, every function of `functions` and every `sarek_shared_<n>`
/// suffixed `_batch<j>`.
fn rename_ptx_line(line: &str, j: usize, functions: &[&str]) -> String {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
    let bytes = line.as_bytes();
    let entry = line.find(".entry ").map(|at| at + ".entry ".len());
    let mut out = String::with_capacity(line.len() + 16);
    let mut i = 0;
    while i < bytes.len() {
        if ident(bytes[i]) && (i == 0 || !ident(bytes[i - 1])) {
            let end = (i..bytes.len())
                .find(|&e| !ident(bytes[e]))
                .unwrap_or(bytes.len());
            let word = &line[i..end];
            out.push_str(word);
            let shared = word
                .strip_prefix("sarek_shared_")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if shared || entry == Some(i) || functions.contains(&word) {
                let _ = write!(out, "_batch{j}");
            }
            i = end;
        } else {
            let next = (i + 1..=bytes.len())
                .find(|&e| line.is_char_boundary(e))
                .unwrap_or(bytes.len());
            out.push_str(&line[i..next]);
            i = next;
        }
    }
    out
}
