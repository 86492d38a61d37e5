//! How compile time grows with program size (`accelerate_bench::scaling`).
//!
//! ```sh
//! cargo run --release -p accelerate-bench --bin scaling -- \
//!     [FAMILIES] [--sizes 1000,10000,100000] [--backends cpu,interp] [--limit SECONDS]
//! ```
//!
//! FAMILIES (default: all) are among `maps reverses conds zipn scalar zips
//! fold`. Each (family, size, backend) runs in a child process of its own
//! (`--child FAMILY SIZE BACKEND`) with the C kernel cache off, so that
//! every C compile is a real one; a child that passes the limit (default
//! 300 s) is killed and reported as a hang, one that dies as a crash. A
//! size past a hang or a crash of the same family and backend is skipped.
//! Prints one Markdown table per backend: the seconds of each step, and
//! each size's total over the previous size's.

use accelerate_bench::scaling::{self, Measured, FAMILIES};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{exit, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_FLAG: &str = "--child";

struct Args {
    families: Vec<&'static scaling::Family>,
    sizes: Vec<usize>,
    backends: Vec<String>,
    limit: Duration,
}

fn usage() -> ! {
    let names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    eprintln!(
        "usage: scaling [FAMILIES] [--sizes N,N,..] [--backends cpu,interp] [--limit SECONDS]\n\
         \x20      scaling {CHILD_FLAG} FAMILY SIZE BACKEND\n\
         FAMILIES: {}",
        names.join(" ")
    );
    exit(2)
}

fn parse_list<T: std::str::FromStr>(s: Option<String>) -> Vec<T> {
    let s = s.unwrap_or_else(|| usage());
    s.split(',').map(|x| x.trim().parse().unwrap_or_else(|_| usage())).collect()
}

fn parse_args() -> Args {
    let mut args = Args {
        families: Vec::new(),
        sizes: vec![1000, 10_000, 100_000],
        backends: vec!["cpu".into(), "interp".into()],
        limit: Duration::from_secs(300),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => args.sizes = parse_list(it.next()),
            "--backends" => args.backends = parse_list(it.next()),
            "--limit" => args.limit = Duration::from_secs_f64(parse_list::<f64>(it.next())[0]),
            "--help" | "-h" => usage(),
            CHILD_FLAG => child(it.next(), it.next(), it.next()),
            name => match scaling::find(name) {
                Some(f) => args.families.push(f),
                None => {
                    eprintln!("scaling: unknown argument {a:?}");
                    usage()
                }
            },
        }
    }
    if args.families.is_empty() {
        args.families = FAMILIES.iter().collect();
    }
    if args.backends.iter().any(|b| scaling::backend(b).is_none()) {
        usage()
    }
    args
}

/// The child's side: one program, measured, on one line.
fn child(family: Option<String>, size: Option<String>, backend: Option<String>) -> ! {
    let family = family.and_then(|f| scaling::find(&f)).unwrap_or_else(|| usage());
    let n: usize = size.and_then(|s| s.parse().ok()).unwrap_or_else(|| usage());
    let backend = backend.and_then(|b| scaling::backend(&b)).unwrap_or_else(|| usage());
    let config = accelerate::Config::from_env().unwrap_or_else(|e| {
        eprintln!("scaling: {e}");
        exit(1)
    });
    match (family.measure)(n, config.with_backend(backend)) {
        Ok(m) => {
            println!("{}", scaling::format_line(&m));
            exit(0)
        }
        Err(e) => {
            eprintln!("scaling: {} at {n}: {e}", family.name);
            exit(1)
        }
    }
}

/// What became of one child.
enum Outcome {
    Done(Measured),
    /// Killed at the limit.
    Hang,
    /// Died or failed, with the end of what it said.
    Failed(String),
}

fn run_child(family: &str, n: usize, backend: &str, limit: Duration) -> Outcome {
    let exe = std::env::current_exe().unwrap_or_else(|e| {
        eprintln!("scaling: finding this binary: {e}");
        exit(1)
    });
    let spawned = Command::new(exe)
        .args([CHILD_FLAG, family, &n.to_string(), backend])
        .env("ACCELERATE_CACHE", "off")
        // a group of its own, so that a hang is ended with the C compiler
        // it waits for
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut c = match spawned {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("spawning: {e}")),
    };
    // read both pipes on threads, so that a child writing much cannot
    // block on a full pipe while the parent waits for it
    let drain = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = p {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(c.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(c.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        match c.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > limit => {
                let group = format!("-{}", c.id());
                let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
                let _ = c.kill();
                let _ = c.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Outcome::Failed(format!("waiting: {e}")),
        }
    };
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    match status {
        None => Outcome::Hang,
        Some(s) if s.success() => match out.lines().find_map(scaling::parse_line) {
            Some(m) => Outcome::Done(m),
            None => Outcome::Failed(format!("no result line: {out}")),
        },
        Some(s) => {
            let tail: String = err.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
            Outcome::Failed(format!("{s}: {}", tail.chars().take(300).collect::<String>()))
        }
    }
}

/// The steps every table shows, in order (a backend's own steps differ).
fn columns(backend: &str) -> &'static [&'static str] {
    match backend {
        "cpu" => &["build", "sharing", "simplify", "fusion", "plan", "codegen", "cc", "other", "run"],
        _ => &["build", "sharing", "simplify", "fusion", "plan", "kernels", "other", "run"],
    }
}

fn main() {
    let args = parse_args();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("scaling: limit {:?} per program; load average {}", args.limit, load.trim());
    for backend in &args.backends {
        let cols = columns(backend);
        println!("\n### Backend `{backend}` (seconds)\n");
        println!("| family | ops | {} | compile | x prev | C bytes |", cols.join(" | "));
        println!("|---|---:|{}---:|---:|---:|", "---:|".repeat(cols.len()));
        for f in &args.families {
            let mut prev: Option<f64> = None;
            let mut stopped = false;
            for &n in &args.sizes {
                if stopped {
                    println!("| {} | {n} | skipped after a failure at a smaller size |", f.name);
                    continue;
                }
                eprintln!("scaling: {} at {n} on {backend}", f.name);
                match run_child(f.name, n, backend, args.limit) {
                    Outcome::Done(m) => {
                        let cells: Vec<String> = cols
                            .iter()
                            .map(|c| {
                                m.steps
                                    .iter()
                                    .find(|(n, _)| n == c)
                                    .map_or("-".into(), |(_, s)| format!("{s:.3}"))
                            })
                            .collect();
                        let growth = prev.map_or("".into(), |p| format!("{:.1}", m.compile / p.max(1e-6)));
                        println!(
                            "| {} | {n} | {} | {:.3} | {growth} | {} |",
                            f.name,
                            cells.join(" | "),
                            m.compile,
                            m.source_bytes
                        );
                        prev = Some(m.compile);
                    }
                    Outcome::Hang => {
                        println!("| {} | {n} | hang: killed after {:?} |", f.name, args.limit);
                        stopped = true;
                    }
                    Outcome::Failed(e) => {
                        println!("| {} | {n} | failed: {} |", f.name, e.replace('|', "/").replace('\n', " "));
                        stopped = true;
                    }
                }
            }
        }
    }
}
