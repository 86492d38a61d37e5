//! Compiled accelerate-rs programs exported as a C library (sequences
//! thesis §6.1.3; the shape of the API after Futhark's `--library`: a
//! context, opaque array handles, one function per entry point, and a
//! manifest describing them).
//!
//! A library is a crate of the user's with `crate-type = ["cdylib"]`
//! whose programs are declared with [`export!`]:
//!
//! ```ignore
//! accelerate_export::export! {
//!     prefix = demo;
//!     /// The dot product of two vectors.
//!     fn dotp(xs: Vector<f32>, ys: Vector<f32>) -> Scalar<f32> {
//!         xs.zip_with(&ys, |x, y| x * y).sum()
//!     }
//! }
//! ```
//!
//! which makes, for C, the functions `demo_context_new`, `demo_array_new`
//! and the rest of the runtime (`runtime`), `demo_dotp(ctx, out, xs,
//! ys)`, and `demo_manifest()`; for Rust, `manifest()`, from which
//! `Manifest::header` writes `demo.h` and `Manifest::json` the manifest.
//! Each entry point's program is compiled on its first call in a context
//! (its kernels then come from the kernel cache on later runs of the
//! process), and runs on the context's backend.
//!
//! Why the library holds the Rust runtime rather than being C generated
//! from the plan (as Futhark's is): the plan's host program runs on the
//! library's runtime (the host walker, the worker pool, the memory
//! manager of the CUDA backend, errors with their source lines), and the
//! CPU backend compiles its kernels at run time for the machine it runs
//! on; exporting the runtime keeps every backend, the kernel cache and
//! the exact error messages available from C, with one implementation of
//! each. What it costs is a C compiler at the user's site on the first
//! call (as for the Rust API) and a library built by Cargo. `docs/ffi.md`
//! has the whole API, a C example and a Python one.

pub mod manifest;
pub mod runtime;

pub use accelerate;
pub use manifest::{EntryPoint, Manifest, Param};

/// Declares the entry points of an exported library and makes its C
/// functions (module documentation). Each entry point's arguments are
/// arrays of primitive elements; its result an array or a tuple of them,
/// returned in order.
#[macro_export]
macro_rules! export {
    (
        prefix = $prefix:ident;
        $(
            $(#[doc = $doc:literal])*
            fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $out:ty { $($body:tt)* }
        )*
    ) => {
        /// The library's manifest: its entry points and types.
        pub fn manifest() -> $crate::Manifest {
            let entries = vec![$(
                $crate::EntryPoint::new(
                    stringify!($prefix),
                    stringify!($name),
                    concat!($($doc, "\n"),*),
                    &[$((stringify!($arg), <$ty as $crate::accelerate::array::Arrays>::arrays_ty())),*],
                    <$out as $crate::accelerate::array::Arrays>::arrays_ty(),
                )
                .unwrap_or_else(|e| panic!("{e}")),
            )*];
            $crate::Manifest::new(stringify!($prefix), entries)
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_manifest")]
        pub extern "C" fn __accelerate_export_manifest() -> *const ::std::ffi::c_char {
            static JSON: ::std::sync::OnceLock<::std::ffi::CString> = ::std::sync::OnceLock::new();
            JSON.get_or_init(|| {
                let json = ::std::panic::catch_unwind(|| manifest().json()).unwrap_or_default();
                ::std::ffi::CString::new(json).unwrap_or_default()
            })
            .as_ptr()
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_context_new")]
        pub unsafe extern "C" fn __accelerate_export_context_new(
            options: *const ::std::ffi::c_char,
        ) -> *mut ::std::ffi::c_void {
            // SAFETY: as the C API documents, a NUL-terminated string or null
            unsafe { $crate::runtime::context_new(options) }
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_context_free")]
        pub extern "C" fn __accelerate_export_context_free(ctx: *mut ::std::ffi::c_void) -> ::std::ffi::c_int {
            $crate::runtime::context_free(ctx)
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_context_error")]
        pub extern "C" fn __accelerate_export_context_error(
            ctx: *mut ::std::ffi::c_void,
        ) -> *const ::std::ffi::c_char {
            $crate::runtime::context_error(ctx)
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_array_new")]
        pub unsafe extern "C" fn __accelerate_export_array_new(
            ctx: *mut ::std::ffi::c_void,
            ty: ::std::ffi::c_int,
            rank: ::std::ffi::c_int,
            shape: *const i64,
            data: *const ::std::ffi::c_void,
        ) -> *mut ::std::ffi::c_void {
            // SAFETY: as the C API documents
            unsafe { $crate::runtime::array_new(ctx, ty, rank, shape, data) }
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_array_values")]
        pub unsafe extern "C" fn __accelerate_export_array_values(
            ctx: *mut ::std::ffi::c_void,
            arr: *const ::std::ffi::c_void,
            ty: ::std::ffi::c_int,
            rank: ::std::ffi::c_int,
            out: *mut ::std::ffi::c_void,
        ) -> ::std::ffi::c_int {
            // SAFETY: as the C API documents
            unsafe { $crate::runtime::array_values(ctx, arr, ty, rank, out) }
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_array_shape")]
        pub extern "C" fn __accelerate_export_array_shape(
            ctx: *mut ::std::ffi::c_void,
            arr: *const ::std::ffi::c_void,
        ) -> *const i64 {
            $crate::runtime::array_shape(ctx, arr)
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_array_rank")]
        pub extern "C" fn __accelerate_export_array_rank(
            ctx: *mut ::std::ffi::c_void,
            arr: *const ::std::ffi::c_void,
        ) -> ::std::ffi::c_int {
            $crate::runtime::array_rank(ctx, arr)
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_array_type")]
        pub extern "C" fn __accelerate_export_array_type(
            ctx: *mut ::std::ffi::c_void,
            arr: *const ::std::ffi::c_void,
        ) -> ::std::ffi::c_int {
            $crate::runtime::array_type(ctx, arr)
        }

        #[doc(hidden)]
        #[export_name = concat!(stringify!($prefix), "_array_free")]
        pub extern "C" fn __accelerate_export_array_free(
            ctx: *mut ::std::ffi::c_void,
            arr: *mut ::std::ffi::c_void,
        ) -> ::std::ffi::c_int {
            $crate::runtime::array_free(ctx, arr)
        }

        /// The entry points' C functions (their symbols are
        /// `<prefix>_<name>`), each in a module of its name, so that the
        /// user's functions of the same name stay in scope in its body.
        #[doc(hidden)]
        pub mod __accelerate_export_entries {
        $(
            pub mod $name {
            #[allow(unused_imports)]
            use super::super::*;
            $(#[doc = $doc])*
            #[export_name = concat!(stringify!($prefix), "_", stringify!($name))]
            pub unsafe extern "C" fn entry(
                ctx: *mut ::std::ffi::c_void,
                outs: *mut *mut ::std::ffi::c_void,
                $($arg: *const ::std::ffi::c_void),*
            ) -> ::std::ffi::c_int {
                $crate::runtime::entry(ctx, stringify!($name), |call| {
                    let program = call.program(|config| {
                        $crate::accelerate::compile_with(
                            |$($arg: $crate::accelerate::lang::Acc<$ty>),*| -> $crate::accelerate::lang::Acc<$out> {
                                $($body)*
                            },
                            config,
                        )
                    })?;
                    let mut _pos = 0usize;
                    $(
                        _pos += 1;
                        let $arg: $ty = call.input($arg, _pos - 1, stringify!($arg))?;
                    )*
                    let result = program.run($crate::export!(@refs $($arg),*))?;
                    // SAFETY: as the C API documents, `outs` has room for
                    // every result
                    unsafe { call.outputs(outs, &result) }
                })
            }
            }
        )*
        }
    };
    (@refs $one:ident) => { &$one };
    (@refs $($arg:ident),+) => { ($(&$arg,)+) };
}
