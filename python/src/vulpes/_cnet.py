"""What CModel (vulpes.model) and CDTModel (vulpes.dt) share: a checkpoint's network opened in the
C library through one family of the flat API (vp_api_model_* or vp_api_dt_*), its configuration
read key by key, its parameters by name, and its release."""
import ctypes

import numpy as np

from . import _lib


class CNet:
    """A checkpoint's network in the C library (CPU, FP32). Subclasses set _API (the functions'
    prefix, "vp_api_model") and _INT_KEYS / _FLOAT_KEYS (the configuration keys read at open);
    close it, or use it as a context manager."""

    _API = None
    _INT_KEYS = ()
    _FLOAT_KEYS = ()

    def _fn(self, name):
        return getattr(_lib.lib(), f"{self._API}_{name}")

    def __init__(self, checkpoint):
        self._h = ctypes.c_void_p()
        _lib.check(self._fn("open")(_lib.opt(checkpoint), ctypes.byref(self._h)))
        self.checkpoint = str(checkpoint)
        self.config = {}
        v = ctypes.c_double()
        cfg = self._fn("cfg")
        for k in self._INT_KEYS + self._FLOAT_KEYS:
            _lib.check(cfg(self._h, k.encode(), ctypes.byref(v)))
            self.config[k] = int(v.value) if k in self._INT_KEYS else float(v.value)
        sizes = []
        for br in range(self.config["n_branches"]):
            _lib.check(cfg(self._h, f"branch_size{br}".encode(), ctypes.byref(v)))
            sizes.append(int(v.value))
        self.config["branch_sizes"] = sizes

    def close(self):
        if getattr(self, "_h", None):
            self._fn("close")(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def param_names(self):
        name = self._fn("param_name")
        return [name(self._h, i).decode() for i in range(self._fn("n_params")(self._h))]

    def param(self, name):
        """Parameter `name` as a float32 numpy array of its shape."""
        shape = (ctypes.c_int64 * 2)()
        ndim = ctypes.c_int()
        _lib.check(self._fn("param_shape")(self._h, name.encode(), shape, ctypes.byref(ndim)))
        out = np.empty(tuple(shape[: ndim.value]), dtype=np.float32)
        _lib.check(self._fn("param")(self._h, name.encode(), out.ctypes.data_as(_lib.c_float_p), out.size))
        return out

    def params(self):
        return {n: self.param(n) for n in self.param_names()}
