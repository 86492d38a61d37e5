//! The syntax tree of the text language, shared by every stage of the
//! front end (Note [One tree, filled in by stages]).
//!
//! Note [One tree, filled in by stages]
//! The parser builds the tree with every type `Type::Unknown`; the type
//! checker (`check`) fills in the type of every expression and pattern and
//! the instantiation of every use of a polymorphic definition; the
//! monomorphiser (`mono`) copies polymorphic definitions at the types they
//! are used at, so that no `Type::Param` remains; defunctionalisation
//! (`defunc`) removes every function value, leaving first-order
//! definitions whose lambdas appear only as the function arguments of the
//! array combinators (`map`, `reduce`, ...). One tree keeps the stages'
//! outputs printable by one printer (`pretty`) and comparable in snapshot
//! tests, as Futhark's compiler keeps one source AST parametrised by what
//! each stage has learnt.

// The tree is built once per program and matched by every stage; boxing
// its larger variants would buy little memory and cost every match.
#![allow(clippy::large_enum_variant)]

use std::fmt;

/// A range of bytes of the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// A name as written, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// The primitive types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PrimType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

impl PrimType {
    pub const ALL: [PrimType; 12] = [
        PrimType::Bool,
        PrimType::I8,
        PrimType::I16,
        PrimType::I32,
        PrimType::I64,
        PrimType::U8,
        PrimType::U16,
        PrimType::U32,
        PrimType::U64,
        PrimType::F16,
        PrimType::F32,
        PrimType::F64,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PrimType::Bool => "bool",
            PrimType::I8 => "i8",
            PrimType::I16 => "i16",
            PrimType::I32 => "i32",
            PrimType::I64 => "i64",
            PrimType::U8 => "u8",
            PrimType::U16 => "u16",
            PrimType::U32 => "u32",
            PrimType::U64 => "u64",
            PrimType::F16 => "f16",
            PrimType::F32 => "f32",
            PrimType::F64 => "f64",
        }
    }

    pub fn from_name(s: &str) -> Option<PrimType> {
        PrimType::ALL.into_iter().find(|p| p.name() == s)
    }

    pub fn is_float(self) -> bool {
        matches!(self, PrimType::F16 | PrimType::F32 | PrimType::F64)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, PrimType::I8 | PrimType::I16 | PrimType::I32 | PrimType::I64)
    }

    pub fn is_unsigned(self) -> bool {
        matches!(self, PrimType::U8 | PrimType::U16 | PrimType::U32 | PrimType::U64)
    }

    pub fn is_integral(self) -> bool {
        self.is_signed() || self.is_unsigned()
    }
}

impl fmt::Display for PrimType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The extent of one dimension of an array type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    /// Not known statically (`[]t`, or a size the checker did not track).
    Any,
    Const(i64),
    /// A size parameter (`[n]` of the enclosing definition) or a variable
    /// of type `i64` in scope.
    Var(String),
}

/// A type, as the checker knows it. Types compare by their structure;
/// sizes take part in `==`, so stages that mean "the same type up to
/// sizes" use `Type::same_shape`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// Not yet known: the parser's placeholder, replaced by the checker.
    Unknown,
    Prim(PrimType),
    /// `[d0][d1]...elem`, outermost dimension first; `elem` is never an
    /// array (an array of arrays is one array of higher rank).
    Array {
        elem: Box<Type>,
        shape: Vec<Size>,
    },
    /// `(a, b, ...)`; the unit type `()` is the empty tuple.
    Tuple(Vec<Type>),
    /// `{x: a, y: b}`, fields sorted by name.
    Record(Vec<(String, Type)>),
    /// `a -> b`.
    Arrow(Box<Type>, Box<Type>),
    /// A type parameter (`'a`, `'^a`) of the enclosing definition: only
    /// in polymorphic definitions, before monomorphisation.
    Param(String),
    /// A unification variable: only inside the type checker.
    Infer(u32),
}

impl Type {
    pub fn is_arrow(&self) -> bool {
        matches!(self, Type::Arrow(..))
    }

    /// The function's parameter types and result, uncurried:
    /// `a -> b -> c` is `([a, b], c)`.
    pub fn uncurry(&self) -> (Vec<&Type>, &Type) {
        let mut params = Vec::new();
        let mut t = self;
        while let Type::Arrow(a, b) = t {
            params.push(&**a);
            t = b;
        }
        (params, t)
    }

    /// Whether a function type occurs anywhere in it (its order is not
    /// zero).
    pub fn contains_arrow(&self) -> bool {
        match self {
            Type::Arrow(..) => true,
            Type::Array { elem, .. } => elem.contains_arrow(),
            Type::Tuple(ts) => ts.iter().any(Type::contains_arrow),
            Type::Record(fs) => fs.iter().any(|(_, t)| t.contains_arrow()),
            Type::Unknown | Type::Prim(_) | Type::Param(_) | Type::Infer(_) => false,
        }
    }

    /// The same type with every size forgotten (`Size::Any`).
    pub fn without_sizes(&self) -> Type {
        match self {
            Type::Array { elem, shape } => {
                Type::Array { elem: Box::new(elem.without_sizes()), shape: vec![Size::Any; shape.len()] }
            }
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(Type::without_sizes).collect()),
            Type::Record(fs) => {
                Type::Record(fs.iter().map(|(n, t)| (n.clone(), t.without_sizes())).collect())
            }
            Type::Arrow(a, b) => Type::Arrow(Box::new(a.without_sizes()), Box::new(b.without_sizes())),
            t => t.clone(),
        }
    }

    /// Equal up to sizes.
    pub fn same_shape(&self, other: &Type) -> bool {
        self.without_sizes() == other.without_sizes()
    }

    /// The rank of an array type, 0 for any other type.
    pub fn rank(&self) -> usize {
        match self {
            Type::Array { shape, .. } => shape.len(),
            _ => 0,
        }
    }
}

/// A type as written in the source.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeExp {
    /// A primitive type, a type abbreviation or a type parameter, by name
    /// (`i32`, `point`, `a`), with the arguments of an abbreviation.
    Name(Ident, Vec<TypeArgExp>),
    /// `[d]t`.
    Array(SizeExp, Box<TypeExp>, Span),
    /// `(a, b)`; `()` is the unit type.
    Tuple(Vec<TypeExp>, Span),
    /// `{x: a, y: b}`.
    Record(Vec<(Ident, TypeExp)>, Span),
    /// `a -> b`, or `(x: a) -> b` with the parameter named (the name may
    /// appear in sizes of `b`).
    Arrow(Option<Ident>, Box<TypeExp>, Box<TypeExp>, Span),
}

/// An argument of a type abbreviation: a type or a size (`[n]`).
#[derive(Clone, Debug, PartialEq)]
pub enum TypeArgExp {
    Type(TypeExp),
    Size(SizeExp),
}

impl TypeExp {
    pub fn span(&self) -> Span {
        match self {
            TypeExp::Name(id, args) => args.iter().fold(id.span, |s, a| match a {
                TypeArgExp::Type(t) => s.to(t.span()),
                TypeArgExp::Size(_) => s,
            }),
            TypeExp::Array(_, _, s)
            | TypeExp::Tuple(_, s)
            | TypeExp::Record(_, s)
            | TypeExp::Arrow(_, _, _, s) => *s,
        }
    }
}

/// A size as written: `[]`, `[3]`, `[n]`.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeExp {
    Any(Span),
    Const(i64, Span),
    Var(Ident),
}

/// A type parameter of a definition or abbreviation.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeParam {
    /// `'a` (`lifted: false`): may not be instantiated with a function
    /// type; `'^a` (`lifted: true`): may (the TFP'18 restrictions then
    /// apply to values of type `a`).
    Type { name: Ident, lifted: bool },
    /// `[n]`: a size, bound as a variable of type `i64` in the body.
    Size(Ident),
}

/// A whole source file.
#[derive(Clone, Debug)]
pub struct Program {
    pub decls: Vec<Decl>,
}

#[derive(Clone, Debug)]
pub enum Decl {
    Value(ValueDecl),
    /// `type name 'params = t`.
    Type(TypeDecl),
}

/// `def`/`entry name params: ret = body` (also `let` at the top level, as
/// older Futhark wrote it).
#[derive(Clone, Debug)]
pub struct ValueDecl {
    pub name: Ident,
    /// Declared with `entry`: callable from outside, never polymorphic.
    pub entry: bool,
    pub type_params: Vec<TypeParam>,
    pub params: Vec<Pat>,
    pub ret: Option<TypeExp>,
    pub body: Expr,
    pub span: Span,
    /// The definition's whole type (parameters to result), filled in by
    /// the checker; `Type::Param` for its type parameters.
    pub ty: Type,
}

#[derive(Clone, Debug)]
pub struct TypeDecl {
    pub name: Ident,
    pub params: Vec<TypeParam>,
    pub def: TypeExp,
    pub span: Span,
}

/// A literal constant.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// An integer, with its suffix's type (`1i64`) when written. Unsuffixed
    /// integers may also be floats (`1` where an `f32` is expected), as in
    /// Futhark.
    Int(i128, Option<PrimType>),
    /// A decimal or exponent literal, with its suffix's type when written.
    Float(f64, Option<PrimType>),
    Bool(bool),
}

/// A pattern: in parameters, `let`, `loop` and `match`.
#[derive(Clone, Debug)]
pub struct Pat {
    pub kind: PatKind,
    pub span: Span,
    /// Filled in by the checker.
    pub ty: Type,
}

#[derive(Clone, Debug)]
pub enum PatKind {
    Id(Ident),
    /// `_`
    Wildcard,
    /// `(p, q, ...)`; `()` matches the unit value.
    Tuple(Vec<Pat>),
    /// `{x, y = p}`: a field bound to its own name, or matched by a
    /// pattern.
    Record(Vec<(Ident, Pat)>),
    /// `(p: t)`
    Ascribe(Box<Pat>, TypeExp),
    /// A literal, in `match` only; `-1` is a literal.
    Lit(Literal),
}

/// An expression.
#[derive(Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    /// Filled in by the checker.
    pub ty: Type,
}

/// A binary operator, as written: arithmetic (`+ - * / % // %% **`),
/// bitwise (`& | ^ << >>`), comparison (`== != < <= > >=`) and logic
/// (`&& ||`). `|>`, `<|`, `>->` and `<-<` are desugared by the parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `%`
    Mod,
    /// `//`: integer division truncating toward zero
    Quot,
    /// `%%`: the remainder of `//`
    Rem,
    Pow,
    BAnd,
    BOr,
    BXor,
    Shl,
    Shr,
    Eq,
    Neq,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Quot => "//",
            BinOp::Rem => "%%",
            BinOp::Pow => "**",
            BinOp::BAnd => "&",
            BinOp::BOr => "|",
            BinOp::BXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Neq => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// One index of an indexing or slicing expression: `a[i]`, `a[i:j]`,
/// `a[i:j:s]`, `a[:]`.
#[derive(Clone, Debug)]
pub enum DimIndex {
    Fix(Expr),
    Slice { start: Option<Expr>, end: Option<Expr>, stride: Option<Expr> },
}

#[derive(Clone, Debug)]
pub enum LoopForm {
    /// `for i < n`
    For(Ident, Box<Expr>),
    /// `for x in xs`
    ForIn(Pat, Box<Expr>),
    /// `while c`
    While(Box<Expr>),
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Lit(Literal),
    /// A variable, a definition, an intrinsic (`map`, `iota`, ...) or a
    /// qualified name of the prelude's numeric namespaces (`f32.sqrt`:
    /// `qual` is `Some("f32")`). `inst` is filled in by the checker for
    /// uses of polymorphic definitions: the types of the definition's type
    /// parameters (not its size parameters), in order.
    Var {
        name: Ident,
        qual: Option<Ident>,
        inst: Vec<Type>,
    },
    /// `()` is the empty tuple.
    Tuple(Vec<Expr>),
    Record(Vec<(Ident, Expr)>),
    /// `[a, b, c]`
    ArrayLit(Vec<Expr>),
    /// `e.x`, and `e.0` for tuples (Futhark's tuple fields are numbered
    /// from 0).
    Project(Box<Expr>, Ident),
    /// `a[i, j:k]`
    Index(Box<Expr>, Vec<DimIndex>),
    /// `f x`: one argument; `f x y` is `(f x) y`.
    Apply(Box<Expr>, Box<Expr>),
    BinOp(BinOp, Box<Expr>, Box<Expr>),
    /// `-e`
    Neg(Box<Expr>),
    /// `!e`: logical not of a `bool`, bitwise not of an integer.
    Not(Box<Expr>),
    /// `(+)`
    OpSection(BinOp),
    /// `(x +)`: `\y -> x + y`.
    LeftSection(BinOp, Box<Expr>),
    /// `(+ y)`: `\x -> x + y`.
    RightSection(BinOp, Box<Expr>),
    /// `(.a.b)`: `\r -> r.a.b`.
    ProjSection(Vec<Ident>),
    /// `\p q : t -> body`
    Lambda(Vec<Pat>, Option<TypeExp>, Box<Expr>),
    /// `let p = e in body`
    Let(Pat, Box<Expr>, Box<Expr>),
    /// `let f 'a [n] p q : t = e in body`: a local function.
    LetFun {
        name: Ident,
        type_params: Vec<TypeParam>,
        params: Vec<Pat>,
        ret: Option<TypeExp>,
        def: Box<Expr>,
        body: Box<Expr>,
    },
    /// `let a[i] = v in body` and `a with [i] = v`: `a` with one element
    /// (or slice) replaced.
    Update(Box<Expr>, Vec<DimIndex>, Box<Expr>),
    /// `r with x.y = v`: record `r` with the field at the path replaced.
    RecordUpdate(Box<Expr>, Vec<Ident>, Box<Expr>),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `loop p = init for ... do body`; without `= init`, `p` must be a
    /// pattern of variables in scope, which give the initial values.
    Loop {
        pat: Pat,
        init: Option<Box<Expr>>,
        form: LoopForm,
        body: Box<Expr>,
    },
    Match(Box<Expr>, Vec<(Pat, Expr)>),
    /// `e : t`
    Ascribe(Box<Expr>, TypeExp),
}

// Note [Deep trees]
// A program's tree is as deep as its longest chain of `let`s (a generated
// program of 100 000 bindings is 100 000 nested `Let`s), and the derived,
// recursive clone and drop would overflow the stack of a small thread.
// Cloning grows the stack as it goes; dropping takes the children out
// and drops them from an explicit stack. Every stage that recurses on the
// tree grows its stack the same way (`mono::stacker_grow`).

impl Clone for Expr {
    fn clone(&self) -> Self {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || Expr {
            kind: self.kind.clone(),
            span: self.span,
            ty: self.ty.clone(),
        })
    }
}

impl Drop for Expr {
    fn drop(&mut self) {
        if matches!(self.kind, ExprKind::Lit(_) | ExprKind::Var { .. }) {
            return;
        }
        let mut stack = Vec::new();
        take_children(&mut self.kind, &mut stack);
        while let Some(mut e) = stack.pop() {
            take_children(&mut e.kind, &mut stack);
        }
    }
}

/// Moves an expression's children out (the expression is left a literal).
fn take_children(kind: &mut ExprKind, out: &mut Vec<Expr>) {
    let dims = |ix: Vec<DimIndex>, out: &mut Vec<Expr>| {
        for d in ix {
            match d {
                DimIndex::Fix(x) => out.push(x),
                DimIndex::Slice { start, end, stride } => {
                    out.extend([start, end, stride].into_iter().flatten())
                }
            }
        }
    };
    match std::mem::replace(kind, ExprKind::Lit(Literal::Bool(false))) {
        ExprKind::Lit(_) | ExprKind::Var { .. } | ExprKind::OpSection(_) | ExprKind::ProjSection(_) => {}
        ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => out.extend(es),
        ExprKind::Record(fs) => out.extend(fs.into_iter().map(|(_, x)| x)),
        ExprKind::Project(x, _)
        | ExprKind::Neg(x)
        | ExprKind::Not(x)
        | ExprKind::LeftSection(_, x)
        | ExprKind::RightSection(_, x)
        | ExprKind::Ascribe(x, _)
        | ExprKind::Lambda(_, _, x) => out.push(*x),
        ExprKind::Index(x, ix) => {
            out.push(*x);
            dims(ix, out);
        }
        ExprKind::Apply(a, b) | ExprKind::BinOp(_, a, b) | ExprKind::Let(_, a, b) => out.extend([*a, *b]),
        ExprKind::LetFun { def, body, .. } => out.extend([*def, *body]),
        ExprKind::Update(a, ix, v) => {
            out.extend([*a, *v]);
            dims(ix, out);
        }
        ExprKind::RecordUpdate(a, _, v) => out.extend([*a, *v]),
        ExprKind::If(c, t, f) => out.extend([*c, *t, *f]),
        ExprKind::Loop { init, form, body, .. } => {
            out.extend(init.map(|i| *i));
            match form {
                LoopForm::For(_, n) => out.push(*n),
                LoopForm::ForIn(_, xs) => out.push(*xs),
                LoopForm::While(c) => out.push(*c),
            }
            out.push(*body);
        }
        ExprKind::Match(x, cases) => {
            out.push(*x);
            out.extend(cases.into_iter().map(|(_, b)| b));
        }
    }
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span, ty: Type::Unknown }
    }
}

/// The head and the arguments of an application spine: `f a b` is `f`
/// and `[a, b]`.
pub fn spine(e: &Expr) -> (&Expr, Vec<&Expr>) {
    let mut args = Vec::new();
    let mut head = e;
    while let ExprKind::Apply(f, x) = &head.kind {
        args.push(&**x);
        head = f;
    }
    args.reverse();
    (head, args)
}

impl Pat {
    pub fn new(kind: PatKind, span: Span) -> Pat {
        Pat { kind, span, ty: Type::Unknown }
    }

    /// The variables the pattern binds, in order.
    pub fn binders(&self) -> Vec<&Ident> {
        let mut out = Vec::new();
        self.collect_binders(&mut out);
        out
    }

    fn collect_binders<'a>(&'a self, out: &mut Vec<&'a Ident>) {
        match &self.kind {
            PatKind::Id(i) => out.push(i),
            PatKind::Wildcard | PatKind::Lit(_) => {}
            PatKind::Tuple(ps) => ps.iter().for_each(|p| p.collect_binders(out)),
            PatKind::Record(fs) => fs.iter().for_each(|(_, p)| p.collect_binders(out)),
            PatKind::Ascribe(p, _) => p.collect_binders(out),
        }
    }
}
