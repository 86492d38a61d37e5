//! The kernel cache's trust checks (Note [Trusting the kernel cache] in
//! `accelerate-backend/src/cache.rs`), each attack or accident tried on a
//! cache of its own by a child process (this test binary again, in a
//! role), so that a hang or a crash fails the test instead of the run: a
//! child that does not finish in `LIMIT` is killed and the test fails.
//!
//! The CPU backend's cases are skipped, saying so, when the machine has
//! no C compiler; the CUDA emulator's precompiled header case runs with
//! the `cuda` feature.

mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, Backend};
use common::{compilations, run_with_limit};
use sha2::{Digest, Sha256};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Set in a child process: the role it plays.
const ROLE: &str = "ACCELERATE_CACHE_TRUST_ROLE";
/// The longest a child may take (a compile of two small programs).
const LIMIT: Duration = Duration::from_secs(120);

fn program_a(xs: Acc<Vector<i64>>) -> Acc<Vector<i64>> {
    xs.map(|x| x * 3i64 + 1i64)
}

fn program_b(xs: Acc<Vector<i64>>) -> Acc<Vector<i64>> {
    xs.map(|x| x * x - 5i64)
}

/// A child: compiles and runs the programs its role names, checks their
/// results, and reports how many times it ran the compiler.
fn child(role: &str) {
    let config = Config::default().with_backend(Backend::Cpu);
    let xs = Vector::from_elems((0..1000i64).collect());
    if role.contains('a') {
        let p = compile_with(program_a, config.clone()).expect("program a compiles");
        let want: Vec<i64> = (0..1000).map(|x| x * 3 + 1).collect();
        assert_eq!(p.run(&xs).expect("program a runs").to_vec(), want, "program a");
    }
    if role.contains('b') {
        let p = compile_with(program_b, config).expect("program b compiles");
        let want: Vec<i64> = (0..1000).map(|x| x * x - 5).collect();
        assert_eq!(p.run(&xs).expect("program b runs").to_vec(), want, "program b");
    }
    println!("compilations={}", accelerate::backend::cpu::compilations());
}

#[test]
fn the_kernel_cache_trusts_only_this_user_and_checks_every_entry() {
    if let Ok(role) = std::env::var(ROLE) {
        return match role.as_str() {
            "emulator" => emulator_child(),
            _ => child(&role),
        };
    }
    if let Some(why) = accelerate::backend::cpu::unavailable() {
        eprintln!("skipped: the CPU backend is unavailable here: {why}");
        return;
    }
    let scratch = Scratch::new();
    no_cache_leaves_nothing_behind(&scratch);
    a_folder_others_can_write_is_not_used(&scratch);
    a_folder_of_another_user_is_not_used(&scratch);
    entries_swapped_between_keys_are_rebuilt(&scratch);
    another_valid_object_with_a_matching_checksum_is_rebuilt(&scratch);
    an_object_that_fails_to_load_is_removed_and_rebuilt(&scratch);
    a_fifo_in_the_cache_does_not_hang(&scratch);
    #[cfg(feature = "cuda")]
    a_damaged_precompiled_header_is_rebuilt(&scratch);
}

/// A child on the CUDA emulator: program a, checked.
fn emulator_child() {
    let xs = Vector::from_elems((0..1000i64).collect());
    let p = compile_with(program_a, Config::from_env().expect("the emulator's configuration"))
        .expect("program a compiles on the emulator");
    let want: Vec<i64> = (0..1000).map(|x| x * 3 + 1).collect();
    assert_eq!(p.run(&xs).expect("program a runs on the emulator").to_vec(), want, "program a");
}

/// The CUDA emulator's precompiled header, damaged (bytes appended, as a
/// constructor would be) or replaced by a FIFO: not used, and rebuilt.
#[cfg(feature = "cuda")]
fn a_damaged_precompiled_header_is_rebuilt(s: &Scratch) {
    let cache = s.folder("emulator");
    let emulator = |cache: &Path| {
        let mut c = cached(cache);
        c.env("ACCELERATE_BACKEND", "cuda").env("ACCELERATE_CUDA_DEVICE", "emulator");
        run_with(&mut c, "emulator", true)
    };
    emulator(&cache);
    let gch = || -> PathBuf {
        let folder = entries(&cache).into_iter().find(|n| n.ends_with(".pch")).expect("a precompiled header");
        cache.join(folder).join("prelude.h.gch")
    };
    // the header the checksum names, sound: its bytes hash with the key to
    // the digest in its folder's name and in `<key>.sum` (a rebuilt header
    // is not byte-identical to the first: GCC's are not reproducible)
    let sound = || {
        let path = gch();
        let folder = path.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        let (key, rest) = folder.split_once('.').unwrap();
        let d = rest.trim_end_matches(".pch");
        assert_eq!(std::fs::read_to_string(cache.join(format!("{key}.sum"))).unwrap().trim(), d);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(digest(key, &bytes), d, "the header the checksum names hashes to it");
        bytes
    };
    let mut damaged = sound();
    damaged.extend_from_slice(b"__attribute__((constructor)) static void planted(void) {}");
    std::fs::write(gch(), &damaged).unwrap();
    emulator(&cache);
    assert_ne!(sound(), damaged, "rebuilt: the damaged header is not used");
    std::fs::remove_file(gch()).unwrap();
    mkfifo(&gch());
    emulator(&cache);
    sound();
}

/// `ACCELERATE_CACHE=off`: the child compiles in a private folder under
/// its temporary directory and removes it.
fn no_cache_leaves_nothing_behind(s: &Scratch) {
    let tmp = s.folder("tmp");
    let out = run(Command::new(exe()).env("TMPDIR", &tmp).env("ACCELERATE_CACHE", "off"), "a");
    assert_eq!(compilations(&out), 1);
    assert_eq!(entries(&tmp), Vec::<String>::new(), "nothing left in the temporary directory");
}

/// A cache folder that others can write: not used, said once, and the
/// program still runs (compiled in a private folder).
fn a_folder_others_can_write_is_not_used(s: &Scratch) {
    let open = s.folder("open");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = run(&mut cached(&open), "a");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not using the kernel cache") && err.contains("can be written by other users"),
        "{err}"
    );
    assert_eq!(entries(&open), Vec::<String>::new(), "nothing written into it");
    // the same folder made private is used
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(compilations(&run(&mut cached(&open), "a")), 1);
    assert_eq!(compilations(&run(&mut cached(&open), "a")), 0, "then loaded from it");
}

/// A cache folder that belongs to another user (made so when the test runs
/// as root, which alone can give a folder away).
fn a_folder_of_another_user_is_not_used(s: &Scratch) {
    // SAFETY: `geteuid` has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("a folder of another user: skipped (only root can give a folder away)");
        return;
    }
    let theirs = s.folder("theirs");
    let c = std::ffi::CString::new(theirs.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; 65534 is `nobody`.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    let out = run(&mut cached(&theirs), "a");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("belongs to user 65534"), "{err}");
    assert_eq!(entries(&theirs), Vec::<String>::new());
}

/// Programs a and b in their own caches: the key and files of each.
fn two_entries(s: &Scratch, name: &str) -> (Entry, Entry) {
    let (ca, cb) = (s.folder(&format!("{name}-a")), s.folder(&format!("{name}-b")));
    assert_eq!(compilations(&run(&mut cached(&ca), "a")), 1);
    assert_eq!(compilations(&run(&mut cached(&cb), "b")), 1);
    (Entry::only(&ca), Entry::only(&cb))
}

/// a's and b's entries swapped, each with its checksum: each program loads
/// neither, and both are rebuilt and right.
fn entries_swapped_between_keys_are_rebuilt(s: &Scratch) {
    let (a, b) = two_entries(s, "swap");
    let both = s.folder("swap");
    std::fs::copy(&b.object, both.join(format!("{}.{}.so", a.key, b.digest))).unwrap();
    std::fs::write(both.join(format!("{}.sum", a.key)), &b.digest).unwrap();
    std::fs::copy(&a.object, both.join(format!("{}.{}.so", b.key, a.digest))).unwrap();
    std::fs::write(both.join(format!("{}.sum", b.key)), &a.digest).unwrap();
    assert_eq!(compilations(&run(&mut cached(&both), "ab")), 2, "both rebuilt");
    assert_eq!(compilations(&run(&mut cached(&both), "ab")), 0, "and the rebuilt entries used");
}

/// b's object under a's key with a checksum that matches it there (as one
/// who can write the checksum would make it): the key compiled into the
/// object tells, and a is rebuilt.
fn another_valid_object_with_a_matching_checksum_is_rebuilt(s: &Scratch) {
    let (a, b) = two_entries(s, "forged");
    let cache = a.folder.clone();
    std::fs::remove_file(&a.object).unwrap();
    let bytes = std::fs::read(&b.object).unwrap();
    let d = digest(&a.key, &bytes);
    std::fs::write(cache.join(format!("{}.{d}.so", a.key)), &bytes).unwrap();
    std::fs::write(cache.join(format!("{}.sum", a.key)), &d).unwrap();
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 1, "rebuilt, not run as b");
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 0);
}

/// An entry the loader rejects (as a compiler that once wrote garbage
/// would leave), its checksum right: removed and rebuilt.
fn an_object_that_fails_to_load_is_removed_and_rebuilt(s: &Scratch) {
    let cache = s.folder("garbage");
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 1);
    let a = Entry::only(&cache);
    std::fs::remove_file(&a.object).unwrap();
    let garbage = b"\x7fELF this is not an object".to_vec();
    let d = digest(&a.key, &garbage);
    std::fs::write(cache.join(format!("{}.{d}.so", a.key)), &garbage).unwrap();
    std::fs::write(cache.join(format!("{}.sum", a.key)), &d).unwrap();
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 1, "rebuilt");
    assert!(!cache.join(format!("{}.{d}.so", a.key)).exists(), "the garbage is removed");
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 0);
}

/// A FIFO in place of an object, then of a checksum: never opened for a
/// blocking read, so the child finishes, rebuilding the entry.
fn a_fifo_in_the_cache_does_not_hang(s: &Scratch) {
    let cache = s.folder("fifo");
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 1);
    let a = Entry::only(&cache);
    std::fs::remove_file(&a.object).unwrap();
    mkfifo(&a.object);
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 1, "rebuilt beside the FIFO");
    let sum = cache.join(format!("{}.sum", a.key));
    std::fs::remove_file(&sum).unwrap();
    mkfifo(&sum);
    // the rebuilt checksum is renamed over the FIFO
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 1, "rebuilt past the FIFO checksum");
    assert_eq!(compilations(&run(&mut cached(&cache), "a")), 0);
}

/// A program's entry in a cache that holds only it.
struct Entry {
    folder: PathBuf,
    key: String,
    digest: String,
    object: PathBuf,
}

impl Entry {
    fn only(folder: &Path) -> Entry {
        let names = entries(folder);
        let sum = names.iter().find(|n| n.ends_with(".sum")).expect("a checksum");
        let key = sum.trim_end_matches(".sum").to_string();
        let digest = std::fs::read_to_string(folder.join(sum)).unwrap().trim().to_string();
        let object = folder.join(format!("{key}.{digest}.so"));
        assert!(object.is_file(), "the object the checksum names, among {names:?}");
        Entry { folder: folder.to_path_buf(), key, digest, object }
    }
}

/// The checksum the cache keeps for `bytes` under `key`: SHA-256 of the
/// key, a NUL and the bytes (Note [The kernel cache]).
fn digest(key: &str, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update([0u8]);
    h.update(bytes);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The names in a folder, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn exe() -> PathBuf {
    std::env::current_exe().unwrap()
}

/// A child with its kernel cache in `dir`.
fn cached(dir: &Path) -> Command {
    let mut c = Command::new(exe());
    c.env("ACCELERATE_CACHE_DIR", dir).env_remove("ACCELERATE_CACHE");
    c
}

/// Runs the child `cmd` in `role` to its end (killed, and the test failed,
/// past `LIMIT`) and checks that it succeeded.
fn run(cmd: &mut Command, role: &str) -> Output {
    run_with(cmd.env_remove("ACCELERATE_BACKEND"), role, false)
}

/// `run`, keeping the backend the command names when `keep_backend`.
fn run_with(cmd: &mut Command, role: &str, keep_backend: bool) -> Output {
    if !keep_backend {
        cmd.env_remove("ACCELERATE_BACKEND");
    }
    cmd.args(["--exact", "the_kernel_cache_trusts_only_this_user_and_checks_every_entry", "--nocapture"])
        .env(ROLE, role);
    let out = run_with_limit(cmd, role, LIMIT);
    assert!(
        out.status.success(),
        "the child ({role}) failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The test's own folder, private, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let d = std::env::temp_dir().join(format!("accelerate-cache-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        Scratch(d)
    }

    /// A fresh folder in it (mode 0700).
    fn folder(&self, name: &str) -> PathBuf {
        let d = self.0.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
