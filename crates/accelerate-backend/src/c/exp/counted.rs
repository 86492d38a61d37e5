//! Counted scalar loops in fast functions, versioned on what their
//! counter's range proves (Note [Versioned counted loops]).

use super::{assigned, declaration, defined, is_word};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

// Note [Versioned counted loops]
// A fold nested in an element becomes a scalar `while` loop whose state
// starts with a counter: the audio program's sum over a window for each
// bin reads the window's sample at `off + n` and the twiddle factor at
// `(step * n + shift) % 256`, for `n` from 0 below the window's length.
// In every step the fast function (Note [Optimistic checks]) tested the
// counter against the segment's length, the sample's position against
// the signal's, and each twiddle's position against the table's, and
// computed each `%` of a signed dividend with its sign fix-up: 29
// instructions a step where a loop over unsigned positions needs about
// 12, and then the loop was bound by the issue of instructions rather
// than by its two chains of additions (a C model of the window loop:
// 1.9 to 3.5 ns a step as generated, depending on what the machine's
// other guests did, 1.5 versioned, as the plain loop; Rust's reference
// uses `usize` positions).
//
// What the counter's range proves is known once the loop starts: the
// counter `c` runs from its initial value `lo` up to `hi = n - 1`, where
// `n` is the bound the condition `c < n` tests, computed before the
// loop. A value of the step that is affine in `c` (sums and products of
// `c`, of literals and of values computed before the loop) takes its
// least and greatest values at the two ends of that range, so:
//
// - a check `(uint64_t)x < (uint64_t)e` (an index inside an extent) of
//   an affine `x` and an `e` computed before the loop holds in every
//   step when it holds at both ends;
// - `x % p`, `mod`, `quot` and `div` by a positive literal `p` of an
//   affine `x` that is not negative at either end is unsigned arithmetic
//   (a mask or a shift for a power of two), and its result lies in `0 ..
//   p - 1`, which a check of that result against `e` then needs `p <= e`
//   of.
//
// The program computes the affine values with wrapping arithmetic, which
// agrees with the true value modulo 2^64 whatever the grouping (sums and
// products are ring operations). So each value a fact rests on is
// evaluated at both ends as a sum of products, each operation checked
// for overflow: where both ends are exact 64-bit values, so is every
// value in between (the true value is linear in `c`), and the wrapped
// value the program computes is the true one. The loop is
// then written twice: a version without the checks and with unsigned
// division, taken when every fact holds at both ends (and the loop runs
// at all), and the loop as it was otherwise, so a program whose counter
// range proves nothing (a negative dividend, an index that leaves its
// array) runs as before, not on a slower path. Only a loop whose step
// has no loop of its own is versioned, so the code grows by one copy of
// the innermost loops at most; the general version is the one the
// checked function's loop mirrors, so errors are reported as before.

/// Sums of products of at most this many terms are followed.
const MAX_TERMS: usize = 8;

/// Loops of more lines are not versioned: the copy would double the C
/// compiler's work on a large step (Note [Outlined chunks]) for a loop
/// whose checks are a small part of it.
const MAX_LINES: usize = 2000;

/// A product of a literal and values computed before the loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Term {
    k: i64,
    vars: Vec<String>,
}

/// `a * c + b` for the loop's counter `c`, each a sum of terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Affine {
    a: Vec<Term>,
    b: Vec<Term>,
}

impl Affine {
    fn constant(k: i64) -> Affine {
        Affine { a: Vec::new(), b: vec![Term { k, vars: Vec::new() }] }
    }

    fn invariant(v: &str) -> Affine {
        Affine { a: Vec::new(), b: vec![Term { k: 1, vars: vec![v.to_string()] }] }
    }

    fn counter() -> Affine {
        Affine { a: vec![Term { k: 1, vars: Vec::new() }], b: Vec::new() }
    }

    fn is_invariant(&self) -> bool {
        self.a.is_empty()
    }

    fn add(&self, o: &Affine) -> Option<Affine> {
        let a = [self.a.clone(), o.a.clone()].concat();
        let b = [self.b.clone(), o.b.clone()].concat();
        (a.len() + b.len() <= MAX_TERMS).then_some(Affine { a, b })
    }

    /// The product with an invariant sum, term by term; products of at
    /// most two variables.
    fn times(&self, s: &[Term]) -> Option<Affine> {
        let mul = |ts: &[Term]| -> Option<Vec<Term>> {
            let mut out = Vec::new();
            for t in ts {
                for u in s {
                    let vars = [t.vars.clone(), u.vars.clone()].concat();
                    if vars.len() > 2 {
                        return None;
                    }
                    out.push(Term { k: t.k.checked_mul(u.k)?, vars });
                }
            }
            Some(out)
        };
        let r = Affine { a: mul(&self.a)?, b: mul(&self.b)? };
        (r.a.len() + r.b.len() <= MAX_TERMS).then_some(r)
    }
}

/// What a variable of the step is known to be.
#[derive(Clone, Debug)]
enum Fact {
    Affine(Affine),
    /// The remainder of a non-negative value by `p`: `0 .. p - 1`.
    Below(i64),
}

/// A counted loop's code, versioned: the lines that go before the loop
/// (computing the flag `ok`), and the step's code without the checks the
/// range proves.
pub(super) struct Versioned {
    pub before: Vec<String>,
    pub ok: String,
    pub code: String,
}

/// The counted loop's code versioned (Note [Versioned counted loops]),
/// or `None` when it is not a counted loop or nothing would change.
/// `code` is the step as it stays in the loop (after Note [Invariant
/// code out of scalar loops]), `state` and `init` the loop's state
/// variables and their initial values, `flag` the fast function's flag
/// and `stop` the line of the condition's test; `fresh` names new
/// variables.
pub(super) fn version(
    code: &str,
    state: &[String],
    init: &[String],
    flag: &str,
    stop: &str,
    fresh: &mut dyn FnMut(&str) -> String,
) -> Option<Versioned> {
    if code.contains("for (") {
        return None;
    }
    let lines: Vec<&str> = code.lines().collect();
    if lines.len() > MAX_LINES {
        return None;
    }
    let trimmed: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
    // top-level declarations of the step, and every variable assigned
    let mut defs: HashMap<&str, &str> = HashMap::new();
    let mut inside: HashSet<&str> = state.iter().map(String::as_str).collect();
    let mut depth = 0usize;
    for t in &trimmed {
        if depth == 0 {
            if let Some((_, v, e)) = declaration(t) {
                defs.insert(v, e);
            }
        }
        inside.extend(assigned(t));
        inside.extend(defined(t));
        depth += t.matches('{').count();
        depth = depth.saturating_sub(t.matches('}').count());
    }
    // the condition `c < n`: `c` a state variable, `n` from before the loop
    let cond = stop.strip_prefix("if (!")?.split_once(" ||")?.0;
    let test = defs.get(cond)?.strip_prefix("(acc_bool)(")?.strip_suffix(')')?;
    let (c, n) = test.split_once(" < ")?;
    let k = state.iter().position(|s| s == c)?;
    if !is_word(n) || inside.contains(n) {
        return None;
    }
    // its only update is `c = c + 1`, at the top level
    let updates: Vec<&&str> = trimmed.iter().filter(|t| t.starts_with(&format!("{c} = "))).collect();
    let [update] = updates.as_slice() else { return None };
    let next = update.strip_prefix(&format!("{c} = "))?.strip_suffix(';')?;
    let counter_ty = trimmed.iter().find_map(|t| declaration(t).filter(|d| d.1 == next)).map(|d| d.0);
    if counter_ty != Some("int64_t")
        || resolve(&defs, next)? != format!("acc_add_int64_t({c}, ((int64_t)1LL))")
    {
        return None;
    }
    let lo = init.get(k)?;
    if !is_word(lo) && int_literal(lo).is_none() {
        return None;
    }

    let mut facts: HashMap<String, Fact> = HashMap::new();
    facts.insert(c.to_string(), Fact::Affine(Affine::counter()));
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut needs: Vec<Affine> = Vec::new();
    let mut conditions: Vec<Condition> = Vec::new();
    let mut dropped = HashSet::new();
    let check_line = format!("{{ {flag} = 1; break; }}");
    // what a variable or literal of the step is known to be
    let known = |x: &str, facts: &HashMap<String, Fact>| -> Option<Fact> {
        if let Some(f) = facts.get(x) {
            return Some(f.clone());
        }
        if let Some(k) = int_literal(x) {
            return Some(Fact::Affine(Affine::constant(k)));
        }
        (is_word(x) && !inside.contains(x)).then(|| Fact::Affine(Affine::invariant(x)))
    };
    let mut depth = 0usize;
    // the condition's code runs for the counter's last value `n` too:
    // only the step's is versioned
    let mut in_step = false;
    for (line, t) in lines.iter().zip(&trimmed) {
        let top = depth == 0;
        depth += t.matches('{').count();
        depth = depth.saturating_sub(t.matches('}').count());
        if !top {
            out.push(line.to_string());
            continue;
        }
        if *t == stop {
            in_step = true;
        }
        // a dropped check's test
        if let Some(ok) = t.strip_prefix("if (!").and_then(|r| r.strip_suffix(&format!(") {check_line}"))) {
            if dropped.contains(ok) {
                continue;
            }
        }
        if let Some(ok) = t.strip_prefix(&format!("{flag} |= !")).and_then(|r| r.strip_suffix(';')) {
            if dropped.contains(ok) {
                continue;
            }
        }
        let Some((ty, v, e)) = declaration(t) else {
            out.push(line.to_string());
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        if let Some(f) = facts.get(e).cloned() {
            facts.insert(v.to_string(), f);
        }
        if ty == "acc_bool" && in_step {
            if let Some((x, bound)) = within(e) {
                let proof = match known(x, &facts) {
                    Some(Fact::Affine(f)) if !f.is_invariant() => {
                        Some(Condition::Within(f, bound.to_string()))
                    }
                    Some(Fact::Below(p)) => Some(Condition::AtLeast(bound.to_string(), p)),
                    _ => None,
                };
                if let (Some(p), true) = (proof, is_word(bound) && !inside.contains(bound)) {
                    if let Condition::Within(f, _) = &p {
                        needs.push(f.clone());
                    }
                    conditions.push(p);
                    dropped.insert(v.to_string());
                    out.push(format!("{indent}acc_bool {v} = 1;"));
                    continue;
                }
            }
        }
        if ty == "int64_t" {
            if let Some((op, x, p)) = division(e).filter(|_| in_step) {
                if let Some(Fact::Affine(f)) = known(x, &facts) {
                    if !f.is_invariant() {
                        needs.push(f.clone());
                        conditions.push(Condition::NotNegative(f));
                        let sym = if matches!(op, "rem" | "mod") { '%' } else { '/' };
                        out.push(format!(
                            "{indent}int64_t {v} = (int64_t)((uint64_t)({x}) {sym} (uint64_t){p});"
                        ));
                        if sym == '%' {
                            facts.insert(v.to_string(), Fact::Below(p));
                        }
                        continue;
                    }
                }
            }
            if let Some(f) = affine(e, &|x| known(x, &facts)) {
                facts.insert(v.to_string(), Fact::Affine(f));
            }
        }
        out.push(line.to_string());
    }
    if conditions.is_empty() {
        return None;
    }

    // the flag: the loop runs, and every fact holds at both ends without
    // an overflow on the way
    let ok = fresh("r");
    let hi = fresh("r");
    let mut before =
        vec![format!("acc_bool {ok} = {lo} < {n};"), format!("const int64_t {hi} = {ok} ? {n} - 1 : {lo};")];
    // each value's two ends, once
    let mut ends: HashMap<Affine, (String, String)> = HashMap::new();
    for f in needs {
        if let std::collections::hash_map::Entry::Vacant(e) = ends.entry(f) {
            let (x_lo, x_hi) = (fresh("r"), fresh("r"));
            eval(&mut before, e.key(), lo, &x_lo, &ok);
            eval(&mut before, e.key(), &hi, &x_hi, &ok);
            e.insert((x_lo, x_hi));
        }
    }
    let end = |f: &Affine| ends.get(f).cloned();
    let mut tested = HashSet::new();
    for cond in &conditions {
        let test = match cond {
            Condition::NotNegative(f) => {
                let (l, h) = end(f)?;
                format!("({l} >= 0 & {h} >= 0)")
            }
            Condition::Within(f, e) => {
                let (l, h) = end(f)?;
                format!("({l} >= 0 & {h} >= 0 & {l} < {e} & {h} < {e})")
            }
            Condition::AtLeast(e, p) => format!("({e} >= {})", c_i64(*p)),
        };
        if tested.insert(test.clone()) {
            before.push(format!("{ok} &= {test};"));
        }
    }
    let mut code = out.join("\n");
    code.push('\n');
    Some(Versioned { before, ok, code })
}

/// What a versioned operation needs of the counter's two ends.
enum Condition {
    /// The affine value is not negative.
    NotNegative(Affine),
    /// The affine value lies in `0 .. e - 1`.
    Within(Affine, String),
    /// The extent `e` is at least `p` (a remainder by `p` lies inside).
    AtLeast(String, i64),
}

/// Writes `into = f(at)` with overflow checks that clear `ok`.
fn eval(before: &mut Vec<String>, f: &Affine, at: &str, into: &str, ok: &str) {
    let mut s = format!("int64_t {into} = 0; {{ int64_t t;");
    let terms = f.a.iter().map(|t| (t, true)).chain(f.b.iter().map(|t| (t, false)));
    for (t, times_counter) in terms {
        let (first, rest) = match (t.k, t.vars.split_first()) {
            (1, Some((v, rest))) => (v.clone(), rest),
            _ => (c_i64(t.k), t.vars.as_slice()),
        };
        let _ = write!(s, " t = {first};");
        for v in rest {
            let _ = write!(s, " {ok} &= !__builtin_mul_overflow(t, {v}, &t);");
        }
        if times_counter {
            let _ = write!(s, " {ok} &= !__builtin_mul_overflow(t, {at}, &t);");
        }
        let _ = write!(s, " {ok} &= !__builtin_add_overflow({into}, t, &{into});");
    }
    s.push_str(" }");
    before.push(s);
}

/// A 64-bit literal in C (whose `-9223372036854775808LL` would be the
/// negation of a constant too large for its type).
fn c_i64(k: i64) -> String {
    if k == i64::MIN {
        "INT64_MIN".into()
    } else {
        format!("{k}LL")
    }
}

/// Follows copies `v = u` among the step's declarations.
fn resolve<'a>(defs: &HashMap<&str, &'a str>, mut e: &'a str) -> Option<String> {
    for _ in 0..8 {
        match defs.get(e) {
            Some(d) => e = d,
            None => return Some(e.to_string()),
        }
    }
    None
}

/// `v` of a literal `((int64_t)vLL)` or a plain integer.
fn int_literal(x: &str) -> Option<i64> {
    let s = x.strip_prefix("((int64_t)").and_then(|r| r.strip_suffix("LL)")).unwrap_or(x);
    s.parse().ok()
}

/// `x` and `e` of `(uint64_t)(x) < (uint64_t)(e)` inside parentheses.
fn within(e: &str) -> Option<(&str, &str)> {
    let mut s = e;
    while let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        if inner.starts_with("uint64_t)") {
            break;
        }
        s = inner;
    }
    let (l, r) = s.split_once(" < ")?;
    let x = l.strip_prefix("(uint64_t)(")?.strip_suffix(')')?;
    let n = r.strip_prefix("(uint64_t)(")?.strip_suffix(')')?;
    (is_word(x) && is_word(n)).then_some((x, n))
}

/// `(op, x, p)` of `acc_op_int64_t(x, P == 0 ? (int64_t)1 : P)` for a
/// literal `P = p > 0` and `op` one of `quot`, `rem`, `idiv`, `mod`.
fn division(e: &str) -> Option<(&str, &str, i64)> {
    let rest = e.strip_prefix("acc_")?;
    let (op, rest) = rest.split_once("_int64_t(")?;
    if !matches!(op, "quot" | "rem" | "idiv" | "mod") {
        return None;
    }
    let (x, rest) = rest.split_once(", ")?;
    let (d, rest) = rest.split_once(" == 0 ? (int64_t)1 : ")?;
    if rest.strip_suffix(')')? != d {
        return None;
    }
    let p = int_literal(d)?;
    (is_word(x) && p > 0).then_some((op, x, p))
}

/// The affine form of an expression of the step, from the forms `known`
/// gives its variables and literals.
fn affine(e: &str, known: &dyn Fn(&str) -> Option<Fact>) -> Option<Affine> {
    let form = |x: &str| match known(x)? {
        Fact::Affine(f) => Some(f),
        Fact::Below(_) => None,
    };
    if let Some(f) = form(e) {
        return Some(f);
    }
    if let Some(args) = e.strip_prefix("acc_add_int64_t(").and_then(|r| r.strip_suffix(')')) {
        let (x, y) = args.split_once(", ")?;
        return form(x)?.add(&form(y)?);
    }
    if let Some(args) = e.strip_prefix("acc_mul_int64_t(").and_then(|r| r.strip_suffix(')')) {
        let (x, y) = args.split_once(", ")?;
        let (fx, fy) = (form(x)?, form(y)?);
        return match (fx.is_invariant(), fy.is_invariant()) {
            (true, _) => fy.times(&fx.b),
            (_, true) => fx.times(&fy.b),
            _ => None,
        };
    }
    // a row-major position of one component: `0 * d + x`, wrapping
    let inner = e.strip_prefix("(int64_t)((uint64_t)")?.strip_suffix(')')?;
    let (m, x) = inner.split_once(" + (uint64_t)")?;
    let (z, d) = m.split_once(" * (uint64_t)")?;
    if int_literal(z) != Some(0) || !is_word(d) {
        return None;
    }
    form(x)
}
