//! Every environment variable that holds a number or a choice rejects a
//! bad value with an `Error::Config` naming the variable, the value and
//! what it may hold, from `Config::from_env` and so from `run`. Each case
//! runs in a child process (this test binary again), so that no test of
//! this binary sees another's environment.

use accelerate::prelude::*;
use std::process::Command;

/// Set in a child: print what `Config::from_env` and `run` give.
const ROLE: &str = "ACCELERATE_CONFIG_ENV_TEST_ROLE";

/// The variables of each case, set on top of an environment without any
/// `ACCELERATE_*` variable.
fn child_output(vars: &[(&str, &str)]) -> String {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "bad_values_in_the_environment_are_config_errors", "--nocapture"]).env(ROLE, "1");
    for (k, _) in std::env::vars() {
        if k.starts_with("ACCELERATE_") {
            c.env_remove(k);
        }
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "the child failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn bad_values_in_the_environment_are_config_errors() {
    if std::env::var_os(ROLE).is_some() {
        let from_env = Config::from_env();
        let via_run = accelerate::run(&unit(1i32));
        let show = |r: Result<String, Error>| match r {
            Ok(s) => format!("ok {s}"),
            Err(Error::Config(m)) => format!("config error: {m}"),
            Err(e) => format!("other error: {e}"),
        };
        println!("from_env: {}", show(from_env.map(|c| format!("{:?}", c.backend))));
        println!("run: {}", show(via_run.map(|a| a.value().to_string())));
        return;
    }
    let bad: &[(&str, &str, &str)] = &[
        ("ACCELERATE_THREADS", "abc", "a whole number"),
        ("ACCELERATE_THREADS", "-1", "a whole number"),
        ("ACCELERATE_POOL_MB", "abc", "a whole number"),
        ("ACCELERATE_POOL_MB", "1.5", "a whole number"),
        ("ACCELERATE_PARALLEL_WORK", "some", "a whole number"),
        ("ACCELERATE_CUDA_MEMORY_MB", "lots", "a whole number"),
        ("ACCELERATE_CUDA_DEVICE", "emulater", "gpu, emulator"),
        ("ACCELERATE_CACHE", "of", "on, off"),
        ("ACCELERATE_SEQ_BUDGET_MB", "0", "at least 1"),
        ("ACCELERATE_SEQ_BUDGET_MB", "big", "a whole number"),
        ("ACCELERATE_SEQ_CHUNK", "-4", "a whole number"),
        (
            "ACCELERATE_DUMP",
            "plan,fusoin",
            "sharing, text, lift, simplify, fusion, cluster, gathers, lines, ilp, plan, all, c, cuda",
        ),
        ("ACCELERATE_BACKEND", "gpu", "the backends are"),
        ("ACCELERATE_FLAGS", "no-fusoin", "no-fusion"),
    ];
    for (name, value, accepted) in bad {
        let out = child_output(&[(name, value)]);
        for line in ["from_env: config error: ", "run: config error: "] {
            let l = out
                .lines()
                .find(|l| l.starts_with(line))
                .unwrap_or_else(|| panic!("{name}={value}: no `{line}` in:\n{out}"));
            for want in [*name, value.split(',').next_back().unwrap(), accepted] {
                assert!(l.contains(want), "{name}={value}: `{want}` missing from: {l}");
            }
        }
    }
    // good values, and none, are accepted
    for vars in [
        &[][..],
        &[("ACCELERATE_THREADS", "2"), ("ACCELERATE_POOL_MB", "0"), ("ACCELERATE_CACHE", "off")][..],
        &[("ACCELERATE_PARALLEL_WORK", "0"), ("ACCELERATE_THREADS", "2")],
        &[
            ("ACCELERATE_CUDA_MEMORY_MB", " 64 "),
            ("ACCELERATE_CUDA_DEVICE", "emulator"),
            ("ACCELERATE_CACHE", "on"),
        ],
        &[("ACCELERATE_DUMP", "all"), ("ACCELERATE_BACKEND", "interp")],
        &[("ACCELERATE_DUMP", "ilp,cluster"), ("ACCELERATE_BACKEND", "interp")],
        &[("ACCELERATE_FLAGS", "no-rows,no-ilp")],
        &[("ACCELERATE_DUMP", "schedule"), ("ACCELERATE_SEQ_BUDGET_MB", "64"), ("ACCELERATE_SEQ_CHUNK", "8")],
    ] {
        let out = child_output(vars);
        assert!(out.contains("from_env: ok") && out.contains("run: ok 1"), "{vars:?}:\n{out}");
    }
}
