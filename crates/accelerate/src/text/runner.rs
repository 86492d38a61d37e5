//! Running the `-- ==` test blocks of a `.fut` file, as `futhark test`
//! does: each block's cases on each of its entry points, results compared
//! with Futhark's tolerance for floats (`data::values_match`), `error:`
//! cases and blocks matched by the text of the error (as a substring:
//! Futhark reads it as a regular expression).

use super::{compile_text, read_values, values_match, TextProgram, Value};
use crate::exec::config::Config;
use accelerate_text::testspec::{parse_tests, Expected, Input};
use std::collections::HashMap;
use std::path::Path;

/// What became of one case.
#[derive(Clone, Debug)]
pub enum CaseOutcome {
    Passed,
    Failed(String),
    /// Not run: random inputs and scripts, which this runner does not
    /// generate or interpret.
    Skipped(String),
}

/// The cases of one file: `(entry, line, outcome)`.
#[derive(Clone, Debug, Default)]
pub struct TestReport {
    pub file: String,
    pub cases: Vec<(String, usize, CaseOutcome)>,
}

impl TestReport {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| matches!(c.2, CaseOutcome::Passed)).count()
    }

    pub fn failed(&self) -> usize {
        self.cases.iter().filter(|c| matches!(c.2, CaseOutcome::Failed(_))).count()
    }

    pub fn skipped(&self) -> usize {
        self.cases.iter().filter(|c| matches!(c.2, CaseOutcome::Skipped(_))).count()
    }

    /// Each failure, with its place and reason.
    pub fn failures(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter_map(|(entry, line, o)| match o {
                CaseOutcome::Failed(m) => Some(format!("{}:{line} ({entry}): {m}", self.file)),
                _ => None,
            })
            .collect()
    }
}

/// Runs every test block of a `.fut` file on the configuration's backend.
pub fn run_test_file(path: &Path, config: &Config) -> TestReport {
    let name = path.display().to_string();
    let mut report = TestReport { file: name.clone(), cases: Vec::new() };
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            report.cases.push(("-".into(), 0, CaseOutcome::Failed(format!("cannot read the file: {e}"))));
            return report;
        }
    };
    let blocks = match parse_tests(&source) {
        Ok(b) => b,
        Err(e) => {
            report.cases.push(("-".into(), e.line, CaseOutcome::Failed(format!("bad test block: {e}"))));
            return report;
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut programs: HashMap<String, Result<TextProgram, String>> = HashMap::new();
    for block in blocks {
        if let Some(want) = &block.compile_error {
            for entry in &block.entries {
                let outcome = match compile_text(&name, &source, entry, config) {
                    Ok(_) => {
                        CaseOutcome::Failed(format!("compiled, but the test expects the error `{want}`"))
                    }
                    Err(e) if e.rendered.contains(want.as_str()) => CaseOutcome::Passed,
                    Err(e) => {
                        CaseOutcome::Failed(format!("the error does not contain `{want}`:\n{}", e.rendered))
                    }
                };
                report.cases.push((entry.clone(), block.line, outcome));
            }
            continue;
        }
        for entry in &block.entries {
            let program = programs
                .entry(entry.clone())
                .or_insert_with(|| compile_text(&name, &source, entry, config).map_err(|e| e.rendered));
            for case in &block.cases {
                let outcome = match program {
                    Err(e) => CaseOutcome::Failed(format!("does not compile:\n{e}")),
                    Ok(p) => run_case(p, &case.input, &case.expected, dir),
                };
                report.cases.push((entry.clone(), case.line, outcome));
            }
        }
    }
    report
}

fn read_file_values(dir: &Path, file: &str) -> Result<Vec<Value>, String> {
    let bytes = std::fs::read(dir.join(file)).map_err(|e| format!("cannot read {file}: {e}"))?;
    read_values(&bytes).map_err(|e| format!("{file}: {e}"))
}

fn run_case(p: &TextProgram, input: &Input, expected: &Expected, dir: &Path) -> CaseOutcome {
    let args = match input {
        Input::Values(vs) => vs.clone(),
        Input::File(f) => match read_file_values(dir, f) {
            Ok(vs) => vs,
            Err(e) => return CaseOutcome::Failed(e),
        },
        Input::Random(_) => return CaseOutcome::Skipped("random input".into()),
        Input::Script(_) | Input::ScriptFile(_) => return CaseOutcome::Skipped("script input".into()),
    };
    let result = p.run(&args);
    match (expected, result) {
        (Expected::Error(want), Err(e)) if e.rendered.contains(want.as_str()) => CaseOutcome::Passed,
        (Expected::Error(want), Err(e)) => {
            CaseOutcome::Failed(format!("the error does not contain `{want}`:\n{}", e.rendered))
        }
        (Expected::Error(want), Ok(_)) => {
            CaseOutcome::Failed(format!("ran, but the test expects the error `{want}`"))
        }
        (_, Err(e)) => CaseOutcome::Failed(format!("failed:\n{}", e.rendered)),
        (Expected::Success | Expected::Auto, Ok(_)) => CaseOutcome::Passed,
        (Expected::Values(want), Ok(got)) => compare(want, &got),
        (Expected::File(f), Ok(got)) => match read_file_values(dir, f) {
            Ok(want) => compare(&want, &got),
            Err(e) => CaseOutcome::Failed(e),
        },
    }
}

fn compare(want: &[Value], got: &[Value]) -> CaseOutcome {
    if want.len() != got.len() {
        return CaseOutcome::Failed(format!("expected {} values, got {}", want.len(), got.len()));
    }
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if let Err(m) = values_match(w, g) {
            return CaseOutcome::Failed(format!("result {}: {m}", i + 1));
        }
    }
    CaseOutcome::Passed
}
