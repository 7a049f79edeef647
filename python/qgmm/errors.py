"""Exceptions: one QgmmError subclass per qgmm_status, carrying the library's sentence."""


class QgmmError(RuntimeError):
    """A qgmm call returned a status other than QGMM_OK; nothing was changed.

    `status` is the qgmm_status number, `status_name` its name ("QGMM_ERR_BAD_OFFSETS"),
    `message` the sentence qgmm_last_error gave (it names the argument and its value)."""
    status = None

    def __init__(self, status, status_name, message):
        super().__init__(f"{status_name}: {message}")
        self.status = status
        self.status_name = status_name
        self.message = message


class InvalidArgumentError(QgmmError, ValueError):
    status = 1


class UnsupportedError(QgmmError):
    status = 2


class BackendUnavailableError(QgmmError):
    status = 3


class OutOfMemoryError(QgmmError, MemoryError):
    status = 4


class DeviceError(QgmmError):
    status = 5


class BadOffsetsError(QgmmError):
    """Device-side group offsets were invalid: reported by synchronize; that op wrote nothing."""
    status = 6


class InternalError(QgmmError):
    status = 7


BY_STATUS = {c.status: c for c in (InvalidArgumentError, UnsupportedError, BackendUnavailableError,
                                   OutOfMemoryError, DeviceError, BadOffsetsError, InternalError)}
