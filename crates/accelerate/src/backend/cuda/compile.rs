//! CUDA C to PTX with NVRTC, loaded at run time (`cudarc`'s dynamic
//! loading): where the library is missing this says so, as an
//! `Error::BackendUnavailable`, instead of letting `cudarc` panic.

use crate::exec::error::{Error, Result};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use std::sync::OnceLock;

/// Why NVRTC cannot be used here, if it cannot (probed once).
pub fn nvrtc_unavailable() -> Option<String> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| {
        // SAFETY: the probe only tries to open the library by its names.
        let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        (!present).then(|| {
            "NVRTC (libnvrtc.so) was not found; install the CUDA toolkit, or \
             `pip install nvidia-cuda-nvrtc-cu12` and put its nvidia/cuda_nvrtc/lib on LD_LIBRARY_PATH"
                .to_string()
        })
    })
    .clone()
}

/// Compiles a CUDA C file (prelude included) to PTX for a GPU architecture
/// such as `sm_90`. NVRTC's log is the error's message when it rejects
/// the source: generated code that does not compile is a bug in the
/// library.
pub fn compile_ptx(source: &str, arch: &'static str) -> Result<String> {
    if let Some(reason) = nvrtc_unavailable() {
        return Err(Error::BackendUnavailable { backend: "cuda".into(), reason });
    }
    let opts = CompileOptions {
        arch: Some(arch),
        // the prelude defines helpers that a kernel may not use
        options: vec!["-std=c++17".into(), "--diag-suppress=177,186,550".into()],
        ..Default::default()
    };
    match compile_ptx_with_opts(source, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, .. }) => Err(Error::Internal(format!(
            "NVRTC rejected the generated CUDA C for {arch}:\n{}",
            log.to_string_lossy()
        ))),
        Err(other) => Err(Error::Internal(format!("NVRTC failed for {arch}: {other:?}"))),
    }
}
