//! MD5 hash recovery (the sequences thesis §7.3): find the word of a
//! dictionary whose MD5 digest is a given one, by hashing every word.
//!
//! ```sh
//! cargo run --release --example md5 -- --check                 # 2^20 generated words
//! cargo run --release --example md5 -- --words 4000000 --batch 8192
//! cargo run --release --example md5 -- --dict words.txt --check # one word per line
//! cargo run --release --example md5 -- --target 900150983cd24fb0d6963f7d28e17f72 --dict words.txt
//! ```
//!
//! The programs are `accelerate_programs::md5`: `md5_search_seq`, the
//! dictionary streamed in (`stream_in`) as batches of `--batch` words (a
//! `B x 16` matrix of padded blocks each, the last batch shorter when `B`
//! does not divide the word count), each batch mapped to its first match
//! and folded with `fold_seq` min; and `md5_search`, the whole dictionary
//! in memory as one matrix (compiled once, run per target).
//!
//! The dictionary is generated (`--words N`, words of 1 to 55 printable
//! bytes, the word at `--plant P`, by default three quarters in, replaced
//! by one the generator cannot make), or read from `--dict FILE`, one word
//! a line (lines over 55 bytes are skipped and counted; the index of a
//! word is its position among the words kept). The sequence form reads
//! its batches while it runs: from the generator, or from the file, on the
//! stream's own thread; the flat form needs the dictionary in memory.
//!
//! Each search runs three times: the sequence form streaming from the
//! generator or the file (whose reading shares the cores with the
//! hashing), the sequence form streaming batches made before it runs (the
//! runtime's own cost), and the flat form.
//!
//! Two searches: the digest of the planted word (of the word at the
//! plant position for a file; `--target HEX` names another), and the
//! all-zero digest, which no known word has, whose result is "not found".
//! Times include the run's compilation, from the kernel cache after the
//! first run. With `--check`, each found index is compared with a
//! plain-Rust sequential search over the same words; a mismatch exits
//! with status 1.

use accelerate::prelude::*;
use accelerate::{run_seq_with, Config, ProgressFn, SeqOptions};
use accelerate_programs::md5::{
    batches, dictionary_blocks, digest_hex, md5_block_ref, md5_ref, md5_search, md5_search_seq, pad_block,
    planted_word, search_ref, BLOCK_WORDS, MAX_WORD_LEN, NOT_FOUND,
};
use accelerate_programs::rng::SEED_A;
use std::io::{BufRead, BufReader};
use std::process::exit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

struct Args {
    words: usize,
    batch: usize,
    plant: Option<usize>,
    dict: Option<String>,
    target: Option<[u32; 4]>,
    progress: bool,
    check: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: md5 [--check] [--words N] [--batch B] [--plant P] [--dict FILE] [--target HEX] [--progress]"
    );
    exit(2)
}

fn fail(msg: &str) -> ! {
    eprintln!("md5: {msg}");
    exit(1)
}

/// A digest written as 32 hexadecimal digits, as four state words.
fn parse_digest(s: &str) -> Option<[u32; 4]> {
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let bytes: Vec<u8> =
        (0..16).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()).collect::<Option<_>>()?;
    let mut d = [0u32; 4];
    for (w, b) in d.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Some(d)
}

fn parse_args() -> Args {
    let mut args = Args {
        words: 1 << 20,
        batch: 4096,
        plant: None,
        dict: None,
        target: None,
        progress: false,
        check: false,
    };
    let mut it = std::env::args().skip(1);
    let number = |it: &mut std::iter::Skip<std::env::Args>| -> usize {
        it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage())
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--progress" => args.progress = true,
            "--words" | "-n" => args.words = number(&mut it),
            "--batch" => args.batch = number(&mut it),
            "--plant" => args.plant = Some(number(&mut it)),
            "--dict" => args.dict = Some(it.next().unwrap_or_else(|| usage())),
            "--target" => {
                let s = it.next().unwrap_or_else(|| usage());
                args.target =
                    Some(parse_digest(&s).unwrap_or_else(|| fail(&format!("{s:?} is not 32 hex digits"))));
            }
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("md5: unknown argument {a:?}");
                usage()
            }
        }
    }
    if args.batch == 0 {
        fail("a batch holds at least one word");
    }
    args
}

/// The lines of a file as padded blocks, `batch` words a matrix, read as
/// the iterator is pulled; lines over 55 bytes are skipped and counted in
/// `skipped`. A read error panics, which the sequence reports as an error
/// of the element being read.
struct FileBatches {
    path: String,
    reader: BufReader<std::fs::File>,
    batch: usize,
    skipped: Arc<AtomicUsize>,
    line: Vec<u8>,
}

impl Iterator for FileBatches {
    type Item = Matrix<u32>;

    fn next(&mut self) -> Option<Matrix<u32>> {
        let mut blocks = Vec::with_capacity(self.batch * BLOCK_WORDS);
        while blocks.len() < self.batch * BLOCK_WORDS {
            self.line.clear();
            let read = self.reader.read_until(b'\n', &mut self.line);
            match read {
                Ok(0) => break,
                Ok(_) => match pad_block(trim_newline(&self.line)) {
                    Some(b) => blocks.extend_from_slice(&b),
                    None => {
                        self.skipped.fetch_add(1, Ordering::Relaxed);
                    }
                },
                Err(e) => panic!("reading {}: {e}", self.path),
            }
        }
        (!blocks.is_empty()).then(|| {
            Matrix::from_vec(dim2(blocks.len() / BLOCK_WORDS, BLOCK_WORDS), blocks).expect("whole rows")
        })
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn open(path: &str) -> BufReader<std::fs::File> {
    BufReader::new(std::fs::File::open(path).unwrap_or_else(|e| fail(&format!("cannot open {path}: {e}"))))
}

/// Where the dictionary comes from.
enum Source {
    Generated { n: usize, plant: usize },
    File { path: String },
}

impl Source {
    /// The dictionary's batches as a stream (made, or read, as they are
    /// pulled), the number of batches where known, and the skipped-line
    /// counter of a file.
    fn stream(&self, batch: usize) -> (Box<dyn Iterator<Item = Matrix<u32>> + Send>, i64, Arc<AtomicUsize>) {
        let skipped = Arc::new(AtomicUsize::new(0));
        match self {
            &Source::Generated { n, plant } => {
                let batches = (0..n.div_ceil(batch)).map(move |b| {
                    let words = b * batch..((b + 1) * batch).min(n);
                    let rows = words.len();
                    let blocks = dictionary_blocks(words, SEED_A, Some(plant));
                    Matrix::from_vec(dim2(rows, BLOCK_WORDS), blocks).expect("whole rows")
                });
                (Box::new(batches), n.div_ceil(batch) as i64, skipped)
            }
            Source::File { path } => {
                let it = FileBatches {
                    path: path.clone(),
                    reader: open(path),
                    batch,
                    skipped: skipped.clone(),
                    line: Vec::new(),
                };
                // the number of batches is learnt at the stream's end
                (Box::new(it), i64::MAX, skipped)
            }
        }
    }

    /// The whole dictionary in memory (for the flat form and the check),
    /// and the lines skipped.
    fn load(&self) -> (Vec<u32>, usize) {
        match self {
            &Source::Generated { n, plant } => (dictionary_blocks(0..n, SEED_A, Some(plant)), 0),
            Source::File { .. } => {
                let (mut it, _, skipped) = self.stream(1 << 16);
                let mut blocks = Vec::new();
                for m in &mut it {
                    blocks.extend_from_slice(m.as_slice());
                }
                (blocks, skipped.load(Ordering::Relaxed))
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();
    let source = match &args.dict {
        Some(path) => Source::File { path: path.clone() },
        None => {
            let plant = args.plant.unwrap_or(args.words * 3 / 4);
            if plant >= args.words {
                fail(&format!("--plant {plant} is past the {} words", args.words));
            }
            Source::Generated { n: args.words, plant }
        }
    };

    let t = Instant::now();
    let (blocks, skipped) = source.load();
    let n = blocks.len() / BLOCK_WORDS;
    let t_load = t.elapsed().as_secs_f64();
    match &source {
        Source::Generated { plant, .. } => println!(
            "md5: {n} generated words (the word at {plant} planted), batches of {} words; generated in memory in {t_load:.2} s",
            args.batch
        ),
        Source::File { path } => println!(
            "md5: {n} words from {path} ({skipped} lines over {MAX_WORD_LEN} bytes skipped), batches of {}; read in {t_load:.2} s",
            args.batch
        ),
    }
    if n == 0 {
        fail("the dictionary has no words");
    }

    let planted = match (&source, args.target) {
        (_, Some(d)) => ("--target".to_string(), d),
        (&Source::Generated { plant, .. }, None) => {
            let word = planted_word(plant);
            (format!("the planted word {:?}", String::from_utf8_lossy(&word)), md5_ref(&word).expect("short"))
        }
        (Source::File { .. }, None) => {
            let at = n * 3 / 4;
            let block = &blocks[at * BLOCK_WORDS..(at + 1) * BLOCK_WORDS];
            (format!("the word at {at}"), md5_block_ref(block))
        }
    };
    let targets = [planted, ("the all-zero digest (no known word)".to_string(), [0u32; 4])];

    let progress = args.progress.then(|| {
        let batch = args.batch as u64;
        // every batch but the last is full (a file's word count is known
        // before the stream runs here, from loading it for the flat form)
        let total = n as u64;
        ProgressFn(Arc::new(move |p: accelerate::SeqProgress| {
            let words = (p.elements * batch).min(total);
            let rate = words as f64 / p.elapsed.as_secs_f64().max(1e-9) / 1e6;
            eprint!(
                "\r  {words} words, {} chunks (the last of {} batches), {rate:.2} Mwords/s   ",
                p.chunks, p.chunk_size
            );
        }))
    });
    let config = Config::from_env()?.with_seq(SeqOptions { progress, ..SeqOptions::default() });

    let t = Instant::now();
    let flat = accelerate::compile_with(
        |dict: Acc<Matrix<u32>>, target: Acc<Vector<u32>>| md5_search(&dict, &target),
        config.clone(),
    )?;
    println!("  flat program compiled in {:.2} s", t.elapsed().as_secs_f64());
    let dict = Matrix::from_vec(dim2(n, BLOCK_WORDS), blocks.clone())?;
    let in_memory = batches(&blocks, args.batch);

    let mut bad = 0;
    for (what, digest) in targets {
        println!("target {} ({what}):", digest_hex(digest));
        let target = Vector::from_elems(digest.to_vec());

        let (stream, max_batches, skipped) = source.stream(args.batch);
        let seq = stream_in(stream);
        let search = md5_search_seq(&seq, max_batches, args.batch as i64, &use_array(target.clone()));
        let t = Instant::now();
        let got_seq = run_seq_with(&search, &config)?.value();
        let secs_seq = t.elapsed().as_secs_f64();
        if args.progress {
            eprintln!();
        }
        let skipped = skipped.load(Ordering::Relaxed);

        // the same stream, its batches made before (the runtime's own
        // cost, without the generator's or the file's)
        let seq = stream_in(in_memory.clone());
        let search =
            md5_search_seq(&seq, in_memory.len() as i64, args.batch as i64, &use_array(target.clone()));
        let t = Instant::now();
        let got_mem = run_seq_with(&search, &config)?.value();
        let secs_mem = t.elapsed().as_secs_f64();
        if args.progress {
            eprintln!();
        }

        let t = Instant::now();
        let got_flat = flat.run((&dict, &target))?.value();
        let secs_flat = t.elapsed().as_secs_f64();

        let show = |i: i64| if i == NOT_FOUND { "not found".to_string() } else { format!("index {i}") };
        println!(
            "  sequence (streamed in):   {:<16} {secs_seq:>7.3} s  {:>8.2} Mhashes/s",
            show(got_seq),
            n as f64 / secs_seq / 1e6
        );
        println!(
            "  sequence (made batches):  {:<16} {secs_mem:>7.3} s  {:>8.2} Mhashes/s",
            show(got_mem),
            n as f64 / secs_mem / 1e6
        );
        println!(
            "  flat (all in memory):     {:<16} {secs_flat:>7.3} s  {:>8.2} Mhashes/s",
            show(got_flat),
            n as f64 / secs_flat / 1e6
        );
        if matches!(source, Source::File { .. }) && skipped > 0 {
            println!("  (the stream skipped {skipped} lines over {MAX_WORD_LEN} bytes)");
        }

        if args.check {
            let t = Instant::now();
            let want = search_ref(&blocks, digest);
            let secs_ref = t.elapsed().as_secs_f64();
            for (form, got) in
                [("sequence", got_seq), ("sequence (made batches)", got_mem), ("flat", got_flat)]
            {
                if got != want {
                    eprintln!(
                        "check: MISMATCH: the {form} form gives {}, the plain-Rust search {}",
                        show(got),
                        show(want)
                    );
                    bad += 1;
                }
            }
            if bad == 0 {
                println!(
                    "  check: all three agree with the plain-Rust search ({}, {secs_ref:.3} s, {:.2} Mhashes/s)",
                    show(want),
                    n as f64 / secs_ref / 1e6
                );
            }
        }
    }
    if bad > 0 {
        eprintln!("check: {bad} results differ from the plain-Rust search");
        exit(1);
    }
    Ok(())
}
