//! Standard output as every command writes it. A write that fails (a full disk, a closed pipe)
//! comes back as an error that says it was standard output that could not be written, of the
//! same kind, so that `main` tells the operator which output failed and still knows a closed pipe
//! (`luzia jobs | head -1`) for the normal end it is.

use std::error::Error;
use std::fmt;
use std::io::{self, Write};

/// A writer whose errors say they are standard output's.
pub struct Stdout<W>(W);

/// Standard output, unlocked: for what writes it from more than one thread.
pub fn stdout() -> Stdout<io::Stdout> {
    Stdout(io::stdout())
}

/// Standard output, locked for the command's whole run.
pub fn stdout_locked() -> Stdout<io::StdoutLock<'static>> {
    Stdout(io::stdout().lock())
}

impl<W: Write> Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(failed)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).map_err(failed)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(failed)
    }
}

/// A failed write of standard output.
#[derive(Debug)]
struct NotWritten(io::Error);

impl fmt::Display for NotWritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl Error for NotWritten {}

/// `e`, a failed write of standard output, as one that says so (once).
pub fn failed(e: io::Error) -> io::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<NotWritten>()) {
        return e;
    }
    io::Error::new(e.kind(), NotWritten(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that always fails with `kind`.
    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(self.0))
        }
    }

    #[test]
    fn an_error_says_it_was_stdout_and_keeps_its_kind() {
        let mut out = io::BufWriter::new(Stdout(Failing(io::ErrorKind::StorageFull)));
        writeln!(out, "a line").unwrap();
        let e = out.flush().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(
            e.to_string()
                .starts_with("cannot write to standard output: "),
            "{e}"
        );
        let mut twice = Stdout(Stdout(Failing(io::ErrorKind::BrokenPipe)));
        let e = twice.write_all(b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(e.to_string().matches("standard output").count(), 1, "{e}");
    }
}
