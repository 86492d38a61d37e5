//! The on-disk half of the kernel cache, which the CPU backend (shared
//! objects) and the CUDA backend (PTX) share.
//!
//! Note [The kernel cache]
//! A program's kernels are one source file, compiled once. The key is a
//! SHA-256 of everything the compiled artifact depends on: the full source
//! (which is a function of the kernels' IR alone: source locations enter
//! only through comments and the host's table of error sites), this
//! crate's version, the compiler and its version, the flags and the
//! target (for the CPU the processor's features, which `-march=native`
//! compiles for; for CUDA the architecture). In memory the key maps to the
//! loaded artifact; on disk `<key>.sum` holds the SHA-256 `d` of the
//! artifact, stored as `<key>.<d>.<ext>` (`so`, `ptx`). An artifact is used
//! only when its contents hash to `d`, so a truncated or corrupt entry is
//! rebuilt, never loaded. Artifacts and checksums are written to temporary
//! files and renamed into place, so that processes filling one cache at
//! once never see half a file; two processes compiling one key publish two
//! artifacts under their own digests, and whichever checksum is renamed
//! last names a complete artifact of its own. The folder is the backend's
//! option (`CacheDir`): `ACCELERATE_CACHE_DIR` moves the cache;
//! `ACCELERATE_CACHE=off` keeps artifacts in a temporary folder that is not
//! reused.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The key of an artifact: the SHA-256 of what it depends on.
pub(crate) fn key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    hex(&h.finalize())
}

/// Where a backend keeps its compiled kernels (its options' `cache`,
/// which `Config` fills from `ACCELERATE_CACHE_DIR`, `ACCELERATE_CACHE`,
/// `XDG_CACHE_HOME` and `HOME`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CacheDir {
    /// This folder, kept between runs.
    At(PathBuf),
    /// A temporary folder of this process, not reused.
    Off,
}

impl CacheDir {
    /// The folder (Note [The kernel cache]).
    pub fn path(&self) -> PathBuf {
        match self {
            CacheDir::At(d) => d.clone(),
            CacheDir::Off => {
                std::env::temp_dir().join(format!("accelerate-rs-nocache-{}", std::process::id()))
            }
        }
    }
}

/// A name for the temporary files of one compilation of `key`: threads
/// and processes may compile one key at once.
pub(crate) fn temporary(key: &str) -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let t =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let unique = t ^ (N.fetch_add(1, std::sync::atomic::Ordering::Relaxed) as u128) << 100;
    format!("{key}.{}.{unique}", std::process::id())
}

/// The cached artifact of `key`, if its checksum names one whose contents
/// hash to it.
pub(crate) fn lookup(dir: &Path, key: &str, ext: &str) -> Option<PathBuf> {
    let expected = std::fs::read_to_string(dir.join(format!("{key}.sum"))).ok()?;
    let expected = expected.trim();
    let path = dir.join(format!("{key}.{expected}.{ext}"));
    let bytes = std::fs::read(&path).ok()?;
    (hex(&Sha256::digest(&bytes)) == expected).then_some(path)
}

/// Publishes the complete artifact at `artifact` (a temporary file named
/// from `temporary(key)`) as the entry of `key`: renamed to its digest's
/// name, then its checksum written to a temporary file and renamed into
/// place. A failure leaves no entry (the artifact is rebuilt next time).
pub(crate) fn publish(dir: &Path, key: &str, ext: &str, artifact: &Path) {
    let Ok(bytes) = std::fs::read(artifact) else { return };
    let digest = hex(&Sha256::digest(&bytes));
    let sum_tmp = dir.join(format!("{}.sum", temporary(key)));
    let published = dir.join(format!("{key}.{digest}.{ext}"));
    let ok = std::fs::rename(artifact, &published).is_ok()
        && std::fs::write(&sum_tmp, digest).is_ok()
        && std::fs::rename(&sum_tmp, dir.join(format!("{key}.sum"))).is_ok();
    if !ok {
        let _ = std::fs::remove_file(&sum_tmp);
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let d = std::env::temp_dir().join(temporary("cache-test"));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_published_artifact_is_found_and_a_damaged_one_is_not() {
        let dir = scratch();
        let k = key(&["source", "flags"]);
        assert_eq!(lookup(&dir, &k, "ptx"), None, "nothing yet");
        let tmp = dir.join(format!("{}.ptx", temporary(&k)));
        std::fs::write(&tmp, "the artifact").unwrap();
        publish(&dir, &k, "ptx", &tmp);
        let found = lookup(&dir, &k, "ptx").expect("published");
        assert_eq!(std::fs::read_to_string(&found).unwrap(), "the artifact");
        // truncated: not used
        std::fs::write(&found, "the art").unwrap();
        assert_eq!(lookup(&dir, &k, "ptx"), None, "a truncated artifact is not used");
        // republished, then its checksum damaged: not used
        let tmp = dir.join(format!("{}.ptx", temporary(&k)));
        std::fs::write(&tmp, "the artifact").unwrap();
        publish(&dir, &k, "ptx", &tmp);
        assert!(lookup(&dir, &k, "ptx").is_some());
        std::fs::write(dir.join(format!("{k}.sum")), "0123").unwrap();
        assert_eq!(lookup(&dir, &k, "ptx"), None, "a checksum naming no artifact is not used");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keys_separate_their_parts() {
        assert_ne!(key(&["ab", "c"]), key(&["a", "bc"]));
        assert_eq!(key(&["a", "b"]), key(&["a", "b"]));
    }
}
