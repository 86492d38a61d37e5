//! # accelerate-programs
//!
//! The one corpus of Accelerate programs that the library's examples, its
//! integration tests and the benchmarks share, as Accelerate's
//! `accelerate-examples` and naga's test corpus are for theirs: each
//! program is written here once, so that an example, a test and a
//! benchmark that name it run the same `Acc` graph (the same operations
//! in the same order, the same constants and element types, hence the
//! same generated kernels).
//!
//! One module a program: the function that builds the computation (a
//! documented `pub fn` from `Acc`s to an `Acc`, the paper's section in its
//! doc), and where more than one caller needs them, its plain-Rust
//! reference (the same floating-point operations in the same order, so
//! that a result can be compared to the bit where no reassociation is
//! allowed) and the generators of its inputs. `rng` holds the
//! deterministic pseudo-random numbers every input is drawn from.
//!
//! Who uses it: `crates/accelerate/examples` (each example's program, its
//! `--check` reference and inputs), `crates/accelerate/tests` (as a
//! dev-dependency: the dot product, saxpy, Figure 3, n-body), and `accelerate-bench` (the
//! Accelerate variant of every benchmark, the sequential reference every
//! variant is checked against, and the inputs). The hand-written parallel
//! versions, the tolerances that are a benchmark's own and the command
//! lines stay with their callers.
//!
//! A program's source location is recorded in its graph (errors and the
//! comments of generated C name it), so the locations of these programs'
//! operations are in this crate, wherever they are run from.

pub mod audio;
pub mod blackscholes;
pub mod distances;
pub mod dotp;
pub mod figure3;
pub mod filter;
pub mod floyd;
pub mod histogram;
pub mod kmeans;
pub mod mandelbrot;
pub mod matmul;
pub mod md5;
pub mod moments;
pub mod nbody;
pub mod pagerank;
pub mod radixsort;
pub mod rng;
pub mod rounding;
pub mod rowsolve;
pub mod saxpy;
pub mod scan;
pub mod segsum;
pub mod smvm;
pub mod softmax;
pub mod stencil;
pub mod text;

pub use blackscholes::black_scholes;
pub use dotp::dotp;
pub use figure3::figure_3;
pub use mandelbrot::mandelbrot;
pub use saxpy::saxpy;
pub use smvm::{smvm, smvm_lengths};
