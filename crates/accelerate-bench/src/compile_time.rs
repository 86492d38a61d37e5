//! Compile times: how long `compile_with` takes from a Rust function to
//! loaded kernels, cold (a fresh, empty kernel cache: the C compiler runs)
//! and cached (the same cache again: the object is loaded from disk).
//!
//! Each is measured in a child process of the bench binary (`PROBE_FLAG`),
//! because the backend also keeps loaded objects in memory for the life of
//! a process, and reads `ACCELERATE_CACHE_DIR` once: a fresh process with
//! the variable pointing at a new temporary folder is the only way to see
//! a truly cold compile, and a second one with the same folder the only
//! way to see a load from disk. The child times `compile_with` itself, so
//! process start-up is not counted.

use crate::harness::Size;
use crate::programs::{self, CompileProbe};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The command-line flag that makes the bench binary a probe:
/// `--compile-probe NAME --size SIZE` compiles NAME's program and prints
/// one line, `compile-probe seconds=S kernels=K cc_runs=C front_end=F`.
pub const PROBE_FLAG: &str = "--compile-probe";

/// The child's side: compile and print.
pub fn run_probe(name: &str, size: Size) -> Result<(), String> {
    let bench = programs::find(name).ok_or_else(|| format!("no benchmark named {name}"))?;
    let compile = bench.compile.ok_or_else(|| format!("{name} has no Accelerate program to compile"))?;
    let p = compile(size)?;
    println!(
        "compile-probe seconds={} kernels={} cc_runs={} front_end={}",
        p.seconds, p.kernels, p.cc_runs, p.front_end
    );
    Ok(())
}

/// One program's compile times.
#[derive(Clone, Debug)]
pub struct CompileTimes {
    pub name: &'static str,
    pub cold: CompileProbe,
    pub cached: CompileProbe,
}

/// The parent's side: a cold and a cached probe of `name`, run by the
/// bench binary `exe`.
pub fn measure(exe: &Path, name: &'static str, size: Size) -> Result<CompileTimes, String> {
    let dir = fresh_dir(name)?;
    let result = (|| {
        let cold = probe(exe, name, size, &dir)?;
        let cached = probe(exe, name, size, &dir)?;
        Ok(CompileTimes { name, cold, cached })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn probe(exe: &Path, name: &str, size: Size, cache: &Path) -> Result<CompileProbe, String> {
    let out = Command::new(exe)
        .args([PROBE_FLAG, name, "--size", size.name()])
        .env("ACCELERATE_CACHE_DIR", cache)
        .env_remove("ACCELERATE_CACHE")
        .output()
        .map_err(|e| format!("running {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "the compile probe of {name} failed ({}): {}{}",
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    stdout
        .lines()
        .find_map(parse)
        .ok_or_else(|| format!("the compile probe of {name} printed no result: {stdout}"))
}

/// Reads the probe's line.
pub fn parse(line: &str) -> Option<CompileProbe> {
    let rest = line.strip_prefix("compile-probe ")?;
    let mut p =
        CompileProbe { seconds: f64::NAN, kernels: usize::MAX, cc_runs: usize::MAX, front_end: f64::NAN };
    for field in rest.split_whitespace() {
        let (k, v) = field.split_once('=')?;
        match k {
            "seconds" => p.seconds = v.parse().ok()?,
            "kernels" => p.kernels = v.parse().ok()?,
            "cc_runs" => p.cc_runs = v.parse().ok()?,
            "front_end" => p.front_end = v.parse().ok()?,
            _ => {}
        }
    }
    (!p.seconds.is_nan() && !p.front_end.is_nan() && p.kernels != usize::MAX && p.cc_runs != usize::MAX)
        .then_some(p)
}

/// A new empty folder under the system's temporary folder.
fn fresh_dir(name: &str) -> Result<PathBuf, String> {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir =
        std::env::temp_dir().join(format!("accelerate-bench-cache-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_line_round_trips() {
        let p = parse("compile-probe seconds=0.25 kernels=2 cc_runs=1 front_end=0.001").unwrap();
        assert_eq!(p, CompileProbe { seconds: 0.25, kernels: 2, cc_runs: 1, front_end: 0.001 });
        assert_eq!(parse("compile-probe seconds=0.25"), None);
        assert_eq!(parse("something else"), None);
    }
}
