//! The `(* @run <kernel> [size=N] [grid=..] [block=..] [NAME=VALUE]... *)` comments of
//! corpus files, and the launch a directive (or `sarek run`'s `--size/--grid/--block`) means.

use sarek_compiler::host::LaunchConfig;

pub const DEFAULT_SEED: u64 = 42;
/// The vector length used when none is given.
pub const DEFAULT_SIZE: usize = 1024;

/// One `(* @run ... *)` directive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub kernel: String,
    /// Length of every vector parameter.
    pub size: usize,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    /// `NAME=VALUE` for the scalar parameters, in the order written.
    pub args: Vec<(String, String)>,
    /// 1-based line of the directive in its file.
    pub line: usize,
}

impl Directive {
    /// The launch: the given grid/block, else the default 1-D launch over `size`.
    pub fn config(&self) -> LaunchConfig {
        launch_config(self.size, self.grid, self.block)
    }
}

/// Every `@run` directive of `source`, in order. A directive is a comment line whose first
/// word is `@run` (`(* @run ... *)` alone, or one line of a longer comment); it ends at the
/// end of the line or at `*)`. The words `size`, `grid` and `block` are directive options;
/// every other `NAME=VALUE` is a kernel argument.
pub fn parse_directives(source: &str) -> Result<Vec<Directive>, String> {
    let mut out = Vec::new();
    // Lines break as the compiler's diagnostics break them (a lone `\r` too), so `line`
    // numbers agree with theirs.
    for (i, line) in sarek_compiler::diag::source_lines(source).enumerate() {
        let l = line.trim_start();
        let l = l.strip_prefix("(*").unwrap_or(l).trim_start();
        let Some(body) = l.strip_prefix("@run") else {
            continue;
        };
        if !body.is_empty() && !body.starts_with(char::is_whitespace) {
            continue;
        }
        let body = body.find("*)").map_or(body, |end| &body[..end]);
        out.push(parse_directive(body, i + 1).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    Ok(out)
}

fn parse_directive(body: &str, line: usize) -> Result<Directive, String> {
    let mut words = body.split_whitespace();
    let kernel = words.next().ok_or("@run needs a kernel name")?.to_string();
    let mut d = Directive {
        kernel,
        size: DEFAULT_SIZE,
        grid: None,
        block: None,
        args: Vec::new(),
        line,
    };
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| format!("`{w}` is not NAME=VALUE"))?;
        match k {
            "size" => {
                d.size = v
                    .parse()
                    .map_err(|_| format!("size `{v}` is not a length"))?;
                // Lengths and indices are int32: a longer vector cannot exist, and every
                // reader of directives (verify, the corpus, the playground) would allocate it.
                if d.size > i32::MAX as usize {
                    return Err(format!(
                        "size `{v}`: vectors have at most {} elements (lengths and indices are int32)",
                        i32::MAX
                    ));
                }
            }
            "grid" => d.grid = Some(parse_dims(v)?),
            "block" => d.block = Some(parse_dims(v)?),
            // A parameter named like a launch key (upstream's DFT takes `size`).
            _ if k.starts_with("arg.") => d.args.push((k[4..].to_string(), v.to_string())),
            _ => d.args.push((k.to_string(), v.to_string())),
        }
    }
    Ok(d)
}

/// `X[,Y[,Z]]`, each a positive integer; missing axes are 1.
pub fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{s}` is not X[,Y[,Z]]"));
    }
    let mut dims = [1u32; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = p
            .trim()
            .parse()
            .ok()
            .filter(|&n: &u32| n > 0)
            .ok_or_else(|| format!("`{s}` is not X[,Y[,Z]] of positive integers"))?;
    }
    Ok(dims)
}

/// Grid and block: as given; a missing block is min(256, N) along x (1-D) and a missing grid
/// covers `size` threads along x.
pub fn launch_config(size: usize, grid: Option<[u32; 3]>, block: Option<[u32; 3]>) -> LaunchConfig {
    let n = u32::try_from(size).unwrap_or(u32::MAX);
    let linear = LaunchConfig::linear(n);
    let block = block.unwrap_or(linear.block);
    let grid = grid.unwrap_or([n.div_ceil(block[0]).max(1), 1, 1]);
    LaunchConfig { grid, block }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_of_a_file_with_lone_carriage_returns_are_found_on_their_lines() {
        let d =
            parse_directives("(* header\r   @run a n=1\r   @run b size=8 *)\rlet x = 1\r").unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(
            (d[0].kernel.as_str(), d[0].line, d[0].size),
            ("a", 2, DEFAULT_SIZE)
        );
        assert_eq!((d[1].kernel.as_str(), d[1].line, d[1].size), ("b", 3, 8));
        assert_eq!(d[0].args, [("n".to_string(), "1".to_string())]);
    }

    #[test]
    fn arg_prefix_names_a_parameter_called_like_a_launch_key() {
        let d = parse_directives("(* @run dft size=16 block=16 arg.size=2 n=16 *)").unwrap();
        assert_eq!(d[0].size, 16);
        assert_eq!(d[0].block, Some([16, 1, 1]));
        assert_eq!(
            d[0].args,
            [
                ("size".to_string(), "2".to_string()),
                ("n".to_string(), "16".to_string())
            ]
        );
    }
}
