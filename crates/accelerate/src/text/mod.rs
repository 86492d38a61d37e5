//! Programs written as text, in a core of the Futhark language (the
//! front end is the `accelerate-text` crate): compiled from source text
//! and an entry point's name, run on values of Futhark's data formats.
//!
//! ```
//! use accelerate::text::{compile_text, Value};
//! use accelerate::Config;
//!
//! let src = "def main (xs: []f32) (ys: []f32) : f32 = reduce (+) 0 (map2 (*) xs ys)";
//! let p = compile_text("dotp.fut", src, "main", &Config::from_env().unwrap()).unwrap();
//! let xs = accelerate::text::read_values(b"[1f32, 2f32, 3f32] [4f32, 5f32, 6f32]").unwrap();
//! let r = p.run(&xs).unwrap();
//! assert_eq!(accelerate::text::write_text(&r[0]), "32.0f32");
//!
//! // with Rust types, run on Rust arrays
//! use accelerate::prelude::*;
//! let t = p.typed::<(Vector<f32>, Vector<f32>), Scalar<f32>>().unwrap();
//! let xs = Vector::from_elems(vec![1.0f32, 2.0, 3.0]);
//! assert_eq!(t.run((&xs, &xs)).unwrap().to_vec(), vec![14.0]);
//! ```

pub use accelerate_text::data::{read_values, values_match, write_binary, write_text, DataError, Value};
pub use accelerate_text::diag::{DiagKind, Diagnostic, SourceFile};
pub use accelerate_text::lower::ExtType;

use crate::array::{ArrayData, ArrayTy, Arrays, ArraysTy, ArraysVal, EltTy};
use crate::exec::config::Config;
use crate::exec::dynamic::{compile_ir, DynProgram};
use crate::exec::error::Error;
use crate::exec::ProgramArgs;
use accelerate_text::{ast, check, defunc, lower, mono, parser};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An error of a text program: a diagnostic pointing into the source,
/// rendered with the file, line, column and a caret, and the library's
/// error where a run failed.
#[derive(Clone, Debug)]
pub struct TextError {
    pub diagnostic: Box<Diagnostic>,
    pub rendered: String,
    pub error: Option<Box<Error>>,
}

impl TextError {
    fn new(file: &SourceFile, d: Diagnostic, error: Option<Error>) -> TextError {
        TextError { rendered: file.render(&d), diagnostic: Box::new(d), error: error.map(Box::new) }
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rendered)
    }
}

impl std::error::Error for TextError {}

/// The front end's stages, each one's output kept for inspection.
#[derive(Clone, Debug)]
pub struct FrontEnd {
    pub checked: ast::Program,
    pub monomorphic: ast::Program,
    pub first_order: ast::Program,
    pub lowered: lower::Lowered,
    /// From the parser to the IR.
    pub time: Duration,
}

/// Runs the front end on a source text: parse, check, monomorphise,
/// defunctionalise, lower the entry point.
pub fn front_end(file: &SourceFile, entry: &str) -> Result<FrontEnd, TextError> {
    let t = Instant::now();
    let fail = |d: Diagnostic| TextError::new(file, d, None);
    let mut prog = parser::parse_program(file).map_err(fail)?;
    check::check_program(&mut prog).map_err(fail)?;
    let checked = prog.clone();
    let monomorphic = mono::monomorphise(prog);
    let first_order = defunc::defunctionalise(monomorphic.clone()).map_err(fail)?;
    let lowered = lower::lower(&first_order, entry, file).map_err(fail)?;
    Ok(FrontEnd { checked, monomorphic, first_order, lowered, time: t.elapsed() })
}

/// An entry point of a text program, compiled.
pub struct TextProgram {
    program: DynProgram,
    front: FrontEnd,
    file: SourceFile,
}

/// Compiles entry point `entry` of source text `source` (named `name` in
/// diagnostics) for the configuration's backend.
pub fn compile_text(
    name: &str,
    source: &str,
    entry: &str,
    config: &Config,
) -> Result<TextProgram, TextError> {
    let file = SourceFile::new(name, source);
    let front = front_end(&file, entry)?;
    let program =
        compile_ir("text", front.lowered.program.clone(), config).map_err(|e| runtime_error(&file, e))?;
    Ok(TextProgram { program, front, file })
}

impl TextProgram {
    /// The entry point's parameter types.
    pub fn params(&self) -> &[ExtType] {
        &self.front.lowered.params
    }

    /// The entry point's result types.
    pub fn results(&self) -> &[ExtType] {
        &self.front.lowered.results
    }

    /// The front end's stages.
    pub fn front_end(&self) -> &FrontEnd {
        &self.front
    }

    /// The compiled program (its IR after each phase, its plan).
    pub fn program(&self) -> &DynProgram {
        &self.program
    }

    /// Runs the entry point on values of its parameters' types; gives one
    /// value per result.
    pub fn run(&self, args: &[Value]) -> Result<Vec<Value>, TextError> {
        let params = self.params();
        if args.len() != params.len() {
            return Err(self.input_error(format!(
                "the entry point takes {} arguments, and was given {}",
                params.len(),
                args.len()
            )));
        }
        for (i, (a, p)) in args.iter().zip(params).enumerate() {
            if a.prim_type() != p.prim || a.rank() != p.rank {
                return Err(self.input_error(format!(
                    "argument {} has type {}, and the entry point takes {p}",
                    i + 1,
                    a.type_name()
                )));
            }
        }
        let vals = args.iter().map(|v| ArraysVal::Array(v.arc().clone())).collect();
        let out = self.program.run(vals).map_err(|e| runtime_error(&self.file, e))?;
        let arrays: Vec<Arc<ArrayData>> = match out {
            ArraysVal::Array(a) => vec![a],
            ArraysVal::Tuple(ts) => ts.into_iter().filter_map(|t| t.array().cloned()).collect(),
        };
        arrays
            .into_iter()
            .map(|a| {
                Value::shared(a)
                    .ok_or_else(|| self.input_error("a result that is not an array of primitives".into()))
            })
            .collect()
    }

    fn input_error(&self, message: String) -> TextError {
        let d = Diagnostic::new(DiagKind::Runtime, self.entry_span(), message);
        TextError::new(&self.file, d, None)
    }

    fn entry_span(&self) -> ast::Span {
        self.front.lowered.entry_span
    }
}

/// A library error as a diagnostic at the place in the source it names.
fn runtime_error(file: &SourceFile, e: Error) -> TextError {
    let text = e.to_string();
    let prefix = format!("{}:", file.name);
    let located = text.strip_prefix(&prefix).and_then(|rest| {
        let mut parts = rest.splitn(3, ':');
        let line = parts.next()?.parse::<u32>().ok()?;
        let col = parts.next()?.parse::<u32>().ok()?;
        let message = parts.next()?.trim_start().to_string();
        Some((file.offset_of(line, col)?, message))
    });
    let d = match located {
        Some((at, message)) => Diagnostic::new(DiagKind::Runtime, ast::Span::new(at, at + 1), message),
        None => Diagnostic::new(DiagKind::Runtime, ast::Span::new(0, 0), text),
    };
    TextError::new(file, d, Some(e))
}

/// An entry point whose types are known in Rust (`TextProgram::typed`):
/// run on Rust arrays, as a `Program` is.
pub struct TypedTextProgram<Args, R> {
    inner: TextProgram,
    _ty: PhantomData<fn(Args) -> R>,
}

impl TextProgram {
    /// The entry point with Rust types: `Args` the arrays of its
    /// parameters (a scalar parameter is a `Scalar`), `R` its result
    /// (several results, a tuple of arrays); an error naming both types
    /// where they differ.
    pub fn typed<Args: ProgramArgs, R: Arrays>(self) -> Result<TypedTextProgram<Args, R>, TextError> {
        let params = self.program.params().to_vec();
        let want_params = Args::types();
        let result = match self.results() {
            [one] => ext_arrays_ty(one),
            many => ArraysTy::Tuple(many.iter().map(ext_arrays_ty).collect()),
        };
        let show = |ts: &[ArraysTy]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        if params != want_params {
            return Err(self.input_error(format!(
                "the entry point takes ({}), and the Rust types say ({})",
                show(&params),
                show(&want_params)
            )));
        }
        if result != R::arrays_ty() {
            return Err(self.input_error(format!(
                "the entry point returns {result}, and the Rust type says {}",
                R::arrays_ty()
            )));
        }
        Ok(TypedTextProgram { inner: self, _ty: PhantomData })
    }
}

fn ext_arrays_ty(t: &ExtType) -> ArraysTy {
    ArraysTy::Array(ArrayTy { rank: t.rank, elt: EltTy::Scalar(accelerate_text::data::scalar_ty(t.prim)) })
}

impl<Args: ProgramArgs, R: Arrays> TypedTextProgram<Args, R> {
    /// Runs the entry point.
    pub fn run(&self, args: Args::Refs<'_>) -> Result<R, TextError> {
        let p = &self.inner;
        let out = p.program.run(Args::values(args)).map_err(|e| runtime_error(&p.file, e))?;
        R::from_arrays_val(out).map_err(|e| runtime_error(&p.file, e))
    }

    /// The untyped program.
    pub fn untyped(&self) -> &TextProgram {
        &self.inner
    }
}

mod runner;
pub use runner::{run_test_file, CaseOutcome, TestReport};
