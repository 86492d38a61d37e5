//! Lowering: a defunctionalised program's entry point to the IR
//! (`accelerate_ir::term::Program`), which the ordinary pipeline then
//! simplifies, fuses, plans and runs.
//!
//! Relies on: `defunc`'s guarantees (no function values; lambdas only as
//! the function arguments of the prelude's array combinators; every other
//! call of a definition by name, with all its arguments). Keeps: the
//! meaning of the entry point. Guarantees: a closed, flat IR program (no
//! `ALet`) that `ir::verify` accepts.
//!
//! Note [Host and device]
//! The IR has two levels (Note [Two environments] in `accelerate-ir`):
//! array terms, which the host runs one after another, and scalar terms,
//! which run per element inside an array operation. The text language has
//! one. The lowering decides, per expression, where it runs:
//!
//! - an expression that builds an array (a combinator, an array literal, a
//!   slice, an `if`/`loop` returning arrays) runs on the host: it becomes
//!   an array operation, let-bound as it is met (Note [Levels while
//!   lowering]); a scalar the host computes is a rank-0 array (`unit`),
//!   read where it is used;
//! - everything else is scalar code: the body of a function passed to a
//!   combinator, or a scalar computation of the host's, lowered whole into
//!   one scalar expression. Such code reads the host's arrays by index and
//!   its scalars as reads of their rank-0 arrays.
//!
//! `needs_host` tells the two apart, once per expression (memoised, so the
//! lowering stays linear). An expression that builds an array inside
//! scalar code (a `reduce` inside the function of a `map`) is nested data
//! parallelism, which this lowering does not flatten yet: it is reported
//! as `DiagKind::Unsupported` at that expression.
//!
//! Definitions are inlined at their calls (the IR has no calls), their
//! arguments bound once; a definition's size parameters are bound to the
//! extents of the arguments whose types name them.

mod device;
mod host;
mod levels;
mod map;
mod prims;
mod soac;

use crate::ast::spine;
use crate::ast::*;
use crate::diag::{DiagKind, Diagnostic, SourceFile};
use accelerate_base::array::{ArrayTy, ArraysTy, EltTy, ScalarTy, ScalarVal};
use accelerate_base::error::{CheckKind, SrcLoc};
use accelerate_ir::term::{self as ir, AccKind, ExpKind, OpenAcc, OpenExp};
use std::collections::HashMap;

/// A lowered entry point: the program and the types of its parameters
/// and results as the outside sees them.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub program: ir::Program,
    pub params: Vec<ExtType>,
    /// One per result: a tuple result is several.
    pub results: Vec<ExtType>,
    /// The entry point's name, where it is defined.
    pub entry_span: Span,
}

/// The type of a value passed to or returned from an entry point: a
/// primitive or an array of primitives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtType {
    pub prim: PrimType,
    pub rank: usize,
}

impl std::fmt::Display for ExtType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", "[]".repeat(self.rank), self.prim)
    }
}

/// A value the lowering knows: an array variable of the host, a scalar
/// expression (a constant, a read of a host scalar, or a scalar of the
/// code being lowered), or a tuple (or record, fields in name order) of
/// them.
#[derive(Clone, Debug)]
enum LVal {
    Array { level: usize, rank: usize, elt: EltTy },
    Exp { e: OpenExp, elt: EltTy },
    Tuple(Vec<LVal>),
}

/// Why an expression could not be lowered: a diagnostic for the user.
type Res<T> = Result<T, Diagnostic>;

pub(crate) use crate::data::scalar_ty as prim_scalar;

/// The element type of a value of type `t` that holds no array.
fn elt_of(t: &Type) -> Option<EltTy> {
    match t {
        Type::Prim(p) => Some(EltTy::Scalar(prim_scalar(*p))),
        Type::Tuple(ts) => ts.iter().map(elt_of).collect::<Option<_>>().map(EltTy::Tuple),
        Type::Record(fs) => fs.iter().map(|(_, t)| elt_of(t)).collect::<Option<_>>().map(EltTy::Tuple),
        _ => None,
    }
}

/// How a value of type `t` is held as arrays: an array as itself, a
/// value without arrays as a rank-0 array of its element type, a tuple
/// holding arrays as the tuple of its parts'.
fn arrays_ty(t: &Type) -> Option<ArraysTy> {
    if let Some(elt) = elt_of(t) {
        return Some(ArraysTy::Array(ArrayTy { rank: 0, elt }));
    }
    match t {
        Type::Array { elem, shape } => {
            Some(ArraysTy::Array(ArrayTy { rank: shape.len(), elt: elt_of(elem)? }))
        }
        Type::Tuple(ts) => ts.iter().map(arrays_ty).collect::<Option<_>>().map(ArraysTy::Tuple),
        Type::Record(fs) => fs.iter().map(|(_, t)| arrays_ty(t)).collect::<Option<_>>().map(ArraysTy::Tuple),
        _ => None,
    }
}

fn field_index(t: &Type, field: &str) -> Option<usize> {
    match t {
        Type::Record(fs) => fs.iter().position(|(n, _)| n == field),
        Type::Tuple(ts) => field.parse::<usize>().ok().filter(|i| *i < ts.len()),
        _ => None,
    }
}

fn unsupported(span: Span, what: impl Into<String>) -> Diagnostic {
    Diagnostic::new(DiagKind::Unsupported, span, what)
}

fn c_i64(n: i64, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Const(ScalarVal::I64(n)), loc)
}

fn prim(op: ir::PrimFun, args: Vec<OpenExp>, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Prim(op, args), loc)
}

/// Component `i` of a tuple; of a tuple written out, that component.
fn prj(i: usize, e: OpenExp, loc: SrcLoc) -> OpenExp {
    match e.kind {
        ExpKind::Tuple(ref es) if i < es.len() => es[i].clone(),
        _ => OpenExp::new(ExpKind::Prj(i, Box::new(e)), loc),
    }
}

/// The lowering's state.
struct Lower<'a> {
    decls: HashMap<&'a str, &'a ValueDecl>,
    file: &'a SourceFile,
    /// The variables in scope, innermost last.
    env: Vec<(String, LVal)>,
    /// The array bindings of each open host block, innermost block last.
    blocks: Vec<Vec<OpenAcc>>,
    /// The size checks of each open host block (`require`).
    checks: Vec<Vec<OpenExp>>,
    /// Array binders in scope (Note [Levels while lowering]).
    adepth: usize,
    /// The scalar bindings of each open scalar block.
    sblocks: Vec<Vec<OpenExp>>,
    /// Scalar binders in scope in the scalar code being lowered.
    sdepth: usize,
    /// The scalar binders an array operation's functions see: none at the
    /// top level; in an array term nested in scalar code (Note [Nested
    /// array terms]), those in scope there.
    sbase: usize,
    host_memo: HashMap<*const Expr, bool>,
    /// Values already computed for subexpressions of the expression being
    /// lowered (`host_via_device`).
    overrides: HashMap<*const Expr, LVal>,
    decl_memo: HashMap<String, bool>,
    /// The components of arrays of tuples unzipped so far, by the array's
    /// level (Note [Unzipped once]).
    unzipped: HashMap<usize, Vec<usize>>,
}

// Note [Unzipped once]
// `map (.pos.x) bodies` is a move of struct-of-arrays storage, `unzip`
// then a projection (`map` in `map.rs`). A program that returns several
// fields of one array of records (n-body's six coordinates) would unzip
// it once per field, and on the host an `unzip` of an array something
// else still holds copies its buffers: n-body's six fields copied all
// seven arrays six times. So each array of tuples is unzipped at most
// once per block, all its components projected at once (`components`);
// the walker of the host program then moves the buffers at the unzip's
// last use (`unzip_at_last_use` in `accelerate-backend`'s `host`), and a
// component's own unzip, after the tuple's slot is freed, moves too. The
// table is keyed by level and forgets what a closed block bound.

/// Lowers entry point `entry` of a defunctionalised program.
pub fn lower(prog: &Program, entry: &str, file: &SourceFile) -> Res<Lowered> {
    let decls: HashMap<&str, &ValueDecl> = prog
        .decls
        .iter()
        .filter_map(|d| match d {
            Decl::Value(v) => Some((v.name.name.as_str(), v)),
            Decl::Type(_) => None,
        })
        .collect();
    let Some(main) = decls.get(entry).copied() else {
        let span = Span::default();
        return Err(Diagnostic::new(DiagKind::Type, span, format!("no entry point named `{entry}`")));
    };
    let mut l = Lower {
        decls,
        file,
        env: Vec::new(),
        blocks: vec![Vec::new()],
        checks: vec![Vec::new()],
        adepth: 0,
        sblocks: Vec::new(),
        sdepth: 0,
        sbase: 0,
        host_memo: HashMap::new(),
        overrides: HashMap::new(),
        decl_memo: HashMap::new(),
        unzipped: HashMap::new(),
    };
    l.entry(main)
}

impl<'a> Lower<'a> {
    fn loc(&self, span: Span) -> SrcLoc {
        let (line, col) = self.file.line_col(span.start);
        SrcLoc::in_text(&self.file.name, line, col)
    }

    fn entry(&mut self, main: &'a ValueDecl) -> Res<Lowered> {
        let mut params = Vec::new();
        let mut param_tys = Vec::new();
        let mut vals = Vec::new();
        for p in &main.params {
            let ext = ext_type(&p.ty).ok_or_else(|| {
                unsupported(
                    p.span,
                    format!(
                        "an entry point's parameter of type {}: only primitive values and arrays of them can be passed in",
                        crate::mono::show_type(&p.ty)
                    ),
                )
            })?;
            let level = params.len();
            let elt = EltTy::Scalar(prim_scalar(ext.prim));
            let v = if ext.rank == 0 {
                let loc = self.loc(p.span);
                self.read_unit(level, elt.clone(), loc)
            } else {
                LVal::Array { level, rank: ext.rank, elt: elt.clone() }
            };
            param_tys.push(ArraysTy::Array(ArrayTy { rank: ext.rank, elt }));
            params.push(ext);
            vals.push(v);
        }
        self.adepth = params.len();
        let vals = self.check_sizes(main, vals);
        for (p, v) in main.params.iter().zip(&vals) {
            self.bind_pat(p, v.clone());
        }
        self.bind_sizes(main, &vals);
        let (_, ret) = main_result(main);
        let results: Vec<ExtType> = match ret {
            Type::Tuple(ts) if !ts.is_empty() => ts.iter().map(ext_type).collect::<Option<_>>(),
            t => ext_type(t).map(|e| vec![e]),
        }
        .ok_or_else(|| {
            unsupported(
                main.name.span,
                format!(
                    "an entry point returning {}: only primitive values, arrays of them and tuples of those can be returned",
                    crate::mono::show_type(ret)
                ),
            )
        })?;
        let v = self.host(&main.body)?;
        let loc = self.loc(main.body.span);
        // each result its own array: a tuple result is several results
        let result = match ret {
            Type::Tuple(ts) if !ts.is_empty() => {
                let parts = ts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| self.arrays_of(&part(&v, i, loc), t, loc))
                    .collect::<Res<Vec<_>>>()?;
                OpenAcc::new(AccKind::Tuple(parts), loc)
            }
            t => self.arrays_of(&v, t, loc)?,
        };
        let block = self.blocks.pop().expect("the entry's block");
        let checks = self.checks.pop().expect("the entry's block");
        let body = wrap_lets(block, with_checks(result, checks, loc), loc);
        let mut body = body;
        levels::acc_to_indices(&mut body, params.len());
        Ok(Lowered {
            program: ir::Program { params: param_tys, body },
            params,
            results,
            entry_span: main.name.span,
        })
    }

    // ---- scopes and bindings ----

    /// Binds an array term in the current host block; gives its level.
    fn bind(&mut self, term: OpenAcc) -> usize {
        let level = self.adepth;
        self.blocks.last_mut().expect("a host block is open").push(term);
        self.adepth += 1;
        level
    }

    fn open_block(&mut self) {
        self.blocks.push(Vec::new());
        self.checks.push(Vec::new());
    }

    /// Closes the innermost host block around its result.
    fn close_block(&mut self, result: OpenAcc) -> OpenAcc {
        let (block, checks) = self.pop_block();
        let loc = result.loc;
        wrap_lets(block, with_checks(result, checks, loc), loc)
    }

    /// Takes the innermost host block's bindings and checks off the
    /// stacks.
    fn pop_block(&mut self) -> (Vec<OpenAcc>, Vec<OpenExp>) {
        let block = self.blocks.pop().expect("a host block is open");
        let checks = self.checks.pop().expect("a host block is open");
        self.adepth -= block.len();
        let depth = self.adepth;
        self.unzipped.retain(|_, parts| parts.iter().all(|&l| l < depth));
        (block, checks)
    }

    /// The levels of the components of array `level`, whose elements are
    /// tuples of `parts` (Note [Unzipped once]).
    fn components(&mut self, level: usize, parts: usize, loc: SrcLoc) -> Vec<usize> {
        if let Some(ls) = self.unzipped.get(&level) {
            return ls.clone();
        }
        let var = |l: usize| OpenAcc::new(AccKind::Var(l), loc);
        let t = self.bind(OpenAcc::new(AccKind::Unzip(Box::new(var(level))), loc));
        let ls: Vec<usize> =
            (0..parts).map(|i| self.bind(OpenAcc::new(AccKind::Prj(i, Box::new(var(t))), loc))).collect();
        self.unzipped.insert(level, ls.clone());
        ls
    }

    /// Requires a condition of the host's (Futhark's size rule, Note [Size
    /// checks]) to hold before the current block's result is given.
    fn require(&mut self, cond: OpenExp) {
        if self.sbase == 0 {
            self.checks.last_mut().expect("a host block is open").push(cond);
        }
    }

    /// Scalar code holding array terms (Note [Nested array terms]): `body`
    /// lowered with `depth` scalar binders in scope, all of them seen by
    /// the functions of the arrays it binds, in a host block of its own
    /// whose bindings become `ALet`s around its result; what it binds goes
    /// out of scope after.
    fn nested_scope(
        &mut self,
        depth: usize,
        loc: SrcLoc,
        body: impl FnOnce(&mut Self) -> Res<OpenExp>,
    ) -> Res<OpenExp> {
        let saved_depth = std::mem::replace(&mut self.sdepth, depth);
        let saved_base = std::mem::replace(&mut self.sbase, depth);
        let saved_sblocks = std::mem::take(&mut self.sblocks);
        let n = self.env.len();
        self.open_block();
        let r = body(self);
        let (block, _) = self.pop_block();
        self.env.truncate(n);
        self.sblocks = saved_sblocks;
        self.sbase = saved_base;
        self.sdepth = saved_depth;
        let mut x = r?;
        for b in block.into_iter().rev() {
            x = OpenExp::new(ExpKind::ALet(Box::new(b), Box::new(x)), loc);
        }
        Ok(x)
    }

    /// Binds a scalar in the current scalar block; gives its level.
    fn sbind(&mut self, e: OpenExp) -> usize {
        let level = self.sdepth;
        self.sblocks.last_mut().expect("a scalar block is open").push(e);
        self.sdepth += 1;
        level
    }

    fn open_sblock(&mut self) {
        self.sblocks.push(Vec::new());
    }

    fn close_sblock(&mut self, mut result: OpenExp) -> OpenExp {
        let block = self.sblocks.pop().expect("a scalar block is open");
        self.sdepth -= block.len();
        for b in block.into_iter().rev() {
            let loc = b.loc;
            result = OpenExp::new(ExpKind::Let(Box::new(b), Box::new(result)), loc);
        }
        result
    }

    /// A read of a rank-0 array variable.
    fn read_unit(&self, level: usize, elt: EltTy, loc: SrcLoc) -> LVal {
        let index = OpenExp::new(ExpKind::Tuple(vec![]), loc);
        LVal::Exp { e: OpenExp::new(ExpKind::Index { array: level, index: Box::new(index) }, loc), elt }
    }

    fn lookup(&self, name: &str) -> Option<&LVal> {
        self.env.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Binds the variables of a pattern to the parts of a value.
    fn bind_pat(&mut self, p: &Pat, v: LVal) {
        match &p.kind {
            PatKind::Id(i) => self.env.push((i.name.clone(), v)),
            PatKind::Wildcard | PatKind::Lit(_) => {}
            PatKind::Ascribe(q, _) => self.bind_pat(q, v),
            PatKind::Tuple(ps) => {
                for (i, q) in ps.iter().enumerate() {
                    let part = part(&v, i, self.loc(q.span));
                    self.bind_pat(q, part);
                }
            }
            PatKind::Record(fs) => {
                for (name, q) in fs {
                    let i = field_index(&p.ty, &name.name).unwrap_or(0);
                    let part = part(&v, i, self.loc(q.span));
                    self.bind_pat(q, part);
                }
            }
        }
    }

    /// The arguments of a call of `d` (or of the entry point), each array
    /// whose type names a size parameter already named by an earlier
    /// argument checked to have that extent (Note [Size checks]). Only on
    /// the host's top level: in scalar code, sizes are not checked.
    fn check_sizes(&mut self, d: &ValueDecl, args: Vec<LVal>) -> Vec<LVal> {
        if self.sbase != 0 || !d.type_params.iter().any(|p| matches!(p, TypeParam::Size(_))) {
            return args;
        }
        let mut seen: HashMap<String, OpenExp> = HashMap::new();
        let loc = self.loc(d.name.span);
        d.params.iter().zip(args).map(|(p, v)| self.check_value_sizes(&p.ty, v, &mut seen, loc)).collect()
    }

    fn check_value_sizes(
        &mut self,
        t: &Type,
        v: LVal,
        seen: &mut HashMap<String, OpenExp>,
        loc: SrcLoc,
    ) -> LVal {
        match (t, v) {
            (Type::Array { shape, .. }, LVal::Array { level, rank, elt }) => {
                for (dim, s) in shape.iter().enumerate() {
                    let Size::Var(n) = s else { continue };
                    let here = prj(dim, OpenExp::new(ExpKind::Shape { array: level }, loc), loc);
                    match seen.get(n) {
                        None => {
                            seen.insert(n.clone(), here);
                        }
                        Some(first) => {
                            let cond = size_agrees("a size parameter", first.clone(), here, loc);
                            self.require(cond);
                        }
                    }
                }
                LVal::Array { level, rank, elt }
            }
            (Type::Tuple(ts), LVal::Tuple(vs)) => {
                LVal::Tuple(ts.iter().zip(vs).map(|(t, v)| self.check_value_sizes(t, v, seen, loc)).collect())
            }
            (Type::Record(fs), LVal::Tuple(vs)) => LVal::Tuple(
                fs.iter().zip(vs).map(|((_, t), v)| self.check_value_sizes(t, v, seen, loc)).collect(),
            ),
            (_, v) => v,
        }
    }

    /// Binds a definition's size parameters to the extents of the
    /// arguments whose types name them.
    fn bind_sizes(&mut self, d: &ValueDecl, args: &[LVal]) {
        for tp in &d.type_params {
            let TypeParam::Size(n) = tp else { continue };
            let found = d.params.iter().zip(args).find_map(|(p, v)| size_in(&p.ty, v, &n.name));
            if let Some((level, dim)) = found {
                let loc = self.loc(n.span);
                let shape = OpenExp::new(ExpKind::Shape { array: level }, loc);
                let e = prj(dim, shape, loc);
                self.env.push((n.name.clone(), LVal::Exp { e, elt: EltTy::Scalar(ScalarTy::I64) }));
            }
        }
    }

    /// A value as arrays (Note [Host and device]), of the layout
    /// `arrays_ty(t)` gives.
    fn arrays_of(&mut self, v: &LVal, t: &Type, loc: SrcLoc) -> Res<OpenAcc> {
        if elt_of(t).is_some() {
            let e = self.exp_of(v, loc)?;
            // a host scalar is its rank-0 array
            if let ExpKind::Index { array, index } = &e.kind {
                if matches!(&index.kind, ExpKind::Tuple(es) if es.is_empty()) {
                    return Ok(OpenAcc::new(AccKind::Var(*array), loc));
                }
            }
            return Ok(OpenAcc::new(AccKind::Unit(e), loc));
        }
        match v {
            LVal::Array { level, .. } => Ok(OpenAcc::new(AccKind::Var(*level), loc)),
            LVal::Tuple(vs) => {
                let parts: Vec<&Type> = match t {
                    Type::Tuple(ts) => ts.iter().collect(),
                    Type::Record(fs) => fs.iter().map(|(_, t)| t).collect(),
                    _ => vec![],
                };
                let terms =
                    vs.iter().zip(parts).map(|(v, t)| self.arrays_of(v, t, loc)).collect::<Res<_>>()?;
                Ok(OpenAcc::new(AccKind::Tuple(terms), loc))
            }
            LVal::Exp { .. } => Err(Diagnostic::new(
                DiagKind::Unsupported,
                Span::default(),
                "internal: a scalar where arrays were expected",
            )),
        }
    }

    /// A value without arrays as one scalar expression.
    fn exp_of(&self, v: &LVal, loc: SrcLoc) -> Res<OpenExp> {
        match v {
            LVal::Exp { e, .. } => Ok(e.clone()),
            LVal::Tuple(vs) => Ok(OpenExp::new(
                ExpKind::Tuple(vs.iter().map(|v| self.exp_of(v, loc)).collect::<Res<_>>()?),
                loc,
            )),
            LVal::Array { .. } => Err(unsupported(
                Span::default(),
                "an array used where the lowering needs a scalar (nested data parallelism)",
            )),
        }
    }

    /// Binds an array term of Futhark type `t` and gives its value, a
    /// tuple holding arrays bound part by part.
    fn bind_typed(&mut self, term: OpenAcc, t: &Type) -> LVal {
        let loc = term.loc;
        let level = self.bind(term);
        self.unpack(level, t, loc)
    }

    fn unpack(&mut self, level: usize, t: &Type, loc: SrcLoc) -> LVal {
        if let Some(elt) = elt_of(t) {
            return self.read_unit(level, elt, loc);
        }
        match t {
            Type::Array { elem, shape } => {
                LVal::Array { level, rank: shape.len(), elt: elt_of(elem).unwrap_or(EltTy::UNIT) }
            }
            Type::Tuple(_) | Type::Record(_) => {
                let parts: Vec<Type> = match t {
                    Type::Tuple(ts) => ts.clone(),
                    Type::Record(fs) => fs.iter().map(|(_, t)| t.clone()).collect(),
                    _ => unreachable!("matched above"),
                };
                let vs = parts
                    .iter()
                    .enumerate()
                    .map(|(i, pt)| {
                        let var = OpenAcc::new(AccKind::Var(level), loc);
                        let l = self.bind(OpenAcc::new(AccKind::Prj(i, Box::new(var)), loc));
                        self.unpack(l, pt, loc)
                    })
                    .collect();
                LVal::Tuple(vs)
            }
            _ => LVal::Tuple(vec![]),
        }
    }

    /// Whether an expression must run on the host (Note [Host and
    /// device]).
    fn needs_host(&mut self, e: &Expr) -> bool {
        let key = e as *const Expr;
        if let Some(&b) = self.host_memo.get(&key) {
            return b;
        }
        let b = mono_grow(|| self.needs_host_inner(e));
        self.host_memo.insert(key, b);
        b
    }

    fn needs_host_inner(&mut self, e: &Expr) -> bool {
        let any = |l: &mut Self, es: &[&Expr]| es.iter().any(|x| l.needs_host(x));
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Var { .. } => false,
            ExprKind::ArrayLit(_) | ExprKind::Update(..) | ExprKind::RecordUpdate(..) => true,
            ExprKind::Index(x, ix) => {
                let fixed = ix.iter().filter(|d| matches!(d, DimIndex::Fix(_))).count();
                e.ty.rank() > 0
                    || fixed < x.ty.rank()
                    || self.needs_host(x)
                    || ix.iter().any(|d| match d {
                        DimIndex::Fix(i) => self.needs_host(i),
                        DimIndex::Slice { .. } => true,
                    })
            }
            ExprKind::Apply(..) => {
                let (head, args) = spine(e);
                let head_host = match &head.kind {
                    ExprKind::Var { name, qual: None, .. } => {
                        if let Some(d) = self.decls.get(name.name.as_str()).copied() {
                            self.decl_needs_host(d)
                        } else {
                            soac::is_host(&name.name)
                        }
                    }
                    ExprKind::Var { name, qual: Some(_), .. } => soac::is_host_qualified(&name.name),
                    _ => true,
                };
                head_host || args.iter().any(|a| self.needs_host(a))
            }
            ExprKind::If(c, t, f) => e.ty.contains_array() || any(self, &[c, t, f]),
            ExprKind::Loop { init, form, body, .. } => {
                e.ty.contains_array()
                    || init.as_ref().is_some_and(|i| self.needs_host(i))
                    || match form {
                        LoopForm::For(_, n) => self.needs_host(n),
                        LoopForm::ForIn(_, xs) => self.needs_host(xs),
                        LoopForm::While(c) => self.needs_host(c),
                    }
                    || self.needs_host(body)
            }
            ExprKind::Match(x, cases) => {
                e.ty.contains_array() || self.needs_host(x) || cases.iter().any(|(_, b)| self.needs_host(b))
            }
            ExprKind::Tuple(es) => es.iter().any(|x| self.needs_host(x)),
            ExprKind::Record(fs) => fs.iter().any(|(_, x)| self.needs_host(x)),
            ExprKind::Project(x, _) | ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Ascribe(x, _) => {
                self.needs_host(x)
            }
            ExprKind::BinOp(_, a, b) => any(self, &[a, b]),
            ExprKind::Let(_, x, body) => any(self, &[x, body]),
            // gone after defunctionalisation; a lambda is lowered where its
            // combinator is
            ExprKind::Lambda(..)
            | ExprKind::LetFun { .. }
            | ExprKind::OpSection(_)
            | ExprKind::LeftSection(..)
            | ExprKind::RightSection(..)
            | ExprKind::ProjSection(_) => false,
        }
    }

    fn decl_needs_host(&mut self, d: &ValueDecl) -> bool {
        if let Some(&b) = self.decl_memo.get(&d.name.name) {
            return b;
        }
        let b = self.needs_host(&d.body);
        self.decl_memo.insert(d.name.name.clone(), b);
        b
    }

    /// The cases host and scalar code lower alike: variables, tuples,
    /// records and projections, their parts lowered where the whole is
    /// (`on_host`); `None` for every other expression.
    fn structural(&mut self, e: &'a Expr, on_host: bool) -> Option<Res<LVal>> {
        let loc = self.loc(e.span);
        let part_of = |l: &mut Self, x: &'a Expr| if on_host { l.host(x) } else { l.device(x) };
        Some(match &e.kind {
            ExprKind::Var { name, qual: None, .. } => {
                if let Some(v) = self.lookup(&name.name) {
                    return Some(Ok(v.clone()));
                }
                match self.decls.get(name.name.as_str()).copied() {
                    Some(d) if d.params.is_empty() => self.inline(d, vec![], on_host),
                    _ => Err(unsupported(e.span, format!("`{}` is not a value here", name.name))),
                }
            }
            ExprKind::Tuple(es) => es.iter().map(|x| part_of(self, x)).collect::<Res<_>>().map(LVal::Tuple),
            ExprKind::Record(fs) => {
                let mut fs: Vec<&(Ident, Expr)> = fs.iter().collect();
                fs.sort_by(|a, b| a.0.name.cmp(&b.0.name));
                fs.into_iter().map(|(_, x)| part_of(self, x)).collect::<Res<_>>().map(LVal::Tuple)
            }
            ExprKind::Project(x, f) => part_of(self, x).and_then(|v| {
                let i = field_index(&x.ty, &f.name).ok_or_else(|| unsupported(f.span, "unknown field"))?;
                Ok(part(&v, i, loc))
            }),
            ExprKind::Ascribe(x, _) => part_of(self, x),
            _ => return None,
        })
    }

    /// Inlines a call of a definition: its arguments bound to its
    /// parameters (and its size parameters to their extents), its body
    /// lowered where the call is.
    fn inline(&mut self, d: &'a ValueDecl, args: Vec<LVal>, on_host: bool) -> Res<LVal> {
        let args = if on_host { self.check_sizes(d, args) } else { args };
        // a definition sees only its parameters (and other definitions)
        let saved = std::mem::take(&mut self.env);
        for (p, v) in d.params.iter().zip(&args) {
            self.bind_pat(p, v.clone());
        }
        self.bind_sizes(d, &args);
        let r = if on_host { self.host(&d.body) } else { self.device(&d.body) };
        self.env = saved;
        r
    }
}

impl Type {
    fn contains_array(&self) -> bool {
        match self {
            Type::Array { .. } => true,
            Type::Tuple(ts) => ts.iter().any(Type::contains_array),
            Type::Record(fs) => fs.iter().any(|(_, t)| t.contains_array()),
            Type::Arrow(a, b) => a.contains_array() || b.contains_array(),
            _ => false,
        }
    }
}

fn mono_grow<R>(f: impl FnOnce() -> R) -> R {
    crate::mono::stacker_grow(f)
}

/// The entry's parameter types and its result type.
fn main_result(d: &ValueDecl) -> (Vec<&Type>, &Type) {
    let mut t = &d.ty;
    let mut ps = Vec::new();
    for _ in &d.params {
        if let Type::Arrow(a, r) = t {
            ps.push(&**a);
            t = r;
        }
    }
    (ps, t)
}

fn ext_type(t: &Type) -> Option<ExtType> {
    match t {
        Type::Prim(p) => Some(ExtType { prim: *p, rank: 0 }),
        Type::Array { elem, shape } => match &**elem {
            Type::Prim(p) => Some(ExtType { prim: *p, rank: shape.len() }),
            _ => None,
        },
        _ => None,
    }
}

/// `true` if extents `a` and `b` agree; otherwise the error that `op`
/// needs arrays of one size, naming both (a check planted in the
/// condition, `CheckKind::SizeMismatch`).
fn size_agrees(op: &'static str, a: OpenExp, b: OpenExp, loc: SrcLoc) -> OpenExp {
    let c = |v: i64| c_i64(v, loc);
    let agree = prim(ir::PrimFun::Eq, vec![a.clone(), b.clone()], loc);
    let index = OpenExp::new(
        ExpKind::Cond(
            Box::new(agree),
            Box::new(OpenExp::new(ExpKind::Tuple(vec![c(0), c(0)]), loc)),
            Box::new(OpenExp::new(ExpKind::Tuple(vec![b, c(1)]), loc)),
        ),
        loc,
    );
    let shape = OpenExp::new(ExpKind::Tuple(vec![prim(ir::PrimFun::Add, vec![a, c(1)], loc), c(1)]), loc);
    let checked =
        prim(ir::PrimFun::BoundsCheck, vec![shape, index], loc.checking(op, CheckKind::SizeMismatch));
    prim(ir::PrimFun::Eq, vec![prj(0, checked, loc), c(0)], loc)
}

/// Where a size named `n` is found in a value of type `t`: the array's
/// level and the dimension.
fn size_in(t: &Type, v: &LVal, n: &str) -> Option<(usize, usize)> {
    match (t, v) {
        (Type::Array { shape, .. }, LVal::Array { level, .. }) => {
            shape.iter().position(|s| matches!(s, Size::Var(m) if m == n)).map(|d| (*level, d))
        }
        (Type::Tuple(ts), LVal::Tuple(vs)) => ts.iter().zip(vs).find_map(|(t, v)| size_in(t, v, n)),
        (Type::Record(fs), LVal::Tuple(vs)) => fs.iter().zip(vs).find_map(|((_, t), v)| size_in(t, v, n)),
        _ => None,
    }
}

/// The `i`th part of a tuple value.
fn part(v: &LVal, i: usize, loc: SrcLoc) -> LVal {
    match v {
        LVal::Tuple(vs) => vs.get(i).cloned().unwrap_or(LVal::Tuple(vec![])),
        LVal::Exp { e, elt: EltTy::Tuple(ts) } => {
            LVal::Exp { e: prj(i, e.clone(), loc), elt: ts.get(i).cloned().unwrap_or(EltTy::UNIT) }
        }
        other => other.clone(),
    }
}

// Note [Size checks]
// Futhark requires the arrays of `map2`, `zip`, `scatter` and the
// arguments of a definition that share a size parameter to have one size.
// The lowering checks it at run time, once, on the host: each check is a
// condition (`size_agrees`: true, or the error naming both sizes, planted
// as `CheckKind::SizeMismatch`), and a block's result is given by an
// `acond` on all of its checks whose two branches are the result itself.
// The checks' place leaves every operation as it would be without them:
// a check on an operand would keep it manifest (an `acond` is a fusion
// barrier), and a reshape copies on the CPU backend. The operations run
// on the arrays' common extent first (`zip_with`'s intersection: never out
// of bounds), and their result is given only if the sizes agree. The
// corpus's `errors.fut` fails if an optimisation ever drops the `acond`.

/// `result`, given only if every check holds.
fn with_checks(result: OpenAcc, checks: Vec<OpenExp>, loc: SrcLoc) -> OpenAcc {
    let Some(cond) = checks.into_iter().reduce(|a, b| prim(ir::PrimFun::LAnd, vec![a, b], loc)) else {
        return result;
    };
    let then_ = Box::new(result.clone());
    OpenAcc::new(AccKind::Acond { cond, then_, else_: Box::new(result) }, loc)
}

fn wrap_lets(block: Vec<OpenAcc>, mut result: OpenAcc, loc: SrcLoc) -> OpenAcc {
    for b in block.into_iter().rev() {
        result = OpenAcc::new(AccKind::Let(Box::new(b), Box::new(result)), loc);
    }
    result
}
