//! Defunctionalisation leaves no function values (TFP'18): every program
//! of the text corpus is first order after `defunc`, and snapshots show
//! the slides' example and other higher-order programs after each stage
//! (the first-order program, then the IR the lowering makes of it, then
//! the IR after fusion): only first-order terms, the closures' captured
//! values passed as records.

use accelerate::ir::pretty;
use accelerate::text::{compile_text, front_end, SourceFile};
use accelerate::Config;
use accelerate_text::{defunc, pretty as text_pretty};
use std::path::{Path, PathBuf};

fn corpus(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("the corpus") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            corpus(&p, out);
        } else if p.extension().is_some_and(|x| x == "fut") {
            out.push(p);
        }
    }
}

#[test]
fn every_corpus_program_is_first_order_after_defunctionalisation() {
    let mut files = Vec::new();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    corpus(&here.join("tests/text"), &mut files);
    corpus(&here.join("../accelerate-programs/fut"), &mut files);
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let file = SourceFile::new(f.display().to_string(), text);
        // the entry's name does not matter to the stages before lowering;
        // a program that must not compile stops before defunctionalisation
        // or at lowering
        let Ok(mut prog) = accelerate_text::parser::parse_program(&file) else { continue };
        if accelerate_text::check::check_program(&mut prog).is_err() {
            continue;
        }
        let mono = accelerate_text::mono::monomorphise(prog);
        let first = defunc::defunctionalise(mono).unwrap_or_else(|d| panic!("{}", file.render(&d)));
        defunc::first_order(&first)
            .unwrap_or_else(|m| panic!("{}: {m}\n{}", f.display(), text_pretty::program(&first)));
        checked += 1;
    }
    assert!(checked >= 10, "{checked} programs checked");
}

/// The stages of entry point `main` of a program, as text.
fn stages(src: &str) -> String {
    let file = SourceFile::new("prog.fut", src);
    let fe = front_end(&file, "main").unwrap_or_else(|e| panic!("{e}"));
    let p = compile_text("prog.fut", src, "main", &Config::default()).unwrap_or_else(|e| panic!("{e}"));
    let fused = p.program().phases().iter().find(|ph| ph.name == "fusion").map(|ph| pretty::program(&ph.ir));
    format!(
        "== defunctionalised ==\n{}\n== lowered ==\n{}\n== fused ==\n{}",
        text_pretty::program(&fe.first_order),
        pretty::program(&fe.lowered.program),
        fused.unwrap_or_default()
    )
}

#[test]
fn the_slides_example_lifts_one_function_per_closure_and_values() {
    insta::assert_snapshot!(stages(
        "def twice (g: i32 -> i32) = \\x -> g (g x)\n\
         def main (y: i32) = let f = let a = 5 in twice (\\z -> z + a) in f y"
    ));
}

#[test]
fn functions_passed_to_combinators_become_their_lambdas() {
    insta::assert_snapshot!(stages(
        "def compose 'a 'b 'c (f: b -> c) (g: a -> b) : a -> c = \\x -> f (g x)\n\
         def main (xs: []f32) (c: f32) = let h = compose (\\x -> x * c) (+ 1) in reduce (+) 0 (map h xs)"
    ));
}

#[test]
fn functions_in_records_are_their_environments() {
    insta::assert_snapshot!(stages(
        "def main (k: i32) (xs: []i32) =\n\
         let ops = {inc = \\x -> x + k, neg = \\(x: i32) -> -x}\n\
         in map (\\x -> ops.neg (ops.inc x)) xs"
    ));
}
