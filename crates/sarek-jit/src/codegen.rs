//! Cranelift code generation: one native *block function* per kernel.
//!
//! `fn(ctx, block_x, block_y, block_z, shared, frame, fault) -> status` runs every thread of
//! one block: uniform nodes of the [`Tree`] become straight Cranelift control flow, segments
//! become thread loops (thread index and its x/y/z advance together, without divisions; a
//! spilled value's cell is its row plus the thread index times the cell size). Values are one Cranelift value per scalar leaf (bool as `i8` 0/1).
//! Kernel parameters, vector base pointers and lengths are loaded once at entry (hoisted out
//! of every thread loop). Helpers are inlined at each call (the IR has no recursion).
//!
//! Checked accesses: an element index is compared, unsigned, with the length (one compare and
//! a branch to a cold fault block); a failed check writes a [`FaultRecord`] naming the site and
//! returns [`STATUS_FAULT`]. Integer `/` and `mod` check for zero; `min_int / -1` wraps.

use crate::launch::{
    Compiled, Ctx, FaultRecord, Layout, STATUS_DIVERGENT, STATUS_FAULT, Site, SiteKind,
};
use crate::structure::{Node, Segment, Tree, is_value};
use crate::{JitError, JitOptions, WARP_SIZE, math};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, Block, FuncRef, InstBuilder, MemFlagsData as MemFlags, Signature, Type, Value, types,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};
use sarek_compiler::Span;
use sarek_compiler::intrinsics::{AtomicOp, Geometry, Intrinsic, MathFn, WarpOp};
use sarek_compiler::ir::{self, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar, UnOp};
use std::collections::HashMap;
use std::mem::offset_of;

mod hoist;
mod lanes;

type R<T> = Result<T, JitError>;

/// A hoisted thread loop runs [`UNROLLED_THREADS`] threads per iteration when its segment
/// has at most this many statements and expression nodes.
const PAIRED_GROUP_SIZE: usize = 40;
/// Threads per iteration of a small straight-line segment's hoisted thread loop (two lane
/// groups: one iteration streams a 64-byte line of each float32 vector, as a 16-lane
/// AVX-512 loop does). A segment with a loop runs one group per iteration: each copy would
/// repeat the loop, and a group already holds two independent vector chains.
const UNROLLED_THREADS: usize = 16;
/// A block function of more Cranelift instructions than this (before optimisation) is not
/// compiled a second time specialised for 1-D blocks: 1-D launches run the general one.
/// Compile time grows with size (register allocation most), and such a function is a long
/// inlined body (`fib_kernel`'s recursion inlined 8 deep: about 26,000 instructions), not a
/// thread loop whose x/y/z bookkeeping the specialisation saves. The next largest corpus
/// kernel has about 4,300 (`warp_neighbours`), the tiled matmul about 3,000.
const SPECIALISE_1D_MAX_INSTS: usize = 6000;

pub(crate) fn cty(s: Scalar) -> Type {
    match s {
        Scalar::Bool => types::I8,
        Scalar::I32 => types::I32,
        Scalar::I64 => types::I64,
        Scalar::F32 => types::F32,
        Scalar::F64 => types::F64,
    }
}

fn scalars(k: &Kernel, ty: &Ty) -> Vec<Scalar> {
    sarek_compiler::abi::leaves(k, ty)
        .into_iter()
        .map(|l| l.scalar)
        .collect()
}

/// Where an array variable's elements live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mem {
    /// Vector parameter number n (among the vector parameters).
    Global(u32),
    /// Declared shared array number n.
    Shared(u32),
    /// Declared per-thread array number n.
    Local(u32),
}

fn codegen_err(k: &Kernel, e: impl std::fmt::Display) -> JitError {
    JitError::Codegen {
        kernel: k.name.clone(),
        message: e.to_string(),
    }
}

pub(crate) fn compile(k: Kernel, tree: Tree, opts: &JitOptions) -> R<Compiled> {
    let layout = Layout::new(&k, tree.nslots);
    let mut flags = settings::builder();
    let set =
        |f: &mut settings::Builder, n: &str, v: &str| f.set(n, v).map_err(|e| codegen_err(&k, e));
    set(
        &mut flags,
        "opt_level",
        if opts.optimize { "speed" } else { "none" },
    )?;
    // The IR verifier checks our code generator, not the kernel: debug builds (the tests)
    // run it on every function; release builds skip it (up to a tenth of compile time).
    set(
        &mut flags,
        "enable_verifier",
        if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        },
    )?;
    set(&mut flags, "is_pic", "false")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    let isa = cranelift_native::builder()
        .map_err(|e| codegen_err(&k, e))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| codegen_err(&k, e))?;
    let mut jb = JITBuilder::with_isa(isa, default_libcall_names());
    jb.symbol("sarek_math32", math::math32 as *const u8);
    jb.symbol("sarek_math64", math::math64 as *const u8);
    let mut module = JITModule::new(jb);
    let ptr = module.target_config().pointer_type();

    let math_sig = |t: Type| {
        let mut s = module.make_signature();
        s.params.push(AbiParam::new(types::I32));
        s.params.extend([AbiParam::new(t); 3]);
        s.returns.push(AbiParam::new(t));
        s
    };
    let (s32, s64) = (math_sig(types::F32), math_sig(types::F64));
    let m32 = module
        .declare_function("sarek_math32", Linkage::Import, &s32)
        .map_err(|e| codegen_err(&k, e))?;
    let m64 = module
        .declare_function("sarek_math64", Linkage::Import, &s64)
        .map_err(|e| codegen_err(&k, e))?;

    let mut sig: Signature = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    sig.params.extend([AbiParam::new(types::I32); 3]);
    sig.params.extend([AbiParam::new(ptr); 3]);
    sig.params.push(AbiParam::new(types::I32));
    sig.returns.push(AbiParam::new(types::I32));

    let frontend = module.isa().frontend_config();
    let cells = frame_cells(&k, &tree);
    let mut sites = Vec::new();
    let mut grouped_segments = 0;
    let mut versioned_loops = 0;
    let mut ids = Vec::new();
    let mut listing = String::new();
    // Two block functions: any block shape, and 1-D blocks (thread index = x; y = z = 0).
    for one_d in [false, true] {
        if one_d && ids.len() == 2 {
            break;
        }
        let mut ctx = module.make_context();
        ctx.set_disasm(opts.keep_listing);
        ctx.func.signature = sig.clone();
        let mut fbc = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
            let math32 = module.declare_func_in_func(m32, b.func);
            let math64 = module.declare_func_in_func(m64, b.func);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let p = b.block_params(entry).to_vec();
            let mut g = Gen::new(
                &k,
                &layout,
                &tree,
                b,
                ptr,
                &p,
                [math32, math64],
                &mut sites,
                &cells,
            );
            g.one_d = one_d;
            g.lane_groups = opts.lane_groups;
            g.entry()?;
            g.blocks(&tree.nodes)?;
            grouped_segments = g.grouped;
            versioned_loops = g.versioned;
            let zero = g.b.ins().iconst(types::I32, 0);
            g.b.ins().return_(&[zero]);
            g.b.seal_all_blocks();
            g.b.finalize(frontend);
        }
        let insts: usize = ctx
            .func
            .layout
            .blocks()
            .map(|b| ctx.func.layout.block_insts(b).count())
            .sum();
        let name = format!("sarek_block{}_{}", if one_d { "1d" } else { "" }, k.name);
        let id = module
            .declare_function(&name, Linkage::Export, &sig)
            .map_err(|e| codegen_err(&k, e))?;
        module
            .define_function(id, &mut ctx)
            .map_err(|e| codegen_err(&k, format!("{e:?}")))?;
        if opts.keep_listing {
            listing += &format!("; {name}: Cranelift IR\n{}\n", ctx.func.display());
            if let Some(code) = ctx.compiled_code().and_then(|c| c.vcode.as_ref()) {
                listing += &format!("; {name}: machine code\n{code}\n");
            }
        }
        module.clear_context(&mut ctx);
        ids.push(id);
        if !one_d && insts > SPECIALISE_1D_MAX_INSTS {
            ids.push(id);
        }
    }
    module
        .finalize_definitions()
        .map_err(|e| codegen_err(&k, e))?;
    let code = [
        module.get_finalized_function(ids[0]),
        module.get_finalized_function(ids[1]),
    ];
    let mut compiled = Compiled::new(k, layout, sites, module, code);
    compiled.lane_group_segments = grouped_segments;
    compiled.hoisted_loops = versioned_loops;
    compiled.listing = opts.keep_listing.then_some(listing);
    Ok(compiled)
}

/// One spilled scalar leaf's cells: the frame holds one row per leaf, a cell per thread of
/// the block (`offset * nthreads` bytes from the frame, `size` bytes per cell), so the values
/// of consecutive threads are adjacent (a lane group loads a float32 leaf as one vector).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameCell {
    offset: u32,
    size: u32,
}

/// The frame's rows: 8-byte cells (int64, float64) first, then 4-byte cells (every other
/// scalar), so every row is aligned to its cell size. A thread's cells take at most the
/// 8 bytes per leaf the layout reserves.
fn frame_cells(k: &Kernel, tree: &Tree) -> HashMap<(VarId, usize), FrameCell> {
    let mut leaves: Vec<(u32, VarId, usize, u32)> = Vec::new();
    for (&v, &slot) in &tree.slots {
        for (l, s) in scalars(k, &k.var(v).ty).into_iter().enumerate() {
            leaves.push((slot + l as u32, v, l, s.size().max(4)));
        }
    }
    leaves.sort_by_key(|&(slot, _, _, size)| (std::cmp::Reverse(size), slot));
    let mut offset = 0;
    let mut cells = HashMap::new();
    for (_, v, l, size) in leaves {
        cells.insert((v, l), FrameCell { offset, size });
        offset += size;
    }
    cells
}

/// Whether statements contain a `for` or `while` loop.
fn has_loop(stmts: &ir::Block) -> bool {
    let mut found = false;
    sarek_compiler::ir::visit::for_each_stmt(stmts, &mut |s| {
        found |= matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. });
    });
    found
}

struct Thread {
    tid: Variable,
    xyz: [Variable; 3],
}

struct Gen<'a, 'f> {
    k: &'a Kernel,
    layout: &'a Layout,
    tree: &'a Tree,
    b: FunctionBuilder<'f>,
    ptr: Type,
    math: [FuncRef; 2],
    sites: &'a mut Vec<Site>,
    // Entry values.
    ctx: Value,
    block_idx: [Value; 3],
    /// The first block's x index of this call, and how many blocks along x it runs.
    first_block_x: Value,
    block_count: Value,
    block_dim: [Value; 3],
    grid_dim: [Value; 3],
    block_base: [Value; 3],
    nthreads: Value,
    /// The block's thread count as int64 (frame rows are this many cells long).
    nthreads64: Value,
    /// Where each spilled scalar leaf lives in the frame ([`frame_cells`]).
    cells: &'a HashMap<(VarId, usize), FrameCell>,
    shared: Value,
    frame: Value,
    fault: Value,
    local_base: Value,
    /// Per vector parameter: length (i32) and column base pointers.
    vecs: Vec<(Value, Vec<Value>)>,
    vars: HashMap<VarId, Vec<Variable>>,
    mems: HashMap<VarId, Mem>,
    th: Option<Thread>,
    /// Generating the 1-D variant: blocks are `n x 1 x 1`.
    one_d: bool,
    /// Run segments that allow it in lane groups ([`lanes`]).
    lane_groups: bool,
    /// Segments generated with lane groups.
    grouped: usize,
    /// Loops generated with their bounds checks hoisted ([`hoist`]).
    versioned: usize,
    /// Version `for` loops in lane groups (off in the checked copy of a thread loop that
    /// has a hoisted copy: it runs for the edge blocks only, and copies cost compile time).
    version_loops: bool,
    /// Break/continue targets; `None` marks a segment or helper boundary.
    loops: Vec<Option<(Block, Block)>>,
    /// Inlined helpers: the block after the call and the return-value variables.
    rets: Vec<(Block, Vec<Variable>)>,
    span: Span,
}

impl<'a, 'f> Gen<'a, 'f> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        k: &'a Kernel,
        layout: &'a Layout,
        tree: &'a Tree,
        b: FunctionBuilder<'f>,
        ptr: Type,
        p: &[Value],
        math: [FuncRef; 2],
        sites: &'a mut Vec<Site>,
        cells: &'a HashMap<(VarId, usize), FrameCell>,
    ) -> Self {
        Gen {
            k,
            layout,
            tree,
            b,
            ptr,
            math,
            sites,
            ctx: p[0],
            block_idx: [p[1], p[2], p[3]],
            first_block_x: p[1],
            block_count: p[7],
            block_dim: [p[1]; 3],
            grid_dim: [p[1]; 3],
            block_base: [p[1]; 3],
            nthreads: p[1],
            nthreads64: p[1],
            cells,
            shared: p[4],
            frame: p[5],
            fault: p[6],
            local_base: p[5],
            vecs: Vec::new(),
            vars: HashMap::new(),
            mems: HashMap::new(),
            th: None,
            one_d: false,
            lane_groups: true,
            grouped: 0,
            versioned: 0,
            version_loops: true,
            loops: Vec::new(),
            rets: Vec::new(),
            span: k.span,
        }
    }

    fn unsupported(&self, what: impl Into<String>) -> JitError {
        JitError::Unsupported {
            kernel: self.k.name.clone(),
            what: what.into(),
            span: self.span,
        }
    }

    fn trusted() -> MemFlags {
        MemFlags::trusted()
    }

    fn iconst(&mut self, ty: Type, v: i64) -> Value {
        self.b.ins().iconst(ty, v)
    }

    /// The blocks of this call, one after the other along x: each gets its block index,
    /// zeroed shared memory and local arrays, and runs the kernel's schedule.
    fn blocks(&mut self, nodes: &'a [Node]) -> R<()> {
        let bx = self.b.declare_var(types::I32);
        self.b.def_var(bx, self.first_block_x);
        let end = self.b.ins().iadd(self.first_block_x, self.block_count);
        let (hdr, body, exit) = self.enter_loop_header();
        let x = self.b.use_var(bx);
        let go = self.b.ins().icmp(IntCC::SignedLessThan, x, end);
        self.b.ins().brif(go, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        self.block_idx[0] = x;
        self.block_base[0] = self.b.ins().imul(x, self.block_dim[0]);
        let shared_words = self.layout.shared_bytes.div_ceil(8) as i64;
        if shared_words > 0 {
            let words = self.iconst(types::I64, shared_words);
            self.zero_words(self.shared, words);
        }
        if self.layout.local_bytes_per_thread > 0 {
            let n64 = self.b.ins().uextend(types::I64, self.nthreads);
            let words = self
                .b
                .ins()
                .imul_imm_s(n64, self.layout.local_bytes_per_thread.div_ceil(8) as i64);
            self.zero_words(self.local_base, words);
        }
        self.nodes(nodes)?;
        let next = self.b.ins().iadd_imm_s(x, 1);
        self.b.def_var(bx, next);
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// A loop's header, body and exit blocks, with the current block jumping to the header
    /// and the builder positioned in it (the header tests the condition and branches).
    fn enter_loop_header(&mut self) -> (Block, Block, Block) {
        let blocks = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().jump(blocks.0, &[]);
        self.b.switch_to_block(blocks.0);
        blocks
    }

    /// Store zero to `words` 8-byte words from `at`.
    fn zero_words(&mut self, at: Value, words: Value) {
        let i = self.b.declare_var(types::I64);
        let zero = self.iconst(types::I64, 0);
        self.b.def_var(i, zero);
        let (hdr, body, exit) = self.enter_loop_header();
        let iv = self.b.use_var(i);
        let go = self.b.ins().icmp(IntCC::UnsignedLessThan, iv, words);
        self.b.ins().brif(go, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        let off = self.b.ins().ishl_imm_u(iv, 3);
        let a = self.b.ins().iadd(at, off);
        self.b.ins().store(Self::trusted(), zero, a, 0);
        let next = self.b.ins().iadd_imm_s(iv, 1);
        self.b.def_var(i, next);
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
    }

    /// Which block of this call is running, for the fault record.
    fn store_block(&mut self) {
        let off = self.b.ins().isub(self.block_idx[0], self.first_block_x);
        self.b.ins().store(
            Self::trusted(),
            off,
            self.fault,
            offset_of!(FaultRecord, block) as i32,
        );
    }

    /// Loads the launch constants and parameters, binds memory variables.
    fn entry(&mut self) -> R<()> {
        let f = Self::trusted();
        let ld32 = |g: &mut Self, off: usize| g.b.ins().load(types::I32, f, g.ctx, off as i32);
        for a in 0..3 {
            self.block_dim[a] = ld32(self, offset_of!(Ctx, block_dim) + 4 * a);
            self.grid_dim[a] = ld32(self, offset_of!(Ctx, grid_dim) + 4 * a);
            self.block_base[a] = self.b.ins().imul(self.block_idx[a], self.block_dim[a]);
        }
        self.nthreads = ld32(self, offset_of!(Ctx, nthreads));
        let n64 = self.b.ins().uextend(types::I64, self.nthreads);
        self.nthreads64 = n64;
        let spill = self.b.ins().imul_imm_s(n64, self.layout.stride as i64);
        self.local_base = self.b.ins().iadd(self.frame, spill);
        let params = self
            .b
            .ins()
            .load(self.ptr, f, self.ctx, offset_of!(Ctx, params) as i32);
        let vecs = self
            .b
            .ins()
            .load(self.ptr, f, self.ctx, offset_of!(Ctx, vecs) as i32);
        let mut vi = 0u32;
        for &p in &self.k.params.clone() {
            let ty = self.k.var(p).ty.clone();
            if let Ty::Vector(elem) = &ty {
                let desc = vi as i32 * 16;
                let len64 = self.b.ins().load(types::I64, f, vecs, desc);
                let len = self.b.ins().ireduce(types::I32, len64);
                let cols_p = self.b.ins().load(self.ptr, f, vecs, desc + 8);
                let ncols = scalars(self.k, elem).len();
                let cols = (0..ncols)
                    .map(|c| self.b.ins().load(self.ptr, f, cols_p, 8 * c as i32))
                    .collect();
                self.vecs.push((len, cols));
                self.mems.insert(p, Mem::Global(vi));
                vi += 1;
            } else {
                let slot = self.layout.param_slot[&p];
                let sc = scalars(self.k, &ty);
                let vars = self.var(p);
                for (l, s) in sc.iter().enumerate() {
                    let v = self
                        .b
                        .ins()
                        .load(cty(*s), f, params, 8 * (slot as i32 + l as i32));
                    self.b.def_var(vars[l], v);
                }
            }
        }
        for (v, m) in &self.layout.arrays {
            self.mems.insert(
                *v,
                match m {
                    (MemSpace::Local, i) => Mem::Local(*i),
                    (_, i) => Mem::Shared(*i),
                },
            );
        }
        Ok(())
    }

    fn var(&mut self, v: VarId) -> Vec<Variable> {
        if let Some(vs) = self.vars.get(&v) {
            return vs.clone();
        }
        let vs: Vec<Variable> = scalars(self.k, &self.k.var(v).ty)
            .into_iter()
            .map(|s| self.b.declare_var(cty(s)))
            .collect();
        self.vars.insert(v, vs.clone());
        vs
    }

    fn read_var(&mut self, v: VarId) -> Vec<Value> {
        self.var(v).into_iter().map(|x| self.b.use_var(x)).collect()
    }

    fn write_var(&mut self, v: VarId, off: usize, vals: &[Value]) {
        let vs = self.var(v);
        for (i, x) in vals.iter().enumerate() {
            self.b.def_var(vs[off + i], *x);
        }
    }

    /// Continue emission in a fresh block (after a jump or return).
    fn dead_end(&mut self) {
        let b = self.b.create_block();
        self.b.switch_to_block(b);
    }

    fn site(&mut self, kind: SiteKind) -> u32 {
        self.sites.push(Site {
            span: self.span,
            kind,
        });
        self.sites.len() as u32 - 1
    }

    fn current_tid(&mut self) -> Value {
        match &self.th {
            Some(t) => {
                let v = t.tid;
                self.b.use_var(v)
            }
            None => self.iconst(types::I32, 0),
        }
    }

    /// Write the fault record and return `status`, in the current block.
    fn raise(&mut self, site: u32, a: Option<Value>, b: Option<Value>, status: i64) {
        let f = Self::trusted();
        let s = self.iconst(types::I32, site as i64);
        self.b
            .ins()
            .store(f, s, self.fault, offset_of!(FaultRecord, site) as i32);
        let t = self.current_tid();
        self.b
            .ins()
            .store(f, t, self.fault, offset_of!(FaultRecord, thread) as i32);
        self.store_block();
        for (v, off) in [
            (a, offset_of!(FaultRecord, a)),
            (b, offset_of!(FaultRecord, b)),
        ] {
            let v = match v {
                Some(v) if self.b.func.dfg.value_type(v) == types::I64 => v,
                Some(v) => self.b.ins().sextend(types::I64, v),
                None => self.iconst(types::I64, 0),
            };
            self.b.ins().store(f, v, self.fault, off as i32);
        }
        let st = self.iconst(types::I32, status);
        self.b.ins().return_(&[st]);
    }

    /// Branch to a cold fault path when `bad` is true.
    fn check(&mut self, bad: Value, kind: SiteKind, a: Option<Value>, b: Option<Value>) {
        self.check_status(bad, kind, a, b, STATUS_FAULT)
    }

    fn check_status(
        &mut self,
        bad: Value,
        kind: SiteKind,
        a: Option<Value>,
        b: Option<Value>,
        status: i64,
    ) {
        let site = self.site(kind);
        let (fail, ok) = (self.b.create_block(), self.b.create_block());
        self.b.set_cold_block(fail);
        self.b.ins().brif(bad, fail, &[], ok, &[]);
        self.b.switch_to_block(fail);
        self.raise(site, a, b, status);
        self.b.switch_to_block(ok);
    }

    // ---- block-level schedule ----

    fn nodes(&mut self, nodes: &'a [Node]) -> R<()> {
        for n in nodes {
            self.node(n)?;
        }
        Ok(())
    }

    fn node(&mut self, n: &'a Node) -> R<()> {
        match n {
            Node::Segment(s) => self.segment(s),
            Node::Warp {
                dst,
                op,
                a,
                b,
                span,
            } => {
                self.span = *span;
                self.warp_step(*dst, *op, *a, *b)
            }
            Node::If {
                cond,
                then_n,
                else_n,
                span,
            } => {
                self.span = *span;
                let c = self.uniform(*cond)?;
                let (t, e, m) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c, t, &[], e, &[]);
                self.b.switch_to_block(t);
                self.nodes(then_n)?;
                self.b.ins().jump(m, &[]);
                self.b.switch_to_block(e);
                self.nodes(else_n)?;
                self.b.ins().jump(m, &[]);
                self.b.switch_to_block(m);
                Ok(())
            }
            Node::For {
                var,
                start,
                end,
                downto,
                body,
                span,
            } => {
                self.span = *span;
                let s = self.uniform(*start)?;
                let e = self.uniform(*end)?;
                let (s, e) = (
                    self.b.ins().sextend(types::I64, s),
                    self.b.ins().sextend(types::I64, e),
                );
                let cnt = self.b.declare_var(types::I64);
                self.b.def_var(cnt, s);
                let (hdr, bodyb, exit) = self.enter_loop_header();
                let c = self.b.use_var(cnt);
                let cc = if *downto {
                    IntCC::SignedGreaterThanOrEqual
                } else {
                    IntCC::SignedLessThanOrEqual
                };
                let go = self.b.ins().icmp(cc, c, e);
                self.b.ins().brif(go, bodyb, &[], exit, &[]);
                self.b.switch_to_block(bodyb);
                let v = self.b.ins().ireduce(types::I32, c);
                self.write_var(*var, 0, &[v]);
                self.nodes(body)?;
                let c = self.b.use_var(cnt);
                let c = self.b.ins().iadd_imm_s(c, if *downto { -1 } else { 1 });
                self.b.def_var(cnt, c);
                self.b.ins().jump(hdr, &[]);
                self.b.switch_to_block(exit);
                Ok(())
            }
            Node::While { cond, body, span } => {
                let (hdr, bodyb, exit) = self.enter_loop_header();
                self.span = *span;
                let c = self.uniform(*cond)?;
                self.b.ins().brif(c, bodyb, &[], exit, &[]);
                self.b.switch_to_block(bodyb);
                self.nodes(body)?;
                self.b.ins().jump(hdr, &[]);
                self.b.switch_to_block(exit);
                Ok(())
            }
        }
    }

    /// The address of thread `thread`'s cell of leaf `leaf` of spilled variable `var`; the
    /// thread as [`Gen::frame_of`] gives it.
    fn slot_addr(&mut self, thread: Value, var: VarId, leaf: usize) -> R<Value> {
        let cell = *self
            .cells
            .get(&(var, leaf))
            .ok_or_else(|| self.unsupported("a block-uniform value that is not in the frame"))?;
        let row = self.b.ins().imul_imm_s(self.nthreads64, cell.offset as i64);
        let row = self.b.ins().iadd(self.frame, row);
        let at = self.b.ins().imul_imm_s(thread, cell.size as i64);
        Ok(self.b.ins().iadd(row, at))
    }

    /// Thread `t` (int32) as [`Gen::slot_addr`] takes it.
    fn frame_of(&mut self, t: Value) -> Value {
        self.b.ins().uextend(types::I64, t)
    }

    /// Thread 0's value of a scalar spilled variable, after checking every thread agrees.
    fn uniform(&mut self, var: VarId) -> R<Value> {
        if !self.tree.slots.contains_key(&var) {
            // A kernel parameter or the counter of an enclosing uniform loop: one value.
            return Ok(self.read_var(var)[0]);
        }
        let s = scalars(self.k, &self.k.var(var).ty);
        let ty = cty(s[0]);
        let f = Self::trusted();
        let zero = self.iconst(types::I32, 0);
        let thread0 = self.frame_of(zero);
        let a0 = self.slot_addr(thread0, var, 0)?;
        let v0 = self.b.ins().load(ty, f, a0, 0);
        let t = self.b.declare_var(types::I32);
        let one = self.iconst(types::I32, 1);
        self.b.def_var(t, one);
        let (hdr, bodyb, exit) = self.enter_loop_header();
        let tv = self.b.use_var(t);
        let go = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThan, tv, self.nthreads);
        self.b.ins().brif(go, bodyb, &[], exit, &[]);
        self.b.switch_to_block(bodyb);
        let ft = self.frame_of(tv);
        let a = self.slot_addr(ft, var, 0)?;
        let v = self.b.ins().load(ty, f, a, 0);
        let (x0, x) = if ty.is_float() {
            let it = ty.as_int();
            (
                self.b.ins().bitcast(it, MemFlags::new(), v0),
                self.b.ins().bitcast(it, MemFlags::new(), v),
            )
        } else {
            (v0, v)
        };
        let differ = self.b.ins().icmp(IntCC::NotEqual, x0, x);
        // The fault record names the first disagreeing thread.
        let site = self.site(SiteKind::Divergent);
        let (fail, ok) = (self.b.create_block(), self.b.create_block());
        self.b.set_cold_block(fail);
        self.b.ins().brif(differ, fail, &[], ok, &[]);
        self.b.switch_to_block(fail);
        let st = self.iconst(types::I32, site as i64);
        self.b
            .ins()
            .store(f, st, self.fault, offset_of!(FaultRecord, site) as i32);
        self.b
            .ins()
            .store(f, tv, self.fault, offset_of!(FaultRecord, thread) as i32);
        self.store_block();
        let r = self.iconst(types::I32, STATUS_DIVERGENT);
        self.b.ins().return_(&[r]);
        self.b.switch_to_block(ok);
        let tn = self.b.ins().iadd_imm_s(tv, 1);
        self.b.def_var(t, tn);
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
        Ok(v0)
    }

    /// One thread loop over the segment's statements, preceded by a loop over lane groups
    /// when the segment allows them ([`lanes`]).
    fn segment(&mut self, seg: &'a Segment) -> R<()> {
        let tid = self.b.declare_var(types::I32);
        let xyz = [
            self.b.declare_var(types::I32),
            self.b.declare_var(types::I32),
            self.b.declare_var(types::I32),
        ];
        let zero = self.iconst(types::I32, 0);
        for v in std::iter::once(tid).chain(xyz) {
            self.b.def_var(v, zero);
        }
        // The thread loop runs to `limit`: the block's end, or the end of a lane group that
        // is rerun thread by thread.
        let limit = self.b.declare_var(types::I32);
        self.b.def_var(limit, self.nthreads);
        let (hdr, bodyb, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let grouped = self.lane_groups && lanes::group_safe(self.k, seg);
        self.grouped += usize::from(grouped);
        let mut scalar_exit = exit;
        if grouped {
            let (ghdr, gbody, gredo, rest) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            // Groups stay within a row: 1-D blocks, or rows a multiple of the group.
            let shape_ok = if self.one_d {
                self.iconst(types::I8, 1)
            } else {
                let r = self
                    .b
                    .ins()
                    .band_imm_s(self.block_dim[0], lanes::LANES as i64 - 1);
                self.b.ins().icmp_imm_s(IntCC::Equal, r, 0)
            };
            // The thread loop may run a copy with its bounds checks and guards hoisted
            // ([`lanes::Gen::thread_plan`]).
            self.th = Some(Thread { tid, xyz });
            let versioned_before = self.versioned;
            match self.thread_plan(seg)? {
                Some((ok, hoisted)) => {
                    let (fhdr, fbody) = (self.b.create_block(), self.b.create_block());
                    self.versioned += 1;
                    let ok = self.b.ins().band(ok, shape_ok);
                    // A small straight-line body runs several groups per iteration while
                    // they fit (a fraction of the loop's overhead: saxpy's body is five
                    // instructions).
                    let groups = (UNROLLED_THREADS / lanes::LANES) as i64;
                    let paired = hoist::size(&seg.stmts) <= PAIRED_GROUP_SIZE
                        && !has_loop(&seg.stmts)
                        && groups > 1;
                    let first = if paired {
                        let (phdr, pbody) = (self.b.create_block(), self.b.create_block());
                        self.b.ins().brif(ok, phdr, &[], ghdr, &[]);
                        self.b.switch_to_block(phdr);
                        let t = self.b.use_var(tid);
                        let t_end = self.b.ins().iadd_imm_s(t, groups * lanes::LANES as i64);
                        let fits =
                            self.b
                                .ins()
                                .icmp(IntCC::UnsignedLessThanOrEqual, t_end, self.nthreads);
                        self.b.ins().brif(fits, pbody, &[], fhdr, &[]);
                        self.b.switch_to_block(pbody);
                        for _ in 0..groups {
                            let t = self.b.use_var(tid);
                            let x = if self.one_d {
                                t
                            } else {
                                self.b.use_var(xyz[0])
                            };
                            self.group_body(seg, t, x, gredo, Some(&hoisted))?;
                            self.advance_group(tid, xyz, lanes::LANES as i64);
                        }
                        self.b.ins().jump(phdr, &[]);
                        None
                    } else {
                        Some(ok)
                    };
                    if let Some(ok) = first {
                        self.b.ins().brif(ok, fhdr, &[], ghdr, &[]);
                    }
                    self.b.switch_to_block(fhdr);
                    let t = self.b.use_var(tid);
                    let t_end = self.b.ins().iadd_imm_s(t, lanes::LANES as i64);
                    let fits =
                        self.b
                            .ins()
                            .icmp(IntCC::UnsignedLessThanOrEqual, t_end, self.nthreads);
                    self.b.ins().brif(fits, fbody, &[], rest, &[]);
                    self.b.switch_to_block(fbody);
                    let x = if self.one_d {
                        t
                    } else {
                        self.b.use_var(xyz[0])
                    };
                    self.group_body(seg, t, x, gredo, Some(&hoisted))?;
                    self.advance_group(tid, xyz, lanes::LANES as i64);
                    self.b.ins().jump(fhdr, &[]);
                }
                None => {
                    self.b.ins().jump(ghdr, &[]);
                }
            }
            let had_plan = self.versioned > versioned_before;
            self.b.switch_to_block(ghdr);
            let t = self.b.use_var(tid);
            let t_end = self.b.ins().iadd_imm_s(t, lanes::LANES as i64);
            let fits = self
                .b
                .ins()
                .icmp(IntCC::UnsignedLessThanOrEqual, t_end, self.nthreads);
            let go = self.b.ins().band(fits, shape_ok);
            self.b.ins().brif(go, gbody, &[], rest, &[]);
            self.b.switch_to_block(rest);
            self.b.def_var(limit, self.nthreads);
            self.b.ins().jump(hdr, &[]);
            self.b.switch_to_block(gbody);
            self.th = Some(Thread { tid, xyz });
            let x = if self.one_d {
                t
            } else {
                self.b.use_var(xyz[0])
            };
            self.version_loops = !had_plan;
            self.group_body(seg, t, x, gredo, None)?;
            self.version_loops = true;
            self.advance_group(tid, xyz, lanes::LANES as i64);
            self.b.ins().jump(ghdr, &[]);
            self.b.switch_to_block(gredo);
            let t = self.b.use_var(tid);
            let t_end = self.b.ins().iadd_imm_s(t, lanes::LANES as i64);
            self.b.def_var(limit, t_end);
            self.b.ins().jump(hdr, &[]);
            // After a rerun group, back to groups.
            scalar_exit = self.b.create_block();
            self.b.switch_to_block(scalar_exit);
            let t = self.b.use_var(tid);
            let more = self.b.ins().icmp(IntCC::UnsignedLessThan, t, self.nthreads);
            self.b.ins().brif(more, ghdr, &[], exit, &[]);
        } else {
            self.b.ins().jump(hdr, &[]);
        }
        self.b.switch_to_block(hdr);
        let t = self.b.use_var(tid);
        let lim = self.b.use_var(limit);
        let go = self.b.ins().icmp(IntCC::UnsignedLessThan, t, lim);
        self.b.ins().brif(go, bodyb, &[], scalar_exit, &[]);
        self.b.switch_to_block(bodyb);
        let frame_t = self.frame_of(t);
        self.th = Some(Thread { tid, xyz });
        let f = Self::trusted();
        for &v in &seg.loads {
            let sc = scalars(self.k, &self.k.var(v).ty);
            let mut vals = Vec::new();
            for (l, s) in sc.iter().enumerate() {
                let a = self.slot_addr(frame_t, v, l)?;
                vals.push(self.b.ins().load(cty(*s), f, a, 0));
            }
            self.write_var(v, 0, &vals);
        }
        self.loops.push(None);
        for s in &seg.stmts {
            self.stmt(s)?;
        }
        self.loops.pop();
        for &v in &seg.stores {
            let vals = self.read_var(v);
            for (l, x) in vals.into_iter().enumerate() {
                let a = self.slot_addr(frame_t, v, l)?;
                self.b.ins().store(f, x, a, 0);
            }
        }
        self.advance(tid, xyz, 1);
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
        self.th = None;
        Ok(())
    }

    /// Next thread (or group of `step` threads in one row): x fastest, then y, then z,
    /// without divisions.
    fn advance(&mut self, tid: Variable, xyz: [Variable; 3], step: i64) {
        let t = self.b.use_var(tid);
        let t1 = self.b.ins().iadd_imm_s(t, step);
        self.b.def_var(tid, t1);
        if !self.one_d {
            let zero = self.iconst(types::I32, 0);
            let x = self.b.use_var(xyz[0]);
            let x1 = self.b.ins().iadd_imm_s(x, step);
            let wx = self.b.ins().icmp(IntCC::Equal, x1, self.block_dim[0]);
            let x2 = self.b.ins().select(wx, zero, x1);
            self.b.def_var(xyz[0], x2);
            let y = self.b.use_var(xyz[1]);
            let wx32 = self.b.ins().uextend(types::I32, wx);
            let y1 = self.b.ins().iadd(y, wx32);
            let wy = self.b.ins().icmp(IntCC::Equal, y1, self.block_dim[1]);
            let y2 = self.b.ins().select(wy, zero, y1);
            self.b.def_var(xyz[1], y2);
            let z = self.b.use_var(xyz[2]);
            let wy32 = self.b.ins().uextend(types::I32, wy);
            let z1 = self.b.ins().iadd(z, wy32);
            self.b.def_var(xyz[2], z1);
        }
    }

    /// Next lane group (`step` threads of one row): a new row only at the row's end, behind
    /// a branch the predictor learns (cheaper than [`Gen::advance`]'s selects per group).
    fn advance_group(&mut self, tid: Variable, xyz: [Variable; 3], step: i64) {
        let t = self.b.use_var(tid);
        let t1 = self.b.ins().iadd_imm_s(t, step);
        self.b.def_var(tid, t1);
        if self.one_d {
            return;
        }
        let x = self.b.use_var(xyz[0]);
        let x1 = self.b.ins().iadd_imm_s(x, step);
        let wrap = self.b.ins().icmp(IntCC::Equal, x1, self.block_dim[0]);
        let (same_row, next_row, done) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(wrap, next_row, &[], same_row, &[]);
        self.b.switch_to_block(same_row);
        self.b.def_var(xyz[0], x1);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(next_row);
        let zero = self.iconst(types::I32, 0);
        self.b.def_var(xyz[0], zero);
        let y = self.b.use_var(xyz[1]);
        let y1 = self.b.ins().iadd_imm_s(y, 1);
        let wy = self.b.ins().icmp(IntCC::Equal, y1, self.block_dim[1]);
        let y2 = self.b.ins().select(wy, zero, y1);
        self.b.def_var(xyz[1], y2);
        let z = self.b.use_var(xyz[2]);
        let wy32 = self.b.ins().uextend(types::I32, wy);
        let z1 = self.b.ins().iadd(z, wy32);
        self.b.def_var(xyz[2], z1);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    /// A warp operation over the whole block, reading other lanes' frame slots.
    fn warp_step(&mut self, dst: VarId, op: WarpOp, a: VarId, b: Option<VarId>) -> R<()> {
        let f = Self::trusted();
        let t = self.b.declare_var(types::I32);
        let zero = self.iconst(types::I32, 0);
        self.b.def_var(t, zero);
        let (hdr, bodyb, exit) = self.enter_loop_header();
        let tv = self.b.use_var(t);
        let go = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThan, tv, self.nthreads);
        self.b.ins().brif(go, bodyb, &[], exit, &[]);
        self.b.switch_to_block(bodyb);
        let ft = self.frame_of(tv);
        let lane = self.b.ins().band_imm_s(tv, (WARP_SIZE - 1) as i64);
        let base = self.b.ins().isub(tv, lane);
        let a_sc = scalars(self.k, &self.k.var(a).ty);
        match op {
            WarpOp::Shuffle | WarpOp::ShuffleDown | WarpOp::ShuffleUp | WarpOp::ShuffleXor => {
                let b = b.ok_or_else(|| self.unsupported("a shuffle without a lane"))?;
                let ba = self.slot_addr(ft, b, 0)?;
                let k32 = self.b.ins().load(types::I32, f, ba, 0);
                let k = self.b.ins().sextend(types::I64, k32);
                let lane64 = self.b.ins().uextend(types::I64, lane);
                let src = match op {
                    WarpOp::Shuffle => self.b.ins().band_imm_s(k, (WARP_SIZE - 1) as i64),
                    WarpOp::ShuffleDown => self.b.ins().iadd(lane64, k),
                    WarpOp::ShuffleUp => self.b.ins().isub(lane64, k),
                    _ => self.b.ins().bxor(lane64, k),
                };
                let in_warp =
                    self.b
                        .ins()
                        .icmp_imm_s(IntCC::UnsignedLessThan, src, WARP_SIZE as i64);
                let base64 = self.b.ins().uextend(types::I64, base);
                let abs = self.b.ins().iadd(base64, src);
                let n64 = self.b.ins().uextend(types::I64, self.nthreads);
                let in_block = self.b.ins().icmp(IntCC::UnsignedLessThan, abs, n64);
                let ok = self.b.ins().band(in_warp, in_block);
                let abs32 = self.b.ins().ireduce(types::I32, abs);
                let srct = self.b.ins().select(ok, abs32, tv);
                let fs = self.frame_of(srct);
                for (l, s) in a_sc.iter().enumerate() {
                    let from = self.slot_addr(fs, a, l)?;
                    let v = self.b.ins().load(cty(*s), f, from, 0);
                    let to = self.slot_addr(ft, dst, l)?;
                    self.b.ins().store(f, v, to, 0);
                }
            }
            WarpOp::VoteAll | WarpOp::VoteAny | WarpOp::Ballot => {
                // Bits of the predicate over this thread's warp (its live threads).
                let end = self.b.ins().iadd_imm_s(base, WARP_SIZE as i64);
                let end = self.b.ins().umin(end, self.nthreads);
                let u = self.b.declare_var(types::I32);
                let bits = self.b.declare_var(types::I32);
                self.b.def_var(u, base);
                self.b.def_var(bits, zero);
                let (h2, b2, x2) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().jump(h2, &[]);
                self.b.switch_to_block(h2);
                let uv = self.b.use_var(u);
                let more = self.b.ins().icmp(IntCC::UnsignedLessThan, uv, end);
                self.b.ins().brif(more, b2, &[], x2, &[]);
                self.b.switch_to_block(b2);
                let fu = self.frame_of(uv);
                let pa = self.slot_addr(fu, a, 0)?;
                let pv = self.b.ins().load(types::I8, f, pa, 0);
                let p32 = self.b.ins().uextend(types::I32, pv);
                let sh = self.b.ins().isub(uv, base);
                let bit = self.b.ins().ishl(p32, sh);
                let bv = self.b.use_var(bits);
                let nb = self.b.ins().bor(bv, bit);
                self.b.def_var(bits, nb);
                let un = self.b.ins().iadd_imm_s(uv, 1);
                self.b.def_var(u, un);
                self.b.ins().jump(h2, &[]);
                self.b.switch_to_block(x2);
                let bits = self.b.use_var(bits);
                let count = self.b.ins().isub(end, base);
                let count64 = self.b.ins().uextend(types::I64, count);
                let one = self.iconst(types::I64, 1);
                let all64 = self.b.ins().ishl(one, count64);
                let all64 = self.b.ins().iadd_imm_s(all64, -1);
                let all = self.b.ins().ireduce(types::I32, all64);
                let r = match op {
                    WarpOp::VoteAll => self.b.ins().icmp(IntCC::Equal, bits, all),
                    WarpOp::VoteAny => self.b.ins().icmp_imm_s(IntCC::NotEqual, bits, 0),
                    _ => bits,
                };
                let to = self.slot_addr(ft, dst, 0)?;
                self.b.ins().store(f, r, to, 0);
            }
        }
        let tn = self.b.ins().iadd_imm_s(tv, 1);
        self.b.def_var(t, tn);
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    // ---- statements (inside a thread loop) ----

    fn block(&mut self, stmts: &'a [Stmt]) -> R<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &'a Stmt) -> R<()> {
        self.span = s.span;
        match &s.kind {
            StmtKind::Let { init: None, .. }
            | StmtKind::Array { .. }
            | StmtKind::Fence { .. }
            | StmtKind::Barrier => {}
            StmtKind::Let {
                var,
                init: Some(init),
            } => {
                if is_value(self.k, *var) {
                    let v = self.expr(init)?;
                    self.write_var(*var, 0, &v);
                } else {
                    let m = self.mem_arg(init)?;
                    self.mems.insert(*var, m);
                }
            }
            StmtKind::Assign { place, value } => self.assign(place, value)?,
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let c = self.expr1(cond)?;
                let (t, e, m) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c, t, &[], e, &[]);
                self.b.switch_to_block(t);
                self.block(then_block)?;
                self.b.ins().jump(m, &[]);
                self.b.switch_to_block(e);
                self.block(else_block)?;
                self.b.ins().jump(m, &[]);
                self.b.switch_to_block(m);
            }
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                ..
            } => {
                let s0 = self.expr1(start)?;
                let e0 = self.expr1(end)?;
                let s0 = self.b.ins().sextend(types::I64, s0);
                let e0 = self.b.ins().sextend(types::I64, e0);
                let cnt = self.b.declare_var(types::I64);
                self.b.def_var(cnt, s0);
                let (hdr, bodyb, latch, exit) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().jump(hdr, &[]);
                self.b.switch_to_block(hdr);
                let c = self.b.use_var(cnt);
                let cc = if *downto {
                    IntCC::SignedGreaterThanOrEqual
                } else {
                    IntCC::SignedLessThanOrEqual
                };
                let go = self.b.ins().icmp(cc, c, e0);
                self.b.ins().brif(go, bodyb, &[], exit, &[]);
                self.b.switch_to_block(bodyb);
                let v = self.b.ins().ireduce(types::I32, c);
                self.write_var(*var, 0, &[v]);
                self.loops.push(Some((exit, latch)));
                self.block(body)?;
                self.loops.pop();
                self.b.ins().jump(latch, &[]);
                self.b.switch_to_block(latch);
                let c = self.b.use_var(cnt);
                let c = self.b.ins().iadd_imm_s(c, if *downto { -1 } else { 1 });
                self.b.def_var(cnt, c);
                self.b.ins().jump(hdr, &[]);
                self.b.switch_to_block(exit);
            }
            StmtKind::While { cond, body, .. } => {
                let (hdr, bodyb, exit) = self.enter_loop_header();
                self.span = s.span;
                let c = self.expr1(cond)?;
                self.b.ins().brif(c, bodyb, &[], exit, &[]);
                self.b.switch_to_block(bodyb);
                self.loops.push(Some((exit, hdr)));
                self.block(body)?;
                self.loops.pop();
                self.b.ins().jump(hdr, &[]);
                self.b.switch_to_block(exit);
            }
            StmtKind::Match {
                scrutinee, arms, ..
            } => self.match_(s.span, scrutinee, arms)?,
            StmtKind::Block(b) => self.block(b)?,
            StmtKind::Return(v) => {
                let Some((after, vars)) = self.rets.last().cloned() else {
                    return Err(self.unsupported("`return` in a kernel body"));
                };
                if let Some(v) = v {
                    let vals = self.expr(v)?;
                    for (x, var) in vals.iter().zip(&vars) {
                        self.b.def_var(*var, *x);
                    }
                }
                self.b.ins().jump(after, &[]);
                self.dead_end();
            }
            StmtKind::Break | StmtKind::Continue => {
                let Some(Some((brk, cont))) = self.loops.last().copied() else {
                    return Err(self.unsupported("`break`/`continue` out of a loop with barriers"));
                };
                let to = if matches!(s.kind, StmtKind::Break) {
                    brk
                } else {
                    cont
                };
                self.b.ins().jump(to, &[]);
                self.dead_end();
            }
            StmtKind::Trap(t) => {
                let site = self.site(SiteKind::Trap(t.message.clone()));
                self.raise(site, None, None, STATUS_FAULT);
                self.dead_end();
            }
            StmtKind::Native(_) => return Err(self.unsupported("opaque native code")),
        }
        Ok(())
    }

    fn match_(&mut self, span: Span, scrut: &'a Expr, arms: &'a [ir::MatchArm]) -> R<()> {
        let vals = self.expr(scrut)?;
        let Ty::Variant(vid) = scrut.ty else {
            return Err(self.unsupported("a match on a non-variant"));
        };
        let tag = vals[0];
        let merge = self.b.create_block();
        let mut default = None;
        for a in arms {
            match a.ctor {
                Some(c) => {
                    let (yes, no) = (self.b.create_block(), self.b.create_block());
                    let is = self.b.ins().icmp_imm_s(IntCC::Equal, tag, c as i64);
                    self.b.ins().brif(is, yes, &[], no, &[]);
                    self.b.switch_to_block(yes);
                    for (k, bind) in a.bindings.iter().enumerate() {
                        if let Some(v) = bind {
                            let off = payload_offset(self.k, vid, c, k as u32);
                            let n = scalars(self.k, &self.k.var(*v).ty).len();
                            self.write_var(*v, 0, &vals[off..off + n]);
                        }
                    }
                    self.block(&a.body)?;
                    self.b.ins().jump(merge, &[]);
                    self.b.switch_to_block(no);
                }
                None => default = Some(&a.body),
            }
        }
        match default {
            Some(body) => self.block(body)?,
            None => {
                self.span = span;
                let site = self.site(SiteKind::BadTag);
                self.raise(site, Some(tag), None, STATUS_FAULT);
                self.dead_end();
            }
        }
        self.b.ins().jump(merge, &[]);
        self.b.switch_to_block(merge);
        Ok(())
    }

    fn assign(&mut self, place: &'a LValue, value: &'a Expr) -> R<()> {
        let mut off = 0usize;
        let mut p = place;
        let mut fields = Vec::new();
        while let LValue::Field { base, field } = p {
            fields.push(*field);
            p = base;
        }
        let mut ty = match p {
            LValue::Var(v) => self.k.var(*v).ty.clone(),
            LValue::Index { base, .. } => self
                .k
                .var(*base)
                .ty
                .elem()
                .cloned()
                .ok_or_else(|| self.unsupported("an indexed place that is not an array"))?,
            LValue::Field { .. } => unreachable!("walked above"),
        };
        for f in fields.iter().rev() {
            let Ty::Record(id) = ty else {
                return Err(self.unsupported("a field of a non-record"));
            };
            off += field_offset(self.k, id, *f);
            ty = self.k.record(id).fields[*f as usize].ty.clone();
        }
        match p {
            LValue::Var(v) => {
                let vals = self.expr(value)?;
                self.write_var(*v, off, &vals);
            }
            LValue::Index { base, index } => {
                let m = self.mem_of(*base)?;
                let i = self.expr1(index)?;
                let vals = self.expr(value)?;
                let name = self.k.var(*base).name.clone();
                self.store(m, &name, i, off, &vals)?;
            }
            LValue::Field { .. } => unreachable!("walked above"),
        }
        Ok(())
    }

    // ---- memory ----

    fn mem_of(&self, v: VarId) -> R<Mem> {
        self.mems
            .get(&v)
            .copied()
            .ok_or_else(|| self.unsupported(format!("array `{}` here", self.k.var(v).name)))
    }

    fn mem_arg(&self, e: &Expr) -> R<Mem> {
        match e.kind {
            ExprKind::Var(v) => self.mem_of(v),
            _ => Err(self.unsupported("an array operand that is not a variable")),
        }
    }

    fn mem_leaves(&self, m: Mem) -> &[Scalar] {
        match m {
            Mem::Global(g) => &self.layout.vec_leaves[g as usize],
            Mem::Shared(s) => &self.layout.shared[s as usize].leaves,
            Mem::Local(l) => &self.layout.local[l as usize].leaves,
        }
    }

    /// The element count of `m` (i32).
    fn mem_len(&mut self, m: Mem) -> Value {
        match m {
            Mem::Global(g) => self.vecs[g as usize].0,
            Mem::Shared(s) => {
                let n = self.layout.shared[s as usize].size;
                self.iconst(types::I32, n as i64)
            }
            Mem::Local(l) => {
                let n = self.layout.local[l as usize].size;
                self.iconst(types::I32, n as i64)
            }
        }
    }

    /// The address of element 0 of single-column global or shared memory `m`.
    fn mem_base(&mut self, m: Mem) -> Value {
        match m {
            Mem::Global(g) => self.vecs[g as usize].1[0],
            Mem::Shared(s) => {
                let at = self.layout.shared[s as usize].offsets[0] as i64;
                self.b.ins().iadd_imm_s(self.shared, at)
            }
            Mem::Local(l) => {
                let at = self.layout.local[l as usize].offsets[0] as i64;
                self.b.ins().iadd_imm_s(self.local_base, at)
            }
        }
    }

    /// Checked address of leaf `leaf` of element `i` (i32).
    fn addr(&mut self, m: Mem, name: &str, what: &'static str, i: Value, leaf: usize) -> Value {
        let sc = self.mem_leaves(m)[leaf];
        let sz = sc.size() as i64;
        let len = self.mem_len(m);
        if leaf == 0 {
            let bad = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
            self.check(
                bad,
                SiteKind::Oob {
                    what,
                    name: name.to_string(),
                },
                Some(i),
                Some(len),
            );
        }
        let i64v = self.b.ins().uextend(types::I64, i);
        match m {
            Mem::Global(g) => {
                let col = self.vecs[g as usize].1[leaf];
                let off = self.b.ins().imul_imm_s(i64v, sz);
                self.b.ins().iadd(col, off)
            }
            Mem::Shared(s) => {
                let base = self.layout.shared[s as usize].offsets[leaf] as i64;
                let off = self.b.ins().imul_imm_s(i64v, sz);
                let a = self.b.ins().iadd(self.shared, off);
                self.b.ins().iadd_imm_s(a, base)
            }
            Mem::Local(l) => {
                let arr = &self.layout.local[l as usize];
                let (size, unit) = (arr.size as i64, arr.offsets[leaf] as i64);
                let n64 = self.b.ins().uextend(types::I64, self.nthreads);
                let region = self.b.ins().imul_imm_s(n64, unit);
                let t = self.current_tid();
                let t64 = self.b.ins().uextend(types::I64, t);
                let row = self.b.ins().imul_imm_s(t64, size);
                let el = self.b.ins().iadd(row, i64v);
                let off = self.b.ins().imul_imm_s(el, sz);
                let a = self.b.ins().iadd(self.local_base, region);
                self.b.ins().iadd(a, off)
            }
        }
    }

    fn load(&mut self, m: Mem, name: &str, i: Value, off: usize, n: usize) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(n);
        // The bounds check comes with leaf 0: always compute it.
        let a0 = self.addr(m, name, "read of", i, 0);
        for l in off..off + n {
            let a = if l == 0 {
                a0
            } else {
                self.addr(m, name, "read of", i, l)
            };
            let ty = cty(self.mem_leaves(m)[l]);
            out.push(self.b.ins().load(ty, Self::trusted(), a, 0));
        }
        Ok(out)
    }

    fn store(&mut self, m: Mem, name: &str, i: Value, off: usize, vals: &[Value]) -> R<()> {
        let a0 = self.addr(m, name, "write of", i, 0);
        for (k, v) in vals.iter().enumerate() {
            let l = off + k;
            let a = if l == 0 {
                a0
            } else {
                self.addr(m, name, "write of", i, l)
            };
            self.b.ins().store(Self::trusted(), *v, a, 0);
        }
        Ok(())
    }

    // ---- expressions ----

    fn expr1(&mut self, e: &'a Expr) -> R<Value> {
        let v = self.expr(e)?;
        v.first()
            .copied()
            .ok_or_else(|| self.unsupported("a unit value used as a scalar"))
    }

    fn expr(&mut self, e: &'a Expr) -> R<Vec<Value>> {
        Ok(match &e.kind {
            ExprKind::Lit(l) => vec![self.lit(*l)],
            ExprKind::Var(v) => {
                if !is_value(self.k, *v) {
                    return Err(self.unsupported("an array used as a value"));
                }
                self.read_var(*v)
            }
            ExprKind::Binary { op, lhs, rhs, .. } => vec![self.binary(*op, lhs, rhs)?],
            ExprKind::Unary { op, operand } => {
                let s = scalar(operand)?;
                let a = self.expr1(operand)?;
                vec![self.unary(*op, s, a)?]
            }
            ExprKind::Index { base, index } => {
                let m = self.mem_of(*base)?;
                let i = self.expr1(index)?;
                let n = self.mem_leaves(m).len();
                let name = self.k.var(*base).name.clone();
                self.load(m, &name, i, 0, n)?
            }
            ExprKind::Field { base, field } => {
                let Ty::Record(id) = base.ty else {
                    return Err(self.unsupported("a field of a non-record"));
                };
                let vals = self.expr(base)?;
                let off = field_offset(self.k, id, *field);
                let n = scalars(self.k, &e.ty).len();
                vals[off..off + n].to_vec()
            }
            ExprKind::Record { fields, .. } => {
                let mut out = Vec::new();
                for f in fields {
                    out.extend(self.expr(f)?);
                }
                out
            }
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => {
                let v = self.k.variant(*variant);
                let mut out = vec![self.iconst(types::I32, *ctor as i64)];
                for (ci, c) in v.ctors.iter().enumerate() {
                    if ci as u32 == *ctor {
                        for f in fields {
                            out.extend(self.expr(f)?);
                        }
                    } else {
                        for t in &c.fields {
                            for s in scalars(self.k, t) {
                                out.push(self.zero(s));
                            }
                        }
                    }
                }
                out
            }
            ExprKind::Tag(v) => vec![self.expr(v)?[0]],
            ExprKind::Payload { value, ctor, field } => {
                let Ty::Variant(vid) = value.ty else {
                    return Err(self.unsupported("a payload of a non-variant"));
                };
                let vals = self.expr(value)?;
                let off = payload_offset(self.k, vid, *ctor, *field);
                let n = scalars(self.k, &e.ty).len();
                vals[off..off + n].to_vec()
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                let c = self.expr1(cond)?;
                if pure(then_value) && pure(else_value) {
                    let a = self.expr(then_value)?;
                    let b = self.expr(else_value)?;
                    a.iter()
                        .zip(&b)
                        .map(|(x, y)| self.b.ins().select(c, *x, *y))
                        .collect()
                } else {
                    let tys: Vec<Type> = scalars(self.k, &e.ty).into_iter().map(cty).collect();
                    self.branch(c, tys, then_value, else_value)?
                }
            }
            ExprKind::Call { func, args } => self.call(*func, args, &e.ty)?,
            ExprKind::Intrinsic { op, args } => self.intrinsic(*op, args, e)?,
        })
    }

    /// `if c then a else b` as control flow, the result through block parameters.
    fn branch(&mut self, c: Value, tys: Vec<Type>, a: &'a Expr, b: &'a Expr) -> R<Vec<Value>> {
        let (tb, eb, m) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let params: Vec<Value> = tys
            .iter()
            .map(|t| self.b.append_block_param(m, *t))
            .collect();
        self.b.ins().brif(c, tb, &[], eb, &[]);
        self.b.switch_to_block(tb);
        let av = self.expr(a)?;
        let av: Vec<_> = av.into_iter().map(Into::into).collect::<Vec<_>>();
        self.b.ins().jump(m, &av);
        self.b.switch_to_block(eb);
        let bv = self.expr(b)?;
        let bv: Vec<_> = bv.into_iter().map(Into::into).collect::<Vec<_>>();
        self.b.ins().jump(m, &bv);
        self.b.switch_to_block(m);
        Ok(params)
    }

    fn lit(&mut self, l: Literal) -> Value {
        match l {
            Literal::Bool(b) => self.iconst(types::I8, b as i64),
            Literal::I32(x) => self.iconst(types::I32, x as i64),
            Literal::I64(x) => self.iconst(types::I64, x),
            Literal::F32(x) => self.b.ins().f32const(x),
            Literal::F64(x) => self.b.ins().f64const(x),
        }
    }

    fn zero(&mut self, s: Scalar) -> Value {
        match s {
            Scalar::F32 => self.b.ins().f32const(0.0),
            Scalar::F64 => self.b.ins().f64const(0.0),
            s => self.iconst(cty(s), 0),
        }
    }

    fn binary(&mut self, op: BinOp, lhs: &'a Expr, rhs: &'a Expr) -> R<Value> {
        let ty = scalar(lhs)?;
        let a = self.expr1(lhs)?;
        if matches!(op, BinOp::And | BinOp::Or) && !pure(rhs) {
            // Short circuit: the right operand runs only where it decides the result.
            let (rb, m) = (self.b.create_block(), self.b.create_block());
            let p = self.b.append_block_param(m, types::I8);
            let short = if op == BinOp::And {
                self.iconst(types::I8, 0)
            } else {
                self.iconst(types::I8, 1)
            };
            if op == BinOp::And {
                self.b.ins().brif(a, rb, &[], m, &[short.into()]);
            } else {
                self.b.ins().brif(a, m, &[short.into()], rb, &[]);
            }
            self.b.switch_to_block(rb);
            let bv = self.expr1(rhs)?;
            self.b.ins().jump(m, &[bv.into()]);
            self.b.switch_to_block(m);
            return Ok(p);
        }
        let b = self.expr1(rhs)?;
        if matches!(op, BinOp::Div | BinOp::Rem) && ty.is_int() {
            return Ok(self.divide(op, a, b));
        }
        self.binop(op, ty, a, b)
    }

    /// `a op b` on operands of type `ty`, except integer `/` and `mod` (see [`Self::divide`]).
    fn binop(&mut self, op: BinOp, ty: Scalar, a: Value, b: Value) -> R<Value> {
        let i = self.b.ins();
        Ok(match ty {
            Scalar::I32 | Scalar::I64 => match op {
                BinOp::Add => i.iadd(a, b),
                BinOp::Sub => i.isub(a, b),
                BinOp::Mul => i.imul(a, b),
                BinOp::Div => i.sdiv(a, b),
                BinOp::Rem => i.srem(a, b),
                BinOp::Eq => i.icmp(IntCC::Equal, a, b),
                BinOp::Ne => i.icmp(IntCC::NotEqual, a, b),
                BinOp::Lt => i.icmp(IntCC::SignedLessThan, a, b),
                BinOp::Le => i.icmp(IntCC::SignedLessThanOrEqual, a, b),
                BinOp::Gt => i.icmp(IntCC::SignedGreaterThan, a, b),
                BinOp::Ge => i.icmp(IntCC::SignedGreaterThanOrEqual, a, b),
                BinOp::BitAnd | BinOp::And => i.band(a, b),
                BinOp::BitOr | BinOp::Or => i.bor(a, b),
                BinOp::BitXor => i.bxor(a, b),
                BinOp::Shl => i.ishl(a, b),
                BinOp::LShr => i.ushr(a, b),
                BinOp::AShr => i.sshr(a, b),
            },
            Scalar::F32 | Scalar::F64 => match op {
                BinOp::Add => i.fadd(a, b),
                BinOp::Sub => i.fsub(a, b),
                BinOp::Mul => i.fmul(a, b),
                BinOp::Div => i.fdiv(a, b),
                BinOp::Rem => return Ok(self.math_call(ty, math::FMOD, &[a, b])),
                BinOp::Eq => i.fcmp(FloatCC::Equal, a, b),
                BinOp::Ne => i.fcmp(FloatCC::NotEqual, a, b),
                BinOp::Lt => i.fcmp(FloatCC::LessThan, a, b),
                BinOp::Le => i.fcmp(FloatCC::LessThanOrEqual, a, b),
                BinOp::Gt => i.fcmp(FloatCC::GreaterThan, a, b),
                BinOp::Ge => i.fcmp(FloatCC::GreaterThanOrEqual, a, b),
                _ => return Err(self.unsupported("a bitwise operator on floats")),
            },
            Scalar::Bool => match op {
                BinOp::Eq => i.icmp(IntCC::Equal, a, b),
                BinOp::Ne | BinOp::BitXor => i.icmp(IntCC::NotEqual, a, b),
                BinOp::And | BinOp::BitAnd | BinOp::Mul => i.band(a, b),
                BinOp::Or | BinOp::BitOr => i.bor(a, b),
                BinOp::Lt => i.icmp(IntCC::UnsignedLessThan, a, b),
                BinOp::Le => i.icmp(IntCC::UnsignedLessThanOrEqual, a, b),
                BinOp::Gt => i.icmp(IntCC::UnsignedGreaterThan, a, b),
                BinOp::Ge => i.icmp(IntCC::UnsignedGreaterThanOrEqual, a, b),
                _ => a,
            },
        })
    }

    /// Integer `/` and `mod`: a zero divisor faults; `min_int / -1` wraps, `mod -1` is 0.
    fn divide(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
        self.check(
            zero,
            SiteKind::DivZero {
                rem: op == BinOp::Rem,
            },
            None,
            None,
        );
        let ty = self.b.func.dfg.value_type(b);
        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
        let one = self.iconst(ty, 1);
        let d = self.b.ins().select(m1, one, b);
        if op == BinOp::Div {
            let q = self.b.ins().sdiv(a, d);
            let neg = self.b.ins().ineg(a);
            self.b.ins().select(m1, neg, q)
        } else {
            self.b.ins().srem(a, d)
        }
    }

    fn unary(&mut self, op: UnOp, s: Scalar, a: Value) -> R<Value> {
        let i = self.b.ins();
        Ok(match (op, s) {
            (UnOp::Neg, Scalar::I32 | Scalar::I64) => i.ineg(a),
            (UnOp::Neg, Scalar::F32 | Scalar::F64) => i.fneg(a),
            (UnOp::Not, Scalar::I32 | Scalar::I64) | (_, Scalar::Bool) => {
                i.icmp_imm_s(IntCC::Equal, a, 0)
            }
            (UnOp::BitNot, Scalar::I32 | Scalar::I64) => i.bnot(a),
            _ => return Err(self.unsupported("this unary operator on floats")),
        })
    }

    fn math_call(&mut self, s: Scalar, code: i32, args: &[Value]) -> Value {
        let f = if s == Scalar::F64 {
            self.math[1]
        } else {
            self.math[0]
        };
        let c = self.iconst(types::I32, code as i64);
        let x = args[0];
        let y = args.get(1).copied().unwrap_or(x);
        let z = args.get(2).copied().unwrap_or(x);
        let call = self.b.ins().call(f, &[c, x, y, z]);
        self.b.inst_results(call)[0]
    }

    fn convert(&mut self, v: Value, from: Scalar, to: Scalar) -> Value {
        use Scalar::*;
        let i = self.b.ins();
        match (from, to) {
            (a, b) if a == b => v,
            (Bool, _) => {
                let w = i.uextend(types::I64, v);
                self.convert(w, I64, to)
            }
            (F32, Bool) => {
                let z = i.f32const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, v, z)
            }
            (F64, Bool) => {
                let z = i.f64const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, v, z)
            }
            (_, Bool) => i.icmp_imm_s(IntCC::NotEqual, v, 0),
            (I32, I64) => i.sextend(types::I64, v),
            (I64, I32) => i.ireduce(types::I32, v),
            (I32 | I64, F32 | F64) => i.fcvt_from_sint(cty(to), v),
            (F32 | F64, I32 | I64) => i.fcvt_to_sint_sat(cty(to), v),
            (F32, F64) => i.fpromote(types::F64, v),
            (F64, F32) => i.fdemote(types::F32, v),
            _ => v,
        }
    }

    fn intrinsic(&mut self, op: Intrinsic, args: &'a [Expr], e: &'a Expr) -> R<Vec<Value>> {
        let (kname, span) = (self.k.name.clone(), self.span);
        let arg = |i: usize| {
            args.get(i).ok_or_else(|| JitError::Unsupported {
                kernel: kname.clone(),
                what: format!("{op:?} without operand {}", i + 1),
                span,
            })
        };
        Ok(vec![match op {
            Intrinsic::Geometry(g) => self.geometry(g)?,
            Intrinsic::BlockBarrier | Intrinsic::FenceBlock | Intrinsic::FenceDevice => {
                return Err(self.unsupported("a barrier or fence inside an expression"));
            }
            Intrinsic::Warp(_) => {
                return Err(self.unsupported("a warp operation here"));
            }
            Intrinsic::Atomic(a) => {
                let m = self.mem_arg(arg(0)?)?;
                let name = match arg(0)?.kind {
                    ExprKind::Var(v) => self.k.var(v).name.clone(),
                    _ => String::new(),
                };
                let i = self.expr1(arg(1)?)?;
                let mut vals = Vec::new();
                for k in 0..a.value_operands() {
                    vals.push(self.expr1(arg(2 + k)?)?);
                }
                self.atomic(a, m, &name, i, &vals)?
            }
            Intrinsic::Math(_)
            | Intrinsic::Abs
            | Intrinsic::Clz
            | Intrinsic::Popcount
            | Intrinsic::Min
            | Intrinsic::Max
            | Intrinsic::Convert => {
                let mut vals = Vec::with_capacity(args.len());
                let mut from = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.expr1(a)?);
                    from.push(scalar(a)?);
                }
                if vals.is_empty() {
                    arg(0)?;
                }
                let to = scalar(e)?;
                self.scalar_intrinsic(op, &from, to, &vals)?
            }
            Intrinsic::Length => {
                let m = self.mem_arg(arg(0)?)?;
                self.mem_len(m)
            }
        }])
    }

    /// Convert, min, max, abs, clz, popcount and math functions on operand values (one
    /// lane's, in a lane group) of types `from`, giving a `to`.
    fn scalar_intrinsic(
        &mut self,
        op: Intrinsic,
        from: &[Scalar],
        to: Scalar,
        x: &[Value],
    ) -> R<Value> {
        let s = from[0];
        Ok(match op {
            Intrinsic::Convert => self.convert(x[0], s, to),
            Intrinsic::Min | Intrinsic::Max => {
                let max = op == Intrinsic::Max;
                match s {
                    Scalar::I32 | Scalar::I64 if max => self.b.ins().smax(x[0], x[1]),
                    Scalar::I32 | Scalar::I64 => self.b.ins().smin(x[0], x[1]),
                    Scalar::Bool if max => self.b.ins().bor(x[0], x[1]),
                    Scalar::Bool => self.b.ins().band(x[0], x[1]),
                    _ => {
                        let f = if max { MathFn::Fmax } else { MathFn::Fmin };
                        self.math_call(s, math::code(f), x)
                    }
                }
            }
            Intrinsic::Abs => match s {
                Scalar::Bool => x[0],
                Scalar::I32 | Scalar::I64 => self.b.ins().iabs(x[0]),
                _ => self.b.ins().fabs(x[0]),
            },
            Intrinsic::Clz | Intrinsic::Popcount if s.is_int() => {
                if op == Intrinsic::Clz {
                    self.b.ins().clz(x[0])
                } else {
                    self.b.ins().popcnt(x[0])
                }
            }
            Intrinsic::Math(f) => match f {
                MathFn::Sqrt => self.b.ins().sqrt(x[0]),
                MathFn::Floor => self.b.ins().floor(x[0]),
                MathFn::Ceil => self.b.ins().ceil(x[0]),
                MathFn::Trunc => self.b.ins().trunc(x[0]),
                MathFn::Fabs => self.b.ins().fabs(x[0]),
                MathFn::Copysign => self.b.ins().fcopysign(x[0], x[1]),
                _ => self.math_call(s, math::code(f), x),
            },
            _ => return Err(self.unsupported(format!("{op:?} on these operands"))),
        })
    }

    fn geometry(&mut self, g: Geometry) -> R<Value> {
        let thread = |s: &mut Self, a: usize| -> R<Value> {
            let Some(t) = &s.th else {
                return Err(s.unsupported("a thread index outside a thread loop"));
            };
            let v = match (s.one_d, a) {
                (true, 0) => t.tid,
                (true, _) => return Ok(s.iconst(types::I32, 0)),
                _ => t.xyz[a],
            };
            Ok(s.b.use_var(v))
        };
        Ok(match g {
            Geometry::ThreadIdx(a) => thread(self, a.index())?,
            Geometry::BlockIdx(a) => self.block_idx[a.index()],
            Geometry::BlockDim(a) => self.block_dim[a.index()],
            Geometry::GridDim(a) => self.grid_dim[a.index()],
            Geometry::GlobalIdx(a) => {
                let t = thread(self, a.index())?;
                self.b.ins().iadd(self.block_base[a.index()], t)
            }
            Geometry::WarpSize => self.iconst(types::I32, WARP_SIZE as i64),
        })
    }

    /// Read-modify-write returning the old value: real atomics on global memory, plain
    /// accesses on block-local memory (one OS thread runs the whole block).
    fn atomic(&mut self, op: AtomicOp, m: Mem, name: &str, i: Value, vals: &[Value]) -> R<Value> {
        let leaves = self.mem_leaves(m);
        if leaves.len() != 1 {
            return Err(self.unsupported("an atomic on a vector of aggregates"));
        }
        let s = leaves[0];
        let ty = cty(s);
        let addr = self.addr(m, name, "atomic on", i, 0);
        let f = Self::trusted();
        let global = matches!(m, Mem::Global(_));
        let x = vals.first().copied();
        let y = vals.get(1).copied();
        let int = matches!(s, Scalar::I32 | Scalar::I64);
        if global && int && op != AtomicOp::Cas {
            use cranelift_codegen::ir::AtomicRmwOp as A;
            let (rop, v) = match op {
                AtomicOp::Add => (A::Add, x),
                AtomicOp::Sub => (A::Sub, x),
                AtomicOp::Min => (A::Smin, x),
                AtomicOp::Max => (A::Smax, x),
                AtomicOp::And => (A::And, x),
                AtomicOp::Or => (A::Or, x),
                AtomicOp::Xor => (A::Xor, x),
                AtomicOp::Exch => (A::Xchg, x),
                AtomicOp::Inc => (A::Add, Some(self.iconst(ty, 1))),
                AtomicOp::Dec => (A::Sub, Some(self.iconst(ty, 1))),
                AtomicOp::Cas => unreachable!("handled below"),
            };
            let v = v.ok_or_else(|| self.unsupported("an atomic without its operand"))?;
            return Ok(self.b.ins().atomic_rmw(ty, f, rop, addr, v));
        }
        if !global {
            let old = self.b.ins().load(ty, f, addr, 0);
            let new = self.atomic_apply(op, s, old, x, y)?;
            self.b.ins().store(f, new, addr, 0);
            return Ok(old);
        }
        // A compare-and-swap loop on the bits (floats, bools, and CAS itself).
        let it = if ty.is_float() { ty.as_int() } else { ty };
        let (hdr, done) = (self.b.create_block(), self.b.create_block());
        let init = self.b.ins().atomic_load(it, f, addr);
        let res = self.b.append_block_param(done, it);
        let cur = self.b.append_block_param(hdr, it);
        self.b.ins().jump(hdr, &[init.into()]);
        self.b.switch_to_block(hdr);
        let old = if ty.is_float() {
            self.b.ins().bitcast(ty, MemFlags::new(), cur)
        } else {
            cur
        };
        let new = self.atomic_apply(op, s, old, x, y)?;
        let new_bits = if ty.is_float() {
            self.b.ins().bitcast(it, MemFlags::new(), new)
        } else {
            new
        };
        let seen = self.b.ins().atomic_cas(f, addr, cur, new_bits);
        let same = self.b.ins().icmp(IntCC::Equal, seen, cur);
        self.b
            .ins()
            .brif(same, done, &[cur.into()], hdr, &[seen.into()]);
        self.b.switch_to_block(done);
        Ok(if ty.is_float() {
            self.b.ins().bitcast(ty, MemFlags::new(), res)
        } else {
            res
        })
    }

    /// The new value of an atomic location (for CAS, the old one when it does not match).
    fn atomic_apply(
        &mut self,
        op: AtomicOp,
        s: Scalar,
        old: Value,
        x: Option<Value>,
        y: Option<Value>,
    ) -> R<Value> {
        let ty = cty(s);
        let x = match (op, x) {
            (AtomicOp::Inc | AtomicOp::Dec, _) => match s {
                Scalar::F32 => self.b.ins().f32const(1.0),
                Scalar::F64 => self.b.ins().f64const(1.0),
                _ => self.iconst(ty, 1),
            },
            (_, Some(x)) => x,
            _ => return Err(self.unsupported("an atomic without its operand")),
        };
        let int = matches!(s, Scalar::I32 | Scalar::I64);
        let float = matches!(s, Scalar::F32 | Scalar::F64);
        Ok(match op {
            AtomicOp::Add | AtomicOp::Inc if int => self.b.ins().iadd(old, x),
            AtomicOp::Sub | AtomicOp::Dec if int => self.b.ins().isub(old, x),
            AtomicOp::Add | AtomicOp::Inc if float => self.b.ins().fadd(old, x),
            AtomicOp::Sub | AtomicOp::Dec if float => self.b.ins().fsub(old, x),
            AtomicOp::Min if int => self.b.ins().smin(old, x),
            AtomicOp::Max if int => self.b.ins().smax(old, x),
            AtomicOp::Min | AtomicOp::Max if float => {
                let f = if op == AtomicOp::Max {
                    MathFn::Fmax
                } else {
                    MathFn::Fmin
                };
                self.math_call(s, math::code(f), &[old, x])
            }
            AtomicOp::And if !float => self.b.ins().band(old, x),
            AtomicOp::Or if !float => self.b.ins().bor(old, x),
            AtomicOp::Xor if !float => self.b.ins().bxor(old, x),
            AtomicOp::Exch => x,
            AtomicOp::Cas => {
                let y = y.ok_or_else(|| self.unsupported("a CAS without its new value"))?;
                let (ob, xb) = if float {
                    let it = ty.as_int();
                    (
                        self.b.ins().bitcast(it, MemFlags::new(), old),
                        self.b.ins().bitcast(it, MemFlags::new(), x),
                    )
                } else {
                    (old, x)
                };
                let eq = self.b.ins().icmp(IntCC::Equal, ob, xb);
                self.b.ins().select(eq, y, old)
            }
            // The interpreter leaves the location unchanged (float bit operations, bool
            // arithmetic).
            _ => old,
        })
    }

    fn call(&mut self, func: ir::FuncId, args: &'a [Expr], ret: &Ty) -> R<Vec<Value>> {
        let f = self.k.function(func);
        if f.params.len() != args.len() {
            return Err(self.unsupported("a call with the wrong number of arguments"));
        }
        let mut values = Vec::new();
        for (p, a) in f.params.iter().zip(args) {
            if is_value(self.k, *p) {
                values.push((*p, Some(self.expr(a)?)));
            } else {
                let m = self.mem_arg(a)?;
                self.mems.insert(*p, m);
                values.push((*p, None));
            }
        }
        for (p, v) in values {
            if let Some(v) = v {
                self.write_var(p, 0, &v);
            }
        }
        let tys: Vec<Scalar> = scalars(self.k, ret);
        let rv: Vec<Variable> = tys.iter().map(|s| self.b.declare_var(cty(*s))).collect();
        for (v, s) in rv.iter().zip(&tys) {
            let z = self.zero(*s);
            self.b.def_var(*v, z);
        }
        let after = self.b.create_block();
        self.rets.push((after, rv.clone()));
        self.loops.push(None);
        let span = self.span;
        self.block(&f.body)?;
        self.span = span;
        self.loops.pop();
        self.rets.pop();
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        Ok(rv.into_iter().map(|v| self.b.use_var(v)).collect())
    }
}

fn scalar(e: &Expr) -> R<Scalar> {
    e.ty.scalar().ok_or_else(|| JitError::Unsupported {
        kernel: String::new(),
        what: format!("a scalar operand of type {:?}", e.ty),
        span: Span::DUMMY,
    })
}

/// Whether evaluating `e` can neither fault nor have an effect (so both sides of a select or
/// short circuit may run).
fn pure(e: &Expr) -> bool {
    let mut ok = true;
    crate::prepare::walk_expr(e, &mut |x| match &x.kind {
        ExprKind::Index { .. } | ExprKind::Call { .. } => ok = false,
        ExprKind::Binary {
            op: BinOp::Div | BinOp::Rem,
            lhs,
            ..
        } if lhs.ty.scalar().is_some_and(Scalar::is_int) => ok = false,
        ExprKind::Intrinsic {
            op: Intrinsic::Atomic(_) | Intrinsic::Warp(_),
            ..
        } => ok = false,
        _ => {}
    });
    ok
}

fn leaf_count(k: &Kernel, ty: &Ty) -> usize {
    sarek_compiler::abi::leaves(k, ty).len()
}

fn field_offset(k: &Kernel, rec: ir::RecordId, field: u32) -> usize {
    k.record(rec).fields[..field as usize]
        .iter()
        .map(|f| leaf_count(k, &f.ty))
        .sum()
}

fn payload_offset(k: &Kernel, v: ir::VariantId, ctor: u32, field: u32) -> usize {
    let ctors = &k.variant(v).ctors;
    let before: usize = ctors[..ctor as usize]
        .iter()
        .flat_map(|c| &c.fields)
        .map(|t| leaf_count(k, t))
        .sum();
    let within: usize = ctors[ctor as usize].fields[..field as usize]
        .iter()
        .map(|t| leaf_count(k, t))
        .sum();
    1 + before + within
}
