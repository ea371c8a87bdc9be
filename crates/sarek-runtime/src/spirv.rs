//! The Vulkan backend's build step: GLSL -> SPIR-V through the `glslangValidator` command,
//! and `spirv-val` for the validators in tests.
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
    Ok(bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
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
