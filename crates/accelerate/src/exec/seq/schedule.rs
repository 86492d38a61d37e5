//! The adaptive chunk scheduler (the sequences thesis §5.4): how many
//! elements of a sequence the next step computes.
//!
//! Note [Choosing chunk sizes]
//! A step computes one chunk; its size is chosen again after each step
//! (never in the middle of one: the thesis' reason, that an irregular
//! chunk's data size is unknown until it is computed). Sizes are powers of
//! two, and what is measured is the compute time per unit of work of each
//! size (an element, and each 8 bytes of its inputs and results: the
//! elements of an irregular stream differ in size, and so do chunks of
//! the same number of them), smoothed by an exponentially weighted
//! moving average (weight
//! `ALPHA` on the newest sample), so that one noisy step does not move
//! the size:
//!
//! The first step of each size is not measured (its buffers are new: page
//! faults and cold caches make it slow); in the warm-up each size then
//! runs `SAMPLES` measured steps (their mean) before a decision is taken
//! on it, except that a step shorter than `TINY_STEP`, or a first step
//! less than `OVERHEAD_GROWTH` times the first step of half the size,
//! doubles the size at once (it is all overhead, as a GPU's launches are
//! for small chunks; such sizes are never measured).
//!
//! 1. Warm-up, from one element: the size doubles while doubling pays
//!    (the time per element fell by more than `PAYS`), while the time per
//!    element is within `PAYS` of the best so far (the flat part of the
//!    curve, whose extent the settling needs), or while a step takes
//!    less than `MIN_STEP` (launch and pool overheads dominate: the
//!    thesis' rule to grow while the processors are under-used).
//! 2. Then the size settles on the smallest of the sizes within `PAYS` of
//!    the best (where the curve is flat, the size that measured best is
//!    chosen by noise; the smallest of the flat part costs the least
//!    memory and hands results on soonest), and stays.
//!    Every `PROBE_EVERY` steps it tries a neighbour, alternately twice and
//!    half the size, and moves there only if the neighbour's smoothed time
//!    per element is better by more than `PAYS` (hysteresis: noise within
//!    that margin never moves it). So it follows elements that grow or
//!    shrink along an irregular stream, growing by one doubling on one
//!    probe's evidence and shrinking only on two (the thesis grows twice as
//!    fast as it shrinks).
//!
//! A sequence compiled once and run again (a collected sequence, in an
//! `awhile` loop) starts each run's warm-up at the size the last run
//! settled on (`starting_at`), not at one element.
//!
//! The memory budget caps the size: a step's live bytes are taken as
//! `LIVE_FACTOR` times its inputs' and results' bytes per element (the
//! chunk being computed, the next chunk's inputs read meanwhile, and the
//! results the consumer still holds), measured on the steps so far.
//! A size fixed by the user (`SeqOptions::chunk`) is used as it is, capped
//! by the budget too.

use std::collections::BTreeMap;
use std::time::Duration;

const ALPHA: f64 = 0.3;
const PAYS: f64 = 0.05;
const MIN_STEP: f64 = 2e-3;
/// A warm-up step shorter than this doubles the size at once, unmeasured:
/// it is all overhead.
const TINY_STEP: f64 = 1e-4;
/// Measured steps of each size in the warm-up before it decides.
const SAMPLES: usize = 2;
/// A first step of twice the size taking less than this factor of the
/// first step of the size before doubles the size again at once.
const OVERHEAD_GROWTH: f64 = 1.25;
const PROBE_EVERY: usize = 8;
/// How many times a step's input and result bytes are live at once.
pub(super) const LIVE_FACTOR: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Warmup,
    Steady,
}

/// The scheduler's state for one run of a sequence.
#[derive(Debug)]
pub(super) struct Scheduler {
    fixed: Option<usize>,
    budget: usize,
    /// The size the next step asks for.
    k: usize,
    /// The most elements the budget allows, from the bytes per element
    /// measured so far.
    cap: usize,
    /// Smoothed seconds per unit of work (Note [Choosing chunk sizes]),
    /// by chunk size, and how many steps
    /// of that size ran (the first of each is not counted: Note
    /// [Choosing chunk sizes]).
    per_elem: BTreeMap<usize, f64>,
    runs: BTreeMap<usize, usize>,
    /// The time of each size's first step (not measured, but enough to
    /// see a step that costs as much at twice the size: all overhead).
    first: BTreeMap<usize, f64>,
    phase: Phase,
    steps: usize,
    since_probe: usize,
    probe_up: bool,
    /// The size a probe left, to come back to.
    home: usize,
    /// Consecutive probes that said to shrink.
    shrink_votes: usize,
    bytes_per_elem: f64,
}

/// What the scheduler decided after a step, for the trace.
#[derive(Debug)]
pub(super) struct Decision {
    pub next: usize,
    pub why: &'static str,
}

impl Scheduler {
    pub fn new(fixed: Option<usize>, budget: usize) -> Scheduler {
        let k = fixed.unwrap_or(1).max(1);
        Scheduler {
            fixed,
            budget,
            k,
            cap: usize::MAX,
            per_elem: BTreeMap::new(),
            runs: BTreeMap::new(),
            first: BTreeMap::new(),
            phase: Phase::Warmup,
            steps: 0,
            since_probe: 0,
            probe_up: true,
            home: k,
            shrink_votes: 0,
            bytes_per_elem: 0.0,
        }
    }

    /// The warm-up starts from `k` elements (rounded down to a power of
    /// two) instead of one: the size an earlier run of the same sequence
    /// settled on (a collected sequence run again, as in an `awhile`
    /// loop). It still measures `k` and grows from it while that pays;
    /// the steady phase's probes shrink it if it is too large.
    pub fn starting_at(mut self, k: usize) -> Scheduler {
        if self.fixed.is_none() {
            self.k = prev_pow2(k.max(1));
            self.home = self.k;
        }
        self
    }

    /// The size a run settled on, once it has (the steady phase's home).
    pub fn settled(&self) -> Option<usize> {
        (self.fixed.is_none() && self.phase == Phase::Steady).then_some(self.home)
    }

    /// The size of the next chunk.
    pub fn next(&self) -> usize {
        self.k.min(self.cap).max(1)
    }

    /// The smoothed time per element of a size, if measured.
    pub fn per_elem(&self, k: usize) -> Option<f64> {
        self.per_elem.get(&k).copied()
    }

    /// The chunk size with the least smoothed time per element so far.
    pub fn best(&self) -> Option<usize> {
        self.per_elem.iter().min_by(|a, b| a.1.total_cmp(b.1)).map(|(&k, _)| k)
    }

    /// Records a step of `n` elements (asked `asked`) that took `time` to
    /// compute and whose inputs and results took `bytes`; decides the
    /// next size.
    pub fn record(&mut self, asked: usize, n: usize, time: Duration, bytes: usize) -> Decision {
        self.steps += 1;
        // a step asked before the last decision (a backend that gathers a
        // chunk ahead asks for the next size before this step's time is
        // known): measured, but no decision is taken on it
        let stale = asked != self.next();
        if n == 0 {
            return Decision { next: self.next(), why: "empty" };
        }
        let bpe = bytes as f64 / n as f64;
        self.bytes_per_elem = self.bytes_per_elem.max(bpe);
        if self.bytes_per_elem > 0.0 {
            let cap = self.budget as f64 / (LIVE_FACTOR as f64 * self.bytes_per_elem);
            self.cap = (cap.floor() as usize).max(1);
        }
        let secs = time.as_secs_f64();
        // a short last chunk says little about its size: not recorded;
        // nor is the first step of a size (its buffers are new: page
        // faults, cold caches)
        if n == asked {
            let runs = self.runs.entry(n).or_insert(0);
            *runs += 1;
            let runs = *runs;
            if runs == 1 {
                self.first.insert(n, secs);
            }
            if runs > 1 {
                // per unit of work: an element and each 8 bytes of its
                // inputs and results (on an irregular stream, chunks of
                // one size hold different amounts of data); the mean of
                // the first samples, then the moving average
                let t = secs / (n as f64 + bytes as f64 / 8.0);
                let w = (1.0 / (runs - 1) as f64).max(ALPHA);
                let e = self.per_elem.entry(n).or_insert(t);
                *e = w * t + (1.0 - w) * *e;
            }
        }
        if let Some(f) = self.fixed {
            self.k = f;
            return Decision { next: self.next(), why: "fixed" };
        }
        if stale {
            if self.k > self.cap {
                self.k = prev_pow2(self.cap);
                return Decision { next: self.next(), why: "budget" };
            }
            return Decision { next: self.next(), why: "asked before" };
        }
        let warm = self.phase == Phase::Warmup;
        if warm && n == asked && n == self.k && 2 * n <= self.cap {
            if secs < TINY_STEP {
                self.k = 2 * n;
                return Decision { next: self.next(), why: "grow (tiny)" };
            }
            // twice the elements in hardly more time than half as many
            // (first steps both): the step is overhead (a GPU's launches)
            let half = if n > 1 { self.first.get(&(n / 2)).copied() } else { None };
            if self.runs.get(&n) == Some(&1) && half.is_some_and(|h| secs < OVERHEAD_GROWTH * h) {
                self.k = 2 * n;
                return Decision { next: self.next(), why: "grow (overhead)" };
            }
        }
        let measured = self.runs.get(&n).copied().unwrap_or(0).saturating_sub(1);
        // (a size clearly worse than another on one sample is not sampled
        // again: in the warm-up that is a large chunk, and the stream's
        // elements are spent on it)
        let others =
            self.per_elem.iter().filter(|(&k, _)| k != n).map(|(_, &t)| t).fold(f64::INFINITY, f64::min);
        let clearly_worse = self.per_elem(n).is_some_and(|t| t > others * (1.0 + 2.0 * PAYS));
        if n == asked && (self.per_elem(n).is_none() || (warm && measured < SAMPLES && !clearly_worse)) {
            return Decision { next: self.next(), why: "measure" };
        }
        let why = match self.phase {
            Phase::Warmup => self.warmup(n, secs),
            Phase::Steady => self.steady(),
        };
        if self.k > self.cap {
            self.k = prev_pow2(self.cap);
            return Decision { next: self.next(), why: "budget" };
        }
        Decision { next: self.next(), why }
    }

    fn warmup(&mut self, n: usize, secs: f64) -> &'static str {
        let k = self.k;
        let here = self.per_elem(k);
        let below = if k > 1 { self.per_elem(k / 2) } else { None };
        let paid = match (here, below) {
            (Some(h), Some(b)) => h < b * (1.0 - PAYS),
            _ => true,
        };
        // still on the flat part of the curve: as good as the best so far
        let flat = match (here, self.best().and_then(|b| self.per_elem(b))) {
            (Some(h), Some(b)) => h <= b * (1.0 + PAYS),
            _ => true,
        };
        if (paid || flat || secs < MIN_STEP) && n == k && 2 * k <= self.cap {
            self.k = 2 * k;
            return "grow";
        }
        self.phase = Phase::Steady;
        self.k = self.flat_smallest().unwrap_or(k);
        self.home = self.k;
        "settle"
    }

    /// The smallest of the sizes whose smoothed time per unit of work is
    /// within `PAYS` of the best: where the curve is flat, which of its
    /// sizes measured best is noise, and the smallest costs the least
    /// memory and hands results on soonest.
    fn flat_smallest(&self) -> Option<usize> {
        let best = self.per_elem(self.best()?)?;
        self.per_elem.iter().find(|(_, &t)| t <= best * (1.0 + PAYS)).map(|(&k, _)| k)
    }

    fn steady(&mut self) -> &'static str {
        let k = self.k;
        if k != self.home {
            // a probe ran: move if it paid by more than PAYS, else go back
            let (h, p) = (self.per_elem(self.home), self.per_elem(k));
            let better = matches!((h, p), (Some(h), Some(p)) if p < h * (1.0 - PAYS));
            if better && k > self.home {
                self.home = k;
                self.shrink_votes = 0;
                return "probe: grow";
            }
            if better {
                self.shrink_votes += 1;
                if self.shrink_votes >= 2 {
                    self.home = k;
                    self.shrink_votes = 0;
                    return "probe: shrink";
                }
            } else if k < self.home {
                self.shrink_votes = 0;
            }
            self.k = self.home;
            return "probe: stay";
        }
        self.since_probe += 1;
        if self.since_probe >= PROBE_EVERY {
            self.since_probe = 0;
            self.probe_up = !self.probe_up;
            if self.probe_up && 2 * k <= self.cap {
                self.k = 2 * k;
                return "probe up";
            }
            if k > 1 {
                self.k = k / 2;
                return "probe down";
            }
        }
        "stay"
    }
}

fn prev_pow2(x: usize) -> usize {
    if x <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - x.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cost model of a step: `overhead` per step plus `per` per element,
    /// and past `knee` elements, `slow` per element more (cache misses).
    fn cost(n: usize, overhead: f64, per: f64, knee: usize, slow: f64) -> Duration {
        let extra = n.saturating_sub(knee) as f64 * slow;
        Duration::from_secs_f64(overhead + per * n as f64 + extra)
    }

    #[test]
    fn warms_up_and_settles_near_the_knee_of_the_cost() {
        let mut s = Scheduler::new(None, usize::MAX);
        for _ in 0..200 {
            let k = s.next();
            s.record(k, k, cost(k, 1e-3, 1e-7, 1 << 14, 4e-7), 16 * k);
        }
        let best = s.home;
        assert!((1 << 13..=1 << 15).contains(&best), "settled at {best}");
    }

    #[test]
    fn settles_on_the_smallest_size_of_a_flat_curve() {
        // 25 us a step and 1 us an element: the sizes from 512 up are
        // within 5% of each other until cache misses past 8192, and noise
        // makes the largest of them measure best, by a hair
        let mut s = Scheduler::new(None, usize::MAX);
        for _ in 0..200 {
            let k = s.next();
            let hair = if k == 8192 { 2e-8 * k as f64 } else { 0.0 };
            let t = cost(k, 2.5e-5, 1e-6, 1 << 13, 1e-6).as_secs_f64() - hair;
            s.record(k, k, Duration::from_secs_f64(t), 16 * k);
        }
        assert!((1 << 9..=1 << 10).contains(&s.home), "settled at {}", s.home);
    }

    #[test]
    fn a_size_asked_a_step_ahead_settles_as_one_asked_after() {
        // the CUDA backend's runtime asks for the next chunk's size before
        // the current chunk's time is recorded (Note [Chunks copied ahead])
        let run = |lag: bool| {
            let mut s = Scheduler::new(None, usize::MAX);
            let mut asked = s.next();
            for _ in 0..300 {
                let k = asked;
                let ahead = s.next();
                s.record(k, k, cost(k, 1e-3, 1e-7, 1 << 14, 4e-7), 16 * k);
                asked = if lag { ahead } else { s.next() };
            }
            s.home
        };
        assert_eq!(run(true), run(false));
        assert!((1 << 13..=1 << 15).contains(&run(true)), "settled at {}", run(true));
    }

    #[test]
    fn steps_that_are_all_overhead_grow_the_size_at_once() {
        // a GPU: 1 ms a step whatever its size, until 4096 elements
        let mut s = Scheduler::new(None, usize::MAX);
        let mut steps = 0;
        while s.next() < 1 << 12 {
            let k = s.next();
            s.record(k, k, cost(k, 1e-3, 1e-8, usize::MAX, 0.0), 16 * k);
            steps += 1;
            assert!(steps < 20, "still at {k} after {steps} steps");
        }
        // one step each from size 2 on (size 1 has no size before it)
        assert!(steps <= 16, "{steps} steps to reach 4096");
    }

    #[test]
    fn a_run_started_at_an_earlier_runs_size_settles_there_sooner() {
        let model = |k: usize| cost(k, 1e-3, 1e-7, 1 << 14, 4e-7);
        let settle = |mut s: Scheduler| {
            let mut steps = 0;
            while s.settled().is_none() {
                let k = s.next();
                s.record(k, k, model(k), 16 * k);
                steps += 1;
                assert!(steps < 200, "no settling");
            }
            (s.settled().unwrap(), steps)
        };
        let (first, steps_first) = settle(Scheduler::new(None, usize::MAX));
        let (again, steps_again) = settle(Scheduler::new(None, usize::MAX).starting_at(first));
        assert_eq!(again, first);
        assert!(steps_again * 3 < steps_first, "{steps_again} steps against {steps_first}");
    }

    #[test]
    fn grows_to_the_largest_size_while_overheads_dominate() {
        let mut s = Scheduler::new(None, usize::MAX);
        for _ in 0..60 {
            let k = s.next();
            s.record(k, k, cost(k, 1e-3, 1e-8, usize::MAX, 0.0), 8 * k);
        }
        assert!(s.next() >= 1 << 16, "stopped at {}", s.next());
    }

    #[test]
    fn the_budget_caps_the_size() {
        let mut s = Scheduler::new(None, 1 << 20);
        for _ in 0..60 {
            let k = s.next();
            s.record(k, k, cost(k, 1e-3, 1e-8, usize::MAX, 0.0), 1024 * k);
        }
        // 1 MiB / (3 * 1 KiB) = 341 elements, as a power of two: 256
        assert!(s.next() <= 341, "{}", s.next());
        assert!(s.next() >= 128, "{}", s.next());
    }

    #[test]
    fn a_fixed_size_is_kept() {
        let mut s = Scheduler::new(Some(100), usize::MAX);
        for _ in 0..10 {
            s.record(100, 100, Duration::from_millis(1), 100);
            assert_eq!(s.next(), 100);
        }
    }
}
