"""Contexts, buffers, events and the backend list: thin owners of the C handles."""
import ctypes
from collections import namedtuple

from . import errors
from ._lib import BackendInfo, lib

Backend = namedtuple("Backend", "name available device_count reason library")


def check(status, ctx_handle=None):
    """Raises the QgmmError subclass of `status` with qgmm_last_error's sentence."""
    if status == 0:
        return
    message = lib.qgmm_last_error(ctx_handle).decode(errors="replace")
    name = lib.qgmm_status_string(status).decode()
    raise errors.BY_STATUS.get(status, errors.QgmmError)(status, name, message)


def backends():
    """Every backend libqgmm knows (cpu, the plugins, QGMM_EXTRA_BACKENDS), available or not."""
    out = []
    for i in range(lib.qgmm_backend_count()):
        info = BackendInfo()
        check(lib.qgmm_backend_get_info(i, ctypes.byref(info)))
        out.append(Backend(info.name.decode(), bool(info.available), info.device_count,
                           info.reason.decode(errors="replace"), info.library.decode(errors="replace")))
    return out


class Context:
    """A qgmm context: one backend, one device, one stream or queue.

    stream=None gives the context a stream of its own; an int is a native stream handle
    to enqueue on (a cudaStream_t / hipStream_t value; 0 is the runtime's default stream,
    which is what torch.cuda.current_stream().cuda_stream is on PyTorch's default stream).
    """

    def __init__(self, backend="cpu", device=0, stream=None):
        h = ctypes.c_void_p()
        if stream is None:
            st = lib.qgmm_context_create(backend.encode(), device, ctypes.byref(h))
        else:
            st = lib.qgmm_context_create_with_stream(backend.encode(), device, ctypes.c_void_p(stream),
                                                     ctypes.byref(h))
        check(st, None)
        self.handle = h.value
        self.device = device
        self.stream = stream
        self.backend = lib.qgmm_context_backend_name(self.handle).decode()

    def describe(self):
        return lib.qgmm_context_describe(self.handle).decode(errors="replace")

    def synchronize(self):
        """Waits for the context's ops; raises BadOffsetsError if one of them saw invalid
        device-side offsets since the last synchronize (that op wrote nothing)."""
        check(lib.qgmm_synchronize(self.handle), self.handle)

    def last_error(self):
        return lib.qgmm_last_error(self.handle).decode(errors="replace")

    def alloc(self, nbytes):
        """A Buffer of nbytes owned by qgmm (device memory; host memory on cpu)."""
        h = ctypes.c_void_p()
        check(lib.qgmm_buffer_alloc(self.handle, nbytes, ctypes.byref(h)), self.handle)
        return Buffer(self, h.value, owned=True)

    def wrap(self, native, nbytes):
        """A Buffer over caller-owned memory (a host pointer on cpu, a device pointer on
        cuda/hip); qgmm never frees it and the caller keeps it alive."""
        h = ctypes.c_void_p()
        check(lib.qgmm_buffer_wrap(self.handle, ctypes.c_void_p(native), nbytes, ctypes.byref(h)),
              self.handle)
        return Buffer(self, h.value, owned=False)

    def event(self):
        h = ctypes.c_void_p()
        check(lib.qgmm_event_create(self.handle, ctypes.byref(h)), self.handle)
        return Event(self, h.value)

    def close(self):
        """Waits for pending work and frees the context (also done when collected)."""
        if self.handle:
            lib.qgmm_context_destroy(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "handle", None) and lib is not None:
            self.close()

    def __repr__(self):
        return f"qgmm.Context({self.describe()!r})" if self.handle else "qgmm.Context(closed)"


class Buffer:
    """A qgmm_buffer: size, native handle, blocking upload/download, enqueued fill/copy."""

    def __init__(self, ctx, handle, owned):
        self.ctx = ctx
        self.handle = handle
        self.owned = owned

    @property
    def size(self):
        return lib.qgmm_buffer_size(self.handle)

    @property
    def native(self):
        return lib.qgmm_buffer_native(self.handle)

    def upload(self, src, offset=0):
        """Copies the bytes of `src` (bytes, bytearray or a contiguous array) in at offset."""
        mv = memoryview(src).cast("B")
        raw = (ctypes.c_char * len(mv)).from_buffer_copy(mv) if mv.readonly else \
            (ctypes.c_char * len(mv)).from_buffer(mv)
        check(lib.qgmm_buffer_upload(self.handle, offset, raw, len(mv)), self.ctx.handle)

    def download(self, nbytes=None, offset=0):
        """The bytes [offset, offset + nbytes) after all work enqueued on the context."""
        if nbytes is None:
            nbytes = self.size - offset
        out = bytearray(nbytes)
        raw = (ctypes.c_char * nbytes).from_buffer(out)
        check(lib.qgmm_buffer_download(self.handle, offset, raw, nbytes), self.ctx.handle)
        return bytes(out)

    def fill(self, byte, offset=0, nbytes=None):
        if nbytes is None:
            nbytes = self.size - offset
        check(lib.qgmm_buffer_fill(self.handle, offset, nbytes, byte), self.ctx.handle)

    def copy_from(self, src, nbytes, dst_offset=0, src_offset=0):
        check(lib.qgmm_buffer_copy(self.handle, dst_offset, src.handle, src_offset, nbytes),
              self.ctx.handle)

    def free(self):
        # after the context's close() the C buffer is unreachable: only the handle is dropped
        if self.handle and self.ctx.handle:
            lib.qgmm_buffer_free(self.handle)
        self.handle = None

    def __del__(self):
        if getattr(self, "handle", None) and lib is not None:
            self.free()


class Event:
    """A device timestamp on the context's stream/queue."""

    def __init__(self, ctx, handle):
        self.ctx = ctx
        self.handle = handle

    def record(self):
        check(lib.qgmm_event_record(self.handle), self.ctx.handle)

    def elapsed_ms(self, end):
        """Milliseconds from this event's recording to `end`'s (waits for `end`)."""
        ms = ctypes.c_double()
        check(lib.qgmm_event_elapsed_ms(self.handle, end.handle, ctypes.byref(ms)), self.ctx.handle)
        return ms.value

    def __del__(self):
        if getattr(self, "handle", None) and lib is not None and self.ctx.handle:
            lib.qgmm_event_destroy(self.handle)
        self.handle = None
