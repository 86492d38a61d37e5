//! Running a host compiler (the CPU backend's C compiler, the CUDA
//! emulator's C++ compiler) to build a shared object from one generated
//! source file, through the on-disk kernel cache (Note [The kernel cache]
//! in `cache.rs`), and loading it with its key checked (Note [Trusting the
//! kernel cache]). Which functions of it run, and how, is each backend's.

use crate::cache::{self, CacheDir, Folder};
use accelerate_base::error::{Error, Result};
use libloading::Library;
use std::ffi::{c_char, CStr};
use std::path::Path;
use std::process::Command;

/// How many times this process ran the C compiler (for the cache tests).
pub fn compilations() -> usize {
    COMPILATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

static COMPILATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A compiler setting (`CC`, `CXX`) split as make splits it: the program,
/// then arguments that go before every other (`CC="cc -O1"`); `None` if
/// it names no program.
pub(crate) fn command_words(setting: &str) -> Option<(String, Vec<String>)> {
    let mut words = setting.split_whitespace().map(String::from);
    let program = words.next()?;
    Some((program, words.collect()))
}

/// A compiler command that builds a shared object from one source file.
pub(crate) struct Build<'a> {
    pub command: &'a str,
    pub flags: &'a [String],
    /// What the object links with (after the source).
    pub libraries: &'a [&'a str],
    /// The source file's extension, which tells the compiler its language.
    pub ext: &'a str,
}

impl Build<'_> {
    /// The shared object of `source` under cache key `key`, loaded: from
    /// the disk cache of `cache`, or compiled now and published there
    /// (Note [The kernel cache]), its key checked (Note [Trusting the
    /// kernel cache]). An entry that fails to load or carries another key
    /// is removed and rebuilt. `backend` names the backend in errors.
    pub fn load(&self, key: &str, source: &str, backend: &str, cache: &CacheDir) -> Result<Library> {
        let unavailable = |reason: String| Error::BackendUnavailable { backend: backend.into(), reason };
        let folder = Folder::open(cache).map_err(unavailable)?;
        let dir = folder.path();
        if folder.keeps() {
            if let Some(entry) = cache::lookup(dir, key, "so") {
                match open_checked(&entry.path, key) {
                    Ok(lib) => return Ok(lib),
                    // rebuilt below
                    Err(_) => cache::remove(dir, key, "so"),
                }
            }
        }
        // names of this compilation alone: threads and processes may
        // compile one key at once (the last rename wins, and every
        // published object is complete)
        let tmp = cache::temporary(key);
        let src = dir.join(format!("{tmp}.{}", self.ext));
        let obj = dir.join(format!("{tmp}.so"));
        let stamped = format!("{source}\n{}", self.key_symbol(key));
        std::fs::write(&src, stamped)
            .map_err(|e| unavailable(format!("cannot write {}: {e}", src.display())))?;
        let out = Command::new(self.command)
            .args(self.flags)
            .arg("-o")
            .arg(&obj)
            .arg(&src)
            .args(self.libraries)
            .output();
        COMPILATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = std::fs::remove_file(&src);
        let out = out.map_err(|e| unavailable(format!("running `{}` failed: {e}", self.command)))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&obj);
            return Err(Error::Internal(format!(
                "the compiler `{}` rejected the generated kernels:\n{}",
                self.command,
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let path = if folder.keeps() {
            cache::publish(dir, key, "so", &obj);
            let _ = std::fs::remove_file(&obj);
            cache::lookup(dir, key, "so").map(|e| e.path).ok_or_else(|| {
                unavailable(format!(
                    "the compiled kernels could not be kept in the kernel cache {}",
                    dir.display()
                ))
            })?
        } else {
            obj
        };
        open_checked(&path, key).map_err(|e| {
            if folder.keeps() {
                cache::remove(dir, key, "so");
            }
            unavailable(format!(
                "the kernels `{}` compiled just now cannot be loaded ({e}); check the compiler and its \
                 flags (CC, ACCELERATE_CFLAGS, CXX)",
                self.command
            ))
        })
        // a private folder is removed here: the loaded object stays mapped
    }

    /// The definition that stamps an object with its key (`acc_cache_key`).
    fn key_symbol(&self, key: &str) -> String {
        let linkage = if self.ext == "c" { "" } else { "extern \"C\" " };
        format!("{linkage}__attribute__((visibility(\"default\"))) const char acc_cache_key[] = \"{key}\";\n")
    }
}

/// Loads the object at `path` and checks that it was compiled for `key`
/// (its `acc_cache_key`); why not, if it fails.
fn open_checked(path: &Path, key: &str) -> std::result::Result<Library, String> {
    // SAFETY: an object in a folder only this user can write, compiled by
    // this library from its own generated source (Note [Trusting the
    // kernel cache]); its key is checked before any kernel of it runs.
    let lib = unsafe { Library::new(path) }.map_err(|e| e.to_string())?;
    // SAFETY: `acc_cache_key` is a NUL-terminated array of chars in every
    // object this library compiles (`key_symbol`); an object without it
    // fails the lookup.
    let stamp = unsafe {
        let p = lib.get::<*const c_char>(b"acc_cache_key").map_err(|e| e.to_string())?;
        CStr::from_ptr(*p).to_bytes().to_vec()
    };
    if stamp != key.as_bytes() {
        return Err(format!("it was compiled for another program ({})", String::from_utf8_lossy(&stamp)));
    }
    Ok(lib)
}
