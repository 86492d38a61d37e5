//! Reading this process's resident memory, for the examples that check a
//! streamed program's peak against its budget (`seq_stream`, `pagerank`).
//! Included with `#[path]` by those examples alone.

/// A field of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in KiB.
pub fn status_kib(field: &str) -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
