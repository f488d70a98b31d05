//! A file's lines from its end backwards, one at a time, in bounded memory: for a file another
//! program writes (an agent's own session file) where what is wanted is near the end but how
//! near is not known. What is read is bounded by a budget of bytes, what is held by the block
//! and the longest line wanted; a longer line is passed over unread, never grown into.

use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;

/// Blocks read backwards at a time.
const BLOCK: usize = 64 * 1024;

/// How a backward read ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The visitor said it had what it wanted.
    Stopped,
    /// The first line of the file was visited.
    Start,
    /// The budget was spent before either.
    Budget,
}

/// Visits the lines of `file` (of length `len`) from the last to the first, without their
/// `\n`, until `visit` breaks, the file's start, or `budget` bytes have been read. A line longer
/// than `max_line` is skipped (not visited); the partial line at the budget's edge is not
/// visited either.
pub fn lines_backwards(
    file: &File,
    len: u64,
    budget: u64,
    max_line: usize,
    mut visit: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> io::Result<Ended> {
    // The bytes of the line being gathered, which begins before the block read last.
    let mut carry: Vec<u8> = Vec::new();
    // The line being gathered is longer than `max_line`: passed over up to its beginning.
    let mut skipping = false;
    let mut block = vec![0u8; BLOCK];
    let mut pos = len;
    let mut read = 0u64;
    let mut first = true;
    while pos > 0 {
        if read >= budget {
            return Ok(Ended::Budget);
        }
        let size = (BLOCK as u64).min(pos).min(budget - read) as usize;
        pos -= size as u64;
        read += size as u64;
        let buf = &mut block[..size];
        file.read_exact_at(buf, pos)?;
        let mut end = size;
        if first && buf.last() == Some(&b'\n') {
            // The final newline ends the last line; it does not start another.
            end -= 1;
        }
        first = false;
        while let Some(nl) = memchr::memrchr(b'\n', &buf[..end]) {
            let piece = &buf[nl + 1..end];
            end = nl;
            if skipping || carry.len() + piece.len() > max_line {
                skipping = false;
                carry.clear();
                continue;
            }
            let flow = if carry.is_empty() {
                visit(piece)
            } else {
                let mut line = Vec::with_capacity(piece.len() + carry.len());
                line.extend_from_slice(piece);
                line.extend_from_slice(&carry);
                carry.clear();
                visit(&line)
            };
            if flow.is_break() {
                return Ok(Ended::Stopped);
            }
        }
        // The rest begins in a block not read yet.
        if !skipping {
            if carry.len() + end > max_line {
                skipping = true;
                carry = Vec::new();
            } else {
                let mut joined = buf[..end].to_vec();
                joined.extend_from_slice(&carry);
                carry = joined;
            }
        }
    }
    if pos == 0 && !skipping && read > 0 && visit(&carry).is_break() {
        return Ok(Ended::Stopped);
    }
    Ok(Ended::Start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn file_with(content: &[u8]) -> (tempfile::NamedTempFile, File, u64) {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(content).unwrap();
        let f = File::open(tmp.path()).unwrap();
        (tmp, f, content.len() as u64)
    }

    fn all(content: &[u8], budget: u64, max_line: usize) -> (Vec<Vec<u8>>, Ended) {
        let (_t, f, len) = file_with(content);
        let mut seen = Vec::new();
        let ended = lines_backwards(&f, len, budget, max_line, |l| {
            seen.push(l.to_vec());
            ControlFlow::Continue(())
        })
        .unwrap();
        (seen, ended)
    }

    #[test]
    fn lines_come_last_first_and_a_long_one_is_passed_over() {
        let mut content = b"one\n".to_vec();
        content.extend(std::iter::repeat_n(b'x', 200_000));
        content.extend_from_slice(b"\nthree\n");
        let (seen, ended) = all(&content, u64::MAX, 1000);
        assert_eq!(seen, [b"three".to_vec(), b"one".to_vec()]);
        assert_eq!(ended, Ended::Start);
        let (seen, _) = all(b"", u64::MAX, 10);
        assert!(seen.is_empty());
        let (seen, _) = all(b"\n\na", u64::MAX, 10);
        assert_eq!(seen, [b"a".to_vec(), b"".to_vec(), b"".to_vec()]);
    }

    #[test]
    fn the_budget_bounds_the_read_and_a_visitor_may_stop() {
        let content: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let (seen, ended) = all(content.as_bytes(), 100_000, 100);
        assert_eq!(ended, Ended::Budget);
        assert!(seen.len() < 100_000 / 6, "{}", seen.len());
        assert_eq!(seen[0], b"line 99999");
        let (_t, f, len) = file_with(content.as_bytes());
        let mut n = 0;
        let ended = lines_backwards(&f, len, u64::MAX, 100, |_| {
            n += 1;
            if n == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!((ended, n), (Ended::Stopped, 3));
    }

    proptest! {
        /// Whatever the lines and where the blocks fall, the lines visited are the file's
        /// lines no longer than the limit, last first.
        #[test]
        fn every_short_line_is_visited_in_reverse(
            lines in proptest::collection::vec(
                prop_oneof![
                    3 => "[a-z]{0,40}",
                    1 => (60_000usize..70_000).prop_map(|n| "y".repeat(n)),
                ],
                0..12,
            ),
            trailing in any::<bool>(),
        ) {
            let mut content = lines.join("\n");
            if trailing && !lines.is_empty() {
                content.push('\n');
            }
            let (seen, _) = all(content.as_bytes(), u64::MAX, 100);
            // The model: the file split at its newlines, a final one ending the last line.
            let mut want: Vec<Vec<u8>> = if content.is_empty() {
                Vec::new()
            } else {
                content
                    .strip_suffix('\n')
                    .unwrap_or(&content)
                    .split('\n')
                    .filter(|l| l.len() <= 100)
                    .map(|l| l.as_bytes().to_vec())
                    .collect()
            };
            want.reverse();
            prop_assert_eq!(seen, want);
        }
    }
}
