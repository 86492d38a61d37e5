//! The text front end's command line, after `futhark run` and `futhark
//! test`:
//!
//! ```text
//! accelerate-text run FILE.fut [--entry NAME] [--backend interp|cpu|cuda] [--binary]
//!     runs an entry point (default `main`) on the values on standard input
//!     (Futhark's textual or binary data format) and prints its results
//! accelerate-text test PATH... [--backend interp|cpu|cuda]
//!     runs the `-- ==` test blocks of .fut files (directories: every .fut
//!     file under them) and prints a summary line
//! ```

use accelerate::text::{compile_text, read_values, run_test_file, write_binary, write_text};
use accelerate::{Backend, Config};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: accelerate-text run FILE.fut [--entry NAME] [--backend interp|cpu|cuda] [--binary]\n       \
         accelerate-text test PATH... [--backend interp|cpu|cuda]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else { return usage() };
    let mut entry = "main".to_string();
    let mut backend = None;
    let mut binary = false;
    let mut paths = Vec::new();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--entry" | "-e" => match it.next() {
                Some(e) => entry = e.clone(),
                None => return usage(),
            },
            "--backend" => match it.next().map(|b| b.as_str()) {
                Some("interp" | "interpreter") => backend = Some(Backend::Interpreter),
                Some("cpu") => backend = Some(Backend::Cpu),
                #[cfg(feature = "cuda")]
                Some("cuda") => backend = Some(Backend::Cuda),
                Some(other) => {
                    eprintln!(
                        "unknown backend `{other}` (interp, cpu{})",
                        if cfg!(feature = "cuda") { ", cuda" } else { "" }
                    );
                    return ExitCode::from(2);
                }
                None => return usage(),
            },
            "--binary" | "-b" => binary = true,
            p => paths.push(PathBuf::from(p)),
        }
    }
    let config = match Config::from_env() {
        Ok(c) => match backend {
            Some(b) => c.with_backend(b),
            None => c,
        },
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match command.as_str() {
        "run" => match paths.as_slice() {
            [file] => run(file, &entry, binary, &config),
            _ => usage(),
        },
        "test" if !paths.is_empty() => test(&paths, &config),
        _ => usage(),
    }
}

fn run(file: &Path, entry: &str, binary: bool, config: &Config) -> ExitCode {
    let source = match std::fs::read_to_string(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    };
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("standard input: {e}");
        return ExitCode::FAILURE;
    }
    let args = match read_values(&input) {
        Ok(vs) => vs,
        Err(e) => {
            eprintln!("standard input: {e}");
            return ExitCode::FAILURE;
        }
    };
    let program = match compile_text(&file.display().to_string(), &source, entry, config) {
        Ok(p) => p,
        Err(e) => {
            eprint!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match program.run(&args) {
        Ok(results) => {
            let mut out = std::io::stdout().lock();
            for r in &results {
                let written =
                    if binary { out.write_all(&write_binary(r)) } else { writeln!(out, "{}", write_text(r)) };
                if written.is_err() {
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprint!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Every `.fut` file at or under the paths, in name order.
fn fut_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = paths.to_vec();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()));
            }
        } else if p.extension().is_some_and(|x| x == "fut") || paths.contains(&p) {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn test(paths: &[PathBuf], config: &Config) -> ExitCode {
    let files = fut_files(paths);
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for f in &files {
        let report = run_test_file(f, config);
        for failure in report.failures() {
            eprintln!("FAILED {failure}");
        }
        passed += report.passed();
        failed += report.failed();
        skipped += report.skipped();
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped, in {} files", files.len());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
