//! Running a host compiler (the CPU backend's C compiler, the CUDA
//! emulator's C++ compiler) to build a shared object from one generated
//! source file, through the on-disk kernel cache (Note [The kernel cache]
//! in `backend/cache.rs`). What loads the object, and with which
//! functions, is each backend's.

use crate::cache;
use accelerate_base::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How many times this process ran the C compiler (for the cache tests).
pub fn compilations() -> usize {
    COMPILATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

static COMPILATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

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
    /// The shared object of `source` under cache key `key`: from the disk
    /// cache in `dir`, or compiled now and published there (Note [The
    /// kernel cache]). `backend` names the backend in errors.
    pub fn cached(&self, key: &str, source: &str, backend: &str, dir: &Path) -> Result<PathBuf> {
        let unavailable = |reason: String| Error::BackendUnavailable { backend: backend.into(), reason };
        std::fs::create_dir_all(dir)
            .map_err(|e| unavailable(format!("cannot create the kernel cache {}: {e}", dir.display())))?;
        if let Some(path) = cache::lookup(dir, key, "so") {
            return Ok(path);
        }
        // names of this compilation alone: threads and processes may
        // compile one key at once (the last rename wins, and every
        // published object is complete)
        let tmp = cache::temporary(key);
        let src = dir.join(format!("{tmp}.{}", self.ext));
        let obj = dir.join(format!("{tmp}.so"));
        std::fs::write(&src, source)
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
        cache::publish(dir, key, "so", &obj);
        let _ = std::fs::remove_file(&obj);
        cache::lookup(dir, key, "so").ok_or_else(|| {
            unavailable(format!(
                "the compiled kernels could not be kept in the kernel cache {}",
                dir.display()
            ))
        })
    }
}
