//! Several generated OpenCL C sources as one program, so a driver whose fixed cost per
//! program is large (PoCL: ~165 ms of headers and built-in library per `clBuildProgram`,
//! about as much as a small kernel's own build) pays it once for all of them.
//!
//! C has no namespaces: each source sits between `#define NAME NAME_batch<j>` and
//! `#undef NAME` for every name it declares at file scope (its types, helpers and kernel),
//! so the names of two sources never meet and each source's text is compiled unchanged.

use std::fmt::Write as _;

/// The name `name` of source `j` takes in the joined program.
pub fn renamed(name: &str, j: usize) -> String {
    format!("{name}_batch{j}")
}

/// `sources` joined into one translation unit, or `None` when a source has a file-scope
/// line this does not recognise. The C-family writer puts every file-scope declaration on a
/// line of its own at column 0 (`typedef struct {` .. `} NAME;`, `RESULT NAME(PARAMS) {`);
/// any other file-scope or preprocessor line than a `#pragma` gives `None`. A name this
/// misses makes the joined program fail to build: callers then build each source alone.
pub fn join(sources: &[&str]) -> Option<String> {
    let is_ident = |w: &str| {
        !w.is_empty()
            && !w.starts_with(|c: char| c.is_ascii_digit())
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut program = String::new();
    for (j, source) in sources.iter().enumerate() {
        let mut names: Vec<&str> = Vec::new();
        for line in source.lines() {
            if line.is_empty() || line.starts_with([' ', '\t']) || line.starts_with("//") {
                continue;
            }
            if line.starts_with('#') {
                if !line.starts_with("#pragma") {
                    return None;
                }
            } else if let Some(rest) = line.strip_prefix('}') {
                let name = rest.trim().trim_end_matches(';').trim();
                if !name.is_empty() {
                    names.push(is_ident(name).then_some(name)?);
                }
            } else if line.starts_with("typedef struct {") {
            } else {
                let head = &line[..line.find('(')?];
                let name = head.rsplit([' ', '*']).next()?;
                names.push(is_ident(name).then_some(name)?);
            }
        }
        for n in &names {
            let _ = writeln!(program, "#define {n} {}", renamed(n, j));
        }
        program.push_str(source);
        program.push('\n');
        for n in &names {
            let _ = writeln!(program, "#undef {n}");
        }
    }
    Some(program)
}
