//! The Python peers (`peers/peers.py`): NumPy, Numba (`parallel=True`,
//! with and without `fastmath=True`) and JAX (`jit`) computing the same
//! problems on the same data, timed and checked beside our variants.
//!
//! The harness writes a benchmark's inputs into a private folder as raw
//! little-endian arrays and starts one Python process per variant, which
//! loads them, compiles and warms up its function, and then, on each
//! `run`, computes the result once, times only that computation itself,
//! and writes the result for the check. A variant's time is the one the
//! peer measured: the pipe's round trip is not charged to it.
//!
//! The environment: `ACCELERATE_BENCH_PYTHON` names the Python to use, else
//! `target/peers-venv/bin/python` of the workspace if it exists; set it up
//! with
//!
//! ```sh
//! python3 -m venv target/peers-venv
//! target/peers-venv/bin/pip install numpy numba "jax[cpu]"
//! ```
//!
//! Without it the peers are skipped, saying so. A variant whose library
//! is missing, or whose result is outside the benchmark's bounds, is
//! skipped with the reason (a benchmark never times a wrong program).

use crate::harness::Bench;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::rc::Rc;
use std::time::Duration;

/// The variants `--variants` names, where it does: a peer it leaves out
/// is not started at all (a JAX peer compiles for seconds at its start).
pub static ONLY: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// The Python of the peers, if there is one.
pub fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ACCELERATE_BENCH_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers-venv/bin/python");
    venv.exists().then_some(venv)
}

/// A folder of this process's own for one benchmark's data, removed when
/// the last peer using it is dropped.
pub struct DataDir(PathBuf);

impl DataDir {
    /// A new folder (an existing one is refused, so that no other user's
    /// files are read as inputs).
    pub fn new(bench: &str) -> Result<Rc<DataDir>, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir()
            .join(format!("accelerate-bench-peers-{bench}-{}-{nanos}", std::process::id()));
        let mut builder = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(Rc::new(DataDir(dir)))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `bytes` as the file `name`.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One variant in its Python process.
pub struct Peer {
    variant: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    data: Rc<DataDir>,
}

impl Peer {
    /// Starts `variant` of `bench` with the inputs in `data` and the
    /// arguments `args`; `None`, having said why, if it is skipped.
    pub fn start(
        python: &Path,
        bench: &str,
        variant: &'static str,
        data: &Rc<DataDir>,
        args: &[String],
    ) -> Result<Option<Peer>, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/peers.py");
        let mut child = Command::new(python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {} {}: {e}", python.display(), script.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the peer's pipes".into());
        };
        // Note [Quiet gap between samples]: its threads count too
        crate::harness::watch(child.id());
        let mut peer = Peer { variant, child, stdin, stdout: BufReader::new(stdout), data: data.clone() };
        let dir = data.path().display().to_string();
        let reply = peer.ask(&format!("setup {bench} {variant} {dir} {}", args.join(" ")))?;
        match reply.split_once(' ').unwrap_or((&reply, "")) {
            ("ok", _) => Ok(Some(peer)),
            ("skip", why) => {
                eprintln!("{bench}: peer {variant} skipped: {why}");
                Ok(None)
            }
            _ => Err(format!("{bench}: peer {variant} answered {reply:?} to setup")),
        }
    }

    /// Sends `command` and reads the answer, the process running only
    /// in between (Note [Peers stopped between their samples]).
    fn ask(&mut self, command: &str) -> Result<String, String> {
        let variant = self.variant;
        self.signal(libc::SIGCONT);
        writeln!(self.stdin, "{command}").map_err(|e| format!("peer {variant}: {e}"))?;
        self.stdin.flush().map_err(|e| format!("peer {variant}: {e}"))?;
        let mut line = String::new();
        let answer = match self.stdout.read_line(&mut line) {
            Ok(0) => Err(format!("peer {variant} ended (its error is above)")),
            Ok(_) => Ok(line.trim().to_string()),
            Err(e) => Err(format!("peer {variant}: {e}")),
        };
        self.signal(libc::SIGSTOP);
        answer
    }

    /// Sends signal `sig` to the peer's process.
    fn signal(&self, sig: libc::c_int) {
        let Ok(pid) = libc::pid_t::try_from(self.child.id()) else { return };
        // SAFETY: kill(2) has no memory effects; the pid is our child's,
        // not yet waited for, so it names no other process (a child that
        // has ended stays a zombie under its pid until `Drop` waits)
        unsafe { libc::kill(pid, sig) };
    }

    /// Computes the result once: the time the peer measured, and the
    /// result's raw bytes.
    pub fn run(&mut self) -> Result<(Duration, Vec<u8>), String> {
        let variant = self.variant;
        let reply = self.ask("run")?;
        let seconds: f64 = reply
            .strip_prefix("done ")
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("peer {variant} answered {reply:?} to run"))?;
        let path = self.data.path().join(format!("out-{variant}.bin"));
        let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Ok((Duration::from_secs_f64(seconds), bytes))
    }
}

// Note [Peers stopped between their samples]
// The BLAS under NumPy and SciPy (OpenBLAS) keeps its worker spinning for
// 100 to 200 ms after each call (a NumPy process's second thread read
// running 100 ms after a 4096 x 4096 matrix-vector product, asleep at
// 200 ms; 2026-11-30), longer than the quiet gap waits
// (`Plan::quiet_limit`, Note [Quiet gap between samples] in
// `harness.rs`): the next variant's sample, ours among them, then shared
// a core with it. With the peers in the whole run, our matrix-vector
// product's median was 1.80 to 1.91 ms; alone, 1.34 to 1.52 (the same
// binary, minutes apart). So a peer's process is stopped (SIGSTOP)
// whenever it is not answering a command of ours, and continued
// (SIGCONT) for the next: its threads run only while it computes its
// own sample, which keeps its library's own policy (a worker spinning
// since its last call runs on at once) without charging it to others.
// `Drop` kills it (SIGKILL ends a stopped process too).

impl Drop for Peer {
    fn drop(&mut self) {
        crate::harness::unwatch(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A number the peers exchange as raw little-endian bytes (NumPy's
/// `<f4`, `<i8`, ...).
pub trait Raw: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! raw {
    ($($t:ty),*) => {$(
        impl Raw for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
raw!(f32, f64, i32, i64, u32, u64);

/// `values` as the raw array a peer reads with `np.fromfile`.
pub fn bytes<T: Raw>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::SIZE);
    values.iter().for_each(|&v| v.put(&mut out));
    out
}

/// Reads the raw array at the front of `bytes` (a peer's result is its
/// arrays one after the other) and what follows it: `count` values, or
/// every value left when `None`. A result too short reads as the values
/// it has, which the benchmark's check then rejects.
pub fn take<T: Raw>(bytes: &[u8], count: Option<usize>) -> (Vec<T>, &[u8]) {
    let have = bytes.len() / T::SIZE;
    let n = count.map_or(have, |c| c.min(have));
    let values = bytes[..n * T::SIZE].chunks_exact(T::SIZE).map(T::get).collect();
    (values, &bytes[n * T::SIZE..])
}

/// The value of a result that must be exactly one value (an error naming
/// the count otherwise).
pub fn single<T: Copy>(values: &[T]) -> Result<T, String> {
    match values {
        [v] => Ok(*v),
        _ => Err(format!("{} values, one expected", values.len())),
    }
}

/// A result that is one raw array.
pub fn all<T: Raw>(bytes: Vec<u8>) -> Vec<T> {
    take(&bytes, None).0
}

/// Adds the peers `variants` of benchmark `bench` to `b`, where their
/// environment is set up: the inputs `inputs` (file name, raw bytes:
/// [`bytes`]) are written for them, each is started with `args`, its
/// result (its arrays' raw bytes one after the other, read by `decode`)
/// checked once by `check` before it is timed, and skipped with the
/// reason where it is missing or wrong.
pub fn add<O: 'static>(
    b: &mut Bench,
    variants: &[&'static str],
    inputs: &[(&str, Vec<u8>)],
    args: &[String],
    decode: fn(Vec<u8>) -> O,
    check: impl Fn(&O) -> Result<(), String> + Clone + 'static,
) -> Result<(), String> {
    let bench = b.name;
    let Some(python) = python() else {
        eprintln!(
            "{bench}: the Python peers are skipped: no ACCELERATE_BENCH_PYTHON and no target/peers-venv"
        );
        return Ok(());
    };
    let data = DataDir::new(bench)?;
    for (name, raw) in inputs {
        data.write(name, raw)?;
    }
    for &variant in variants {
        if ONLY.get().is_some_and(|only| !only.iter().any(|o| o == variant)) {
            continue;
        }
        let Some(mut peer) = Peer::start(&python, bench, variant, &data, args)? else { continue };
        let (_, first) = peer.run()?;
        if let Err(e) = check(&decode(first)) {
            eprintln!("{bench}: peer {variant} skipped: its result is outside the bounds: {e}");
            continue;
        }
        b.variant(
            variant,
            move |slot: &mut Option<O>| {
                let (t, out) = peer.run()?;
                *slot = Some(decode(out));
                Ok(t)
            },
            check.clone(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state letter of process `pid` (`R`, `S`, `T`, ...).
    fn state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rfind(')').and_then(|i| stat[i + 1..].trim_start().chars().next()).unwrap_or('?')
    }

    /// Whether `pid` reads stopped within a second (a signal is delivered
    /// a moment after `kill` returns).
    fn stops(pid: u32) -> bool {
        (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            state(pid) == 'T'
        })
    }

    /// Note [Peers stopped between their samples]: a peer's process is
    /// stopped after its setup and after each run, and still answers the
    /// next command. Needs a Python with NumPy (the peers' venv, or
    /// `ACCELERATE_PYTHON`, CI's); skipped, saying so, without one.
    #[test]
    fn a_peer_is_stopped_between_its_commands() {
        let Some(py) = python().or_else(|| std::env::var_os("ACCELERATE_PYTHON").map(PathBuf::from)) else {
            eprintln!("skipped: no Python for the peers");
            return;
        };
        if !Command::new(&py).args(["-c", "import numpy"]).status().is_ok_and(|s| s.success()) {
            eprintln!("skipped: no NumPy in {}", py.display());
            return;
        }
        let n = 1000usize;
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let data = DataDir::new("stop-test").unwrap();
        data.write("xs.bin", &bytes(&xs)).unwrap();
        data.write("ys.bin", &bytes(&xs)).unwrap();
        let Some(mut peer) = Peer::start(&py, "saxpy", "numpy", &data, &[n.to_string(), "2".into()]).unwrap()
        else {
            eprintln!("skipped: the NumPy peer cannot run with {}", py.display());
            return;
        };
        let pid = peer.child.id();
        assert!(stops(pid), "after setup: {}", state(pid));
        for _ in 0..2 {
            let (_, out) = peer.run().unwrap();
            let got: Vec<f32> = take(&out, None).0;
            let want: Vec<f32> = xs.iter().map(|x| 2.0 * x + x).collect();
            assert_eq!(got, want);
            assert!(stops(pid), "after a run: {}", state(pid));
        }
    }
}
