//! The storage error type: every failure a backend can report, kind-agnostic.

use crate::Revision;

/// What went wrong in the store. The API server maps these to `Status` responses in one place.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    #[error("key {key:?} not found")]
    NotFound { key: String },
    #[error("key {key:?} already exists")]
    AlreadyExists { key: String },
    #[error("key {key:?} was modified at revision {actual}, expected {expected}")]
    Conflict {
        key: String,
        expected: Revision,
        actual: Revision,
    },
    /// The requested revision is older than the kept history.
    #[error("revision {requested} has been compacted (oldest available is after {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    /// The requested revision has not been written yet.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    /// A continue token whose snapshot revision is no longer kept. `resume` continues from the
    /// same key at the latest revision (an inconsistent list, as upstream offers one).
    #[error("the continue token refers to compacted revision {requested}; start the list again")]
    ContinueExpired { requested: Revision, resume: String },
    #[error("invalid continue token: {0}")]
    InvalidContinue(String),
    /// A watcher fell too far behind and was cut off; resume with a new watch after `last_delivered`.
    #[error("watcher fell too far behind and was cut off after revision {last_delivered}")]
    WatcherTooSlow { last_delivered: Revision },
    #[error("value of {size} bytes exceeds the limit of {limit} bytes")]
    ValueTooLarge { size: usize, limit: usize },
    #[error("invalid key {0:?}: keys must be non-empty and start with '/'")]
    InvalidKey(String),
    /// Stored bytes failed their checksum or could not be decoded.
    #[error("corrupt data in the store: {0}")]
    Corrupt(String),
    /// The on-disk format is foreign or newer than this build understands.
    #[error("{0}")]
    Format(String),
    #[error("storage engine error: {0}")]
    Engine(String),
    /// The operation is not one this backend offers (the message says what to use instead).
    #[error("{0}")]
    Unsupported(String),
    #[error("the store is closed")]
    Closed,
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Engine(e.to_string())
    }
}

impl From<sled::Error> for Error {
    fn from(e: sled::Error) -> Self {
        match e {
            sled::Error::Corruption { .. } => Error::Corrupt(e.to_string()),
            other => Error::Engine(other.to_string()),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
