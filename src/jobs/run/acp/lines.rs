//! The agent's stdout as JSON-RPC messages, one a line, read with a bound: a line longer than
//! [`LINE_CAP`] is passed over whole (its start is not taken for a message), so the supervisor's
//! memory stays small whatever the agent writes. And the client's messages to its stdin, the
//! same way.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The longest message read (a loaded session's history may carry whole files).
pub const LINE_CAP: usize = 16 * 1024 * 1024;

/// The most read at once.
const READ_CHUNK: usize = 64 * 1024;

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
            // Read into the buffer's room, not into a chunk of this future's own: a future
            // holding 64 KiB is copied through the supervisor's stack, whose pages, once
            // touched, stay its memory while it waits.
            self.buf.reserve(READ_CHUNK);
            if let Ok(0) | Err(_) = self.from.read_buf(&mut self.buf).await {
                self.ended = true;
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

    #[test]
    fn reading_a_line_holds_no_buffer_of_its_own() {
        // What is read goes to the heap, as much as arrives: a future holding a buffer of its
        // own would be copied, 64 KiB and more, through the supervisor's stack, whose touched
        // pages stay its memory for as long as it waits.
        let mut lines = Lines::new(&b""[..]);
        let next = lines.next();
        let size = std::mem::size_of_val(&next);
        assert!(size < 1024, "reading a line is a future of {size} bytes");
    }

    #[tokio::test]
    async fn lines_are_split_and_a_line_over_the_cap_is_passed_over_whole() {
        assert_eq!(all(b"a\n\nbc\nlast", 100).await, ["a", "", "bc", "last"]);
        let long = format!("x\n{}\ny\n{}", "z".repeat(300), "w".repeat(300));
        assert_eq!(all(long.as_bytes(), 100).await, ["x", "y"]);
    }
}
