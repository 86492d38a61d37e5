//! The measuring loop: every variant of a benchmark checked once against
//! the sequential reference, then all of them timed in interleaved rounds,
//! and the median of each kept.
//!
//! A [`Bench`] is one program on one input with its variants (ours on the
//! CPU backend and its ablations, hand-written Rust, hand-written C). Each
//! variant is a closure that runs the computation once and returns how
//! long the computation itself took: a variant decides what its clock
//! covers ([`fresh`] for a computation that returns a new result, such as
//! `Program::run`; [`in_place`] for one that writes into an output kept
//! from run to run), so that allocating inputs, reading results back and
//! freeing them is never timed.
//!
//! Note [Interleaved rounds]
//! The machine is shared and its speed drifts (other processes, frequency,
//! the page cache). Timing variant A a hundred times and then variant B a
//! hundred times would fold that drift into the ratio of A to B. Instead
//! each round runs every variant once, in an order shuffled afresh for
//! each round (from a fixed seed, so that runs repeat), and the median
//! over rounds is reported: drift then moves all variants alike, and a
//! few disturbed rounds do not move a median. Rotating the order instead
//! is not enough: a variant then always follows the same one, and pays
//! whatever that one leaves behind. Black-Scholes' first variant, which
//! always followed `c-openmp`, measured 20.4 ms where it measured 16.4
//! alone (the OpenMP team still spinning, below). And each sample is the
//! second of two runs of its variant in a row, the first untimed: what
//! the previous variant leaves behind is paid by the first. On this
//! machine (a KVM guest) a run that follows the release of a few hundred
//! megabytes is slow for reasons outside the process: n-body's 4096
//! bodies took 3.8 ms after a 200 MB vector was written and freed, 1.9
//! ms otherwise, and a variant that followed `accelerate-no-fusion`
//! (whose intermediates are that large) paid it.
//!
//! Note [Quiet gap between samples]
//! Thread pools keep their threads spinning for a while after a parallel
//! loop before they sleep: libgomp by default for about 300 000 pause
//! loops (milliseconds; it showed as 13% of a run's profile), rayon for a
//! few rounds of yields. On a two-core machine a variant that starts while
//! another pool still spins shares its cores with it. So before every
//! sample the harness waits, untimed, until the process is quiet: no
//! thread but the caller is running or runnable (state `R` in
//! `/proc/self/task/*/stat`; `wait_until_quiet`), or `Plan::quiet_limit`
//! has passed. The process's CPU time does not tell: the kernel adds a
//! thread's time running on another core only at a tick or a switch, so
//! a libgomp worker spinning for 6 ms after its region showed no growth
//! over a millisecond's window, while its state read `R` throughout.
//! The Python peers' processes (`peers.rs`) count too: each registers
//! its process with `watch`, and their threads must be quiet as well. An
//! idle Numba process's libgomp team, or JAX's thread pool, spinning on
//! the second core made the next sample share it: Numba's n-body took
//! 32 ms in a whole run where it takes 3 alone (2026-11-30). A pool
//! that spins longer than `quiet_limit` (OpenBLAS, under NumPy and SciPy:
//! 100 to 200 ms) still would: so the peers' processes are also stopped
//! between their own commands (Note [Peers stopped between their
//! samples] in `peers.rs`).

use std::time::{Duration, Instant};

/// How big the inputs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// A few hundred elements: for the tests, which only check results.
    Tiny,
    /// Quick: a smoke run of the whole harness in seconds.
    Small,
    /// The sizes the report is about: vectors of 2^24 elements and more.
    Large,
}

impl Size {
    pub fn parse(s: &str) -> Option<Size> {
        match s {
            "tiny" => Some(Size::Tiny),
            "small" => Some(Size::Small),
            "large" => Some(Size::Large),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Size::Tiny => "tiny",
            Size::Small => "small",
            Size::Large => "large",
        }
    }

    /// One of three values, by size.
    pub fn pick<T>(self, tiny: T, small: T, large: T) -> T {
        match self {
            Size::Tiny => tiny,
            Size::Small => small,
            Size::Large => large,
        }
    }

    /// How many rounds to time at this size.
    pub fn plan(self) -> Plan {
        let quiet_limit = Duration::from_millis(50);
        match self {
            Size::Tiny => {
                Plan { min_rounds: 1, max_rounds: 3, budget: Duration::from_millis(50), quiet_limit }
            }
            Size::Small => {
                Plan { min_rounds: 3, max_rounds: 21, budget: Duration::from_millis(500), quiet_limit }
            }
            Size::Large => {
                Plan { min_rounds: 7, max_rounds: 51, budget: Duration::from_secs(8), quiet_limit }
            }
        }
    }
}

/// How long to measure one benchmark: as many rounds as fit in `budget`
/// (estimated from the checking run), within `min_rounds ..= max_rounds`.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub min_rounds: usize,
    pub max_rounds: usize,
    pub budget: Duration,
    /// The longest wait for quiet before a sample (Note [Quiet gap
    /// between samples]).
    pub quiet_limit: Duration,
}

/// Whether a run is the checking run (compare the result with the
/// reference) or a timed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    Check,
    Time,
}

/// One way of computing a benchmark's result.
pub struct Variant {
    pub name: &'static str,
    run: Box<dyn FnMut(Pass) -> Result<Duration, String>>,
}

/// One program on one input, with its variants and what a run of it
/// costs at least.
pub struct Bench {
    pub name: &'static str,
    /// The input, in words ("n = 16777216 f32").
    pub problem: String,
    /// The bytes a run must move to or from memory at least, counted as
    /// STREAM does: every input element read once, every output element
    /// written once (no write-allocate traffic). `None` where the program
    /// is not about memory traffic.
    pub bytes: Option<f64>,
    /// Floating-point operations of a run, where they are well defined.
    pub flops: Option<f64>,
    /// Whether memory bandwidth bounds the program at this size, so that
    /// its bandwidth is worth comparing with the triad's.
    pub memory_bound: bool,
    pub variants: Vec<Variant>,
    /// Lines printed after the table (the text front end's time).
    pub notes: Vec<String>,
}

impl Bench {
    pub fn new(name: &'static str, problem: String) -> Bench {
        Bench {
            name,
            problem,
            bytes: None,
            flops: None,
            memory_bound: false,
            variants: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a variant: `run` computes into the slot and returns the time
    /// its computation took ([`fresh`], [`in_place`]); `check` compares what
    /// the slot holds with the reference.
    pub fn variant<O: 'static>(
        &mut self,
        name: &'static str,
        mut run: impl FnMut(&mut Option<O>) -> Result<Duration, String> + 'static,
        check: impl Fn(&O) -> Result<(), String> + 'static,
    ) {
        let mut slot: Option<O> = None;
        let run = move |pass: Pass| {
            let t = run(&mut slot)?;
            if pass == Pass::Check {
                check(slot.as_ref().ok_or("the variant left no result")?)?;
            }
            Ok(t)
        };
        self.variants.push(Variant { name, run: Box::new(run) });
    }
}

/// Times a computation that returns a new result (`Program::run`): the
/// previous result is freed before the clock starts, the new one is kept
/// for the check.
pub fn fresh<O, E: std::fmt::Display>(
    slot: &mut Option<O>,
    f: impl FnOnce() -> Result<O, E>,
) -> Result<Duration, String> {
    drop(slot.take());
    let t = Instant::now();
    let out = f().map_err(|e| e.to_string())?;
    let elapsed = t.elapsed();
    *slot = Some(out);
    Ok(elapsed)
}

/// Times a computation that writes into an output made once (`init`, not
/// timed) and kept from run to run, as a hand-written program would.
pub fn in_place<O>(slot: &mut Option<O>, init: impl FnOnce() -> O, f: impl FnOnce(&mut O)) -> Duration {
    let out = slot.get_or_insert_with(init);
    let t = Instant::now();
    f(out);
    t.elapsed()
}

/// Times a computation whose result is small (a number): returned, kept
/// for the check.
pub fn value<O>(slot: &mut Option<O>, f: impl FnOnce() -> O) -> Duration {
    let t = Instant::now();
    let out = f();
    let elapsed = t.elapsed();
    *slot = Some(out);
    elapsed
}

/// The timings of one variant.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub variant: &'static str,
    pub samples: Vec<Duration>,
}

impl Measurement {
    pub fn median(&self) -> Duration {
        median(&self.samples)
    }
}

/// The median (the mean of the two middle samples for an even count).
pub fn median(samples: &[Duration]) -> Duration {
    let mut s = samples.to_vec();
    s.sort_unstable();
    match s.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2,
    }
}

/// Runs every variant once and compares its result with the reference;
/// the first mismatch is an error naming the variant.
pub fn check_all(bench: &mut Bench) -> Result<Vec<Duration>, String> {
    let name = bench.name;
    bench
        .variants
        .iter_mut()
        .map(|v| (v.run)(Pass::Check).map_err(|e| format!("{name}, variant {}: {e}", v.name)))
        .collect()
}

/// Checks every variant (Note [Interleaved rounds]: a benchmark never
/// times a wrong program), then times them in interleaved rounds.
pub fn measure(bench: &mut Bench, plan: &Plan) -> Result<Vec<Measurement>, String> {
    let first = check_all(bench)?;
    // each sample is a variant's second run in a row (Note [Interleaved
    // rounds])
    let round: Duration =
        first.iter().sum::<Duration>() * 2 + Duration::from_millis(4) * bench.variants.len() as u32;
    let fit = (plan.budget.as_secs_f64() / round.as_secs_f64().max(1e-9)) as usize;
    let rounds = fit.clamp(plan.min_rounds, plan.max_rounds);
    let n = bench.variants.len();
    let mut samples = vec![Vec::with_capacity(rounds); n];
    let mut rng = accelerate_programs::rng::Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut order: Vec<usize> = (0..n).collect();
    for _ in 0..rounds {
        shuffle(&mut order, &mut rng);
        for &i in &order {
            let v = &mut bench.variants[i];
            let mut t = Duration::ZERO;
            for _warm_then_timed in 0..2 {
                wait_until_quiet(plan.quiet_limit);
                t = (v.run)(Pass::Time).map_err(|e| format!("{}, variant {}: {e}", bench.name, v.name))?;
            }
            samples[i].push(t);
        }
    }
    Ok(bench
        .variants
        .iter()
        .zip(samples)
        .map(|(v, samples)| Measurement { variant: v.name, samples })
        .collect())
}

/// Fisher-Yates: `order` in an order drawn from `rng`.
fn shuffle(order: &mut [usize], rng: &mut accelerate_programs::rng::Rng) {
    for k in (1..order.len()).rev() {
        order.swap(k, rng.below(k + 1));
    }
}

/// Other processes of the run (the Python peers') whose threads a quiet
/// gap waits for too (Note [Quiet gap between samples]).
static WATCHED: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Makes the quiet gaps wait for process `pid`'s threads too.
pub fn watch(pid: u32) {
    WATCHED.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
}

/// Stops watching process `pid` (it is about to end).
pub fn unwatch(pid: u32) {
    WATCHED.lock().unwrap_or_else(|e| e.into_inner()).retain(|&p| p != pid);
}

/// Waits until no thread of this process but the caller, and none of the
/// watched processes', is running (Note [Quiet gap between samples]), at
/// most `limit`.
pub fn wait_until_quiet(limit: Duration) {
    const WINDOW: Duration = Duration::from_millis(1);
    let start = Instant::now();
    loop {
        std::thread::sleep(WINDOW);
        match running_threads() {
            // the caller reads its own state as running
            Some(running) if running > 1 && start.elapsed() < limit => {}
            Some(_) => return,
            None => {
                // no /proc here: wait the whole limit
                std::thread::sleep(limit.saturating_sub(start.elapsed()));
                return;
            }
        }
    }
}

/// How many threads of this process and of the watched ones are running
/// or runnable (state `R`), the caller among them; `None` where `/proc`
/// cannot tell.
fn running_threads() -> Option<usize> {
    let mut running = running_in("/proc/self/task")?;
    let watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for pid in watched {
        // a process that has ended runs nothing
        running += running_in(&format!("/proc/{pid}/task")).unwrap_or(0);
    }
    Some(running)
}

/// How many of the threads listed in `tasks` (a `/proc/PID/task`) are
/// running or runnable.
fn running_in(tasks: &str) -> Option<usize> {
    let mut running = 0;
    for task in std::fs::read_dir(tasks).ok()? {
        // a thread that exits between the listing and the read is not running
        let Ok(stat) = std::fs::read_to_string(task.ok()?.path().join("stat")) else { continue };
        // `pid (comm) state ...`: the name may hold spaces and parentheses
        let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next())?;
        running += usize::from(state == "R");
    }
    Some(running)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn median_of_odd_count_is_middle_sample() {
        assert_eq!(median(&ms(&[5, 1, 9])), Duration::from_millis(5));
    }

    #[test]
    fn median_of_even_count_is_mean_of_middle_two() {
        assert_eq!(median(&ms(&[4, 1, 8, 2])), Duration::from_millis(3));
    }

    #[test]
    fn rounds_give_each_variant_different_predecessors() {
        // Note [Interleaved rounds]: over a benchmark's rounds, variant 0
        // follows more than one variant, and every round runs each once
        let mut rng = accelerate_programs::rng::Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut order: Vec<usize> = (0..8).collect();
        let mut before_first = std::collections::BTreeSet::new();
        for _ in 0..7 {
            shuffle(&mut order, &mut rng);
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, (0..8).collect::<Vec<_>>());
            let at = order.iter().position(|&i| i == 0).unwrap();
            before_first.insert(if at == 0 { None } else { Some(order[at - 1]) });
        }
        assert!(before_first.len() > 2, "{before_first:?}");
    }

    #[test]
    fn a_spinning_thread_is_not_quiet() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinner = {
            let stop = stop.clone();
            std::thread::spawn(move || while !stop.load(std::sync::atomic::Ordering::Relaxed) {})
        };
        let start = Instant::now();
        wait_until_quiet(Duration::from_millis(30));
        let waited = start.elapsed();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        // while the other thread spins, the wait runs to its limit
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
    }

    #[test]
    fn a_watched_process_spinning_is_not_quiet() {
        let mut spinner =
            std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        watch(spinner.id());
        let start = Instant::now();
        wait_until_quiet(Duration::from_millis(30));
        let waited = start.elapsed();
        unwatch(spinner.id());
        spinner.kill().unwrap();
        spinner.wait().unwrap();
        // while the other process spins, the wait runs to its limit
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        // one that has ended runs nothing
        assert_eq!(running_in(&format!("/proc/{}/task", spinner.id())), None);
    }

    #[test]
    fn a_variant_whose_check_fails_is_never_timed() {
        let mut b = Bench::new("t", String::new());
        b.variant(
            "right",
            |s: &mut Option<i32>| Ok(value(s, || 1)),
            |&x| if x == 1 { Ok(()) } else { Err("no".into()) },
        );
        b.variant(
            "wrong",
            |s: &mut Option<i32>| Ok(value(s, || 2)),
            |&x| if x == 1 { Ok(()) } else { Err("no".into()) },
        );
        let plan = Size::Tiny.plan();
        let err = measure(&mut b, &plan).unwrap_err();
        assert!(err.contains("wrong"), "{err}");
    }
}
