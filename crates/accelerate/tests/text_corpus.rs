//! The text front end's corpus (`tests/text/**/*.fut`, and the seeds'
//! programs in `accelerate-programs/fut`): every `-- ==`
//! block of every file, run on the configured backend (the CPU backend by
//! default, the interpreter and the CUDA emulator in CI's other passes),
//! as `accelerate-text test tests/text` does. Programs that must not
//! compile (`tests/text/bad`) are cases too: their error text is matched.

use accelerate::text::run_test_file;
use accelerate::Config;
use std::path::{Path, PathBuf};

fn fut_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("the corpus").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            fut_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "fut") {
            out.push(p);
        }
    }
}

#[test]
fn every_corpus_case_passes() {
    let config = Config::from_env().expect("configuration");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    fut_files(&here.join("tests/text"), &mut files);
    // the seeds' programs, kept beside their Rust forms
    fut_files(&here.join("../accelerate-programs/fut"), &mut files);
    assert!(files.len() >= 20, "the corpus is there: {files:?}");
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    for f in &files {
        let report = run_test_file(f, &config);
        assert!(!report.cases.is_empty(), "{} has no test cases", f.display());
        passed += report.passed();
        skipped += report.skipped();
        failures.extend(report.failures());
    }
    println!(
        "text corpus: {passed} passed, {} failed, {skipped} skipped, in {} files",
        failures.len(),
        files.len()
    );
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n\n"));
    assert_eq!(skipped, 0, "no case of the corpus is skipped");
}
