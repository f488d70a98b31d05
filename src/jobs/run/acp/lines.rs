//! The agent's stdout as JSON-RPC messages, one a line, read with a bound: a line longer than
//! [`LINE_CAP`] is passed over whole (its start is not taken for a message), so the supervisor's
//! memory stays small whatever the agent writes. And the client's messages to its stdin, the
//! same way.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The longest message read (a loaded session's history may carry whole files).
pub const LINE_CAP: usize = 16 * 1024 * 1024;

pub struct Lines<R> {
    from: R,
    buf: Vec<u8>,
    /// Where the next line starts in `buf`.
    start: usize,
    /// How much of the line being read is known to hold no newline (not searched again).
    searched: usize,
    /// The line being read is over the cap: its bytes are dropped until its newline.
    skipping: bool,
    ended: bool,
    cap: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub fn new(from: R) -> Lines<R> {
        Lines::with_cap(from, LINE_CAP)
    }

    pub fn with_cap(from: R, cap: usize) -> Lines<R> {
        Lines {
            from,
            buf: Vec::new(),
            start: 0,
            searched: 0,
            skipping: false,
            ended: false,
            cap,
        }
    }

    /// The next line (without its newline); `None` once the stream has ended. A last line
    /// without its newline is taken as it is.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            let from = self.start + self.searched;
            if let Some(at) = memchr::memchr(b'\n', self.buf.get(from..).unwrap_or_default()) {
                let end = from + at;
                let line = self.buf.get(self.start..end).unwrap_or_default().to_vec();
                self.start = end + 1;
                self.searched = 0;
                if std::mem::take(&mut self.skipping) || line.len() > self.cap {
                    continue;
                }
                return Some(line);
            }
            // No newline in what is held: keep only the line's start, and only up to the cap.
            self.buf.drain(..self.start);
            self.start = 0;
            self.searched = self.buf.len();
            if self.buf.len() > self.cap {
                self.searched = 0;
                self.buf.clear();
                self.skipping = true;
            }
            if self.ended {
                self.searched = 0;
                let last = std::mem::take(&mut self.buf);
                return (!last.is_empty() && !std::mem::take(&mut self.skipping)).then_some(last);
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.from.read(&mut chunk).await {
                Ok(0) | Err(_) => self.ended = true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// Writes each message to `to`, one a line, until they end or `to` is closed.
pub async fn write_lines<W: AsyncWrite + Unpin>(
    mut to: W,
    mut lines: mpsc::UnboundedReceiver<String>,
) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if to.write_all(line.as_bytes()).await.is_err() || to.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], cap: usize) -> Vec<String> {
        let mut lines = Lines::with_cap(input, cap);
        let mut out = Vec::new();
        while let Some(l) = lines.next().await {
            out.push(String::from_utf8(l).unwrap());
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_and_a_line_over_the_cap_is_passed_over_whole() {
        assert_eq!(all(b"a\n\nbc\nlast", 100).await, ["a", "", "bc", "last"]);
        let long = format!("x\n{}\ny\n{}", "z".repeat(300), "w".repeat(300));
        assert_eq!(all(long.as_bytes(), 100).await, ["x", "y"]);
    }
}
