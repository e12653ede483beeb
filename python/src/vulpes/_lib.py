"""The shared library libvulpes.so through ctypes: where it is found, the signatures of its flat C
API (include/vulpes/api.h), and its errors as Python exceptions."""
import ctypes
import os

__all__ = ["VulpesError", "lib", "check", "library_path"]

c_i64 = ctypes.c_int64
c_int = ctypes.c_int
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_float_p = ctypes.POINTER(ctypes.c_float)
c_double_p = ctypes.POINTER(ctypes.c_double)
c_i64_p = ctypes.POINTER(ctypes.c_int64)
c_int_p = ctypes.POINTER(ctypes.c_int)

API_VERSION = 1  # VP_API_VERSION this package is written for


class VulpesError(RuntimeError):
    """An error of the C library: `status` is its vp_status name ("VP_ERR_IO"), the message is
    the library's own (vp_api_last_error)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


# Signatures: name -> (restype, argtypes).
_SIGS = {
    "vp_api_version": (c_int, []),
    "vp_api_last_error": (c_char_p, []),
    "vp_api_status_name": (c_char_p, [c_int]),
    "vp_api_model_open": (c_int, [c_char_p, ctypes.POINTER(c_void_p)]),
    "vp_api_model_close": (None, [c_void_p]),
    "vp_api_model_cfg": (c_int, [c_void_p, c_char_p, c_double_p]),
    "vp_api_model_n_params": (c_int, [c_void_p]),
    "vp_api_model_param_name": (c_char_p, [c_void_p, c_int]),
    "vp_api_model_param_shape": (c_int, [c_void_p, c_char_p, c_i64_p, c_int_p]),
    "vp_api_model_param": (c_int, [c_void_p, c_char_p, c_float_p, c_i64]),
    "vp_api_model_forward": (c_int, [c_void_p, c_float_p, c_float_p, c_float_p, c_i64, c_int, c_float_p, c_float_p,
                                     c_float_p]),
    "vp_api_model_size_scale": (c_int, [c_void_p, c_float_p, c_i64]),
    "vp_api_model_values": (c_int, [c_void_p, c_float_p, c_i64]),
    "vp_api_dt_open": (c_int, [c_char_p, ctypes.POINTER(c_void_p)]),
    "vp_api_dt_close": (None, [c_void_p]),
    "vp_api_dt_cfg": (c_int, [c_void_p, c_char_p, c_double_p]),
    "vp_api_dt_n_params": (c_int, [c_void_p]),
    "vp_api_dt_param_name": (c_char_p, [c_void_p, c_int]),
    "vp_api_dt_param_shape": (c_int, [c_void_p, c_char_p, c_i64_p, c_int_p]),
    "vp_api_dt_param": (c_int, [c_void_p, c_char_p, c_float_p, c_i64]),
    "vp_api_dt_forward": (c_int, [c_void_p, c_float_p, c_float_p, ctypes.POINTER(ctypes.c_int32), c_float_p,
                                  ctypes.POINTER(ctypes.c_int32), c_float_p, c_i64, c_float_p]),
    "vp_api_env_open": (c_int, [c_char_p, ctypes.POINTER(c_char_p), c_int, c_char_p, c_char_p, c_i64,
                                ctypes.POINTER(c_void_p)]),
    "vp_api_env_close": (None, [c_void_p]),
    "vp_api_env_info": (c_int, [c_void_p, c_char_p, c_i64_p]),
    "vp_api_env_buffer": (c_void_p, [c_void_p, c_char_p, c_int_p, c_int_p, c_i64_p]),
    "vp_api_env_reset": (c_int, [c_void_p, c_i64]),
    "vp_api_env_step": (c_int, [c_void_p]),
    "vp_api_train": (c_int, [c_char_p, ctypes.POINTER(c_char_p), c_int, c_char_p, c_char_p, c_int, c_int,
                             ctypes.c_char_p, c_i64]),
    "vp_api_backtest": (c_int, [c_char_p, c_char_p, c_char_p, c_char_p, c_char_p, c_i64, ctypes.POINTER(c_char_p),
                                c_int, c_char_p, c_char_p, c_int, ctypes.c_char_p, c_i64]),
    "vp_api_space_open": (c_int, [c_char_p, ctypes.POINTER(c_char_p), c_int, c_char_p, c_int,
                                  ctypes.POINTER(c_void_p)]),
    "vp_api_space_close": (None, [c_void_p]),
    "vp_api_space_n_params": (c_int, [c_void_p]),
    "vp_api_space_param": (c_int, [c_void_p, c_int, ctypes.c_char_p, c_i64, c_int_p, c_double_p, c_double_p, c_int_p]),
    "vp_api_space_choice": (c_char_p, [c_void_p, c_int, c_int]),
    "vp_api_space_check": (c_int, [c_void_p, ctypes.POINTER(c_char_p), c_int, c_i64]),
}

_lib = None


def library_path():
    """Where libvulpes.so is loaded from: $VULPES_LIBRARY, else the copy installed in this package."""
    env = os.environ.get("VULPES_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libvulpes.so")


def lib():
    """The loaded library (loaded and checked on first use)."""
    global _lib
    if _lib is None:
        path = library_path()
        if not os.path.exists(path):
            raise VulpesError("VP_ERR_IO", f"the vulpes shared library {path} is missing: install the package with "
                              "`pip install ./python`, or build it (`make build`) and set VULPES_LIBRARY to "
                              "build/libvulpes.so")
        handle = ctypes.CDLL(path)
        for name, (res, args) in _SIGS.items():
            fn = getattr(handle, name)
            fn.restype = res
            fn.argtypes = args
        version = handle.vp_api_version()
        if version != API_VERSION:
            raise VulpesError("VP_ERR_UNSUPPORTED", f"{path} has vulpes API version {version}, this package needs "
                              f"{API_VERSION}: rebuild the library or reinstall the package")
        _lib = handle
    return _lib


def check(status):
    """Raises VulpesError with the library's message when status is not 0."""
    if status != 0:
        L = lib()
        raise VulpesError(L.vp_api_status_name(status).decode(), L.vp_api_last_error().decode(errors="replace"))


def strings(items):
    """A C array of UTF-8 strings (and its length) for a list of str."""
    items = [str(s).encode() for s in items]
    arr = (c_char_p * max(1, len(items)))(*items)
    return arr, len(items)


def opt(s):
    """A C string for str, or NULL for None."""
    return None if s is None else os.fspath(s).encode()
