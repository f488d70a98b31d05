//! Why a job's small JSON file could not be read: the bytes are not the JSON object the file
//! should hold, or the file itself could not be read (the `io::Error` is kept, so a caller can
//! ask its kind). Also the field readers with which serde reads luzia's own files back as
//! leniently as the orchestrator's.

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

/// The bytes as `T`, read from a JSON object only: a derived reader would also take an array
/// for a struct, which no file of the protocol is.
pub fn from_object<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, FormatError> {
    Ok(T::deserialize(Value::Object(object(bytes)?))?)
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

/// Field readers for serde that take a field of the wrong JSON type as absent rather than
/// refusing the whole file: luzia's own files are read back as leniently as the others.
pub mod lenient {
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    /// A string, or `None` for anything else.
    pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => Some(s),
            _ => None,
        })
    }

    /// A boolean, or `None` for anything else.
    pub fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Bool(b) => Some(b),
            _ => None,
        })
    }

    /// Whether the field is there at all, whatever it holds (`null` too).
    pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| true)
    }
}
