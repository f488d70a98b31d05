//! Job ids: the only strings from outside that ever become path components.

use std::fmt;
use std::str::FromStr;

/// Longest id the protocol allows (1 leading character + 127 more).
pub const MAX_LEN: usize = 128;

/// A validated job id: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`.
///
/// Holding a `JobId` proves the string cannot climb out of the jobs root (`..`, `/`, NUL and
/// leading dots are all impossible), so paths are only ever built from this type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{shown}' is not a valid job id: an id is 1 to 128 letters, digits, '.', '_' or '-', \
     starting with a letter or digit (run `luzia jobs` to list the ids)"
)]
pub struct InvalidJobId {
    shown: String,
}

impl JobId {
    pub fn parse(s: &str) -> Result<Self, InvalidJobId> {
        if is_valid(s) {
            Ok(JobId(s.to_owned()))
        } else {
            Err(InvalidJobId {
                shown: s.escape_debug().take(80).collect(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The protocol's pattern, checked by hand: a regex engine for eight lines is not worth it.
pub fn is_valid(s: &str) -> bool {
    let bytes = s.as_bytes();
    match bytes.first() {
        Some(first) if first.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    bytes.len() <= MAX_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl FromStr for JobId {
    type Err = InvalidJobId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobId::parse(s)
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for JobId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_refuses_per_protocol() {
        let cases: &[(&str, bool)] = &[
            ("142315-a1b2", true),
            ("a", true),
            ("A.b_c-d", true),
            ("9", true),
            ("", false),
            (".", false),
            ("..", false),
            ("../../etc/passwd", false),
            ("-rf", false),
            ("_x", false),
            (".hidden", false),
            ("a/b", false),
            ("a b", false),
            ("a\0b", false),
            ("é", false),
            ("job\n", false),
        ];
        for (input, ok) in cases {
            assert_eq!(is_valid(input), *ok, "{input:?}");
            assert_eq!(JobId::parse(input).is_ok(), *ok, "{input:?}");
        }
    }

    #[test]
    fn length_limit_is_128() {
        assert!(is_valid(&"a".repeat(128)));
        assert!(!is_valid(&"a".repeat(129)));
    }

    #[test]
    fn error_names_the_input_escaped() {
        let err = JobId::parse("../\x1b[2Jx").unwrap_err().to_string();
        assert!(err.contains("'../\\u{1b}[2Jx'"), "{err}");
        assert!(!err.contains('\x1b'));
    }
}
