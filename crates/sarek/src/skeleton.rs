//! Skeletons through the facade: kernels generated around one of the program's helpers
//! ([`Program::map`], [`Program::zip`], [`Program::reduce`], [`Program::scan`]) and run with
//! their default launch shape (blocks of [`BLOCK`] threads; a reduction and a scan launch
//! several passes and allocate their temporaries). How the kernels are built:
//! [`sarek_compiler::skeleton`].
//!
//! ```
//! use sarek::{Backend, Program, Vector};
//! let program = Program::compile("ops.sarek", r#"
//!     type acc = { sum : float32; count : int32 }
//!     let square (x : float32) : float32 = x *. x
//!     let plus (a : int32) (b : int32) : int32 = a + b
//! "#)?;
//! let device = sarek::open(Backend::Interp)?;
//! let mut x = Vector::from_vec((1..=1000).map(|i| i as f32).collect());
//! let mut y = Vector::filled(0.0f32, 1000);
//! program.map("square")?.map(&*device, &mut x, &mut y)?;
//! assert_eq!(y.as_slice()[9], 100.0);
//!
//! let mut v = Vector::from_vec((1..=5000).collect::<Vec<i32>>());
//! let (total, _) = program.reduce("plus", "0")?.reduce(&*device, &mut v)?;
//! assert_eq!(total.columns[0], sarek::Column::I32(vec![5000 * 5001 / 2]));
//! let mut prefix = Vector::filled(0i32, 5000);
//! program.scan("plus", "0", true)?.scan(&*device, &mut v, &mut prefix)?;
//! assert_eq!(prefix.as_slice()[3], 1 + 2 + 3 + 4);
//! # Ok::<(), sarek::Error>(())
//! ```
//!
//! [`skeleton!`](crate::skeleton) does the generation while the Rust program compiles; a
//! helper of the wrong type is a compile error:
//!
//! ```compile_fail
//! // `negate : int32 -> int32` is no associative operator.
//! let s = sarek::skeleton!(reduce, "tests/kernels/skeleton_ops.sarek", negate, "0");
//! ```

use crate::{Device, Error, HostVector, Kernel, LaunchConfig, LaunchStats, Mirrored, Program};
use sarek_compiler::skeleton::{self as sk, BLOCK, Plan};
use sarek_runtime::RuntimeError;

pub use sarek_compiler::skeleton::Skeleton as SkeletonKind;

/// A skeleton instantiated for one helper: its generated program and kernels.
pub struct Skeleton {
    pub instance: sk::Instance,
    /// The helper's file with the generated kernels appended.
    pub program: Program,
    kernels: Vec<Kernel>,
}

impl Program {
    /// `output.(i) <- f input.(i)` for helper `f : a -> b`.
    pub fn map(&self, helper: &str) -> Result<Skeleton, Error> {
        self.skeleton(helper, sk::Skeleton::Map)
    }
    /// `output.(i) <- f x.(i) y.(i)` for helper `f : a -> b -> c`.
    pub fn zip(&self, helper: &str) -> Result<Skeleton, Error> {
        self.skeleton(helper, sk::Skeleton::Zip)
    }
    /// The fold of a vector with an associative `f : a -> a -> a` whose neutral element is
    /// the Sarek expression `neutral`.
    pub fn reduce(&self, helper: &str, neutral: &str) -> Result<Skeleton, Error> {
        self.skeleton(
            helper,
            sk::Skeleton::Reduce {
                neutral: neutral.into(),
            },
        )
    }
    /// The inclusive (or exclusive) prefix fold with `f` and `neutral`, as for `reduce`.
    pub fn scan(&self, helper: &str, neutral: &str, inclusive: bool) -> Result<Skeleton, Error> {
        self.skeleton(
            helper,
            sk::Skeleton::Scan {
                inclusive,
                neutral: neutral.into(),
            },
        )
    }

    /// Instantiate `skeleton` around `helper`.
    pub fn skeleton(&self, helper: &str, skeleton: sk::Skeleton) -> Result<Skeleton, Error> {
        let typed =
            sk::typed(&self.sources, self.file).map_err(|d| Error::compile(d, &self.sources))?;
        let instance = sk::instantiate(&typed, helper, &skeleton).map_err(Error::unlocated)?;
        let text = instance.program_source(self.sources.text(self.file));
        let program = Program::compile(self.sources.name(self.file), &text)?;
        Skeleton::assemble(program, instance)
    }
}

impl Skeleton {
    /// A skeleton from a source that already holds its generated kernels (what
    /// [`skeleton!`](crate::skeleton) embeds after generating and checking them at build
    /// time): `source` is compiled, nothing is generated.
    pub fn from_source(
        name: &str,
        source: &str,
        kind: sk::Skeleton,
        helper: &str,
    ) -> Result<Skeleton, Error> {
        let program = Program::compile(name, source)?;
        let typed = sk::typed(&program.sources, program.file)
            .map_err(|d| Error::compile(d, &program.sources))?;
        let instance = sk::instantiate(&typed, helper, &kind).map_err(Error::unlocated)?;
        Skeleton::assemble(program, instance)
    }

    fn assemble(program: Program, instance: sk::Instance) -> Result<Skeleton, Error> {
        let names: Vec<&String> = match &instance.plan {
            Plan::Elementwise { kernel, .. } | Plan::Reduce { kernel, .. } => vec![kernel],
            Plan::Scan { blocks, add, shift } => {
                std::iter::once(blocks).chain([add]).chain(shift).collect()
            }
        };
        let kernels = names
            .into_iter()
            .map(|n| program.kernel(n))
            .collect::<Result<_, _>>()?;
        Ok(Skeleton {
            instance,
            program,
            kernels,
        })
    }
}

/// Blocks of `BLOCK` threads covering `items` work items.
fn config(device: &dyn Device, items: usize) -> Result<LaunchConfig, Error> {
    let info = device.info();
    if info.max_threads_per_block < BLOCK {
        return Err(Error::Runtime(RuntimeError::Arguments(format!(
            "skeletons run blocks of {BLOCK} threads; {} allows {}",
            info.name, info.max_threads_per_block
        ))));
    }
    Ok(LaunchConfig {
        grid: [(items.div_ceil(BLOCK as usize)).max(1) as u32, 1, 1],
        block: [BLOCK, 1, 1],
    })
}

fn add(total: &mut LaunchStats, s: LaunchStats) {
    total.kernel_time += s.kernel_time;
    total.total_time += s.total_time;
}

fn len_i32(n: usize) -> Result<i32, Error> {
    i32::try_from(n).map_err(|_| {
        Error::Runtime(RuntimeError::Arguments(format!(
            "{n} elements do not fit the kernels' int32 length"
        )))
    })
}

impl Skeleton {
    /// The generated kernels, in launch order.
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// Threads an element-wise skeleton launches for `n` elements.
    fn elementwise_threads(&self, n: usize) -> usize {
        match self.instance.plan {
            Plan::Elementwise { items, .. } => n.div_ceil(items as usize),
            _ => n,
        }
    }

    /// Run a `map` skeleton over `input.len()` elements.
    pub fn map(
        &self,
        device: &dyn Device,
        input: &mut dyn Mirrored,
        output: &mut dyn Mirrored,
    ) -> Result<LaunchStats, Error> {
        let n = input.len();
        self.kernels[0]
            .launch()
            .config(config(device, self.elementwise_threads(n))?)
            .arg(input)
            .arg(output)
            .scalar(len_i32(n)?)
            .run(device)
    }

    /// Run a `zip` skeleton over `x.len()` elements.
    pub fn zip(
        &self,
        device: &dyn Device,
        x: &mut dyn Mirrored,
        y: &mut dyn Mirrored,
        output: &mut dyn Mirrored,
    ) -> Result<LaunchStats, Error> {
        let n = x.len();
        self.kernels[0]
            .launch()
            .config(config(device, self.elementwise_threads(n))?)
            .arg(x)
            .arg(y)
            .arg(output)
            .scalar(len_i32(n)?)
            .run(device)
    }

    /// Run a `reduce` skeleton: one element (the neutral element for an empty input) and the
    /// summed statistics of every pass.
    pub fn reduce(
        &self,
        device: &dyn Device,
        input: &mut dyn Mirrored,
    ) -> Result<(HostVector, LaunchStats), Error> {
        let k = &self.kernels[0];
        let tile = match self.instance.plan {
            Plan::Reduce { tile, .. } => tile as usize,
            _ => {
                return Err(Error::Runtime(RuntimeError::Arguments(format!(
                    "`{}` is not a reduce skeleton",
                    k.name()
                ))));
            }
        };
        let mut total = LaunchStats::default();
        let n = input.len();
        let (mut partial, mut n) = self.reduce_pass(device, k, input, n, tile, &mut total)?;
        while n > 1 {
            let (next, blocks) = self.reduce_pass(device, k, &mut partial, n, tile, &mut total)?;
            partial = next;
            n = blocks;
        }
        Ok((partial, total))
    }

    /// One reduction pass over the first `n` elements of `input`: the partials (one per
    /// block) and their number.
    fn reduce_pass(
        &self,
        device: &dyn Device,
        k: &Kernel,
        input: &mut dyn Mirrored,
        n: usize,
        tile: usize,
        total: &mut LaunchStats,
    ) -> Result<(HostVector, usize), Error> {
        let chunks = sk::reduce_chunks(n, tile as u32);
        let blocks = n.div_ceil(tile * chunks as usize).max(1);
        let mut partial = k.vector("partial", blocks)?;
        add(
            total,
            k.launch()
                .config(config(device, blocks * BLOCK as usize)?)
                .arg(input)
                .arg(&mut partial)
                .scalar(len_i32(n)?)
                .scalar(chunks as i32)
                .run(device)?,
        );
        Ok((partial, blocks))
    }

    /// Run a `scan` skeleton from `input` into `output` (same length).
    pub fn scan(
        &self,
        device: &dyn Device,
        input: &mut dyn Mirrored,
        output: &mut dyn Mirrored,
    ) -> Result<LaunchStats, Error> {
        let mut total = LaunchStats::default();
        let n = input.len();
        if self.kernels.len() == 3 {
            // Exclusive: the inclusive scan into a temporary, then shifted by one.
            let mut incl = self.kernels[0].vector("output", n)?;
            self.inclusive(device, input, &mut incl, &mut total)?;
            add(
                &mut total,
                self.kernels[2]
                    .launch()
                    .config(config(device, n)?)
                    .arg(&mut incl)
                    .arg(output)
                    .scalar(len_i32(n)?)
                    .run(device)?,
            );
        } else {
            self.inclusive(device, input, output, &mut total)?;
        }
        Ok(total)
    }

    fn inclusive(
        &self,
        device: &dyn Device,
        input: &mut dyn Mirrored,
        output: &mut dyn Mirrored,
        total: &mut LaunchStats,
    ) -> Result<(), Error> {
        let (blocks_k, add_k) = (&self.kernels[0], &self.kernels[1]);
        let n = input.len();
        let blocks = n.div_ceil(BLOCK as usize).max(1);
        let mut sums = blocks_k.vector("sums", blocks)?;
        add(
            total,
            blocks_k
                .launch()
                .config(config(device, n)?)
                .arg(input)
                .arg(&mut *output)
                .arg(&mut sums)
                .scalar(len_i32(n)?)
                .run(device)?,
        );
        if blocks > 1 {
            let mut carry = blocks_k.vector("output", blocks)?;
            self.inclusive(device, &mut sums, &mut carry, total)?;
            add(
                total,
                add_k
                    .launch()
                    .config(config(device, n)?)
                    .arg(output)
                    .arg(&mut carry)
                    .scalar(len_i32(n)?)
                    .run(device)?,
            );
        }
        Ok(())
    }
}
