//! The type checker: Hindley-Milner inference with unification variables
//! over the syntax tree, filling in every expression's and pattern's type
//! and every instantiation of a polymorphic definition (Note [One tree,
//! filled in by stages] in `ast`), and enforcing the type restrictions of
//! Hovgaard, Henriksen and Elsman (TFP'18) that make defunctionalisation
//! complete (Note [The restrictions]).
//!
//! A program is checked one top-level declaration at a time, in order; a
//! definition sees only the ones before it (there is no recursion, as in
//! Futhark). Each definition is checked in two passes: `expr` infers the
//! types, leaving unification variables in the tree; `finish` defaults
//! what is left of literals' types, generalises the definition over the
//! variables left in its type, writes the resolved types back and checks
//! the restrictions. The prelude (`intrinsics`) is known by name.
//!
//! Futhark requires a record's type to be known where a field is taken
//! from it; here a projection from a value whose type is not known yet
//! (`\p -> p.x` passed to `map` before the array) is remembered in the
//! constraint of its unification variable and checked when the type is
//! learnt, and is an error only if the type is still unknown at the end
//! of the definition, so that `map (.x) points` checks.
//!
//! Guarantees, after `check_program` returns `Ok`: every `Expr.ty` and
//! `Pat.ty` is resolved (no `Unknown`, no `Infer`); type parameters of the
//! enclosing definition appear as `Type::Param`; arrays are normal (their
//! element is never an array); records have their fields sorted; every
//! type abbreviation is expanded; every `Var` that uses a polymorphic
//! top-level definition carries its instantiation; every `Size::Var` in a
//! type names a variable in scope where the type appears (Note [Sizes]);
//! `ValueDecl.ty` is the definition's curried type, and a definition
//! generalised over types it did not declare has them appended to its
//! `type_params` (Note [Generalisation]).
//!
//! Note [Sizes]
//! Sizes are kept where the program wrote them (`[n]f32` with `n` a size
//! parameter or an `i64` in scope, `[3]i32`) and learnt where a
//! signature relates them (`map` returns an array of its argument's
//! size), but types are compared up to sizes: later stages check sizes at
//! run time. A size is learnt by binding a size variable (`?i`, see
//! `infer`) to the first size it meets, which is sound where Futhark
//! would demand the two sizes equal. Where Futhark would instead make a
//! fresh existential size, the size is forgotten (`Size::Any`): the
//! branches of `if` and `match` keep only the sizes they agree on
//! (`Infer::join`), a loop's parameters forget the sizes of their initial
//! values (they may change from one iteration to the next), and `[]` in
//! a signature is never learnt. Every size in a definition's type is
//! instantiated fresh at each use, and a size naming a variable out of
//! scope where a type ends up (a local `[k]` escaping its `let`) is
//! forgotten when the types are written back.
//!
//! Note [The restrictions]
//! TFP'18 rules out the programs whose applied functions cannot be known
//! statically. Each rule is a `DiagKind::Restriction` at the offending
//! expression: (1) `if` and `match` may not return a value whose type
//! contains a function; (2) a loop's parameters may not contain one; (3)
//! no array may contain functions (an array literal of lambdas, a `map`
//! whose function returns a function, a written type `[n](a -> b)`); (4)
//! a type parameter that is not lifted (`'a`) may not be instantiated with
//! a type containing a function, while a lifted one (`'^a`) may, and then
//! counts as a function for rules 1-3. An entry point may not take or
//! return a function either. Rules 1-3 are checked on the resolved types
//! when they are written back, rule 4 after, so a `map` building functions
//! is reported as an array of functions.
//!
//! Note [Generalisation]
//! A top-level definition is generalised over the unification variables
//! left in its type once literals have been defaulted (`def twice f x =
//! f (f x)` gets `'^t0`), as Futhark does; local functions are not. An
//! inferred type parameter is lifted unless the definition needs it to be
//! of order zero (it meets rules 1-4 or `==`), in which case it is
//! demoted to `'t0` when the restrictions are checked.

mod expr;
mod finish;
mod infer;
pub mod intrinsics;
pub mod print;
mod types;

use crate::ast::{Decl, Ident, PrimType, Program, Span, Type, TypeDecl, TypeParam, ValueDecl};
use crate::diag::{DiagKind, Diagnostic};
use infer::{Clash, Infer};
use std::collections::{HashMap, HashSet};

/// Checks a whole program, filling in its types (see the module docs for
/// what holds afterwards).
pub fn check_program(prog: &mut Program) -> Result<(), Diagnostic> {
    let mut ck = Checker::default();
    for decl in &mut prog.decls {
        match decl {
            Decl::Type(td) => ck.type_decl(td)?,
            Decl::Value(vd) => ck.value_decl(vd)?,
        }
    }
    Ok(())
}

/// A checked top-level definition, as its uses see it.
#[derive(Clone, Debug)]
struct DefSig {
    ty: Type,
    /// Its type parameters (name, lifted), declared and inferred.
    type_params: Vec<(String, bool)>,
    span: Span,
}

/// A type abbreviation: its parameters and its definition, in which they
/// appear as `Type::Param` and `Size::Var`.
#[derive(Clone, Debug)]
struct Abbrev {
    params: Vec<TypeParam>,
    ty: Type,
    span: Span,
}

/// A variable in local scope.
#[derive(Clone, Debug)]
enum Local {
    Value(Type),
    /// A local function with size parameters, instantiated fresh at each
    /// use.
    Fun {
        ty: Type,
        sizes: Vec<String>,
    },
}

/// Where a polymorphic definition or prelude function is used: its type
/// parameters (name, lifted) and what they were instantiated with, for
/// rule 4 (Note [The restrictions]).
#[derive(Clone, Debug)]
struct InstSite {
    span: Span,
    callee: String,
    params: Vec<(String, bool, Type)>,
}

#[derive(Default)]
struct Checker {
    inf: Infer,
    defs: HashMap<String, DefSig>,
    abbrevs: HashMap<String, Abbrev>,
    locals: Vec<(String, Local)>,
    /// The type parameters of the definition (or abbreviation) being
    /// checked, and whether they are lifted.
    tparams: HashMap<String, bool>,
    /// Those of them the checker inferred (Note [Generalisation]).
    inferred: HashSet<String>,
    /// The definition being checked, to name recursion.
    current: Option<String>,
    insts: Vec<InstSite>,
}

fn type_error(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(DiagKind::Type, span, msg)
}

fn restriction(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(DiagKind::Restriction, span, msg)
}

fn arrows(params: Vec<Type>, res: Type) -> Type {
    params.into_iter().rev().fold(res, |acc, p| Type::Arrow(Box::new(p), Box::new(acc)))
}

impl Checker {
    fn type_decl(&mut self, td: &mut TypeDecl) -> Result<(), Diagnostic> {
        let name = &td.name.name;
        if PrimType::from_name(name).is_some() {
            return Err(type_error(td.name.span, format!("the primitive type `{name}` cannot be redefined")));
        }
        if let Some(prev) = self.abbrevs.get(name) {
            return Err(type_error(td.name.span, format!("the type `{name}` is already defined"))
                .with_label(prev.span, "first defined here"));
        }
        self.tparams.clear();
        self.inf.lifted.clear();
        for p in &td.params {
            match p {
                TypeParam::Type { name, lifted } => {
                    self.declare_type_param(name, *lifted)?;
                }
                TypeParam::Size(n) => {
                    self.locals.push((n.name.clone(), Local::Value(Type::Prim(PrimType::I64))))
                }
            }
        }
        let ty = self.conv_type(&td.def);
        self.locals.clear();
        self.tparams.clear();
        let ty = ty?;
        self.abbrevs.insert(name.clone(), Abbrev { params: td.params.clone(), ty, span: td.name.span });
        Ok(())
    }

    fn declare_type_param(&mut self, name: &Ident, lifted: bool) -> Result<(), Diagnostic> {
        if self.tparams.insert(name.name.clone(), lifted).is_some() {
            return Err(type_error(
                name.span,
                format!("the type parameter `{}` is declared twice", name.name),
            ));
        }
        if lifted {
            self.inf.lifted.insert(name.name.clone());
        }
        Ok(())
    }

    fn value_decl(&mut self, d: &mut ValueDecl) -> Result<(), Diagnostic> {
        let name = d.name.name.clone();
        if let Some(prev) = self.defs.get(&name) {
            return Err(type_error(d.name.span, format!("`{name}` is already defined"))
                .with_label(prev.span, "first defined here"));
        }
        self.current = Some(name.clone());
        self.tparams.clear();
        self.inferred.clear();
        self.inf.lifted.clear();
        self.locals.clear();
        self.insts.clear();
        let start = self.inf.var_count();
        for p in &d.type_params {
            match p {
                TypeParam::Type { name: tp, lifted } => {
                    if d.entry {
                        return Err(type_error(
                            tp.span,
                            format!(
                                "the entry point `{name}` may not be polymorphic (type parameter `{}`)",
                                tp.name
                            ),
                        ));
                    }
                    self.declare_type_param(tp, *lifted)?;
                }
                TypeParam::Size(n) => {
                    self.locals.push((n.name.clone(), Local::Value(Type::Prim(PrimType::I64))))
                }
            }
        }
        let mut param_tys = Vec::new();
        for p in &mut d.params {
            param_tys.push(self.param(p)?);
        }
        let ret = d.ret.as_ref().map(|t| self.conv_type(t)).transpose()?;
        let body_ty = self.expr(&mut d.body)?;
        let res = match ret {
            Some(r) => {
                self.unify_at(&r, &body_ty, d.body.span)?;
                r
            }
            None => body_ty,
        };
        let ty = arrows(param_tys, res);
        self.finish_def(d, ty, start)?;
        let type_params = d
            .type_params
            .iter()
            .filter_map(|p| match p {
                TypeParam::Type { name, lifted } => Some((name.name.clone(), *lifted)),
                TypeParam::Size(_) => None,
            })
            .collect();
        self.defs.insert(name, DefSig { ty: d.ty.clone(), type_params, span: d.name.span });
        self.current = None;
        self.locals.clear();
        Ok(())
    }

    /// Unifies the type expected at `span` with the type found there,
    /// reporting a clash as a type error naming both.
    fn unify_at(&mut self, expected: &Type, found: &Type, span: Span) -> Result<(), Diagnostic> {
        match self.inf.unify_or_undo(expected, found) {
            Ok(()) => Ok(()),
            Err(clash) => Err(self.clash_error(clash, expected, found, span)),
        }
    }

    fn clash_error(&self, clash: Clash, expected: &Type, found: &Type, span: Span) -> Diagnostic {
        let (e, f) = (self.inf.show(expected), self.inf.show(found));
        match clash {
            Clash::Mismatch => type_error(span, format!("expected `{e}`, found `{f}`")),
            Clash::Occurs => type_error(span, format!("expected `{e}`, found `{f}`"))
                .with_note("the type would have to contain itself"),
            Clash::Constraint { wanted, found: inner } => {
                let d = type_error(span, format!("expected {wanted}, found {inner}"));
                if e == "_" || f == "_" {
                    d
                } else {
                    d.with_note(format!("while matching `{e}` with `{f}`"))
                }
            }
            Clash::Field { field, ty, span } => {
                type_error(span, format!("unknown field `{field}` in `{}`", self.inf.show(&ty)))
            }
        }
    }
}
