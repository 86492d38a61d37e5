//! Hostile input to the text front end, each test in a child process (a
//! crash or a hang fails the test, not the run): truncated, mutated and
//! random sources give diagnostics that point into the source, never a
//! panic; every program the checker accepts lowers to IR the verifier
//! accepts (or to an `unsupported` diagnostic); very long and very deep
//! programs compile.

#[macro_use]
mod common;

use accelerate::ir::verify::{verify_nested_program, verify_program};
use accelerate::ir::visit::first_nested;
use accelerate::text::{compile_text, front_end, SourceFile};
use accelerate::Config;
use std::path::{Path, PathBuf};

const ROLE: &str = "ACCELERATE_TEXT_HOSTILE_CHILD";

fn corpus() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "fut") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    walk(&here.join("tests/text"), &mut files);
    walk(&here.join("../accelerate-programs/fut"), &mut files);
    files.sort();
    files.into_iter().map(|f| (f.clone(), std::fs::read_to_string(&f).unwrap())).collect()
}

/// The names after `entry` in a source: the entry points to lower.
fn entries(src: &str) -> Vec<String> {
    src.split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "entry")
        .map(|w| w[1].trim_matches(|c: char| !c.is_alphanumeric() && c != '_').to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Runs the front end on a source: a diagnostic must name the file with a
/// line and column; lowered IR must verify.
fn front_end_holds(name: &str, src: &str) {
    let file = SourceFile::new(name, src);
    let mut names = entries(src);
    names.push("main".into());
    for entry in names.iter().take(4) {
        match front_end(&file, entry) {
            Ok(fe) => {
                let p = &fe.lowered.program;
                let verified = if first_nested(&p.body).is_some() {
                    verify_nested_program(p, "text")
                } else {
                    verify_program(p, "text")
                };
                if let Err(e) = verified {
                    panic!("the lowering of `{entry}` does not verify: {e}\n--- source ---\n{src}");
                }
            }
            Err(e) => {
                assert!(e.rendered.contains(name), "a diagnostic without its place:\n{}", e.rendered);
            }
        }
    }
}

/// A small deterministic generator (xorshift), for reproducible cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

hostile!(truncated_sources_give_diagnostics, {
    for (path, src) in corpus() {
        let name = path.display().to_string();
        let cuts: Vec<usize> = src.char_indices().map(|(i, _)| i).step_by(5).collect();
        for cut in cuts {
            front_end_holds(&name, &src[..cut]);
        }
    }
});

hostile!(mutated_sources_give_diagnostics, {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let corpus = corpus();
    let pieces = [
        " ", "(", ")", "[", "]", "\\x -> ", "let", "in", "map", "reduce", "+", "*", ":", "i32", "f32", "0",
        "1.5", "x", "if", "then", "else", "loop", "for", "do", "{", "}", ",", ".", "->", "'a", "[n]", "|>",
        "iota", "-1",
    ];
    for _ in 0..600 {
        let (path, src) = &corpus[rng.below(corpus.len())];
        let mut tokens: Vec<String> = src.split(' ').map(str::to_string).collect();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(tokens.len().max(1));
            match rng.below(3) {
                0 if !tokens.is_empty() => {
                    tokens.remove(i.min(tokens.len() - 1));
                }
                1 => tokens.insert(i.min(tokens.len()), pieces[rng.below(pieces.len())].to_string()),
                _ => {
                    let j = rng.below(tokens.len().max(1));
                    if i < tokens.len() && j < tokens.len() {
                        tokens.swap(i, j);
                    }
                }
            }
        }
        front_end_holds(&path.display().to_string(), &tokens.join(" "));
    }
    // random sequences of the language's tokens
    for _ in 0..2000 {
        let n = 1 + rng.below(30);
        let src: Vec<&str> = (0..n).map(|_| pieces[rng.below(pieces.len())]).collect();
        front_end_holds("soup.fut", &format!("entry main (x: i32) = {}", src.join(" ")));
    }
});

hostile!(long_and_deep_programs_compile, {
    // 100 000 lets in a chain, and a sum of 100 000 terms: each phase is
    // near-linear, and none recurses on the depth without growing its stack
    let n = 100_000;
    let mut src = String::from("entry main (x: i32) : i32 =\n");
    for i in 0..n {
        src.push_str(&format!("  let x{} = x{} + {}\n", i + 1, i, i % 7));
    }
    src = src.replacen("let x1 = x0", "let x1 = x", 1);
    src.push_str(&format!("  in x{n}\n"));
    let config = Config::from_env().unwrap();
    let p = compile_text("chain.fut", &src, "main", &config).unwrap_or_else(|e| panic!("{e}"));
    let want = (0..n).map(|i| i % 7).sum::<i32>() + 5;
    let arg = accelerate::text::read_values(b"5i32").unwrap();
    let got = p.run(&arg).unwrap();
    assert_eq!(accelerate::text::write_text(&got[0]), format!("{want}i32"));
    // nesting past the parser's bound is an error, not an overflow
    let deep = format!("entry main (x: i32) : i32 = {}x{}", "(".repeat(100_000), ")".repeat(100_000));
    let e = compile_text("deep.fut", &deep, "main", &config).err().expect("too deep");
    assert!(e.rendered.contains("deep.fut:1:"), "{}", e.rendered);
});
