//! Row groups: kernels that a backend may run row by row, one row of
//! every member after the other, instead of one kernel after the other.
//!
//! Clustering (`opt/cluster`) leaves softmax as three kernels over the
//! rows of one matrix: the maxima, the exponentials kept and summed, and
//! the quotients. Each reads what the ones before it computed only for
//! the row it is at: a fold's result at the row's index, an array of the
//! rows' shape at the element's own index. Run one after the other, each
//! kernel reads the whole matrix (or the kept exponentials) back from
//! memory; run row by row, a row is read from memory once and the later
//! members find it, and what the earlier members wrote of it, in the
//! cache. The per-row loops of several stages that the optimal fusion
//! thesis' loopy IR would write for such a cluster, without a fused
//! kernel of their own: the members stay kernels of the plan (what they
//! compute and which arrays they write is unchanged), so a backend that
//! runs them one by one, or a launch whose shapes do not allow a row
//! order, means the same.
//!
//! A group (`row_groups`) is a run of consecutive bindings of one chain
//! of lets: launches of `generate` and `fold` (with or without `keep`)
//! kernels, and projections and unzips of their values between them. Each
//! member after the first reads a value of the group, and reads the
//! group's arrays only so (Note [Row-local reads]); the members' loops
//! are of one rank. That the loops have one shape is known only at run
//! time: a backend checks it before it runs a group row by row.
//!
//! Note [Row-local reads]
//! Member `k` at row `r` may read what the group's earlier members wrote
//! at row `r` only: an array of its loop's rank at the element's own
//! index (the index function's parameter, the linear function's
//! position, or `from_index` of the loop's own shape at that position,
//! through `let`s that name them), an array of one rank less (a fold's
//! result) at the row's index (the own index without its last
//! component), and any array's shape (shapes are known before the group
//! runs). A fold's combining function and seed read none of them, and a
//! member's shape reads only their shapes. Since every row is written
//! whole by each member before the next member starts on it, the row
//! order computes what the kernel order computes.

use super::{Cmd, Kernel, Skeleton, Source};
use accelerate_ir::pretty::ScalarPrinter;
use accelerate_ir::{DelayedArray, ExpKind, OpenExp, PrimFun};

/// Kernels launched by consecutive bindings of one chain of lets that a
/// backend may run row by row (the module doc), in launch order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowGroup {
    pub kernels: Vec<usize>,
    /// A member that may write its result over an array of an earlier
    /// member (Note [Writing over a dead row]).
    pub over: Option<Over>,
}

/// Member `member` (a `generate`, by its place in the group) writes its
/// result into the buffers of the array that member `from` computes (its
/// result, or its kept array when `kept`): of the same element type, read
/// by nothing after that member, which reads it at its own index only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Over {
    pub member: usize,
    pub from: usize,
    pub kept: bool,
}

// Note [Writing over a dead row]
// Softmax's last member divides each kept exponential by its row's sum,
// and nothing reads the exponentials after it: run row by row, it can
// write each quotient where its exponential was, so that the group writes
// one array of the matrix's size instead of two (memory traffic: the
// matrix read once, the result written once, as a hand-written softmax
// does). A member may so write over an array of the group when it is a
// `generate` of that array's element type, the array is a member's whole
// result or whole kept array, and the member is the last command of the
// chain to read it (`last_reads`): every other reader is an earlier
// member, which has read the row before the member overwrites it. The
// array's own binding then names no data: nothing reads it.

/// The row groups of a host program.
pub fn row_groups(body: &Cmd, kernels: &[Kernel]) -> Vec<RowGroup> {
    let mut out = Vec::new();
    let mut stack = vec![body];
    while let Some(c) = stack.pop() {
        let mut binds = Vec::new();
        let mut rest = c;
        while let Cmd::Let(b, body) = rest {
            binds.push(&**b);
            rest = body;
        }
        // (a chain's body may be the group's last member)
        let chain: Vec<&Cmd> = binds.iter().copied().chain(std::iter::once(rest)).collect();
        let binds = chain;
        let last = last_reads(&binds, kernels);
        let mut i = 0;
        while i < binds.len() {
            match group_at(&binds, i, kernels, &last) {
                Some((g, end)) => {
                    out.push(g);
                    i = end;
                }
                None => i += 1,
            }
        }
        stack.extend(&binds[..binds.len() - 1]);
        match rest {
            Cmd::Let(..) | Cmd::Var(_) | Cmd::Use(_) | Cmd::Unit(..) | Cmd::Kernel(_) => {}
            Cmd::Tuple(ts) => stack.extend(ts),
            Cmd::Prj(_, t) | Cmd::Unzip(t) => stack.push(t),
            Cmd::Reshape { array, .. } => stack.push(array),
            Cmd::Acond { then_, else_, .. } => stack.extend([&**then_, &**else_]),
            Cmd::Awhile { pred, body, init } => stack.extend([&**pred, &**body, &**init]),
            Cmd::Foreign { fallback, arg, .. } => {
                stack.extend(fallback.as_deref());
                stack.push(arg);
            }
        }
    }
    out.sort_by_key(|g| g.kernels[0]);
    out
}

/// The rank of a kernel's loop, if it may be a member of a group.
fn loop_rank(k: &Kernel) -> Option<usize> {
    match &k.skeleton {
        Skeleton::Generate(g) if g.src.ty.rank >= 1 => Some(g.src.ty.rank),
        Skeleton::Fold(f) => Some(f.src.ty.rank),
        _ => None,
    }
}

/// The group that starts at binding `i`, and the binding after its last
/// member.
fn group_at(binds: &[&Cmd], i: usize, kernels: &[Kernel], last: &[usize]) -> Option<(RowGroup, usize)> {
    let Cmd::Kernel(first) = binds[i] else { return None };
    let rank = loop_rank(&kernels[*first])?;
    let mut members = vec![*first];
    let mut end = i + 1;
    for (j, b) in binds.iter().enumerate().skip(i + 1) {
        // the group's bindings before this one are variables 0 .. t
        let t = j - i;
        let fits = match b {
            Cmd::Kernel(k) => {
                let k_ = &kernels[*k];
                let fits = loop_rank(k_) == Some(rank) && row_local(k_, rank, t);
                if fits {
                    members.push(*k);
                    end = j + 1;
                }
                fits
            }
            c => of_group(c, t),
        };
        if !fits {
            break;
        }
    }
    if members.len() < 2 {
        return None;
    }
    let over = over(&binds[i..end], kernels, &last[i..end], i);
    Some((RowGroup { kernels: members, over }, end))
}

/// For each command of a chain (its body last), the position of the last
/// command of the chain that reads it (its own if none does; the body's
/// if the body is it or returns it).
fn last_reads(binds: &[&Cmd], kernels: &[Kernel]) -> Vec<usize> {
    let mut last: Vec<usize> = (0..binds.len()).collect();
    let mut reads = Vec::new();
    for (j, c) in binds.iter().enumerate() {
        reads.clear();
        c.arrays_read(0, &|k, out| out.extend(kernels[k].arrays_used()), &mut reads);
        for &v in &reads {
            // variable v, read under the chain's first j commands
            if let Some(i) = j.checked_sub(1 + v) {
                last[i] = j;
            }
        }
    }
    if let Some(l) = last.last_mut() {
        *l = usize::MAX;
    }
    last
}

/// The member of a group (its commands `cmds`, from position `at` of the
/// chain, with their last readers `last`) that may write over an array
/// of the group (Note [Writing over a dead row]), the first found.
fn over(cmds: &[&Cmd], kernels: &[Kernel], last: &[usize], at: usize) -> Option<Over> {
    // each member's place in the group, by command
    let mut member = vec![usize::MAX; cmds.len()];
    let mut m = 0;
    for (j, c) in cmds.iter().enumerate() {
        if let Cmd::Kernel(_) = c {
            member[j] = m;
            m += 1;
        }
    }
    for (i, c) in cmds.iter().enumerate() {
        // the array: a generate's result, or a fold's whole kept array
        let (from, kept, elt) = match c {
            Cmd::Kernel(k) => match &kernels[*k].skeleton {
                Skeleton::Generate(_) => (member[i], false, kernels[*k].out.elt.clone()),
                _ => continue,
            },
            Cmd::Prj(0, v) => match **v {
                Cmd::Var(v) if v < i && member[i - 1 - v] != usize::MAX => {
                    let Cmd::Kernel(k) = cmds[i - 1 - v] else { continue };
                    match kernels[*k].kept() {
                        Some(t) => (member[i - 1 - v], true, t.elt),
                        None => continue,
                    }
                }
                _ => continue,
            },
            _ => continue,
        };
        let Some(j) = last[i].checked_sub(at).filter(|&j| j > i && j < cmds.len()) else { continue };
        if let Cmd::Kernel(k) = cmds[j] {
            if matches!(kernels[*k].skeleton, Skeleton::Generate(_)) && kernels[*k].out.elt == elt {
                return Some(Over { member: member[j], from, kept });
            }
        }
    }
    None
}

/// Whether a command only takes apart a value of the group (a variable
/// below `t`).
fn of_group(c: &Cmd, t: usize) -> bool {
    match c {
        Cmd::Var(v) => *v < t,
        Cmd::Prj(_, c) | Cmd::Unzip(c) => of_group(c, t),
        _ => false,
    }
}

/// Whether kernel `k`, under `t` bindings of its group, reads one of them
/// and reads them only row by row (Note [Row-local reads]).
fn row_local(k: &Kernel, rank: usize, t: usize) -> bool {
    let in_group: Vec<usize> = k.arrays_used().into_iter().filter(|&v| v < t).collect();
    if in_group.is_empty() {
        return false;
    }
    let role = |v: usize| match k.input_ty(v).map(|ty| ty.rank) {
        Some(r) if r == rank => Some(Role::Own),
        Some(r) if r + 1 == rank => Some(Role::Row),
        _ => None,
    };
    // the combining function and seed of a fold read none of them
    let mut scalar = Vec::new();
    for e in k.skeleton.scalar_code() {
        accelerate_ir::visit::arrays_read(e, &mut scalar);
    }
    if scalar.iter().any(|&v| v < t) {
        return false;
    }
    let src = match &k.skeleton {
        Skeleton::Generate(g) => &g.src,
        Skeleton::Fold(f) => &f.src,
        _ => return false,
    };
    match &src.source {
        Source::Manifest(v) => *v >= t || role(*v) == Some(Role::Own),
        Source::Delayed(d) => {
            let mut shape_reads = Vec::new();
            elements_read(&d.shape, &mut shape_reads);
            shape_reads.iter().all(|&v| v >= t) && delayed_row_local(d, rank, &|v| (v < t).then(|| role(v)))
        }
    }
}

/// How a member may read an array of its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// At the element's own index (an array of the loop's rank).
    Own,
    /// At the row's index (an array of one rank less).
    Row,
}

/// The array variables whose elements (not shapes) a scalar term reads.
fn elements_read(e: &OpenExp, out: &mut Vec<usize>) {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if let ExpKind::Index { array, .. } | ExpKind::LinearIndex { array, .. } = x.kind {
            out.push(array);
        }
        accelerate_ir::visit::each_child(x, |c| stack.push(c));
    }
}

/// What a scalar variable in a delayed array's function is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// The element's own index.
    Own,
    /// The element's own position (the linear function's parameter).
    Position,
    Other,
}

/// Whether both functions of a delayed array read the group's arrays
/// (`group(v)`: `None` outside the group, else how it may be read) only
/// row by row.
fn delayed_row_local(d: &DelayedArray, rank: usize, group: &dyn Fn(usize) -> Option<Option<Role>>) -> bool {
    let shape = ScalarPrinter::new(Vec::new()).exp(&d.shape, 0);
    let cx = Cx { rank, group, shape: &shape };
    cx.exp(&d.index.body, &mut vec![Tag::Own]) && cx.exp(&d.linear.body, &mut vec![Tag::Position])
}

struct Cx<'a> {
    rank: usize,
    group: &'a dyn Fn(usize) -> Option<Option<Role>>,
    /// The delayed array's shape, printed.
    shape: &'a str,
}

impl Cx<'_> {
    /// What `e` is, as an index, in the scalar environment `env`
    /// (innermost last).
    fn tag(&self, e: &OpenExp, env: &[Tag]) -> Tag {
        match &e.kind {
            ExpKind::Var(x) => env.len().checked_sub(1 + x).map_or(Tag::Other, |i| env[i]),
            ExpKind::Prim(PrimFun::FromIndex, args)
                if args.len() == 2
                    && self.tag(&args[1], env) == Tag::Position
                    && ScalarPrinter::new(Vec::new()).exp(&args[0], 0) == self.shape =>
            {
                Tag::Own
            }
            _ => Tag::Other,
        }
    }

    /// Whether `index` is the row's index: the own index without its last
    /// component, component by component.
    fn row_index(&self, index: &OpenExp, env: &[Tag]) -> bool {
        match &index.kind {
            ExpKind::Tuple(cs) if cs.len() + 1 == self.rank => cs.iter().enumerate().all(
                |(i, c)| matches!(&c.kind, ExpKind::Prj(j, t) if *j == i && self.tag(t, env) == Tag::Own),
            ),
            _ => false,
        }
    }

    /// Whether `e` reads the group's arrays row by row.
    fn exp(&self, e: &OpenExp, env: &mut Vec<Tag>) -> bool {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let ok = match &e.kind {
                ExpKind::Index { array, index } => match (self.group)(*array) {
                    None => true,
                    Some(Some(Role::Own)) => self.tag(index, env) == Tag::Own,
                    // (an array of rank 0 has one element, at the index ())
                    Some(Some(Role::Row)) => self.rank == 1 || self.row_index(index, env),
                    Some(None) => false,
                },
                ExpKind::LinearIndex { array, index } => match (self.group)(*array) {
                    None => true,
                    Some(Some(Role::Own)) => self.tag(index, env) == Tag::Position,
                    Some(Some(Role::Row)) => self.rank == 1,
                    Some(None) => false,
                },
                _ => true,
            };
            if !ok {
                return false;
            }
            match &e.kind {
                ExpKind::Let(b, body) => {
                    if !self.exp(b, env) {
                        return false;
                    }
                    env.push(self.tag(b, env));
                    let r = self.exp(body, env);
                    env.pop();
                    r
                }
                ExpKind::While { cond, body, init } => {
                    if !self.exp(init, env) {
                        return false;
                    }
                    [cond, body].iter().all(|f| {
                        env.push(Tag::Other);
                        let r = self.exp(&f.body, env);
                        env.pop();
                        r
                    })
                }
                _ => {
                    let mut ok = true;
                    accelerate_ir::visit::each_child(e, |c| ok = ok && self.exp(c, env));
                    ok
                }
            }
        })
    }
}
