//! The runner end to end at a tiny size: it checks and times, prints the
//! tables, measures compile times in child processes, and writes JSON.

use std::process::Command;

#[test]
fn tiny_run_prints_tables_and_writes_json() {
    let json = std::env::temp_dir().join(format!("accelerate-bench-test-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_accelerate-bench"))
        .args(["dotp", "--size", "tiny", "--json"])
        .arg(&json)
        .output()
        .expect("the bench binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // a table per program, then the targets (`dotp`'s main variant's row)
    for want in
        ["**triad**", "**dotp**", "| c-openmp |", "| dotp | accelerate |", "Cold compile", "Cached load"]
    {
        assert!(stdout.contains(want), "no {want:?} in:\n{stdout}");
    }
    let text = std::fs::read_to_string(&json).expect("the JSON file was written");
    let _ = std::fs::remove_file(&json);
    assert!(text.trim_start().starts_with('[') && text.trim_end().ends_with(']'), "{text}");
    for field in ["\"benchmark\"", "\"variant\"", "\"size\"", "\"median_s\"", "\"bytes\"", "\"flops\""] {
        assert!(text.contains(field), "no {field} in:\n{text}");
    }
    // the cached probe loads the object the cold one compiled
    assert!(text.contains("\"variant\": \"compile-cached\"") && text.contains("\"cc_runs\": 0"), "{text}");
}

#[test]
fn unknown_argument_is_a_usage_error() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_accelerate-bench")).arg("--frobnicate").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
}
