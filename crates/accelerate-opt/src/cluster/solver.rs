//! The integer linear programs of clustering, and the solvers behind a
//! small trait: the default is microlp (pure Rust, built by cargo alone);
//! another solver is one more implementation of `Solver`.

use std::time::Duration;

/// What a variable may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Domain {
    Binary,
    /// An integer in `lo ..= hi`.
    Integer {
        lo: i32,
        hi: i32,
    },
}

/// How a constraint compares its sum with its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Le,
    Ge,
}

/// `sum(coefficient * variable) cmp rhs`.
#[derive(Clone, Debug)]
pub struct Row {
    pub terms: Vec<(usize, f64)>,
    pub cmp: Cmp,
    pub rhs: f64,
}

/// A program that maximises `sum(objective[v] * v)` over integer variables.
#[derive(Clone, Debug, Default)]
pub struct Ilp {
    pub domains: Vec<Domain>,
    pub objective: Vec<f64>,
    pub rows: Vec<Row>,
}

impl Ilp {
    pub fn var(&mut self, domain: Domain, objective: f64) -> usize {
        self.domains.push(domain);
        self.objective.push(objective);
        self.domains.len() - 1
    }

    pub fn row(&mut self, terms: Vec<(usize, f64)>, cmp: Cmp, rhs: f64) {
        self.rows.push(Row { terms, cmp, rhs });
    }

    /// Whether an assignment meets every domain and constraint (to a
    /// tolerance of 1e-6, the solvers' integrality tolerance).
    pub fn feasible(&self, x: &[f64]) -> bool {
        const TOL: f64 = 1e-6;
        x.len() == self.domains.len()
            && self.domains.iter().zip(x).all(|(d, &v)| {
                let (lo, hi) = match *d {
                    Domain::Binary => (0.0, 1.0),
                    Domain::Integer { lo, hi } => (lo as f64, hi as f64),
                };
                v >= lo - TOL && v <= hi + TOL && (v - v.round()).abs() <= TOL
            })
            && self.rows.iter().all(|r| {
                let s: f64 = r.terms.iter().map(|&(v, c)| c * x[v]).sum();
                match r.cmp {
                    Cmp::Le => s <= r.rhs + TOL,
                    Cmp::Ge => s >= r.rhs - TOL,
                }
            })
    }

    pub fn value(&self, x: &[f64]) -> f64 {
        self.objective.iter().zip(x).map(|(c, v)| c * v).sum()
    }
}

/// How a solve ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Proven optimal.
    Optimal(Vec<f64>),
    /// The best assignment found before the time limit.
    Feasible(Vec<f64>),
    /// No assignment (the time limit came first, or the solver failed):
    /// the caller keeps its incumbent.
    Nothing(String),
}

/// An ILP solver.
pub trait Solver {
    /// Solves `p` within `limit`, starting from `incumbent` (a feasible
    /// assignment).
    fn solve(&self, p: &Ilp, limit: Duration, incumbent: &[f64]) -> Outcome;
    fn name(&self) -> &'static str;
}

/// microlp's branch and bound (dual simplex relaxations).
pub struct MicroLp;

impl Solver for MicroLp {
    fn solve(&self, p: &Ilp, limit: Duration, incumbent: &[f64]) -> Outcome {
        use microlp::{ComparisonOp, OptimizationDirection, Problem, SolveOptions, SolveOutcome};
        let mut m = Problem::new(OptimizationDirection::Maximize);
        let vars: Vec<microlp::Variable> = p
            .domains
            .iter()
            .zip(&p.objective)
            .map(|(d, &c)| match *d {
                Domain::Binary => m.add_binary_var(c),
                Domain::Integer { lo, hi } => m.add_integer_var(c, (lo, hi)),
            })
            .collect();
        for r in &p.rows {
            let terms: Vec<(microlp::Variable, f64)> = r.terms.iter().map(|&(v, c)| (vars[v], c)).collect();
            let op = match r.cmp {
                Cmp::Le => ComparisonOp::Le,
                Cmp::Ge => ComparisonOp::Ge,
            };
            m.add_constraint(terms.as_slice(), op, r.rhs);
        }
        let mut options = SolveOptions::default();
        options.time_limit = Some(limit);
        options.warm_start = Some(vars.iter().copied().zip(incumbent.iter().copied()).collect());
        match m.solve_with(options) {
            Ok(SolveOutcome::Solution(s)) => {
                let x: Vec<f64> = vars.iter().map(|&v| s.var_value(v).round()).collect();
                if s.status() == microlp::SolutionStatus::Optimal {
                    Outcome::Optimal(x)
                } else {
                    Outcome::Feasible(x)
                }
            }
            Ok(SolveOutcome::Interrupted(i)) => {
                Outcome::Nothing(format!("stopped with no solution ({:?})", i.termination_reason()))
            }
            Err(e) => Outcome::Nothing(format!("microlp: {e}")),
        }
    }

    fn name(&self) -> &'static str {
        "microlp"
    }
}
