//! Compiling generated C into a shared object and loading it, through a
//! kernel cache in memory and on disk (Note [The kernel cache]).
//!
//! The C compiler of the options (`CpuOptions::cc`) is run with
//! `std::process::Command`, as Accelerate's native backend runs clang and
//! Futhark's and TorchInductor's C backends run theirs; the object is
//! loaded with `libloading`.
//!
//! Flags (`FLAGS`), each justified against `docs/semantics.md`:
//! - `-O3 -march=native`: vectorised loops for this machine's vector unit;
//! - `-ffp-contract=off`: no fused multiply-add, so `a * b + c` rounds twice
//!   as the interpreter and Rust do;
//! - `-fno-math-errno`: `errno` is not observable from a program, and
//!   without it `sqrt` becomes one instruction and loops calling it can be
//!   vectorised;
//! - `-fno-trapping-math`: programs cannot observe floating-point traps,
//!   and the compiler may then evaluate both sides of a conditional;
//! - never `-ffast-math`: it would assume no NaN or infinity and
//!   reassociate, breaking the float rules (reductions reassociate
//!   explicitly instead, Note [Multi-accumulator reductions]), except in
//!   the fast-math mode a program asks for (Note [Fast math]);
//! - `-fopenmp-simd`: the compiler honours `#pragma omp simd` (Note
//!   [Optimistic checks]) and `declare simd` (Note [Vector math]) without
//!   OpenMP's runtime.
//!
//! The kernel cache: Note [The kernel cache] in `backend/cache.rs`.

use super::CpuOptions;
use crate::c::build::{command_words, Build};
use crate::c::prelude;
use crate::cache::{self, Folder};
use accelerate_base::error::{Error, Result};
use libloading::Library;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

/// The flags every kernel is compiled with (see the module docs).
pub(crate) const FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-std=gnu11",
    "-fPIC",
    "-shared",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fopenmp-simd",
    "-w",
];

// Note [Vector width]
// `-march=native` also sets how wide GCC makes the vectors of the loops it
// vectorises, from the processor it takes this one for: on Intel
// processors with AVX-512 (GCC 12 calls the Sapphire Rapids guest
// `rocketlake`) it prefers 256-bit vectors, as Intel's first AVX-512
// processors slowed their clocks for 512-bit instructions; on AMD's it
// uses the widest. Our kernels were tuned where the vectors were 512 bits
// (the AMD guest), and on the Intel one the loops that GCC vectorises
// itself ran at half that width: the matrix product's tiles (Note [Tiles
// in registers]) took 31 ms against rayon's 17, k-means 87 against 36
// (medians, `accelerate-bench matmul kmeans --size large`, 2026-12-01);
// with `-mprefer-vector-width=512`, 13 and 47. In a run of the whole set
// with and without it, the programs it slowed by more than their noise
// were `moments` and Mandelbrot (1.3 to 1.4x), whose hot loops are those of
// Note [Latency-bound lanes] in `kernel.rs`; n-body's step took 1.07x. So
// where the processor has AVX-512F, the kernels are compiled with it
// (`host_flags`), as OpenBLAS's kernels for such processors use 512-bit
// vectors.

// Note [Fast math]
// A program compiled with `Config::with_fast_math` (or
// `ACCELERATE_FLAGS=fast-math`) trades the float rules of
// docs/semantics.md for speed, as Numba's `fastmath=True`, Futhark's
// `-ffast-math` and Accelerate's LLVM backend offer: its kernels are
// compiled with `-ffast-math` (reassociation, reciprocals, no signed
// zeros, and no NaN or infinity: results that would be NaN or infinite
// are unspecified), `-ffp-contract=fast` (fused multiply-adds) and, on
// x86-64, `-mrecip` (approximate reciprocals and reciprocal square roots,
// `rcpps`/`rsqrtps` with one Newton-Raphson step, for `f32`). The other
// flags stay. What may not change is that the generated C has no
// undefined behaviour: the one place where a NaN could lead to it, a
// float-to-integer cast (out of range is undefined in C), tests for NaN on
// the value's bits (`acc_isnan_*` in `prelude_common.h`, with
// `ACC_FAST_MATH` defined), which `-ffinite-math-only` cannot fold away, so
// a NaN the program was promised not to make still casts to 0. Only the
// CPU backend has the mode so far; the interpreter and the CUDA backend
// keep the strict rules, so a fast-math program run there gives the
// strict result.
//
// Of `-ffast-math`'s assumptions, `-ffinite-math-only` is what lets GCC 12
// approximate `1 / sqrtf(x)` at all, and what it makes of it depends on
// the vector width. With 8-lane vectors it is `rsqrtps` and one
// Newton-Raphson step: the n-body step (`accelerate-bench nbody --size
// large`, AVX2 Zen 3) took 3.05 to 3.09 ms at best in three alternated
// runs against 3.41 to 3.49 without, level with Numba's `fastmath=True`
// (2026-12-01). With 16-lane vectors and no AVX512ER, GCC 12 has no
// reciprocal square root pattern: it replaces the square root and the
// division each by an approximation and a Newton step (`vrsqrt14ps`,
// `vrcp14ps`). On an AMD AVX-512 guest that step took 1.9 to 2.0 ms
// against 1.23 without `-ffinite-math-only` (2026-11-28). On an Intel one
// (Sapphire Rapids; medians, best in brackets) it took 2.89 (2.68) ms with
// 16-lane vectors, 3.65 (3.42) without `-ffinite-math-only`, and 2.34
// (2.26) with it and 8-lane vectors, where Numba's `fastmath=True` took
// 2.53 (2.43) (2026-12-01). So on a processor with AVX-512F but not ER,
// a fast-math program that takes square roots prefers 8-lane vectors
// (the opposite of Note [Vector width]), where its reciprocal square
// roots are one approximation and one step; the explicit vector types of
// the generated code (Note [Vector scans], Note [Tiles in registers])
// keep their widths. A fast-math program without square roots keeps the
// wide vectors.
const FAST_MATH: &[&str] = &["-ffast-math", "-ffp-contract=fast", "-DACC_FAST_MATH"];

/// The signature of every kernel function.
pub(crate) type KernelFn = unsafe extern "C" fn(*const super::exec::AccArgs, i64, i64);

/// A loaded shared object and its kernel functions, sorted by name.
pub(crate) struct Module {
    fns: Vec<(String, KernelFn)>,
    _lib: Library,
}

impl Module {
    pub fn get(&self, name: &str) -> Result<KernelFn> {
        self.function(name, "")
    }

    /// Function `kernel` followed by `suffix` (`k2` and `_private`): found
    /// without building the name, since every launch asks (with a
    /// `format!` and a hash of the name, a loop of three tiny launches an
    /// iteration took 2.2 to 2.3 µs an iteration; without, 2.1 to 2.2).
    pub fn function(&self, kernel: &str, suffix: &str) -> Result<KernelFn> {
        let wanted = || kernel.bytes().chain(suffix.bytes());
        self.fns
            .binary_search_by(|(name, _)| name.bytes().cmp(wanted()))
            .map(|i| self.fns[i].1)
            .map_err(|_| Error::Internal(format!("kernel function {kernel}{suffix} not loaded")))
    }
}

/// The C compiler: its command, the first line of its `--version`, and
/// whether it finds glibc's vector math library (Note [Vector math]).
struct Compiler {
    /// The program (the first word of the setting).
    command: String,
    /// The setting's other words, which go before every other argument.
    args: Vec<String>,
    version: String,
    libmvec: bool,
    /// Whether it is GCC: its `--version` names the Free Software
    /// Foundation (its first line is the name it was called by: `cc
    /// (Debian 12.2.0-14) 12.2.0`).
    gcc: bool,
}

// Note [Vector math]
// A loop calling `expf` vectorises only if the compiler knows a vector
// variant of `expf`. glibc ships them (libmvec, x86-64), and the prelude
// declares them as OpenMP `declare simd` functions when ACC_LIBMVEC is
// defined; `-fopenmp-simd` makes the compiler honour those declarations
// (and `#pragma omp simd`) without OpenMP's runtime. So where the compiler
// finds `libmvec.so`, kernels are compiled with `-DACC_LIBMVEC` (and
// `-fopenmp-simd`, as always) and linked with `-lmvec`: Black-Scholes then runs its
// `expf`/`logf` eight or sixteen lanes at a time. The vector functions
// keep every NaN and infinity rule and differ from the scalar ones by at
// most 4 ulp (glibc's documented bound, and the largest difference
// measured here over 2^24 arguments, for `logf`), which docs/semantics.md
// allows a backend for the transcendental functions.

/// The compiler `command`, probed once per process.
fn compiler(command: &str) -> std::result::Result<Arc<Compiler>, String> {
    type Probed = std::result::Result<Arc<Compiler>, String>;
    static COMPILERS: OnceLock<Mutex<HashMap<String, Probed>>> = OnceLock::new();
    let compilers = COMPILERS.get_or_init(Default::default);
    if let Some(c) = compilers.lock().unwrap_or_else(|e| e.into_inner()).get(command) {
        return c.clone();
    }
    let probed = probe(command.to_string()).map(Arc::new);
    compilers.lock().unwrap_or_else(|e| e.into_inner()).insert(command.to_string(), probed.clone());
    probed
}

/// The compiler of the setting `setting` (`CpuOptions::cc`, from `CC`):
/// a program and the arguments that follow it (`command_words`), run with
/// `--version` to see that it is there.
fn probe(setting: String) -> std::result::Result<Compiler, String> {
    let Some((command, args)) = command_words(&setting) else {
        return Err(format!(
            "the C compiler setting `{setting}` (CC) names no program: set CC to a C compiler, such as cc"
        ));
    };
    let named =
        if args.is_empty() { format!("`{command}`") } else { format!("`{command}` (of CC=\"{setting}\")") };
    match Command::new(&command).args(&args).arg("--version").output() {
        Ok(o) if o.status.success() => {
            let about = String::from_utf8_lossy(&o.stdout);
            let version = about.lines().next().unwrap_or("").to_string();
            let gcc = about.contains("Free Software Foundation");
            // prints the library's path if it finds it, else its name
            let libmvec = Command::new(&command)
                .args(&args)
                .arg("-print-file-name=libmvec.so")
                .output()
                .ok()
                .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
                .is_some_and(|p| p.is_absolute() && p.exists());
            Ok(Compiler { command, args, version, libmvec, gcc })
        }
        Ok(o) => Err(format!(
            "the C compiler {named} failed to report its version with --version: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("no C compiler: running {named} failed ({e}); install one or set CC")),
    }
}

/// Why the CPU backend cannot run here with compiler `command`, if it
/// cannot.
pub(crate) fn unavailable(command: &str) -> Option<String> {
    compiler(command).err()
}

/// The flags of a compilation of `source` (without the prelude): the
/// compiler setting's own arguments, `FLAGS`, the vector math flags where
/// the compiler has libmvec (Note [Vector math]), the processor's own
/// (`host_flags`), then the options' extra flags (for example the
/// sanitizer flags of the CI step).
fn flags(cc: &Compiler, options: &CpuOptions, source: &str) -> Vec<String> {
    let vector_math: &[&str] = if cc.libmvec { &["-DACC_LIBMVEC"] } else { &[] };
    let host = host_flags(cpu_features(), options.fast_math, source);
    // the fast-math flags come after the strict ones they override
    // (`-ffp-contract=fast` after `-ffp-contract=off`)
    let ours = FLAGS.iter().chain(vector_math).chain(&host).map(|s| s.to_string());
    cc.args.iter().cloned().chain(ours).chain(options.cflags.iter().cloned()).collect()
}

/// The flags that depend on the processor, from its `/proc/cpuinfo` flags
/// `features`, for a program whose kernels are `source` (without the
/// prelude): the vector width (Note [Vector width]) and the fast-math
/// flags (Note [Fast math]).
fn host_flags(features: &str, fast_math: bool, source: &str) -> Vec<&'static str> {
    let has = |flag: &str| features.split_whitespace().any(|f| f == flag);
    let mut flags = if fast_math { FAST_MATH.to_vec() } else { Vec::new() };
    if cfg!(target_arch = "x86_64") {
        if fast_math {
            flags.push("-mrecip");
        }
        if has("avx512f") {
            let roots = fast_math && !has("avx512er") && source.contains("sqrt");
            flags.push(if roots { "-mprefer-vector-width=256" } else { "-mprefer-vector-width=512" });
        }
    }
    flags
}

/// The libraries a kernel object links with.
fn libraries(cc: &Compiler) -> &'static [&'static str] {
    if cc.libmvec {
        &["-lmvec", "-lm"]
    } else {
        &["-lm"]
    }
}

/// The processor's features, which `-march=native` compiles for.
fn cpu_features() -> &'static str {
    static FEATURES: OnceLock<String> = OnceLock::new();
    FEATURES.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("flags") || l.starts_with("Features")).map(String::from)
            })
            .unwrap_or_default()
    })
}

/// The loaded object of a program's kernels (`source`, without the
/// prelude), with the functions `symbols`, from the cache or compiled
/// with the options' compiler and flags.
pub(crate) fn load(source: &str, symbols: &[String], options: &CpuOptions) -> Result<Arc<Module>> {
    let unavailable = |reason: String| Error::BackendUnavailable { backend: "cpu".into(), reason };
    let cc = compiler(&options.cc).map_err(unavailable)?;
    let full = format!("{}\n{source}", prelude());
    let flags = flags(&cc, options, source);
    let key = cache::key(&[
        env!("CARGO_PKG_VERSION"),
        &cc.command,
        &cc.version,
        &flags.join(" "),
        cpu_features(),
        &full,
    ]);

    static MEMORY: OnceLock<Mutex<cache::InMemory<Module>>> = OnceLock::new();
    let memory = MEMORY.get_or_init(Default::default);
    if let Some(m) = memory.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(m);
    }
    let command = Build { command: &cc.command, flags: &flags, libraries: libraries(&cc), ext: "c" };
    let module = module(command.load(&key, &full, "cpu", &options.cache)?, symbols)?;
    let module = Arc::new(module);
    memory.lock().unwrap_or_else(|e| e.into_inner()).insert(key, module.clone());
    Ok(module)
}

/// The kernel functions `symbols` of a loaded object.
fn module(lib: Library, symbols: &[String]) -> Result<Module> {
    let mut fns = Vec::with_capacity(symbols.len());
    for s in symbols {
        // SAFETY: every kernel function is generated with the signature
        // `KernelFn` (kernel.rs, `open_function`).
        let f: KernelFn = unsafe {
            *lib.get::<KernelFn>(s.as_bytes()).map_err(|e| {
                Error::Internal(format!("kernel function {s} missing from the compiled kernels: {e}"))
            })?
        };
        fns.push((s.clone(), f));
    }
    fns.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    fns.dedup_by(|a, b| a.0 == b.0);
    Ok(Module { fns, _lib: lib })
}

/// The loops GCC vectorises in a program's kernels (`source`, without the
/// prelude), compiled with the kernels' flags and `-fopt-info-vec-optimized`:
/// for each C function of the source, how many of its loops the compiler
/// reports vectorised. `None` where the compiler is not GCC (the report's
/// format is GCC's). For tests that check that the hot loops vectorise.
pub fn vectorised_loops_with(source: &str, options: &CpuOptions) -> Result<Option<Vec<(String, usize)>>> {
    let unavailable = |reason: String| Error::BackendUnavailable { backend: "cpu".into(), reason };
    let cc = compiler(&options.cc).map_err(unavailable)?;
    if !cc.gcc {
        return Ok(None);
    }
    let full = format!("{}\n{source}", prelude());
    // a private folder, removed when `folder` is dropped (Note [Trusting
    // the kernel cache])
    let folder = Folder::private().map_err(unavailable)?;
    let (c, obj) = (folder.path().join("kernels.c"), folder.path().join("kernels.o"));
    std::fs::write(&c, &full).map_err(|e| unavailable(format!("cannot write {}: {e}", c.display())))?;
    let out = Command::new(&cc.command)
        .args(flags(&cc, options, source).iter().filter(|f| *f != "-shared" && *f != "-w"))
        .args(["-c", "-fopt-info-vec-optimized", "-o"])
        .arg(&obj)
        .arg(&c)
        .output();
    let _ = std::fs::remove_file(&c);
    let _ = std::fs::remove_file(&obj);
    let out = out.map_err(|e| unavailable(format!("running `{}` failed: {e}", cc.command)))?;
    if !out.status.success() {
        return Err(Error::Internal(format!(
            "the C compiler failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    // the functions by their first line
    let mut starts: Vec<(usize, String)> = Vec::new();
    for (n, line) in full.lines().enumerate() {
        // (past the mark of Note [Latency-bound lanes])
        let line = line.strip_prefix("ACC_LATENCY_BOUND ").unwrap_or(line);
        let header = line.strip_prefix("void ").or_else(|| line.strip_prefix("static int "));
        if let Some(name) = header.and_then(|h| h.split_once('(')).map(|(name, _)| name) {
            if line.ends_with('{') {
                starts.push((n + 1, name.to_string()));
            }
        }
    }
    let mut counts: Vec<(String, usize)> = starts.iter().map(|(_, f)| (f.clone(), 0)).collect();
    let file = c.display().to_string();
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        let Some(rest) = line.strip_prefix(&file).and_then(|r| r.strip_prefix(':')) else { continue };
        if !rest.contains("optimized: loop vectorized") {
            continue;
        }
        let Some(at) = rest.split(':').next().and_then(|n| n.parse::<usize>().ok()) else { continue };
        if let Some(k) = starts.iter().rposition(|(first, _)| *first <= at) {
            counts[k].1 += 1;
        }
    }
    Ok(Some(counts))
}

#[cfg(test)]
mod tests {
    use super::host_flags;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn vectors_are_as_wide_as_the_processor_allows_but_for_fast_square_roots_without_er() {
        let (avx2, avx512) =
            ("flags : fpu sse2 avx avx2 fma", "flags : fpu avx2 fma avx512f avx512bw avx512vl");
        let roots = "float v2 = sqrtf(v1); float v3 = 1.0f / v2;";
        // strict: the widest vectors where there is AVX-512F, whatever the
        // kernels do; nothing of fast math
        assert!(host_flags(avx2, false, roots).is_empty());
        assert_eq!(host_flags(avx512, false, roots), ["-mprefer-vector-width=512"]);
        // a flag that only starts like AVX-512F's is not it
        assert!(host_flags("flags : avx2 avx512fp16", false, "").is_empty());
        // fast math: its flags first, then the reciprocals; finite values
        // assumed everywhere (Note [Fast math])
        let fast = ["-ffast-math", "-ffp-contract=fast", "-DACC_FAST_MATH", "-mrecip"];
        assert_eq!(host_flags(avx2, true, roots), fast);
        let er = format!("{avx512} avx512er");
        for (features, source, width) in [
            (avx512, roots, "-mprefer-vector-width=256"),
            (avx512, "float v2 = v1 / v0;", "-mprefer-vector-width=512"),
            (er.as_str(), roots, "-mprefer-vector-width=512"),
        ] {
            let flags = host_flags(features, true, source);
            assert_eq!(flags[..4], fast, "{features}");
            assert_eq!(flags[4..], [width], "{features}: {source}");
            assert!(!flags.contains(&"-fno-finite-math-only"));
        }
    }
}
