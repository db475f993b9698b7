//! [`Error`]: the `np_status` of a failed call as an [`ErrorKind`] plus `np_last_error()`.
use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// Which `np_status` a call failed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad option, unknown event name, empty path, NUL byte in a string.
    InvalidArgument,
    /// `perf_event_paranoid` (or a missing CAP_PERFMON) forbids it; the message says the fix.
    PermissionDenied,
    /// The event does not exist on this machine.
    NotSupported,
    /// Wrong state: start while running, write while running, another profiler running, ...
    BadState,
    /// The output file could not be written.
    Io,
    /// Out of file descriptors or locked memory.
    ResourceExhausted,
    /// A bug or an unexpected failure inside libnativeprof.
    Internal,
    /// A status this crate does not know (a newer library); the number is the `np_status`.
    Unknown(i32),
}

impl ErrorKind {
    fn from_status(status: sys::np_status) -> Self {
        match status {
            sys::NP_ERROR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            sys::NP_ERROR_PERMISSION_DENIED => ErrorKind::PermissionDenied,
            sys::NP_ERROR_NOT_SUPPORTED => ErrorKind::NotSupported,
            sys::NP_ERROR_BAD_STATE => ErrorKind::BadState,
            sys::NP_ERROR_IO => ErrorKind::Io,
            sys::NP_ERROR_RESOURCE_EXHAUSTED => ErrorKind::ResourceExhausted,
            sys::NP_ERROR_INTERNAL => ErrorKind::Internal,
            other => ErrorKind::Unknown(other),
        }
    }
}

/// A failed libnativeprof call: the kind and the library's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// `Result<T, nativeprof::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Reads np_last_error() of this thread, right after the failed call.
    pub(crate) fn from_last_error(status: sys::np_status) -> Self {
        // SAFETY: np_last_error returns a NUL-terminated thread-local string, never NULL;
        // copied before any other call on this thread.
        let message = unsafe {
            let p = sys::np_last_error();
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Error::new(ErrorKind::from_status(status), message)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// libnativeprof's message (np_last_error()), e.g. the perf_event_paranoid advice.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::NotSupported => "not supported",
            ErrorKind::BadState => "bad state",
            ErrorKind::Io => "I/O error",
            ErrorKind::ResourceExhausted => "resource exhausted",
            ErrorKind::Internal => "internal error",
            ErrorKind::Unknown(n) => return write!(f, "nativeprof status {n}: {}", self.message),
        };
        if self.message.is_empty() {
            f.write_str(kind)
        } else {
            write!(f, "{kind}: {}", self.message)
        }
    }
}

impl std::error::Error for Error {}
