//! Skeletons: kernels generated around a helper the user wrote in Sarek.
//!
//! A skeleton is *source generation*: [`instantiate`] reads the helper's signature from the
//! type-checked program, writes the skeleton's kernels as Sarek text calling the helper, and
//! returns them with the launch sequence a runtime follows. The text is appended to the user's
//! source and checked by the ordinary front end, so every element type the language has
//! (scalars, records, tuples, variants) works, and the kernels go through the same lowering
//! and generators as hand-written ones.
//!
//! | skeleton | helper | kernels |
//! | --- | --- | --- |
//! | `map f` | `a -> b` | `output.(i) <- f input.(i)`, [`ELEMENTWISE_ITEMS`] elements per thread |
//! | `zip f` | `a -> b -> c` | `output.(i) <- f x.(i) y.(i)`, as `map` |
//! | `reduce f e` | `a -> a -> a`, associative, `e` neutral | per block of [`BLOCK`] threads, `chunks` tiles of `BLOCK × items` elements (`items` = [`REDUCE_ITEMS`], fewer for wide elements so shared memory stays within 32 KiB) loaded coalesced into shared memory, each thread folding a run of consecutive ones, then an order-preserving tree; one partial per block; the same kernel again on the partials until one is left |
//! | `scan f e` | as for `reduce` | a Hillis–Steele scan per block of [`BLOCK`] with the block totals, the totals scanned the same way (recursively), then each block's carry combined in; exclusive scans shift by one |
//!
//! Reduce and scan combine elements in their order (`f` need not be commutative), and the
//! neutral element pads partial tiles. Launch shapes are fixed by the kernels' shared arrays:
//! blocks of [`BLOCK`] threads; see [`Plan`].

use crate::front::tast;
use std::fmt::Write as _;

/// Threads per block of every skeleton kernel (the size of their shared arrays).
pub const BLOCK: u32 = 256;
/// Elements each thread of a `map` or `zip` handles: with one load per thread the H200 copies
/// at 2.7 TB/s, short of its 4.2; several independent loads in flight per thread close the gap.
pub const ELEMENTWISE_ITEMS: u32 = 4;
/// Consecutive elements each thread of a reduction folds before the block's tree (at most:
/// see [`reduce_items`]).
pub const REDUCE_ITEMS: u32 = 16;
/// Most tiles a reduction block folds before its tree (see [`reduce_chunks`]): on the H200,
/// two pipelined chunks of 16 items beat both one (nothing to overlap) and more (too few blocks).
pub const REDUCE_MAX_CHUNKS: u32 = 2;
/// Blocks a reduction pass keeps when the input allows (see [`reduce_chunks`]).
pub const REDUCE_MIN_BLOCKS: usize = 1024;
/// Shared memory a reduction block may use: `BLOCK × (items + 2)` elements.
pub const REDUCE_SHARED_BYTES: u32 = 32 * 1024;

/// Items per thread for elements of `bytes` bytes: [`REDUCE_ITEMS`], halved until the
/// block's shared arrays fit [`REDUCE_SHARED_BYTES`] (at least 1).
pub fn reduce_items(bytes: u32) -> u32 {
    let mut items = REDUCE_ITEMS;
    while items > 1 && BLOCK * (items + 2) * bytes.max(1) > REDUCE_SHARED_BYTES {
        items /= 2;
    }
    items
}

/// Bytes of one element in the natural (C) representation, padding aside: the size that
/// decides how much shared memory a tile takes.
fn elem_bytes(program: &tast::Program, ty: &tast::Ty) -> u32 {
    match ty {
        tast::Ty::Scalar(s) => s.size(),
        tast::Ty::Record(r) => program.records[r.0 as usize]
            .fields
            .iter()
            .map(|f| elem_bytes(program, &f.ty))
            .sum(),
        tast::Ty::Variant(v) => {
            4 + program.variants[v.0 as usize]
                .ctors
                .iter()
                .flat_map(|c| &c.args)
                .map(|t| elem_bytes(program, t))
                .sum::<u32>()
        }
        tast::Ty::Tuple(ts) => ts.iter().map(|t| elem_bytes(program, t)).sum(),
        _ => 4,
    }
}

/// Which skeleton to generate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skeleton {
    Map,
    Zip,
    /// `neutral` is a Sarek expression of the element type (`0.0`, `{ x = 0; y = 0 }`).
    Reduce {
        neutral: String,
    },
    Scan {
        inclusive: bool,
        neutral: String,
    },
}

impl Skeleton {
    pub fn name(&self) -> &'static str {
        match self {
            Skeleton::Map => "map",
            Skeleton::Zip => "zip",
            Skeleton::Reduce { .. } => "reduce",
            Skeleton::Scan {
                inclusive: true, ..
            } => "scan",
            Skeleton::Scan {
                inclusive: false, ..
            } => "exclusive_scan",
        }
    }
}

/// The generated kernels and how to launch them (every kernel's vectors come first, then
/// `n : int32`, the number of elements it works on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub skeleton: Skeleton,
    pub helper: String,
    /// Sarek source of the kernels; it calls the helper, so check it appended to the
    /// helper's file ([`Instance::program_source`]).
    pub source: String,
    pub plan: Plan,
    /// Element types as written in Sarek (inputs then output).
    pub types: Vec<String>,
}

impl Instance {
    /// The user's file followed by the generated kernels.
    pub fn program_source(&self, user_source: &str) -> String {
        format!("{user_source}\n\n{}", self.source)
    }
}

/// The kernels of an instance, by role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// `kernel (input...) (output) (n)`, `items` elements per thread (`BLOCK` apart, so
    /// each load is coalesced): grid `ceil(n / (BLOCK × items))`.
    Elementwise { kernel: String, items: u32 },
    /// `kernel (input) (partial) (n) (chunks)`: `chunks` from [`reduce_chunks`], grid
    /// `ceil(n / (tile × chunks))` blocks, each reducing `tile × chunks` elements into
    /// `partial.(block)`; repeat on the partials until one element is left.
    Reduce { kernel: String, tile: u32 },
    /// `blocks (input) (output) (sums) (n)`: grid `ceil(n / BLOCK)`; when there is more than
    /// one block, scan `sums` the same way (recursively) and run `add (output) (scanned) (n)`
    /// (grid `ceil(n / BLOCK)`); for an exclusive scan, `shift (inclusive) (output) (n)` last.
    Scan {
        blocks: String,
        add: String,
        shift: Option<String>,
    },
}

/// Why a skeleton cannot be generated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SkeletonError {
    #[error("no helper `{0}` in the program")]
    UnknownHelper(String),
    #[error("helper `{helper}` is polymorphic: give its parameters concrete types for a skeleton")]
    Polymorphic { helper: String },
    #[error("`{skeleton} {helper}` needs a helper of type {expected}; `{helper}` has type {found}")]
    Signature {
        skeleton: &'static str,
        helper: String,
        expected: &'static str,
        found: String,
    },
    #[error("`{helper}` takes or returns {ty}, which a vector cannot hold")]
    NotAnElement { helper: String, ty: String },
}

/// The Sarek spelling of a typed-AST type, when a vector can hold it.
fn spell(program: &tast::Program, ty: &tast::Ty) -> Option<String> {
    match ty {
        tast::Ty::Scalar(s) => Some(s.name().into()),
        tast::Ty::Record(r) => Some(program.records[r.0 as usize].name.clone()),
        tast::Ty::Variant(v) => Some(program.variants[v.0 as usize].name.clone()),
        tast::Ty::Tuple(ts) => {
            let parts: Option<Vec<String>> = ts.iter().map(|t| spell(program, t)).collect();
            Some(format!("({})", parts?.join(" * ")))
        }
        _ => None,
    }
}

/// Generate `skeleton` around helper `helper` of the type-checked (not yet monomorphised)
/// `program`; the kernels are named `<skeleton>_<helper>[_<role>]`.
pub fn instantiate(
    program: &tast::Program,
    helper: &str,
    skeleton: &Skeleton,
) -> Result<Instance, SkeletonError> {
    let f = program
        .functions
        .iter()
        .rev()
        .find(|f| f.name == helper)
        .ok_or_else(|| SkeletonError::UnknownHelper(helper.into()))?;
    if f.type_params > 0 {
        return Err(SkeletonError::Polymorphic {
            helper: helper.into(),
        });
    }
    let mut types = Vec::new();
    for t in f.params.iter().map(|p| &p.ty).chain([&f.ret]) {
        types.push(
            spell(program, t).ok_or_else(|| SkeletonError::NotAnElement {
                helper: helper.into(),
                ty: format!("{t:?}"),
            })?,
        );
    }
    let found = types.join(" -> ");
    let wrong = |expected| SkeletonError::Signature {
        skeleton: skeleton.name(),
        helper: helper.into(),
        expected,
        found: found.clone(),
    };
    let name = format!("{}_{helper}", skeleton.name());
    let mut src = format!(
        "(* Generated by sarek: the `{}` skeleton of `{helper}`. *)\n",
        skeleton.name()
    );
    let plan = match skeleton {
        Skeleton::Map => {
            let [a, b] = &types[..] else {
                return Err(wrong("'a -> 'b"));
            };
            elementwise_source(&mut src, &name, helper, &[("input", a)], b);
            Plan::Elementwise {
                kernel: name,
                items: ELEMENTWISE_ITEMS,
            }
        }
        Skeleton::Zip => {
            let [a, b, c] = &types[..] else {
                return Err(wrong("'a -> 'b -> 'c"));
            };
            elementwise_source(&mut src, &name, helper, &[("x", a), ("y", b)], c);
            Plan::Elementwise {
                kernel: name,
                items: ELEMENTWISE_ITEMS,
            }
        }
        Skeleton::Reduce { neutral } => {
            let a = associative(&types).ok_or_else(|| wrong("'a -> 'a -> 'a"))?;
            let items = reduce_items(elem_bytes(program, &f.ret));
            reduce_source(&mut src, &name, helper, a, neutral, items);
            Plan::Reduce {
                kernel: name,
                tile: BLOCK * items,
            }
        }
        Skeleton::Scan { inclusive, neutral } => {
            let a = associative(&types).ok_or_else(|| wrong("'a -> 'a -> 'a"))?;
            scan_source(&mut src, &name, helper, a, neutral, *inclusive);
            Plan::Scan {
                blocks: format!("{name}_blocks"),
                add: format!("{name}_add"),
                shift: (!inclusive).then(|| format!("{name}_shift")),
            }
        }
    };
    Ok(Instance {
        skeleton: skeleton.clone(),
        helper: helper.into(),
        source: src,
        plan,
        types,
    })
}

fn associative(types: &[String]) -> Option<&str> {
    match types {
        [a, b, c] if a == b && b == c => Some(a),
        _ => None,
    }
}

/// `output.(i) <- f inputs.(i)...` for [`ELEMENTWISE_ITEMS`] elements `BLOCK` apart per thread.
/// A thread whose elements all exist loads every input first and then stores, so its loads are
/// in flight together (the output may alias an input as far as the target compiler knows, so
/// it would not move a load above an earlier store itself); the last block's threads go one
/// element at a time. `left = n - base` cannot overflow where `base + k × BLOCK` could.
fn elementwise_source(
    src: &mut String,
    name: &str,
    helper: &str,
    inputs: &[(&str, &String)],
    output: &str,
) {
    let (block, items) = (BLOCK, ELEMENTWISE_ITEMS);
    let params: Vec<String> = inputs
        .iter()
        .map(|(v, t)| format!("({v} : {t} vector)"))
        .collect();
    let _ = writeln!(
        src,
        "let%kernel {name} {} (output : {output} vector) (n : int32) =\n  \
         let base = block_idx_x * {span} + thread_idx_x in\n  \
         let left = n - base in\n  \
         if {last} < left then begin",
        params.join(" "),
        span = block * items,
        last = block * (items - 1),
    );
    for k in 0..items {
        for (v, _) in inputs {
            let _ = writeln!(src, "    let {v}{k} = {v}.(base + {}) in", k * block);
        }
    }
    for k in 0..items {
        let args: Vec<String> = inputs.iter().map(|(v, _)| format!("{v}{k}")).collect();
        let sep = if k + 1 < items { ";" } else { "" };
        let _ = writeln!(
            src,
            "    output.(base + {}) <- {helper} {}{sep}",
            k * block,
            args.join(" ")
        );
    }
    let args: Vec<String> = inputs
        .iter()
        .map(|(v, _)| format!("{v}.(base + k * {block})"))
        .collect();
    let _ = writeln!(
        src,
        "  end else begin\n    \
         for k = 0 to {} do\n      \
         if k * {block} < left then output.(base + k * {block}) <- {helper} {}\n    \
         done\n  \
         end",
        items - 1,
        args.join(" ")
    );
}

/// `chunks` tiles of `BLOCK × items` elements per block (`chunks` is a kernel parameter the
/// launcher picks with [`reduce_chunks`]). Thread `t` owns the run of `items × chunks`
/// consecutive elements starting at `t × items × chunks` of the block's span; each chunk
/// brings the next `items` of every run into shared memory (a run's `items` elements are
/// consecutive in memory, so a warp's loads use whole 32-byte sectors), padded by one slot
/// every `items` so the per-thread folds hit distinct banks. The loads are software-pipelined:
/// the next chunk is read into registers (`v0`, `v1`, ...) while the block folds the current
/// one, so a thread keeps `items` loads in flight across the barriers. The block then
/// combines the runs with a tree of neighbours (`part.(2s·t) <- f part.(2s·t) part.(2s·t + s)`),
/// which keeps the elements' order.
fn reduce_source(src: &mut String, name: &str, f: &str, a: &str, neutral: &str, items: u32) {
    let (block, tile) = (BLOCK, BLOCK * items);
    let padded = tile + tile / items;
    let _ = write!(
        src,
        "let%kernel {name} (input : {a} vector) (partial : {a} vector) (n : int32) (chunks : int32) =
  let%shared (tile : {a}) = {padded} in
  let%shared (part : {a}) = {block} in
  let tid = thread_idx_x in
  let span = chunks * {items} in
  let base = block_idx_x * chunks * {tile} in
"
    );
    // Slot r of the tile: thread `owner` of the block, element `r - owner·items` of its run.
    for r in 0..items {
        let _ = write!(
            src,
            "  let q{r} = {} + tid in
  let owner{r} = q{r} / {items} in
  let at{r} = base + owner{r} * span + (q{r} - owner{r} * {items}) in
  let mut v{r} = (if at{r} < n then input.(at{r}) else {neutral}) in
",
            r * block
        );
    }
    let _ = writeln!(
        src,
        "  let mut acc = {neutral} in
  for c = 0 to chunks - 1 do"
    );
    for r in 0..items {
        let _ = writeln!(src, "    tile.(q{r} + owner{r}) <- v{r};");
    }
    let _ = write!(
        src,
        "    block_barrier ();
    let next = (c + 1) * {items} in
    if c + 1 < chunks then begin
"
    );
    for r in 0..items {
        let sep = if r + 1 < items { ";" } else { "" };
        let _ = writeln!(
            src,
            "      v{r} := (if at{r} + next < n then input.(at{r} + next) else {neutral}){sep}"
        );
    }
    let _ = write!(
        src,
        "    end;
    let run = tid * {} in
    for r = 0 to {} do
      acc := {f} acc tile.(run + r)
    done;
    block_barrier ()
  done;
  part.(tid) <- acc;
  block_barrier ();
  let mut s = 1 in
  while s < {block} do
    let idx = 2 * s * tid in
    if idx < {block} then part.(idx) <- {f} part.(idx) part.(idx + s);
    block_barrier ();
    s := s * 2
  done;
  if tid = 0 then partial.(block_idx_x) <- part.(0)
",
        items + 1,
        items - 1
    );
}

/// Tiles per block for a reduction pass over `n` elements with tiles of `tile`: enough
/// blocks to fill a large GPU (at least [`REDUCE_MIN_BLOCKS`] when `n` allows), and at most
/// [`REDUCE_MAX_CHUNKS`] tiles each, so that a block amortises its tree over many loads.
pub fn reduce_chunks(n: usize, tile: u32) -> u32 {
    let tiles = n.div_ceil(tile.max(1) as usize);
    (tiles / REDUCE_MIN_BLOCKS).clamp(1, REDUCE_MAX_CHUNKS as usize) as u32
}

fn scan_source(src: &mut String, name: &str, f: &str, a: &str, neutral: &str, inclusive: bool) {
    let block = BLOCK;
    let last = block - 1;
    let _ = write!(
        src,
        "let%kernel {name}_blocks (input : {a} vector) (output : {a} vector) (sums : {a} vector) (n : int32) =
  let%shared (buf : {a}) = {block} in
  let tid = thread_idx_x in
  let i = block_idx_x * {block} + tid in
  buf.(tid) <- (if i < n then input.(i) else {neutral});
  block_barrier ();
  let mut offset = 1 in
  while offset < {block} do
    let v = if tid >= offset then buf.(tid - offset) else {neutral} in
    block_barrier ();
    buf.(tid) <- {f} v buf.(tid);
    block_barrier ();
    offset := offset * 2
  done;
  if i < n then output.(i) <- buf.(tid);
  if tid = {last} then sums.(block_idx_x) <- buf.({last})

let%kernel {name}_add (output : {a} vector) (carry : {a} vector) (n : int32) =
  let i = global_thread_id in
  if i < n && i >= {block} then output.(i) <- {f} carry.(i / {block} - 1) output.(i)
"
    );
    if !inclusive {
        let _ = write!(
            src,
            "
let%kernel {name}_shift (inclusive : {a} vector) (output : {a} vector) (n : int32) =
  let i = global_thread_id in
  if i < n then output.(i) <- (if i = 0 then {neutral} else inclusive.(i - 1))
"
        );
    }
}

/// Parse and type-check (without monomorphising) one file, for [`instantiate`].
pub fn typed(
    sources: &crate::SourceMap,
    file: crate::FileId,
) -> Result<tast::Program, Vec<crate::Diagnostic>> {
    let ast = crate::front::parser::parse(file, sources.text(file))?;
    crate::front::typer::check_program(&ast)
}
