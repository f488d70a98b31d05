//! Why a job's small JSON file could not be read: the bytes are not the JSON object the file
//! should hold, or the file itself could not be read (the `io::Error` is kept, so a caller can
//! ask its kind).

use std::io;
use std::path::PathBuf;

use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("is not valid JSON ({0})")]
    Json(#[from] serde_json::Error),
    #[error("is not a JSON object")]
    NotAnObject,
}

/// The bytes as a JSON object.
pub fn object(bytes: &[u8]) -> Result<Map<String, Value>, FormatError> {
    match serde_json::from_slice(bytes)? {
        Value::Object(m) => Ok(m),
        _ => Err(FormatError::NotAnObject),
    }
}

/// A file that could not be read, or not as what it should hold.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Read(#[from] io::Error),
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// Reading `path` failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    pub source: io::Error,
}

impl ReadError {
    pub fn at(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> ReadError {
        let path = path.into();
        move |source| ReadError { path, source }
    }
}
