//! The on-disk half of the kernel cache, which the CPU backend (shared
//! objects), the CUDA emulator (shared objects and a precompiled header)
//! and the CUDA backend (PTX) share.
//!
//! Note [The kernel cache]
//! A program's kernels are one source file, compiled once. The key is a
//! SHA-256 of everything the compiled artifact depends on: the full source
//! (which is a function of the kernels' IR alone: source locations enter
//! only through comments and the host's table of error sites), this
//! crate's version, the compiler and its version, the flags and the
//! target (for the CPU the processor's features, which `-march=native`
//! compiles for; for CUDA the architecture). In memory the key maps to the
//! loaded artifact; on disk `<key>.sum` holds the digest `d` of the key
//! and the artifact together (`digest`), and the artifact is stored as
//! `<key>.<d>.<ext>` (`so`, `ptx`, `gch`). An artifact is used only when
//! the key and its contents hash to `d`, so a truncated or corrupt entry,
//! or one moved from another key with its checksum, is rebuilt, never
//! loaded. Artifacts and checksums are written to temporary files and
//! renamed into place, so that processes filling one cache at once never
//! see half a file; two processes compiling one key publish two artifacts
//! under their own digests, and whichever checksum is renamed last names a
//! complete artifact of its own. The folder is the backend's option
//! (`CacheDir`): `ACCELERATE_CACHE_DIR` moves the cache;
//! `ACCELERATE_CACHE=off` compiles each program in a fresh private folder,
//! removed once its object is loaded.
//!
//! Note [Trusting the kernel cache]
//! A shared object in the cache is native code that the library loads
//! into the user's process: whoever can write the cache can run code as
//! the user. So the cache trusts exactly one party, the user the process
//! runs as, and checks the rest:
//!
//! - The folder is created with mode 0700. It is used only if it belongs
//!   to this user and no one else can write it, and its parent belongs to
//!   this user or to root and is writable by no one else, or has the
//!   sticky bit (as `/tmp`), so that no one else can rename the folder
//!   away and put theirs in its place. Otherwise the backend says why,
//!   once, and compiles in private temporary folders instead (as with
//!   `ACCELERATE_CACHE=off`), as ssh and git refuse unsafe files.
//! - Temporary folders are made fresh (`tempfile`: an unpredictable name,
//!   created with mode 0700, never one that exists) and removed when the
//!   object built in them is loaded (a loaded object stays mapped).
//! - Every file read from the cache is opened without following a link
//!   and without blocking (a FIFO there cannot hang the process), and is
//!   used only if it is a regular file that belongs to this user and that
//!   no one else can write.
//! - Its contents must hash, with the key, to the checksum (above).
//! - A loaded shared object must carry the key it was compiled for (the
//!   symbol `acc_cache_key`, written into every source), checked before
//!   any of its kernels runs; an object that fails to load or carries
//!   another key is removed and rebuilt, once.
//!
//! What this leaves: another user cannot make the library load their code
//! or a wrong kernel, whatever they write where; a process of the same
//! user can, as it can change the user's programs themselves. A file that
//! is damaged or swapped by accident (a full disk, a crash, a copy between
//! machines) is rebuilt. Loading an object runs its initialisers before
//! the key is checked, so the key check guards against accidents, and
//! the ownership checks against other users.

use sha2::{Digest, Sha256};
use std::fs::{Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

// Note [The in-memory cache]
// Loaded kernel objects (and PTX) are kept in memory by key, so that a
// program compiled again, or another with the same kernels, does not load
// them again. Kept for ever, every object a long-running process ever
// loaded would stay mapped (60 programs took a process from 48 to 352
// memory maps). So the cache holds strongly only the `KEPT` most recently
// used artifacts, and every other only weakly: an artifact stays loaded
// while a compiled program holds it, or while it is among the recent
// ones, and is unloaded after. A program run again in a loop, with
// `accelerate::run`, finds its kernels among the recent ones.

/// Artifacts in memory by key (Note [The in-memory cache]).
pub(crate) struct InMemory<T: ?Sized> {
    all: std::collections::HashMap<String, std::sync::Weak<T>>,
    recent: std::collections::VecDeque<(String, std::sync::Arc<T>)>,
}

/// How many recently used artifacts the in-memory cache keeps loaded.
pub(crate) const KEPT: usize = 16;

impl<T: ?Sized> Default for InMemory<T> {
    fn default() -> Self {
        InMemory { all: Default::default(), recent: Default::default() }
    }
}

impl<T: ?Sized> InMemory<T> {
    /// The artifact of `key`, if it is still loaded (made the most recent).
    pub fn get(&mut self, key: &str) -> Option<std::sync::Arc<T>> {
        let found = self.all.get(key)?.upgrade();
        match &found {
            Some(a) => self.touch(key, a.clone()),
            None => {
                self.all.remove(key);
            }
        }
        found
    }

    /// Keeps the artifact of `key` (as the most recent).
    pub fn insert(&mut self, key: String, artifact: std::sync::Arc<T>) {
        self.all.insert(key.clone(), std::sync::Arc::downgrade(&artifact));
        self.touch(&key, artifact);
        // forget the unloaded ones, once they are as many as the rest
        if self.all.len() > 2 * KEPT {
            self.all.retain(|_, w| w.strong_count() > 0);
        }
    }

    fn touch(&mut self, key: &str, artifact: std::sync::Arc<T>) {
        self.recent.retain(|(k, _)| k != key);
        self.recent.push_front((key.to_string(), artifact));
        self.recent.truncate(KEPT);
    }

    /// How many artifacts are loaded (held by the cache or by programs).
    #[cfg(test)]
    fn loaded(&self) -> usize {
        self.all.values().filter(|w| w.strong_count() > 0).count()
    }
}

/// The key of an artifact: the SHA-256 of what it depends on.
pub(crate) fn key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    hex(&h.finalize())
}

/// The checksum of an artifact of `key`: its contents hashed with the key,
/// so that an entry moved to another key does not match there.
fn digest(key: &str, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update([0u8]);
    h.update(bytes);
    hex(&h.finalize())
}

/// Where a backend keeps its compiled kernels (its options' `cache`,
/// which `Config` fills from `ACCELERATE_CACHE_DIR`, `ACCELERATE_CACHE`,
/// `XDG_CACHE_HOME` and `HOME`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CacheDir {
    /// This folder, kept between runs (if it passes the checks of Note
    /// [Trusting the kernel cache]).
    At(PathBuf),
    /// No cache on disk: each program is compiled in a private temporary
    /// folder, removed once its object is loaded.
    Off,
}

/// A folder to compile in and to keep entries in (Note [Trusting the
/// kernel cache]).
pub(crate) enum Folder {
    /// The options' folder, checked.
    Kept(PathBuf),
    /// A fresh private folder, removed when this is dropped.
    Private(tempfile::TempDir),
}

impl Folder {
    /// The folder to use for `cache`: its folder, created if need be, when
    /// it passes the checks; else (saying why, once per folder) or with
    /// `CacheDir::Off`, a fresh private one. An error when no folder can
    /// be had at all.
    pub fn open(cache: &CacheDir) -> Result<Folder, String> {
        match kept(cache) {
            Some(dir) => Ok(Folder::Kept(dir)),
            None => Folder::private(),
        }
    }

    /// A fresh private folder (mode 0700) under the temporary directory.
    pub fn private() -> Result<Folder, String> {
        let dir = tempfile::Builder::new()
            .prefix("accelerate-rs-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| format!("cannot create a private temporary folder: {e}"))?;
        Ok(Folder::Private(dir))
    }

    pub fn path(&self) -> &Path {
        match self {
            Folder::Kept(p) => p,
            Folder::Private(d) => d.path(),
        }
    }

    /// Whether entries kept here serve later programs and processes.
    pub fn keeps(&self) -> bool {
        matches!(self, Folder::Kept(_))
    }
}

/// The folder of `cache` if it keeps entries: created if need be, and
/// checked (saying once why not, if it fails).
pub(crate) fn kept(cache: &CacheDir) -> Option<PathBuf> {
    match cache {
        CacheDir::At(dir) => match checked_folder(dir) {
            Ok(()) => Some(dir.clone()),
            Err(why) => {
                warn_once(dir, &why);
                None
            }
        },
        CacheDir::Off => None,
    }
}

/// The effective user of this process.
fn me() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Is this file or folder safe to trust: ours, and writable by no one else?
fn ours(m: &Metadata) -> bool {
    m.uid() == me() && m.mode() & 0o022 == 0
}

/// Creates `dir` (mode 0700) if it is missing, then checks it and its
/// parent (Note [Trusting the kernel cache]); why not, if it fails.
fn checked_folder(dir: &Path) -> Result<(), String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("cannot be created: {e}"))?;
    let m = std::fs::metadata(dir).map_err(|e| format!("cannot be read: {e}"))?;
    if !m.is_dir() {
        return Err("is not a folder".into());
    }
    if m.uid() != me() {
        return Err(format!("belongs to user {}, not to this process's user {}", m.uid(), me()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!("can be written by other users (mode {:o})", m.mode() & 0o777));
    }
    let parent = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.parent().map(Path::to_path_buf))
        .ok_or_else(|| "has no parent folder".to_string())?;
    let p = std::fs::metadata(&parent).map_err(|e| format!("has a parent that cannot be read: {e}"))?;
    if p.uid() != me() && p.uid() != 0 {
        return Err(format!("is in {}, which belongs to user {}", parent.display(), p.uid()));
    }
    if p.mode() & 0o022 != 0 && p.mode() & 0o1000 == 0 {
        return Err(format!(
            "is in {}, which other users can write (mode {:o}, without the sticky bit)",
            parent.display(),
            p.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Says once per folder why it is not used as the kernel cache.
fn warn_once(dir: &Path, why: &str) {
    static WARNED: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<PathBuf>>> =
        std::sync::OnceLock::new();
    let mut warned = WARNED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if warned.insert(dir.to_path_buf()) {
        eprintln!(
            "accelerate: not using the kernel cache {}: it {why}; compiling in private temporary \
             folders instead (set ACCELERATE_CACHE_DIR to a folder of your own, or fix its owner and \
             permissions)",
            dir.display()
        );
    }
}

/// The contents of the file at `path`, if it is a regular file that this
/// user owns and no one else can write: opened without following a link
/// or blocking, and checked on the open file.
pub(crate) fn read_trusted(path: &Path) -> Option<Vec<u8>> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let m = f.metadata().ok()?;
    if !m.is_file() || !ours(&m) {
        return None;
    }
    let mut bytes = Vec::with_capacity(m.len().try_into().unwrap_or(0));
    f.read_to_end(&mut bytes).ok()?;
    Some(bytes)
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

/// A sound entry of the cache: where its artifact is, and its contents.
pub(crate) struct Entry {
    pub path: PathBuf,
    /// (Read by the CUDA backend, which loads PTX from memory.)
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub bytes: Vec<u8>,
}

/// The cached artifact of `key` in the checked folder `dir`, if its
/// checksum names one whose contents hash to it with the key, both files
/// trusted (`read_trusted`).
pub(crate) fn lookup(dir: &Path, key: &str, ext: &str) -> Option<Entry> {
    let expected = named_digest(dir, key)?;
    let path = dir.join(format!("{key}.{expected}.{ext}"));
    let bytes = read_trusted(&path)?;
    (digest(key, &bytes) == expected).then_some(Entry { path, bytes })
}

/// Removes the entry of `key` (its checksum, and the artifact it names):
/// it failed to load, or carried another key. Failures are ignored (the
/// entry is then rebuilt and republished over).
pub(crate) fn remove(dir: &Path, key: &str, ext: &str) {
    if let Some(d) = named_digest(dir, key) {
        let _ = std::fs::remove_file(dir.join(format!("{key}.{d}.{ext}")));
    }
    let _ = std::fs::remove_file(dir.join(format!("{key}.sum")));
}

/// Publishes the complete artifact at `artifact` (a temporary file named
/// from `temporary(key)`) as the entry of `key`: renamed to its digest's
/// name, then its checksum written to a temporary file and renamed into
/// place. A failure leaves no entry (the artifact is rebuilt next time).
pub(crate) fn publish(dir: &Path, key: &str, ext: &str, artifact: &Path) {
    if let Ok(bytes) = std::fs::read(artifact) {
        publish_as(dir, key, ext, artifact, &bytes);
    }
}

/// Renames `made` (a file, or a folder) to the name of the digest of
/// `bytes` (its contents, or its main file's) under `key`, then writes the
/// checksum to a temporary file and renames it into place.
fn publish_as(dir: &Path, key: &str, ext: &str, made: &Path, bytes: &[u8]) {
    let digest = digest(key, bytes);
    let sum_tmp = dir.join(format!("{}.sum", temporary(key)));
    let published = dir.join(format!("{key}.{digest}.{ext}"));
    let ok = std::fs::rename(made, &published).is_ok()
        && std::fs::write(&sum_tmp, digest).is_ok()
        && std::fs::rename(&sum_tmp, dir.join(format!("{key}.sum"))).is_ok();
    if !ok {
        let _ = std::fs::remove_file(&sum_tmp);
    }
}

/// The checksum `<key>.sum` names, if it is a trusted file holding a
/// digest.
fn named_digest(dir: &Path, key: &str) -> Option<String> {
    let named = read_trusted(&dir.join(format!("{key}.sum")))?;
    let d = std::str::from_utf8(&named).ok()?.trim();
    (d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit())).then(|| d.to_string())
}

#[cfg(feature = "cuda")]
/// The cached folder entry of `key` (a folder `<key>.<d>.<ext>` whose file
/// `main` hashes with the key to the checksum `d`), if sound: the folder
/// and the file trusted (`read_trusted`; the folder this user's, writable
/// by no one else, and not a link).
pub(crate) fn lookup_folder(dir: &Path, key: &str, ext: &str, main: &str) -> Option<PathBuf> {
    let d = named_digest(dir, key)?;
    let folder = dir.join(format!("{key}.{d}.{ext}"));
    let m = std::fs::symlink_metadata(&folder).ok()?;
    if !m.is_dir() || !ours(&m) {
        return None;
    }
    let bytes = read_trusted(&folder.join(main))?;
    (digest(key, &bytes) == d).then_some(folder)
}

#[cfg(feature = "cuda")]
/// Publishes the complete folder `made` (named from `temporary(key)`) as
/// the entry of `key`, its checksum that of its file `main` (as
/// `publish`).
pub(crate) fn publish_folder(dir: &Path, key: &str, ext: &str, made: &Path, main: &str) {
    if let Ok(bytes) = std::fs::read(made.join(main)) {
        publish_as(dir, key, ext, made, &bytes);
    }
}

#[cfg(feature = "cuda")]
/// Removes the folder entry of `key`, if its checksum names one (a
/// damaged entry, rebuilt next).
pub(crate) fn remove_folder(dir: &Path, key: &str, ext: &str) {
    if let Some(d) = named_digest(dir, key) {
        let folder = dir.join(format!("{key}.{d}.{ext}"));
        if std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
    let _ = std::fs::remove_file(dir.join(format!("{key}.sum")));
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new().prefix("cache-test").tempdir().unwrap()
    }

    #[test]
    fn a_published_artifact_is_found_and_a_damaged_one_is_not() {
        let scratch = scratch();
        let dir = scratch.path();
        let k = key(&["source", "flags"]);
        assert!(lookup(dir, &k, "ptx").is_none(), "nothing yet");
        let tmp = dir.join(format!("{}.ptx", temporary(&k)));
        std::fs::write(&tmp, "the artifact").unwrap();
        publish(dir, &k, "ptx", &tmp);
        let found = lookup(dir, &k, "ptx").expect("published");
        assert_eq!(found.bytes, b"the artifact");
        // truncated: not used
        std::fs::write(&found.path, "the art").unwrap();
        assert!(lookup(dir, &k, "ptx").is_none(), "a truncated artifact is not used");
        // republished, then its checksum damaged: not used
        let tmp = dir.join(format!("{}.ptx", temporary(&k)));
        std::fs::write(&tmp, "the artifact").unwrap();
        publish(dir, &k, "ptx", &tmp);
        assert!(lookup(dir, &k, "ptx").is_some());
        std::fs::write(dir.join(format!("{k}.sum")), "0123").unwrap();
        assert!(lookup(dir, &k, "ptx").is_none(), "a checksum naming no artifact is not used");
    }

    #[test]
    fn an_entry_moved_to_another_key_with_its_checksum_is_not_used() {
        let scratch = scratch();
        let dir = scratch.path();
        let (a, b) = (key(&["program a"]), key(&["program b"]));
        let tmp = dir.join(format!("{}.so", temporary(&a)));
        std::fs::write(&tmp, "the object of a").unwrap();
        publish(dir, &a, "so", &tmp);
        let entry = lookup(dir, &a, "so").unwrap();
        // a's artifact and checksum, under b's names
        let d = std::fs::read_to_string(dir.join(format!("{a}.sum"))).unwrap();
        std::fs::copy(&entry.path, dir.join(format!("{b}.{d}.so"))).unwrap();
        std::fs::copy(dir.join(format!("{a}.sum")), dir.join(format!("{b}.sum"))).unwrap();
        assert!(lookup(dir, &b, "so").is_none());
        remove(dir, &a, "so");
        assert!(lookup(dir, &a, "so").is_none(), "removed");
        assert!(!entry.path.exists(), "the artifact is removed with its checksum");
    }

    #[test]
    fn files_others_can_write_links_and_fifos_are_not_read() {
        let scratch = scratch();
        let dir = scratch.path();
        let file = dir.join("entry");
        std::fs::write(&file, "contents").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_trusted(&file).as_deref(), Some(&b"contents"[..]));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(read_trusted(&file), None, "writable by others");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert_eq!(read_trusted(&file), None, "writable by the group");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_trusted(&link), None, "a link is not followed");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read_trusted(&fifo), None, "a FIFO is not read (and does not block)");
    }

    #[test]
    fn a_folder_others_can_write_is_not_kept() {
        let scratch = scratch();
        let ok = scratch.path().join("cache");
        assert!(matches!(Folder::open(&CacheDir::At(ok.clone())), Ok(Folder::Kept(_))));
        let mode = std::fs::metadata(&ok).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700, "created private");
        let open = scratch.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(checked_folder(&open).unwrap_err().contains("can be written by other users"));
        assert!(matches!(Folder::open(&CacheDir::At(open)), Ok(Folder::Private(_))));
        // in a parent others can write, without the sticky bit
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(checked_folder(&ok).unwrap_err().contains("without the sticky bit"));
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(checked_folder(&ok), Ok(()), "a sticky parent, as /tmp");
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn private_folders_are_fresh_private_and_removed() {
        let f = Folder::private().unwrap();
        let path = f.path().to_path_buf();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o700);
        assert!(!f.keeps());
        let g = Folder::private().unwrap();
        assert_ne!(g.path(), path, "a fresh name each time");
        drop(f);
        assert!(!path.exists(), "removed when dropped");
    }

    #[test]
    fn the_in_memory_cache_keeps_the_recent_artifacts_and_those_in_use() {
        let mut m: InMemory<str> = InMemory::default();
        let held: std::sync::Arc<str> = "held by a program".into();
        m.insert("held".into(), held.clone());
        for i in 0..100 {
            m.insert(format!("k{i}"), format!("artifact {i}").into());
        }
        assert_eq!(m.loaded(), KEPT + 1, "the recent ones and the one in use");
        assert!(m.all.len() <= 2 * KEPT + 1, "unloaded entries are forgotten");
        assert_eq!(m.get("held").as_deref(), Some("held by a program"));
        assert_eq!(m.get("k99").as_deref(), Some("artifact 99"));
        assert!(m.get("k0").is_none(), "an old one no program holds is unloaded");
        // a get makes it the most recent: k85, the oldest kept now (the
        // gets above made `held` and k99 recent), survives what follows
        assert!(m.get("k85").is_some());
        for i in 100..100 + KEPT as i32 - 1 {
            m.insert(format!("k{i}"), format!("artifact {i}").into());
        }
        assert!(m.get("k85").is_some());
        assert!(m.get("k86").is_none(), "pushed out by the newer ones");
        drop(held);
    }

    #[test]
    fn keys_separate_their_parts() {
        assert_ne!(key(&["ab", "c"]), key(&["a", "bc"]));
        assert_eq!(key(&["a", "b"]), key(&["a", "b"]));
    }
}
