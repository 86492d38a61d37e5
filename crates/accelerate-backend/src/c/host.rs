//! The checks the host makes before a C-family kernel runs, which raise
//! the interpreter's errors, and the error record (`acc_err`) a kernel
//! raises its errors in.

use super::kernel::{Kernel, ShapeOf};
use crate::host::{Env, HostArray};
use crate::interp::{check_offsets, split_inner};
use accelerate_base::array::shape::reshape_error;
use accelerate_base::array::Buffer;
use accelerate_base::error::{Error, Result, SrcLoc};

/// The shape of a kernel's argument.
pub(crate) fn shape_of<A: HostArray>(env: &Env<A>, s: &ShapeOf) -> Result<Vec<usize>> {
    match s {
        ShapeOf::Var(v) => Ok(env.array(*v)?.shape().to_vec()),
        ShapeOf::Exp(e) => env.scalars().shape(e),
    }
}

/// A reduction's or scan's source as rows: the outer extents, the row
/// length and the number of rows. `fold1` or `scan1` of an empty row is
/// an error, raised before any kernel runs.
pub(crate) fn rows_of(
    k: &Kernel,
    shape: &[usize],
    seed: bool,
    op: &'static str,
) -> Result<(Vec<usize>, usize, usize)> {
    let (outer, n) = split_inner(shape);
    let rows: usize = outer.iter().product();
    if !seed && n == 0 && rows > 0 {
        return Err(Error::EmptyReduction { loc: k.loc, op, shape: shape.to_vec() });
    }
    Ok((outer, n, rows))
}

/// The offsets of a segmented reduction over rows of `n` elements (the
/// array's own storage, not a copy: millions of segments are common),
/// checked as the interpreter checks them; `fold1_seg` with an empty
/// segment is an error.
pub(crate) fn segments<'e, A: HostArray>(
    env: &'e Env<A>,
    k: &Kernel,
    offsets: usize,
    shape: &[usize],
    seed: bool,
    op: &'static str,
) -> Result<&'e [i64]> {
    let offs: &[i64] = match env.array(offsets)?.host()?.buffers().first() {
        Some(Buffer::I64(v)) => v,
        _ => return Err(Error::Internal("segment offsets are not i64".into())),
    };
    let (outer, n) = split_inner(shape);
    check_offsets(offs, n, k.loc)?;
    let rows: usize = outer.iter().product();
    if !seed && rows > 0 && offs.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::EmptyReduction { loc: k.loc, op, shape: shape.to_vec() });
    }
    Ok(offs)
}

/// The shape of a stencil's result: its sources' shape, which must agree,
/// and which every pattern must fit in (unless it is empty).
pub(crate) fn stencil_shape<A: HostArray>(
    env: &Env<A>,
    k: &Kernel,
    sources: &[ShapeOf],
    patterns: &[Vec<usize>],
) -> Result<Vec<usize>> {
    let shapes = sources.iter().map(|s| shape_of(env, s)).collect::<Result<Vec<_>>>()?;
    let dims = shapes[0].clone();
    if let Some(b) = shapes.get(1).filter(|b| **b != dims) {
        return Err(Error::ShapeMismatch { loc: k.loc, op: "stencil2", first: dims, second: b.clone() });
    }
    if !dims.contains(&0) {
        if let Some(p) = patterns.iter().find(|p| p.iter().zip(&dims).any(|(e, d)| e > d)) {
            return Err(Error::StencilTooSmall { loc: k.loc, pattern: p.clone(), shape: dims });
        }
    }
    Ok(dims)
}

/// The errors a kernel raises, by code: the one table both the preludes'
/// `ACC_ERR_*` constants (`error_codes_enum`, pasted into
/// `prelude_common.h`) and the host's reading of an error record
/// (`AccErr::error`) come from. Each entry: the constant's name, its code,
/// and what the record's `vals` hold.
pub(crate) const ERROR_CODES: [(&str, i32, &str); 5] = [
    ("ACC_ERR_NONE", NONE, ""),
    ("ACC_ERR_DIVISION_BY_ZERO", DIVISION_BY_ZERO, ""),
    ("ACC_ERR_INDEX_OUT_OF_BOUNDS", INDEX_OUT_OF_BOUNDS, "rank, index..., shape..."),
    ("ACC_ERR_LINEAR_INDEX_OUT_OF_BOUNDS", LINEAR_INDEX_OUT_OF_BOUNDS, "index, size, rank, shape..."),
    ("ACC_ERR_RESHAPE", RESHAPE, "from rank, from..., to rank, to..."),
];

const NONE: i32 = 0;
const DIVISION_BY_ZERO: i32 = 1;
const INDEX_OUT_OF_BOUNDS: i32 = 2;
const LINEAR_INDEX_OUT_OF_BOUNDS: i32 = 3;
const RESHAPE: i32 = 4;

/// The C enumeration of `ERROR_CODES`, its comments aligned.
pub(crate) fn error_codes_enum() -> String {
    let mut out = String::from("enum {\n");
    let last = ERROR_CODES.len() - 1;
    let width = ERROR_CODES.iter().map(|(n, c, _)| format!("{n} = {c},").len()).max().unwrap_or(0);
    for (i, (name, code, vals)) in ERROR_CODES.iter().enumerate() {
        let item = format!("{name} = {code}{}", if i < last { "," } else { "" });
        if vals.is_empty() {
            out.push_str(&format!("    {item}\n"));
        } else {
            out.push_str(&format!("    {item:<width$} /* vals: {vals} */\n"));
        }
    }
    out.push_str("};\n");
    out
}

/// `acc_err` of the preludes (`prelude_common.h`): the first error a
/// kernel raised.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct AccErr {
    pub code: i32,
    pub site: i32,
    pub vals: [i64; 64],
}

impl AccErr {
    pub const NONE: AccErr = AccErr { code: 0, site: 0, vals: [0; 64] };

    /// The error a kernel raised, naming the user's line.
    pub fn error(&self, k: &Kernel) -> Error {
        let loc: SrcLoc = match k.sites.get(self.site as usize) {
            Some(l) => *l,
            None => {
                return Error::Internal(format!(
                    "kernel {} raised error {} at unknown site {}",
                    k.name, self.code, self.site
                ))
            }
        };
        let v = &self.vals;
        let usizes = |s: &[i64]| s.iter().map(|&d| d.max(0) as usize).collect::<Vec<_>>();
        match self.code {
            DIVISION_BY_ZERO => Error::DivisionByZero { loc },
            INDEX_OUT_OF_BOUNDS => {
                let r = (v[0].max(0) as usize).min(31);
                Error::index_out_of_bounds(loc, v[1..1 + r].to_vec(), usizes(&v[1 + r..1 + 2 * r]))
            }
            LINEAR_INDEX_OUT_OF_BOUNDS => {
                let r = (v[2].max(0) as usize).min(60);
                Error::LinearIndexOutOfBounds {
                    loc,
                    index: v[0],
                    size: v[1].max(0) as usize,
                    shape: usizes(&v[3..3 + r]),
                }
            }
            RESHAPE => {
                let a = (v[0].max(0) as usize).min(30);
                let from = &v[1..1 + a];
                let b = (v[1 + a].max(0) as usize).min(30);
                let to = v[2 + a..2 + a + b].to_vec();
                reshape_error(from, &to, loc).unwrap_or_else(|| {
                    Error::Internal(format!("kernel {} raised a reshape error of a valid reshape", k.name))
                })
            }
            other => Error::Internal(format!("kernel {} raised unknown error code {other}", k.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_error_codes_enum_is_the_preludes_text() {
        let want = "enum {
    ACC_ERR_NONE = 0,
    ACC_ERR_DIVISION_BY_ZERO = 1,
    ACC_ERR_INDEX_OUT_OF_BOUNDS = 2,        /* vals: rank, index..., shape... */
    ACC_ERR_LINEAR_INDEX_OUT_OF_BOUNDS = 3, /* vals: index, size, rank, shape... */
    ACC_ERR_RESHAPE = 4                     /* vals: from rank, from..., to rank, to... */
};
";
        assert_eq!(super::error_codes_enum(), want);
        assert!(super::super::prelude().contains(want));
    }
}
