//! The files the command line reads and writes, robustly (issue 17): reads stop at a size
//! limit (so `check /dev/zero` or `--input x=/dev/zero` ends with an error instead of
//! filling memory), a source that is not UTF-8 is a located error at its first bad byte, and
//! every output goes to a temporary file in the destination's folder that is renamed over
//! the destination only once complete (a full disk leaves the old file, never a truncated
//! one). `--out DIR` is checked before the kernel runs and created only after it succeeded,
//! so a failed run leaves no empty folder behind.

use super::{Failure, io_reason};
use sarek::HostVector;
use sarek_compiler::abi::Leaf;
use sarek_compiler::diag::{Diagnostic, SourceMap, Span};
use sarek_runtime::npy;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The largest source file read (far above any real kernel, the corpus' largest is ~20 KB).
pub const MAX_SOURCE_BYTES: u64 = 64 << 20;

/// A `.npy` header longer than this is not one NumPy writes (it pads headers to 64 bytes).
const MAX_NPY_HEADER_BYTES: u64 = 1 << 20;

/// Why a file could not be read.
pub enum ReadError {
    Io(std::io::Error),
    /// Larger than `limit` bytes (or endless, like `/dev/zero`).
    TooLarge {
        limit: u64,
    },
    /// Does not start with the format's magic bytes.
    NotMagic,
}

impl ReadError {
    fn describe(&self, path: &Path) -> String {
        match self {
            ReadError::Io(e) => format!("cannot read `{}`: {}", path.display(), io_reason(e)),
            ReadError::TooLarge { limit } => format!(
                "cannot read `{}`: larger than the {} a file may have here",
                path.display(),
                bytes(*limit)
            ),
            ReadError::NotMagic => format!("`{}` is not in the expected format", path.display()),
        }
    }
}

/// `n` bytes for people: `64 MiB`, `1.5 GiB`, `4096 bytes`.
fn bytes(n: u64) -> String {
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if n >= GIB {
        format!("{:.1} GiB", n as f64 / GIB as f64)
    } else if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// The bytes of `path`, at most `limit` of them: a regular file's size is checked before
/// reading, anything else (a device, a pipe) is read up to the limit.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_checked(path, limit, b"")
}

/// As [`read_limited`], for a format that starts with `magic`: anything else stops after
/// its first bytes (`/dev/zero` given as a `.npy` is refused at once, not after gigabytes).
pub fn read_checked(path: &Path, limit: u64, magic: &[u8]) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if meta.is_dir() {
        return Err(ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "Is a directory",
        )));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let mut out = Vec::with_capacity(if meta.is_file() {
        meta.len() as usize
    } else {
        0
    });
    let mut file = file.take(limit.saturating_add(1));
    (&mut file)
        .take(magic.len() as u64)
        .read_to_end(&mut out)
        .map_err(ReadError::Io)?;
    if out != magic {
        return Err(ReadError::NotMagic);
    }
    file.read_to_end(&mut out).map_err(ReadError::Io)?;
    if out.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(out)
}

/// The text of source file `path`. Unreadable or too large: exit 2. Not UTF-8: exit 1, an
/// error located at the first bad byte (the rest of the line shown with replacement
/// characters).
pub fn read_source(path: &Path) -> Result<String, Failure> {
    let data = read_limited(path, MAX_SOURCE_BYTES).map_err(|e| Failure::io(e.describe(path)))?;
    String::from_utf8(data).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bad = e.utf8_error().error_len().unwrap_or(1);
        let mut sources = SourceMap::new();
        let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
        let file = sources.add(path.display().to_string(), lossy);
        // The valid prefix is the same in the lossy text; the bad bytes became one U+FFFD.
        let span = Span::new(file, at, at + '\u{FFFD}'.len_utf8());
        let first = &e.as_bytes()[at..at + bad];
        let shown: Vec<String> = first.iter().map(|b| format!("0x{b:02x}")).collect();
        let d = Diagnostic::error(span, "source files must be UTF-8")
            .with_label(format!("invalid UTF-8 byte {}", shown.join(" ")));
        Failure::rendered(1, d.render(&sources, super::color()))
    })
}

/// Read `file` as a vector of elements with `leaves` (and `len` elements, when given). The
/// size limit follows from the element type: a header plus `len` (at most int32's maximum)
/// elements of at most 8 bytes per leaf (padding included). `Err((message, io))`: `io` when
/// the file could not be read at all (exit 2).
pub fn read_npy(
    file: &Path,
    leaves: &[Leaf],
    len: Option<usize>,
) -> Result<HostVector, (String, bool)> {
    let elements = len.map_or(sarek_runtime::limits::MAX_VECTOR_LEN, |n| n as u64);
    let limit = 16 + MAX_NPY_HEADER_BYTES + elements.saturating_mul(8 * leaves.len() as u64);
    let data = read_checked(file, limit, b"\x93NUMPY").map_err(|e| match e {
        ReadError::Io(e) => (io_reason(&e), true),
        // The words of `npy::from_bytes` for the same file.
        ReadError::NotMagic => (
            npy::NpyError::Format("missing the \\x93NUMPY magic".into()).to_string(),
            false,
        ),
        ReadError::TooLarge { limit } => (
            format!(
                "larger than the {} a .npy file of {} can have",
                bytes(limit),
                match len {
                    Some(n) => format!("{n} elements"),
                    None => "an int32-indexed vector".to_string(),
                }
            ),
            false,
        ),
    })?;
    npy::vector_from_bytes(&data, leaves, len).map_err(|e| (e.to_string(), false))
}

/// Write `contents` to `path` through a temporary file in the same folder, renamed over
/// `path` once complete and flushed; the temporary file is removed on any failure.
///
/// Only a regular file is replaced that way: an existing device, pipe or socket (`-o
/// /dev/null`, `-o /dev/stdout`, a FIFO) is written in place, since renaming over it would
/// replace the device node itself (run as root, `-o /dev/null` left a regular file there);
/// a symbolic link is followed, and the file it names is replaced.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), Failure> {
    let cannot = |e: &std::io::Error| {
        Failure::io(format!(
            "cannot write `{}`: {}",
            path.display(),
            io_reason(e)
        ))
    };
    if let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
        && !meta.is_dir()
    {
        return std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(contents))
            .map_err(|e| cannot(&e));
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        && let Ok(target) = std::fs::canonicalize(path)
    {
        return write_atomically(&target, contents);
    }
    let name = path.file_name().ok_or_else(|| {
        Failure::io(format!(
            "cannot write `{}`: not a file name",
            path.display()
        ))
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = path.with_file_name(temp_name);
    let written = (|| {
        let mut f = std::fs::File::create(&temp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&temp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        cannot(&e)
    })
}

/// `--out DIR` checked before anything runs: not empty, not an existing non-directory, and
/// (when missing) under a directory it can be created in. Created by [`create_out_dir`]
/// only after the run.
pub fn check_out_dir(dir: &Path) -> Result<(), Failure> {
    if dir.as_os_str().is_empty() {
        return Err(Failure::io("--out: the folder name is empty"));
    }
    let mut existing: PathBuf = dir.to_path_buf();
    loop {
        match std::fs::metadata(&existing) {
            Ok(m) if m.is_dir() => return probe_writable(dir, &existing),
            Ok(_) => {
                return Err(Failure::io(format!(
                    "--out `{}`: `{}` exists and is not a folder",
                    dir.display(),
                    existing.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Failure::io(format!(
                    "--out `{}`: {}",
                    dir.display(),
                    io_reason(&e)
                )));
            }
        }
        match existing.parent() {
            // A relative path's last parent is "": the current folder.
            Some(p) if !p.as_os_str().is_empty() => existing = p.to_path_buf(),
            _ => return probe_writable(dir, Path::new(".")),
        }
    }
}

/// Whether files can be made in `folder` (the nearest existing folder of `--out`): a file is
/// created there and removed at once, so that a read-only or virtual folder (`/proc`) fails
/// before the kernel runs rather than after.
fn probe_writable(dir: &Path, folder: &Path) -> Result<(), Failure> {
    let probe = folder.join(format!(".sarek-probe.{}.tmp", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(Failure::io(format!(
            "--out `{}`: cannot write in `{}`: {}",
            dir.display(),
            folder.display(),
            io_reason(&e)
        ))),
    }
}

/// Create `--out DIR` (and its missing parents) once the run succeeded.
pub fn create_out_dir(dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::io(format!(
            "cannot create `{}`: {}",
            dir.display(),
            io_reason(&e)
        ))
    })
}
