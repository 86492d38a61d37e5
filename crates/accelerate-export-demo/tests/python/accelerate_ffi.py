"""Bindings for a library exported by accelerate-export, made at run time
from its JSON manifest, with ctypes and NumPy (no compiled extension).

    lib = accelerate_ffi.load("/path/to/libaccdemo.so")   # prefix "accdemo"
    with lib.context() as ctx:            # or lib.context("backend=cpu,threads=2")
        (d,) = ctx.dotp(xs, ys)            # NumPy arrays in, NumPy arrays out
        call, put = ctx.blackscholes(price, strike, years)

Arguments are converted to contiguous arrays of the entry point's element
type (a value that cannot be converted safely is refused, as NumPy's
casting="safe" says) and must have its rank. Every failure raises
`AccError`, whose `code` is the library's status code.
"""

import ctypes
import json

import numpy as np

_DTYPES = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}


class AccError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{message} (status {code})")
        self.code = code
        self.message = message


class Library:
    def __init__(self, path, prefix=None):
        self.dll = ctypes.CDLL(path)
        # the symbols' prefix: the library's name (libNAME.so) unless given
        self.prefix = prefix or _prefix_from_path(path)
        self.manifest = json.loads(self._fn("manifest", ctypes.c_char_p, [])().decode())
        self.codes = {t["name"]: t["code"] for t in self.manifest["element_types"]}
        vp, i64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)
        self.context_new = self._fn("context_new", vp, [ctypes.c_char_p])
        self.context_free = self._fn("context_free", ctypes.c_int, [vp])
        self.context_error = self._fn("context_error", ctypes.c_char_p, [vp])
        self.array_new = self._fn("array_new", vp, [vp, ctypes.c_int, ctypes.c_int, i64p, vp])
        self.array_values = self._fn("array_values", ctypes.c_int, [vp, vp, ctypes.c_int, ctypes.c_int, vp])
        self.array_shape = self._fn("array_shape", i64p, [vp, vp])
        self.array_rank = self._fn("array_rank", ctypes.c_int, [vp, vp])
        self.array_type = self._fn("array_type", ctypes.c_int, [vp, vp])
        self.array_free = self._fn("array_free", ctypes.c_int, [vp, vp])
        self.entries = {}
        for e in self.manifest["entry_points"]:
            f = getattr(self.dll, e["symbol"])
            f.restype = ctypes.c_int
            f.argtypes = [vp, ctypes.POINTER(vp)] + [vp] * len(e["inputs"])
            self.entries[e["name"]] = (e, f)

    def _fn(self, name, restype, argtypes):
        f = getattr(self.dll, f"{self.prefix}_{name}")
        f.restype, f.argtypes = restype, argtypes
        return f

    def context(self, options=None):
        return Context(self, options)


def _prefix_from_path(path):
    base = path.rsplit("/", 1)[-1]
    return base[3:].split(".")[0] if base.startswith("lib") else base.split(".")[0]


class Context:
    """A context of the library: its arrays and compiled programs."""

    def __init__(self, lib, options=None):
        self.lib = lib
        self.handle = lib.context_new(options.encode() if options is not None else None)
        if not self.handle:
            raise AccError(2, lib.context_error(None).decode())
        for name in lib.entries:
            setattr(self, name, self._entry(name))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def free(self):
        if self.handle:
            self.lib.context_free(self.handle)
            self.handle = None

    def error(self, code):
        m = self.lib.context_error(self.handle)
        return AccError(code, m.decode() if m else "(no message)")

    def new_array(self, a, elt):
        """A handle of the library holding a copy of NumPy array `a` as `elt` elements."""
        dtype = _DTYPES[elt]
        a = np.asarray(a).astype(dtype, casting="safe", copy=False)
        if not a.flags.c_contiguous:
            a = a.copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        h = self.lib.array_new(self.handle, self.lib.codes[elt], a.ndim, shape,
                               a.ctypes.data_as(ctypes.c_void_p))
        if not h:
            raise self.error(2)
        return h

    def read_array(self, h, elt, rank):
        """The elements of handle `h` as a new NumPy array."""
        shape_p = self.lib.array_shape(self.handle, h)
        if not shape_p:
            raise self.error(2)
        shape = tuple(shape_p[i] for i in range(rank))
        out = np.empty(shape, dtype=_DTYPES[elt])
        code = self.lib.array_values(self.handle, h, self.lib.codes[elt], rank,
                                     out.ctypes.data_as(ctypes.c_void_p))
        if code != 0:
            raise self.error(code)
        return out

    def _entry(self, name):
        e, f = self.lib.entries[name]

        def call(*args):
            if len(args) != len(e["inputs"]):
                raise AccError(2, f"{name} takes {len(e['inputs'])} arrays, given {len(args)}")
            handles = []
            try:
                for a, p in zip(args, e["inputs"]):
                    if np.ndim(a) != p["rank"]:
                        raise AccError(2, f"argument {p['name']} of {name}: rank {np.ndim(a)}, "
                                          f"where {p['rank']} is expected")
                    try:
                        handles.append(self.new_array(a, p["type"]))
                    except (TypeError, ValueError) as err:
                        raise AccError(2, f"argument {p['name']} of {name}: {err}") from err
                outs = (ctypes.c_void_p * len(e["outputs"]))()
                code = f(self.handle, outs, *handles)
                if code != 0:
                    raise self.error(code)
                results = []
                for h, p in zip(outs, e["outputs"]):
                    results.append(self.read_array(h, p["type"], p["rank"]))
                    self.lib.array_free(self.handle, h)
                return tuple(results)
            finally:
                for h in handles:
                    self.lib.array_free(self.handle, h)

        call.__doc__ = e["doc"]
        return call


def load(path, prefix=None):
    return Library(path, prefix)
