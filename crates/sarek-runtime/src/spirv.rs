//! The Vulkan backend's build step: GLSL -> SPIR-V through the `glslangValidator` command,
//! and `spirv-val` for the validators in tests.
//!
//! Every float addition and subtraction of the SPIR-V is decorated `NoContraction`
//! ([`forbid_float_rewrites`]): without it Mesa's compiler (lavapipe) applies algebra that
//! is wrong in floating point, `(a + b) - a` to `b`, which turns the error term of a
//! compensated sum (Kahan, two-sum, double-float arithmetic) into 0.
//!
//! A subprocess rather than the `shaderc` crate: shaderc builds glslang and SPIRV-Tools from
//! C++ sources (minutes of build, a C++ toolchain and CMake everywhere), while the tools are
//! one package (`glslang-tools`, `spirv-tools`) needed only where Vulkan runs. It lives here,
//! not in the compiler, so the compiler spawns nothing; it is not behind the `vulkan` feature
//! because it needs no GPU crate and the GLSL validators use it without a device.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The Vulkan version the SPIR-V targets (lavapipe and every current driver have 1.1).
pub const TARGET_ENV: &str = "vulkan1.1";

/// Why GLSL could not become SPIR-V.
#[derive(Debug, thiserror::Error)]
pub enum SpirvError {
    #[error("`{tool}` is not available: {reason}")]
    ToolMissing { tool: &'static str, reason: String },
    #[error("glslang rejected the generated GLSL:\n{0}")]
    Rejected(String),
    #[error("spirv-val rejected the SPIR-V:\n{0}")]
    Invalid(String),
    #[error("I/O error running {tool}: {source}")]
    Io {
        tool: &'static str,
        source: std::io::Error,
    },
}

/// A unique scratch path (several compilations may run at once, in threads or processes):
/// process, thread and a clock reading, so no shared counter is needed.
fn scratch(ext: &str) -> PathBuf {
    let thread: String = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!(
        "sarek-{}-{thread}-{nanos}.{ext}",
        std::process::id()
    ))
}

/// Whether `glslangValidator` can be run.
pub fn glslang_available() -> bool {
    Command::new("glslangValidator")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Whether `spirv-val` can be run.
pub fn spirv_val_available() -> bool {
    Command::new("spirv-val")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Compile a compute shader to SPIR-V words.
pub fn compile(source: &str) -> Result<Vec<u32>, SpirvError> {
    let out = scratch("spv");
    let child = Command::new("glslangValidator")
        .args([
            "-V",
            "--target-env",
            TARGET_ENV,
            "--stdin",
            "-S",
            "comp",
            "-o",
        ])
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Err(SpirvError::ToolMissing {
                tool: "glslangValidator",
                reason: e.to_string(),
            });
        }
    };
    let io = |source| SpirvError::Io {
        tool: "glslangValidator",
        source,
    };
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(source.as_bytes())
        .map_err(io)?;
    let output = child.wait_with_output().map_err(io)?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&out);
        let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
        log.push_str(&String::from_utf8_lossy(&output.stderr));
        return Err(SpirvError::Rejected(log));
    }
    let bytes = std::fs::read(&out).map_err(io)?;
    let _ = std::fs::remove_file(&out);
    let words = bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    Ok(forbid_float_rewrites(words))
}

/// The opcodes whose results get `NoContraction`: `OpFAdd` and `OpFSub`, where the wrong
/// algebra happened (and where a multiply would be fused into, which Sarek forbids). Not
/// the multiplications and divisions: decorated, lavapipe computed `(x * 0.0) * inf` as 0
/// instead of NaN (its LLVM backend assumes no infinities, which NIR's folding of the two
/// constants had hidden: FINDINGS F36, N10).
const FLOAT_ARITHMETIC: [u32; 2] = [129, 131];
/// Opcodes of the module's layout sections before its types (capabilities, extensions,
/// imports, memory model, entry points, execution modes, debug names, annotations): the
/// new decorations go after them, as the annotation section's last instructions.
const BEFORE_TYPES: [u32; 24] = [
    2, 3, 4, 5, 6, 7, 8, 10, 11, 14, 15, 16, 17, 71, 72, 73, 74, 75, 317, 330, 331, 332, 5632, 5633,
];
const OP_DECORATE: u32 = 71;
const NO_CONTRACTION: u32 = 42;

/// Decorate every float addition and subtraction `NoContraction`, so the driver evaluates
/// them as written: IEEE 754 results, as on every other backend (Sarek contracts `a * b + c`
/// only under `--fma`, in the generated source). Mesa treats such an instruction as exact:
/// no fusing and no reassociating rewrites. Words that do not parse as a module are
/// returned unchanged (the driver reports them).
pub fn forbid_float_rewrites(words: Vec<u32>) -> Vec<u32> {
    const HEADER: usize = 5;
    let mut results = Vec::new();
    let mut decorated = std::collections::HashSet::new();
    let mut insert_at = None;
    let mut at = HEADER;
    while at < words.len() {
        let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if count == 0 || at + count > words.len() {
            return words;
        }
        if insert_at.is_none() && !BEFORE_TYPES.contains(&opcode) {
            insert_at = Some(at);
        }
        if FLOAT_ARITHMETIC.contains(&opcode) && count >= 3 {
            results.push(words[at + 2]);
        }
        if opcode == OP_DECORATE && count == 3 && words[at + 2] == NO_CONTRACTION {
            decorated.insert(words[at + 1]);
        }
        at += count;
    }
    let Some(insert_at) = insert_at else {
        return words;
    };
    let decorations: Vec<u32> = results
        .into_iter()
        .filter(|id| decorated.insert(*id))
        .flat_map(|id| [(3 << 16) | OP_DECORATE, id, NO_CONTRACTION])
        .collect();
    let mut out = Vec::with_capacity(words.len() + decorations.len());
    out.extend_from_slice(&words[..insert_at]);
    out.extend(decorations);
    out.extend_from_slice(&words[insert_at..]);
    out
}

/// Validate SPIR-V words with `spirv-val`.
pub fn validate(words: &[u32]) -> Result<(), SpirvError> {
    let path = scratch("spv");
    let io = |source| SpirvError::Io {
        tool: "spirv-val",
        source,
    };
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).map_err(io)?;
    let output = Command::new("spirv-val")
        .args(["--target-env", TARGET_ENV])
        .arg(&path)
        .output();
    let _ = std::fs::remove_file(&path);
    let output = output.map_err(|e| SpirvError::ToolMissing {
        tool: "spirv-val",
        reason: e.to_string(),
    })?;
    if output.status.success() {
        Ok(())
    } else {
        let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
        log.push_str(&String::from_utf8_lossy(&output.stderr));
        Err(SpirvError::Invalid(log))
    }
}

/// SPIR-V compiled by one user of glslang, kept for another that compiles the same GLSL:
/// a differential tester validates the GLSL generator's output and then runs the same
/// source on the `vulkan` backend ([`crate::vulkan::open_sharing`]), and glslang's ~100 ms
/// of CPU per process need not be paid twice. Held and passed explicitly (no global), and
/// bounded: it keeps the most recent [`SharedSpirv::CAPACITY`] modules.
#[derive(Default)]
pub struct SharedSpirv {
    recent: Mutex<VecDeque<(String, Vec<u32>)>>,
}

impl SharedSpirv {
    pub const CAPACITY: usize = 64;

    /// [`compile`] `source`, keeping its words for a later [`SharedSpirv::compile`].
    pub fn compile_and_keep(&self, source: &str) -> Result<Vec<u32>, SpirvError> {
        let words = compile(source)?;
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == Self::CAPACITY {
            recent.pop_front();
        }
        recent.push_back((source.to_string(), words.clone()));
        Ok(words)
    }

    /// The words kept for `source` (given out once), else [`compile`] it.
    pub fn compile(&self, source: &str) -> Result<Vec<u32>, SpirvError> {
        let kept = {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            recent
                .iter()
                .position(|(s, _)| s == source)
                .and_then(|at| recent.remove(at))
        };
        match kept {
            Some((_, words)) => Ok(words),
            None => compile(source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (opcode, result id) of every instruction, and the ids decorated `NoContraction`.
    fn instructions(words: &[u32]) -> (Vec<(u32, u32)>, Vec<u32>) {
        let (mut all, mut exact) = (Vec::new(), Vec::new());
        let mut at = 5;
        while at < words.len() {
            let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
            all.push((opcode, words.get(at + 2).copied().unwrap_or(0)));
            if opcode == OP_DECORATE && words[at + 2] == NO_CONTRACTION {
                exact.push(words[at + 1]);
            }
            at += count;
        }
        (all, exact)
    }

    #[test]
    fn every_float_addition_is_decorated_no_contraction_once() {
        if !glslang_available() || !spirv_val_available() {
            eprintln!("skipping: glslangValidator or spirv-val missing");
            return;
        }
        // A two-sum (whose error term Mesa folded to 0), a float64 operation, a negation, a
        // product and a quotient, and integer arithmetic.
        let source = "#version 450\nlayout(local_size_x = 1) in;\n\
            layout(std430, binding = 0) buffer F { float f[]; };\n\
            layout(std430, binding = 1) buffer D { double d[]; };\n\
            layout(std430, binding = 2) buffer K { int k[]; };\n\
            void main() {\n\
              float a = f[0]; float b = f[1]; float s = a + b;\n\
              f[2] = b - (s - a); f[3] = -(a * b) / a;\n\
              d[0] = d[1] * d[2] - d[3]; k[0] = k[1] + k[2] * k[3];\n\
            }\n";
        let words = compile(source).unwrap();
        validate(&words).unwrap();
        let (all, exact) = instructions(&words);
        let float_ops: Vec<u32> = all
            .iter()
            .filter(|(op, _)| FLOAT_ARITHMETIC.contains(op))
            .map(|(_, id)| *id)
            .collect();
        // a + b, s - a, b - (...), d * d - d
        assert_eq!(float_ops.len(), 4, "{all:?}");
        let mut sorted = exact.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), exact.len(), "decorated once each: {exact:?}");
        for id in &float_ops {
            assert!(exact.contains(id), "%{id} is not NoContraction");
        }
        // Integer arithmetic, and float negation, products and quotients (whose constant
        // folding the driver's assumptions need), are left alone.
        let others: Vec<u32> = (all.iter())
            .filter(|(op, _)| [128, 132, 127, 133, 136].contains(op))
            .map(|(_, id)| *id)
            .collect();
        assert_eq!(others.len(), 6, "{all:?}");
        assert!(others.iter().all(|id| !exact.contains(id)));
        // Words that are not a module are left alone.
        assert_eq!(forbid_float_rewrites(vec![1, 2, 3]), vec![1, 2, 3]);
        assert_eq!(forbid_float_rewrites(words.clone()), words, "idempotent");
    }

    #[test]
    fn shared_spirv_gives_kept_words_once_and_stays_bounded() {
        if !glslang_available() {
            eprintln!("skipping: glslangValidator missing");
            return;
        }
        let source = |k: usize| {
            format!(
                "#version 450\nlayout(local_size_x = {}) in;\nvoid main() {{}}\n",
                k + 1
            )
        };
        let shared = SharedSpirv::default();
        let words = shared.compile_and_keep(&source(0)).unwrap();
        assert_eq!(shared.compile(&source(0)).unwrap(), words);
        assert!(shared.recent.lock().unwrap().is_empty(), "given out once");
        // A source never kept is compiled: the same words as compiling it directly.
        assert_eq!(
            shared.compile(&source(1)).unwrap(),
            compile(&source(1)).unwrap()
        );
        let kept = shared.compile_and_keep(&source(1)).unwrap();
        shared
            .recent
            .lock()
            .unwrap()
            .extend((1..SharedSpirv::CAPACITY).map(|k| (format!("// {k}"), kept.clone())));
        shared.compile_and_keep(&source(2)).unwrap();
        let recent = shared.recent.lock().unwrap();
        assert_eq!(recent.len(), SharedSpirv::CAPACITY);
        assert!(
            !recent.iter().any(|(s, _)| *s == source(1)),
            "the oldest is dropped"
        );
    }
}
