"""DLPack capsules over memory the C library owns (the env's CUDA buffers), so PyTorch reads and
writes them in place (torch.from_dlpack), without a copy."""
import ctypes

__all__ = ["capsule"]

KDL_CPU, KDL_CUDA = 1, 2
KDL_INT, KDL_FLOAT = 0, 2


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


_live = {}  # address of a _Managed -> what it keeps alive, until the consumer calls its deleter


@_DELETER
def _release(addr):
    _live.pop(addr, None)


_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def capsule(ptr, shape, is_int, cuda, device_id, owner):
    """A "dltensor" capsule of the contiguous float32 / int32 array at ptr (device memory when cuda)
    of `shape`; `owner` is kept alive while the consumer holds it."""
    shp = (ctypes.c_int64 * len(shape))(*shape)
    m = _Managed()
    m.dl_tensor.data = ptr
    m.dl_tensor.device = _Device(KDL_CUDA if cuda else KDL_CPU, device_id if cuda else 0)
    m.dl_tensor.ndim = len(shape)
    m.dl_tensor.dtype = _DType(KDL_INT if is_int else KDL_FLOAT, 32, 1)
    m.dl_tensor.shape = shp
    m.dl_tensor.strides = None
    m.dl_tensor.byte_offset = 0
    m.deleter = _release
    addr = ctypes.addressof(m)
    _live[addr] = (m, shp, owner)
    return _new(addr, b"dltensor", None)
