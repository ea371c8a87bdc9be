//! NVRTC, loaded at run time, and the on-disk cache of what it compiles.
//!
//! Kernels are compiled to a CUBIN for the device's exact architecture (`sm_XY`), not to PTX:
//! a CUBIN loads on any driver of the toolkit's major version, while PTX from a newer NVRTC
//! than the driver is refused by the driver's JIT. The cache key is the source, the
//! architecture, the driver version, the NVRTC version and the compile options, so a second
//! run of the same kernel on the same machine skips NVRTC entirely.

use crate::device::RuntimeError;
use std::ffi::{CStr, CString};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Options every compile uses. `--fmad=false` keeps `a*b+c` as two roundings, as in the
/// interpreter; division and square root stay IEEE (`--prec-div`, `--prec-sqrt` default true).
pub const OPTIONS: &[&str] = &["--fmad=false", "--prec-div=true", "--prec-sqrt=true"];

/// Make `libnvrtc` loadable by cudarc. The system loader's own search (`LD_LIBRARY_PATH`,
/// the ldconfig cache) comes first; when it finds nothing, [`candidates`] are loaded by
/// absolute path, so that cudarc's later `dlopen("libnvrtc.so.13")` resolves to the
/// already-loaded library by its soname.
pub fn load() -> Result<(), String> {
    // SAFETY: loading NVRTC runs its initialisers, which have no preconditions.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Ok(());
    }
    for c in candidates() {
        // SAFETY: as above. The library stays loaded for the life of the process.
        if let Ok(lib) = unsafe { libloading::Library::new(&c) } {
            std::mem::forget(lib);
            // SAFETY: as above.
            if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Ok(());
            }
        }
    }
    Err(
        "libnvrtc not found (set SAREK_NVRTC_LIB to the library, put its folder on \
         LD_LIBRARY_PATH or under CUDA_PATH, or pip install nvidia-cuda-nvrtc)"
            .into(),
    )
}

/// Where `libnvrtc` may be, in order: `SAREK_NVRTC_LIB` (the library itself); the
/// `lib64`/`lib` folders of a toolkit under `CUDA_PATH` or `CUDA_HOME`; the folders of
/// `LD_LIBRARY_PATH` (for a name the system loader does not try); the `cu*/lib` folders of
/// the `nvidia` Python package (NVIDIA's `nvidia-cuda-nvrtc` wheel) of the first `python3` on
/// `PATH`. Only existing files are listed, newest version first within a folder.
pub fn candidates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::env::var_os("SAREK_NVRTC_LIB")
        .map(PathBuf::from)
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let root = PathBuf::from(root);
            dirs.extend([root.join("lib64"), root.join("lib")]);
        }
    }
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&paths));
    }
    dirs.extend(python_wheel_dirs());
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libnvrtc.so") && p.is_file())
            })
            .collect();
        found.sort_by(|a, b| b.cmp(a));
        for f in found {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// The `cu*/lib` folders of the `nvidia` package of `python3`, if there is one (asked of
/// Python itself: the package may live in any site-packages or virtual environment).
fn python_wheel_dirs() -> Vec<PathBuf> {
    let Ok(output) = std::process::Command::new("python3")
        .args([
            "-c",
            "import nvidia, os; print(os.pathsep.join(nvidia.__path__))",
        ])
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    if !output.status.success() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut dirs = Vec::new();
    for root in std::env::split_paths(text.trim()) {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            // `cu13/lib` (CUDA 13 wheels); `cuda_nvrtc/lib` (CUDA 12 wheels).
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("cu"))
            })
            .map(|p| p.join("lib"))
            .filter(|p| p.is_dir())
            .collect();
        subs.sort_by(|a, b| b.cmp(a));
        dirs.extend(subs);
    }
    dirs
}

/// NVRTC's version as (major, minor). Call [`load`] first.
pub fn version() -> Result<(i32, i32), String> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded; the out-pointers are valid.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| format!("nvrtcVersion failed: {e:?}"))?;
    Ok((major, minor))
}

/// Compile CUDA C to a CUBIN for `sm_<arch>` (e.g. 90). Errors carry NVRTC's log.
pub fn compile(source: &str, arch: u32) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::result;
    let src = CString::new(source).map_err(|_| "source contains a NUL byte".to_string())?;
    let prog =
        result::create_program(&src, None).map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    let mut opts: Vec<String> = vec![format!("--gpu-architecture=sm_{arch}")];
    opts.extend(OPTIONS.iter().map(|s| s.to_string()));
    // SAFETY: `prog` is live until destroyed below; options are valid strings.
    let outcome = unsafe { result::compile_program(prog, &opts) };
    let log = unsafe { result::get_program_log(prog) }
        .map(|l| {
            unsafe { CStr::from_ptr(l.as_ptr()) }
                .to_string_lossy()
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    let image = outcome
        .map_err(|e| format!("{e:?}\n{log}"))
        .and_then(|()| cubin(prog));
    // SAFETY: destroyed once, after its last use.
    unsafe { result::destroy_program(prog) }.ok();
    image
}

fn cubin(prog: cudarc::nvrtc::sys::nvrtcProgram) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::sys;
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; the buffer has the size NVRTC reported.
    unsafe {
        sys::nvrtcGetCUBINSize(prog, &mut size)
            .result()
            .map_err(|e| format!("nvrtcGetCUBINSize: {e:?}"))?;
        let mut buf = vec![0u8; size];
        sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr().cast())
            .result()
            .map_err(|e| format!("nvrtcGetCUBIN: {e:?}"))?;
        Ok(buf)
    }
}

/// An on-disk cache of compiled kernels.
#[derive(Clone, Debug)]
pub struct ModuleCache {
    dir: PathBuf,
}

/// A compiled kernel image and whether it came from the cache.
#[derive(Clone, Debug)]
pub struct Cached {
    pub image: Vec<u8>,
    pub from_cache: bool,
}

impl ModuleCache {
    /// `$XDG_CACHE_HOME/sarek/cuda`, else `~/.cache/sarek/cuda`, else a temporary folder.
    pub fn default_location() -> ModuleCache {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        ModuleCache::at(base.join("sarek").join("cuda"))
    }

    pub fn at(dir: impl Into<PathBuf>) -> ModuleCache {
        ModuleCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The image for `source` on `sm_<arch>`, from the cache or by calling `compile` (whose
    /// result is then stored). `driver` and `nvrtc` versions are part of the key. A cache
    /// that cannot be written is not an error: the kernel still runs.
    pub fn get_or_compile(
        &self,
        source: &str,
        arch: u32,
        driver: i32,
        nvrtc: (i32, i32),
        compile: impl FnOnce(&str, u32) -> Result<Vec<u8>, String>,
    ) -> Result<Cached, RuntimeError> {
        let key = format!(
            "arch=sm_{arch}\ndriver={driver}\nnvrtc={}.{}\noptions={}\n---\n{source}",
            nvrtc.0,
            nvrtc.1,
            OPTIONS.join(" ")
        );
        let stem = format!("{:016x}", fnv1a(key.as_bytes()));
        let (key_path, bin_path) = (
            self.dir.join(format!("{stem}.key")),
            self.dir.join(format!("{stem}.cubin")),
        );
        // The key file guards against hash collisions: a hit needs the full key to match.
        if let (Ok(k), Ok(image)) = (std::fs::read_to_string(&key_path), std::fs::read(&bin_path))
            && k == key
            && !image.is_empty()
        {
            return Ok(Cached {
                image,
                from_cache: true,
            });
        }
        let image = compile(source, arch)
            .map_err(|log| RuntimeError::Compile(format!("NVRTC rejected the CUDA C:\n{log}")))?;
        let _ = self
            .store(&key_path, key.as_bytes())
            .and_then(|()| self.store(&bin_path, &image));
        Ok(Cached {
            image,
            from_cache: false,
        })
    }

    /// Write through a temporary file and rename, so a concurrent reader never sees half a file.
    fn store(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(tmp, path)
    }
}

/// FNV-1a, 64-bit: a hash that is stable across Rust versions (the std hasher is not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
