//! Types as written (`TypeExp`) turned into types: primitive names, the
//! type parameters in scope, type abbreviations expanded with their
//! arguments, sizes looked up as `i64` variables in scope. Also the
//! substitution that instantiates a polymorphic type.

use super::infer::mk_array;
use super::{restriction, type_error, Abbrev, Checker, Local};
use crate::ast::{Ident, PrimType, Size, SizeExp, Type, TypeArgExp, TypeExp, TypeParam};
use crate::diag::Diagnostic;
use std::collections::HashMap;

/// The type rebuilt with its type parameters and sizes replaced, arrays
/// kept normal.
pub(super) fn rebuild(
    t: &Type,
    param: &mut dyn FnMut(&str) -> Option<Type>,
    size: &mut dyn FnMut(&Size) -> Size,
) -> Type {
    match t {
        Type::Param(p) => param(p).unwrap_or_else(|| t.clone()),
        Type::Array { elem, shape } => {
            mk_array(rebuild(elem, param, size), shape.iter().map(&mut *size).collect())
        }
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| rebuild(t, param, size)).collect()),
        Type::Record(fs) => {
            Type::Record(fs.iter().map(|(n, t)| (n.clone(), rebuild(t, param, size))).collect())
        }
        Type::Arrow(a, b) => {
            Type::Arrow(Box::new(rebuild(a, param, size)), Box::new(rebuild(b, param, size)))
        }
        Type::Unknown | Type::Prim(_) | Type::Infer(_) => t.clone(),
    }
}

/// Whether a type written in the program may hold a function: an arrow,
/// or a lifted type parameter.
fn written_may_hold_function(t: &Type, tparams: &HashMap<String, bool>) -> bool {
    match t {
        Type::Arrow(..) => true,
        Type::Param(p) => tparams.get(p).copied().unwrap_or(false),
        Type::Array { elem, .. } => written_may_hold_function(elem, tparams),
        Type::Tuple(ts) => ts.iter().any(|t| written_may_hold_function(t, tparams)),
        Type::Record(fs) => fs.iter().any(|(_, t)| written_may_hold_function(t, tparams)),
        Type::Unknown | Type::Prim(_) | Type::Infer(_) => false,
    }
}

impl Checker {
    /// A polymorphic type with fresh unification variables for its type
    /// parameters and fresh size variables for every size it names, and
    /// for every `[]` its caller provides (Note [Sizes]); also what each
    /// parameter was instantiated with.
    pub(super) fn instantiate(&mut self, ty: &Type, params: &[(String, bool)]) -> (Type, Vec<Type>) {
        let vars: Vec<Type> = params.iter().map(|_| self.inf.fresh()).collect();
        let by_name: HashMap<&str, Type> =
            params.iter().map(|(p, _)| p.as_str()).zip(vars.iter().cloned()).collect();
        let mut sizes: HashMap<String, Size> = HashMap::new();
        let inf = &mut self.inf;
        let ty = rebuild(ty, &mut |p| by_name.get(p).cloned(), &mut |s| match s {
            Size::Var(n) => sizes.entry(n.clone()).or_insert_with(|| inf.fresh_size()).clone(),
            s => s.clone(),
        });
        (self.learnable_argument_sizes(&ty, false), vars)
    }

    /// `[]` where the caller provides the value (an argument, a
    /// function's argument's result, ...: a negative position) says only
    /// that any size is accepted, so it may as well learn the size it is
    /// given, which lets `reduce (+) 0 row` tell `row`'s size. Where the
    /// function provides the value (`filter`'s result), `[]` is a size
    /// nobody knows, and stays so.
    fn learnable_argument_sizes(&mut self, t: &Type, negative: bool) -> Type {
        match t {
            Type::Array { elem, shape } => Type::Array {
                elem: Box::new(self.learnable_argument_sizes(elem, negative)),
                shape: shape
                    .iter()
                    .map(|s| match s {
                        Size::Any if negative => self.inf.fresh_size(),
                        s => s.clone(),
                    })
                    .collect(),
            },
            Type::Tuple(ts) => {
                Type::Tuple(ts.iter().map(|t| self.learnable_argument_sizes(t, negative)).collect())
            }
            Type::Record(fs) => Type::Record(
                fs.iter().map(|(n, t)| (n.clone(), self.learnable_argument_sizes(t, negative))).collect(),
            ),
            Type::Arrow(a, b) => Type::Arrow(
                Box::new(self.learnable_argument_sizes(a, !negative)),
                Box::new(self.learnable_argument_sizes(b, negative)),
            ),
            Type::Unknown | Type::Prim(_) | Type::Param(_) | Type::Infer(_) => t.clone(),
        }
    }

    /// A local function's type with its size parameters instantiated.
    pub(super) fn instantiate_sizes(&mut self, ty: &Type, names: &[String]) -> Type {
        let mut sizes: HashMap<String, Size> = HashMap::new();
        let inf = &mut self.inf;
        rebuild(ty, &mut |_| None, &mut |s| match s {
            Size::Var(n) if names.contains(n) => {
                sizes.entry(n.clone()).or_insert_with(|| inf.fresh_size()).clone()
            }
            s => s.clone(),
        })
    }

    /// The type of a variable that a size may name: a local, or a
    /// monomorphic top-level definition.
    fn size_variable_type(&self, name: &str) -> Option<Type> {
        match self.locals.iter().rev().find(|(n, _)| n == name) {
            Some((_, Local::Value(t))) => Some(t.clone()),
            Some((_, Local::Fun { ty, .. })) => Some(ty.clone()),
            None => self.defs.get(name).filter(|d| d.type_params.is_empty()).map(|d| d.ty.clone()),
        }
    }

    pub(super) fn conv_type(&mut self, te: &TypeExp) -> Result<Type, Diagnostic> {
        self.conv(te, &mut Vec::new())
    }

    /// `bound`: the parameter names of enclosing arrows (`(n: i64) -> [n]t`).
    fn conv(&mut self, te: &TypeExp, bound: &mut Vec<String>) -> Result<Type, Diagnostic> {
        match te {
            TypeExp::Name(id, args) => self.conv_name(id, args, bound),
            TypeExp::Array(size, elem, span) => {
                let e = self.conv(elem, bound)?;
                if written_may_hold_function(&e, &self.tparams) {
                    return Err(restriction(
                        *span,
                        format!(
                            "arrays may not contain functions, but this array's elements have type `{}`",
                            super::print::show(&e)
                        ),
                    ));
                }
                let s = self.conv_size(size, bound)?;
                Ok(mk_array(e, vec![s]))
            }
            TypeExp::Tuple(ts, _) => {
                let mut out = Vec::new();
                for t in ts {
                    out.push(self.conv(t, bound)?);
                }
                Ok(if out.len() == 1 { out.remove(0) } else { Type::Tuple(out) })
            }
            TypeExp::Record(fs, _) => {
                let mut out: Vec<(String, Type)> = Vec::new();
                for (name, t) in fs {
                    if out.iter().any(|(n, _)| *n == name.name) {
                        return Err(type_error(
                            name.span,
                            format!("the field `{}` is given twice", name.name),
                        ));
                    }
                    out.push((name.name.clone(), self.conv(t, bound)?));
                }
                out.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Type::Record(out))
            }
            TypeExp::Arrow(name, a, b, _) => {
                let a = self.conv(a, bound)?;
                bound.extend(name.iter().map(|n| n.name.clone()));
                let b = self.conv(b, bound);
                if name.is_some() {
                    bound.pop();
                }
                Ok(Type::Arrow(Box::new(a), Box::new(b?)))
            }
        }
    }

    fn conv_name(
        &mut self,
        id: &Ident,
        args: &[TypeArgExp],
        bound: &mut Vec<String>,
    ) -> Result<Type, Diagnostic> {
        let name = id.name.as_str();
        let no_args = |what: &str| -> Result<(), Diagnostic> {
            match args.is_empty() {
                true => Ok(()),
                false => Err(type_error(id.span, format!("{what} `{name}` takes no arguments"))),
            }
        };
        if self.tparams.contains_key(name) {
            no_args("the type parameter")?;
            return Ok(Type::Param(name.to_string()));
        }
        if let Some(p) = PrimType::from_name(name) {
            no_args("the primitive type")?;
            return Ok(Type::Prim(p));
        }
        let Some(ab) = self.abbrevs.get(name).cloned() else {
            return Err(type_error(id.span, format!("unknown type `{name}`")));
        };
        self.expand(id, &ab, args, bound)
    }

    fn expand(
        &mut self,
        id: &Ident,
        ab: &Abbrev,
        args: &[TypeArgExp],
        bound: &mut Vec<String>,
    ) -> Result<Type, Diagnostic> {
        if args.len() != ab.params.len() {
            return Err(type_error(
                id.span,
                format!(
                    "the type `{}` takes {} argument(s), but is given {}",
                    id.name,
                    ab.params.len(),
                    args.len()
                ),
            ));
        }
        let mut types = HashMap::new();
        let mut sizes = HashMap::new();
        for (param, arg) in ab.params.iter().zip(args) {
            match (param, arg) {
                (TypeParam::Type { name, lifted }, TypeArgExp::Type(te)) => {
                    let t = self.conv(te, bound)?;
                    if !lifted && written_may_hold_function(&t, &self.tparams) {
                        return Err(restriction(
                            te.span(),
                            format!(
                                "the type parameter `{}` of `{}` is not lifted, so it may not be `{}`, \
                                 which may be a function (a lifted parameter is written `'^{}`)",
                                name.name,
                                id.name,
                                super::print::show(&t),
                                name.name
                            ),
                        ));
                    }
                    types.insert(name.name.clone(), t);
                }
                (TypeParam::Size(name), TypeArgExp::Size(se)) => {
                    sizes.insert(name.name.clone(), self.conv_size(se, bound)?);
                }
                (TypeParam::Type { name, .. }, TypeArgExp::Size(_)) => {
                    return Err(type_error(
                        id.span,
                        format!("`{}` expects a type for `{}`", id.name, name.name),
                    ))
                }
                (TypeParam::Size(name), TypeArgExp::Type(te)) => {
                    return Err(type_error(
                        te.span(),
                        format!("`{}` expects a size for `{}`", id.name, name.name),
                    ))
                }
            }
        }
        Ok(rebuild(&ab.ty, &mut |p| types.get(p).cloned(), &mut |s| match s {
            Size::Var(n) => sizes.get(n).cloned().unwrap_or_else(|| s.clone()),
            s => s.clone(),
        }))
    }

    fn conv_size(&mut self, s: &SizeExp, bound: &[String]) -> Result<Size, Diagnostic> {
        match s {
            SizeExp::Any(_) => Ok(Size::Any),
            SizeExp::Const(n, _) => Ok(Size::Const(*n)),
            SizeExp::Var(id) => {
                if bound.contains(&id.name) {
                    return Ok(Size::Var(id.name.clone()));
                }
                let Some(t) = self.size_variable_type(&id.name) else {
                    return Err(type_error(id.span, format!("unknown size `{}`", id.name)));
                };
                self.unify_at(&Type::Prim(PrimType::I64), &t, id.span).map_err(|d| {
                    type_error(id.span, format!("the size `{}` must be an `i64`: {}", id.name, d.message))
                })?;
                Ok(Size::Var(id.name.clone()))
            }
        }
    }
}
