//! The prelude's scalar functions and constants (`f32.sqrt`, `i64.f32`,
//! `f64.pi`, `length`, ...) in scalar code.

use super::device::{int_const, nested};
use super::*;
use accelerate_ir::term::PrimFun;

impl<'a> Lower<'a> {
    /// A constant of a numeric namespace (`f32.pi`, `i32.highest`).
    pub(super) fn prim_constant(&mut self, ns: &str, name: &str, e: &Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let p = PrimType::from_name(ns)
            .ok_or_else(|| unsupported(e.span, format!("unknown namespace `{ns}`")))?;
        let float = |v: f64| super::device::float_const(v, p);
        let v = match name {
            "pi" => float(std::f64::consts::PI),
            "e" => float(std::f64::consts::E),
            "inf" => float(f64::INFINITY),
            "nan" => float(f64::NAN),
            "highest" if p.is_float() => float(f64::INFINITY),
            "lowest" if p.is_float() => float(f64::NEG_INFINITY),
            "highest" => Some(int_limit(p, true)),
            "lowest" => Some(int_limit(p, false)),
            _ => None,
        };
        let v = v.ok_or_else(|| {
            unsupported(e.span, format!("`{ns}.{name}` is not supported by the text front end"))
        })?;
        Ok(LVal::Exp { e: OpenExp::new(ExpKind::Const(v), loc), elt: EltTy::Scalar(prim_scalar(p)) })
    }

    /// A call of a prelude function in scalar code.
    pub(super) fn prim_call(
        &mut self,
        qual: Option<&str>,
        name: &str,
        args: &[&'a Expr],
        e: &'a Expr,
    ) -> Res<LVal> {
        let loc = self.loc(e.span);
        let Some(ns) = qual else {
            return self.prim_unqualified(name, args, e);
        };
        if soac::is_host_qualified(name) {
            return Err(nested(e));
        }
        let target = PrimType::from_name(ns)
            .ok_or_else(|| unsupported(e.span, format!("unknown namespace `{ns}`")))?;
        let mut xs = Vec::new();
        for a in args {
            let v = self.device(a)?;
            xs.push(self.exp_of(&v, loc)?);
        }
        let result = elt_of(&e.ty).ok_or_else(|| nested(e))?;
        let arg_prim = match args.first().map(|a| &a.ty) {
            Some(Type::Prim(p)) => Some(*p),
            _ => None,
        };
        let one = |f: PrimFun, xs: Vec<OpenExp>| prim(f, xs, loc);
        let e_out = if let Some(from) = PrimType::from_name(name) {
            // `T.u x`: a conversion of `x`, of type `u`, to `T`
            let x =
                xs.into_iter().next().ok_or_else(|| unsupported(e.span, "a conversion without argument"))?;
            let _ = from;
            if target == PrimType::Bool {
                let zero = OpenExp::new(ExpKind::Const(int_const(0, arg_prim.unwrap_or(PrimType::I32))), loc);
                if arg_prim == Some(PrimType::Bool) {
                    x
                } else {
                    one(PrimFun::Ne, vec![x, zero])
                }
            } else if arg_prim == Some(target) {
                x
            } else {
                one(PrimFun::Cast(prim_scalar(target)), vec![x])
            }
        } else {
            let f = match name {
                "abs" => PrimFun::Abs,
                "sgn" => PrimFun::Signum,
                "min" => PrimFun::Min,
                "max" => PrimFun::Max,
                "sqrt" => PrimFun::Sqrt,
                "exp" => PrimFun::Exp,
                "log" => PrimFun::Log,
                "sin" => PrimFun::Sin,
                "cos" => PrimFun::Cos,
                "tan" => PrimFun::Tan,
                "asin" => PrimFun::Asin,
                "acos" => PrimFun::Acos,
                "atan" => PrimFun::Atan,
                "sinh" => PrimFun::Sinh,
                "cosh" => PrimFun::Cosh,
                "tanh" => PrimFun::Tanh,
                "floor" => PrimFun::Floor,
                "ceil" => PrimFun::Ceil,
                "round" => PrimFun::Round,
                "trunc" => PrimFun::Trunc,
                "isnan" => PrimFun::IsNan,
                "isinf" => PrimFun::IsInfinite,
                "atan2" => PrimFun::Atan2,
                "pow" if target.is_float() => PrimFun::Powf,
                "log2" | "log10" => {
                    let base = if name == "log2" { 2.0 } else { 10.0 };
                    let b = super::device::float_const(base, target).unwrap_or(ScalarVal::F64(base));
                    let mut xs = xs;
                    xs.push(OpenExp::new(ExpKind::Const(b), loc));
                    return Ok(LVal::Exp { e: one(PrimFun::LogBase, xs), elt: result });
                }
                "popc" | "clz" | "ctz" => {
                    let f = match name {
                        "popc" => PrimFun::PopCount,
                        "clz" => PrimFun::LeadingZeros,
                        _ => PrimFun::TrailingZeros,
                    };
                    // the count is a `u32`; Futhark's is an `i32`
                    let c = one(f, xs);
                    return Ok(LVal::Exp { e: one(PrimFun::Cast(ScalarTy::I32), vec![c]), elt: result });
                }
                _ => {
                    return Err(unsupported(
                        e.span,
                        format!("`{ns}.{name}` is not supported by the text front end yet"),
                    ))
                }
            };
            one(f, xs)
        };
        Ok(LVal::Exp { e: e_out, elt: result })
    }

    fn prim_unqualified(&mut self, name: &str, args: &[&'a Expr], e: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let array = |l: &mut Self, a: &'a Expr| -> Res<(usize, usize, EltTy)> {
            match l.device(a)? {
                LVal::Array { level, rank, elt } => Ok((level, rank, elt)),
                _ => Err(unsupported(a.span, "not an array")),
            }
        };
        let read = |level: usize, i: OpenExp, elt: EltTy| {
            let index = OpenExp::new(ExpKind::Tuple(vec![i]), loc);
            LVal::Exp { e: OpenExp::new(ExpKind::Index { array: level, index: Box::new(index) }, loc), elt }
        };
        match (name, args) {
            ("length", [xs]) => {
                let (level, _, _) = array(self, xs)?;
                let shape = OpenExp::new(ExpKind::Shape { array: level }, loc);
                Ok(LVal::Exp { e: prj(0, shape, loc), elt: EltTy::Scalar(ScalarTy::I64) })
            }
            ("head", [xs]) if xs.ty.rank() == 1 => {
                let (level, _, elt) = array(self, xs)?;
                Ok(read(level, c_i64(0, loc), elt))
            }
            ("last", [xs]) if xs.ty.rank() == 1 => {
                let (level, _, elt) = array(self, xs)?;
                let n = prj(0, OpenExp::new(ExpKind::Shape { array: level }, loc), loc);
                Ok(read(level, prim(PrimFun::Sub, vec![n, c_i64(1, loc)], loc), elt))
            }
            _ if soac::is_host(name) => Err(nested(e)),
            _ => Err(unsupported(e.span, format!("`{name}` is not supported by the text front end yet"))),
        }
    }
}

pub(super) fn int_limit(p: PrimType, high: bool) -> ScalarVal {
    macro_rules! lim {
        ($t:ty, $v:ident) => {
            ScalarVal::$v(if high { <$t>::MAX } else { <$t>::MIN })
        };
    }
    match p {
        PrimType::I8 => lim!(i8, I8),
        PrimType::I16 => lim!(i16, I16),
        PrimType::I32 => lim!(i32, I32),
        PrimType::I64 => lim!(i64, I64),
        PrimType::U8 => lim!(u8, U8),
        PrimType::U16 => lim!(u16, U16),
        PrimType::U32 => lim!(u32, U32),
        PrimType::U64 => lim!(u64, U64),
        PrimType::Bool => ScalarVal::Bool(high),
        PrimType::F16 | PrimType::F32 | PrimType::F64 => ScalarVal::F64(0.0),
    }
}
