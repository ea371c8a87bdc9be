//! The Sarek compiler for the browser: a plain C ABI over `sarek-compiler`, built for
//! `wasm32-unknown-unknown` and loaded by `playground/sarek.js` (no wasm-bindgen: five
//! functions that move bytes need no generated glue).
//!
//! The protocol is bytes in, bytes out:
//!
//! - a **request** is a list of fields, each a little-endian `u32` length then that many bytes
//!   (UTF-8 text, or raw bytes for read-back buffers); the JS side writes it into memory from
//!   [`sarek_alloc`];
//! - a **reply** is `u32 json_len, u32 binary_len`, the JSON text, then the binary part
//!   (buffers and vector columns the JSON points into by offset); the JS side reads it and
//!   frees it with [`sarek_free`] (its size is `8 + json_len + binary_len`).
//!
//! Nothing is kept between calls ([`api`] explains why), so a trap inside one call (a
//! compiler bug) cannot poison the next: the loader simply instantiates the module again.
//!
//! | export | fields |
//! | --- | --- |
//! | `sarek_compile` | file, source, target, options |
//! | `sarek_describe` | file, source |
//! | `sarek_inputs` | file, source, kernel, size, seed, args, vectors |
//! | `sarek_prepare` | file, source, kernel, size, seed, args, vectors, grid, block, options, limits |
//! | `sarek_finish` | the same as `sarek_prepare`, then the read-back bytes |
//!
//! `options` is `subgroups,float64,int64_atomics` as `0`/`1` (`1,1,1` = the CLI's defaults);
//! `args` is `NAME=VALUE` lines; `vectors` is `NAME=V1,V2,...` lines (typed vectors of
//! scalars; the others are generated); `size` and `seed` may be empty for the defaults; `grid`/`block` are `X[,Y[,Z]]` or empty for the default;
//! `limits` is `name;max_storage_buffers;max_invocations;max_x,max_y,max_z;max_workgroups`.

pub mod api;
pub mod harness;
pub mod json;

use api::{DeviceLimits, Reply, RunRequest, Source};
use sarek_compiler::TargetOptions;

/// Split a request into its fields; `None` when the lengths do not add up.
pub fn fields(message: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut rest = message;
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        if tail.len() < len {
            return None;
        }
        out.push(&tail[..len]);
        rest = &tail[len..];
    }
    Some(out)
}

/// Encode fields as a request (the inverse of [`fields`]; the JS loader does the same).
pub fn encode(fields: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        out.extend((f.len() as u32).to_le_bytes());
        out.extend(*f);
    }
    out
}

/// A malformed request: a bug of the loader, reported rather than trapping.
fn bad_request(what: &str) -> Reply {
    Reply {
        json: json::Json::obj([
            ("ok", json::Json::Bool(false)),
            ("failure", json::Json::str("request")),
            ("diagnostics", json::Json::Arr(vec![])),
            (
                "rendered",
                json::Json::str(format!(
                    "error: malformed request to the compiler: {what}\n"
                )),
            ),
        ])
        .to_text(),
        binary: Vec::new(),
    }
}

fn text<'a>(fields: &[&'a [u8]], i: usize, name: &str) -> Result<&'a str, Reply> {
    let f = fields
        .get(i)
        .ok_or_else(|| bad_request(&format!("field {i} ({name}) is missing")))?;
    std::str::from_utf8(f).map_err(|_| bad_request(&format!("{name} is not UTF-8")))
}

/// `s,f,a` flags as [`TargetOptions`].
pub fn parse_options(s: &str) -> Option<TargetOptions> {
    let flags: Vec<bool> = s
        .split(',')
        .map(|f| match f.trim() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match flags[..] {
        [subgroups, float64, int64_atomics] => Some(TargetOptions {
            subgroups,
            float64,
            int64_atomics,
            ..TargetOptions::default()
        }),
        _ => None,
    }
}

fn parse_limits(s: &str) -> Option<DeviceLimits> {
    let parts: Vec<&str> = s.split(';').collect();
    let [name, buffers, invocations, size, groups] = parts[..] else {
        return None;
    };
    let size: Vec<u32> = size
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect::<Option<_>>()?;
    Some(DeviceLimits {
        name: name.to_string(),
        max_storage_buffers: buffers.trim().parse().ok()?,
        max_invocations: invocations.trim().parse().ok()?,
        max_size: size.try_into().ok()?,
        max_workgroups: groups.trim().parse().ok()?,
    })
}

/// Parse the fields shared by `inputs`, `prepare` and `finish`.
fn run_request<'a>(f: &[&'a [u8]], with_device: bool) -> Result<RunRequest<'a>, Reply> {
    let file = text(f, 0, "file")?;
    let source = text(f, 1, "source")?;
    let kernel = text(f, 2, "kernel")?;
    let user = |m: String| api::argument_error(Source { file, text: source }, m);
    let size_text = text(f, 3, "size")?;
    let size = match size_text.trim() {
        "" => None,
        s => Some(
            s.parse()
                .map_err(|_| user(format!("size `{s}` is not a length")))?,
        ),
    };
    let seed_text = text(f, 4, "seed")?;
    let seed = match seed_text.trim() {
        "" => harness::DEFAULT_SEED,
        s => s
            .parse()
            .map_err(|_| user(format!("seed `{s}` is not an unsigned integer")))?,
    };
    let pairs = |i: usize, name: &str| -> Result<Vec<(String, String)>, Reply> {
        let mut out = Vec::new();
        for line in text(f, i, name)?.lines().filter(|l| !l.trim().is_empty()) {
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| user(format!("`{}` is not NAME=VALUE", line.trim())))?;
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(out)
    };
    let args = pairs(5, "args")?;
    let vectors = pairs(6, "vectors")?;
    let mut req = RunRequest {
        source: Source { file, text: source },
        kernel,
        size,
        seed,
        args,
        vectors,
        grid: None,
        block: None,
        options: TargetOptions::default(),
        limits: DeviceLimits::default(),
    };
    if with_device {
        let dims = |i: usize, name: &str| -> Result<Option<[u32; 3]>, Reply> {
            match text(f, i, name)?.trim() {
                "" => Ok(None),
                s => harness::parse_dims(s)
                    .map(Some)
                    .map_err(|e| user(format!("--{name}: {e}"))),
            }
        };
        req.grid = dims(7, "grid")?;
        req.block = dims(8, "block")?;
        req.options =
            parse_options(text(f, 9, "options")?).ok_or_else(|| bad_request("options"))?;
        req.limits = parse_limits(text(f, 10, "limits")?).ok_or_else(|| bad_request("limits"))?;
    }
    Ok(req)
}

/// Answer one request to export `op` (the names of the table above, without `sarek_`).
pub fn dispatch(op: &str, message: &[u8]) -> Reply {
    let Some(f) = fields(message) else {
        return bad_request("field lengths do not add up");
    };
    let result = (|| -> Result<Reply, Reply> {
        Ok(match op {
            "compile" => {
                let source = Source {
                    file: text(&f, 0, "file")?,
                    text: text(&f, 1, "source")?,
                };
                let options =
                    parse_options(text(&f, 3, "options")?).ok_or_else(|| bad_request("options"))?;
                api::compile(source, text(&f, 2, "target")?, &options)
            }
            "describe" => api::describe(Source {
                file: text(&f, 0, "file")?,
                text: text(&f, 1, "source")?,
            }),
            "inputs" => api::inputs(&run_request(&f, false)?),
            "prepare" => api::prepare(&run_request(&f, true)?),
            "finish" => {
                let readback = f.get(11).ok_or_else(|| bad_request("read-back bytes"))?;
                api::finish(&run_request(&f, true)?, readback)
            }
            other => bad_request(&format!("unknown operation `{other}`")),
        })
    })();
    result.unwrap_or_else(|r| r)
}

// ---------------------------------------------------------------------------------------
// The C ABI

/// Allocate `len` bytes for a request; free them with [`sarek_free`].
#[unsafe(no_mangle)]
pub extern "C" fn sarek_alloc(len: usize) -> *mut u8 {
    Box::into_raw(vec![0u8; len].into_boxed_slice()).cast()
}

/// Free `len` bytes at `ptr` from [`sarek_alloc`] or a reply.
///
/// # Safety
/// `ptr` and `len` must be exactly those of one allocation made here, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sarek_free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        // SAFETY: the caller passes back a pointer and length this module allocated.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
    }
}

fn reply_bytes(r: Reply) -> *mut u8 {
    let mut out = Vec::with_capacity(8 + r.json.len() + r.binary.len());
    out.extend((r.json.len() as u32).to_le_bytes());
    out.extend((r.binary.len() as u32).to_le_bytes());
    out.extend(r.json.as_bytes());
    out.extend(&r.binary);
    Box::into_raw(out.into_boxed_slice()).cast()
}

/// # Safety
/// `ptr..ptr+len` must be readable memory of this module (from [`sarek_alloc`]).
unsafe fn request<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

macro_rules! export {
    ($name:ident, $op:literal) => {
        #[doc = concat!("The `", $op, "` request (see the crate documentation); returns the reply.")]
        ///
        /// # Safety
        /// `ptr..ptr+len` must be a request written into memory from [`sarek_alloc`].
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ptr: *const u8, len: usize) -> *mut u8 {
            // SAFETY: forwarded from the caller.
            reply_bytes(dispatch($op, unsafe { request(ptr, len) }))
        }
    };
}

export!(sarek_compile, "compile");
export!(sarek_describe, "describe");
export!(sarek_inputs, "inputs");
export!(sarek_prepare, "prepare");
export!(sarek_finish, "finish");
