//! Reading the end of `output.log` without reading the log: blocks are read backwards from the
//! end, so the cost depends on the lines asked for, never on the size of the file.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

pub mod backwards;

/// Blocks read backwards at a time.
const BLOCK: u64 = 64 * 1024;
/// Bytes kept of one line: its end, which is what a `\r` progress redraw leaves on screen.
pub const LINE_CAP: usize = 16 * 1024;
/// Window searched for the exit line; the supervisor's `\nexit:N\n` is a few bytes.
const EXIT_WINDOW: u64 = 4 * 1024;
const EXIT_WINDOW_MAX: u64 = 64 * 1024;
/// Bytes of the end read first for the exit line: one page touched, little copied.
const GLANCE: usize = 128;

/// One line from the log, without its `\n`. `cut` marks a line whose beginning was dropped
/// (longer than [`LINE_CAP`], or begun before the bytes a tail may read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLine {
    pub bytes: Vec<u8>,
    pub cut: bool,
}

impl RawLine {
    /// Builds a line, keeping at most [`LINE_CAP`] bytes of its end on a character boundary.
    pub fn capped(bytes: &[u8], cut: bool) -> RawLine {
        if bytes.len() <= LINE_CAP {
            return RawLine {
                bytes: bytes.to_vec(),
                cut,
            };
        }
        let mut start = bytes.len() - LINE_CAP;
        // Do not start inside a UTF-8 sequence (at most 3 continuation bytes).
        for _ in 0..3 {
            if bytes.get(start).is_some_and(|b| b & 0xC0 == 0x80) {
                start += 1;
            }
        }
        RawLine {
            bytes: bytes[start..].to_vec(),
            cut: true,
        }
    }
}

/// The last `n` lines of a file of length `len`.
///
/// Reads at most `(n + 1) * LINE_CAP` bytes (and at least 256 KiB when the file has them): a
/// file of very long lines gives fewer than `n` lines, the first marked `cut`, rather than
/// costing time proportional to the file.
pub fn last_lines(file: &File, len: u64, n: usize) -> io::Result<Vec<RawLine>> {
    // Saturating: `luzia logs -n` takes any count a person types.
    let budget = (n as u64)
        .saturating_add(1)
        .saturating_mul(LINE_CAP as u64)
        .max(256 * 1024);
    last_lines_within(file, len, n, budget)
}

/// The last `n` lines of a file of length `len`, reading at most `budget` bytes of its end
/// (at least one [`LINE_CAP`]): fewer lines when they are long, the first marked `cut`.
pub fn last_lines_within(file: &File, len: u64, n: usize, budget: u64) -> io::Result<Vec<RawLine>> {
    if n == 0 || len == 0 {
        return Ok(Vec::new());
    }
    let budget = budget.max(LINE_CAP as u64);
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut pos = len;
    let mut newlines = 0usize;
    let mut first = true;
    while pos > 0 && len - pos < budget {
        let size = BLOCK.min(pos).min(budget - (len - pos));
        pos -= size;
        let mut block = vec![0u8; size as usize];
        file.read_exact_at(&mut block, pos)?;
        let mut counted = &block[..];
        if first && counted.last() == Some(&b'\n') {
            // The final newline ends the last line; it does not start another.
            counted = &counted[..counted.len() - 1];
        }
        first = false;
        newlines += memchr::memchr_iter(b'\n', counted).count();
        blocks.push(block);
        if newlines >= n {
            break;
        }
    }
    let mut data = Vec::with_capacity(blocks.iter().map(Vec::len).sum());
    for block in blocks.iter().rev() {
        data.extend_from_slice(block);
    }
    if data.last() == Some(&b'\n') {
        data.pop();
    }
    let mut lines: Vec<RawLine> = Vec::with_capacity(n.min(1024));
    let mut end = data.len();
    while lines.len() < n {
        match memchr::memrchr(b'\n', &data[..end]) {
            Some(nl) => {
                lines.push(RawLine::capped(&data[nl + 1..end], false));
                end = nl;
            }
            None => {
                // The first bytes read: a whole line only if they start the file.
                lines.push(RawLine::capped(&data[..end], pos > 0));
                break;
            }
        }
    }
    lines.reverse();
    Ok(lines)
}

/// The exit code if the last non-empty line of the file is the supervisor's `exit:N`.
pub fn exit_code(file: &File, len: u64) -> io::Result<Option<i32>> {
    // A glance at the last bytes first: an exit line and the newline before it fit in a few,
    // and a whole last line found there is the one the window below would find. Else the window.
    let mut glance = [0u8; GLANCE];
    if len > GLANCE as u64 {
        file.read_exact_at(&mut glance, len - GLANCE as u64)?;
        let trimmed = glance.trim_ascii_end();
        if let Some(nl) = memchr::memrchr(b'\n', trimmed) {
            return Ok(parse_exit_line(&trimmed[nl + 1..]));
        }
    }
    let mut window = EXIT_WINDOW;
    loop {
        let size = window.min(len);
        let mut buf = vec![0u8; size as usize];
        file.read_exact_at(&mut buf, len - size)?;
        let trimmed = buf.trim_ascii_end();
        if trimmed.is_empty() {
            // Only blank bytes so far: look further back, within reason.
            if size == len || window >= EXIT_WINDOW_MAX {
                return Ok(None);
            }
            window *= 4;
            continue;
        }
        return Ok(match memchr::memrchr(b'\n', trimmed) {
            Some(nl) => parse_exit_line(&trimmed[nl + 1..]),
            None if size == len => parse_exit_line(trimmed),
            // A last line longer than the window is not an exit line.
            None => None,
        });
    }
}

/// `exit:N` (N a possibly negative integer), surrounding blanks and a `\r` allowed.
pub fn parse_exit_line(line: &[u8]) -> Option<i32> {
    let rest = line.trim_ascii().strip_prefix(b"exit:")?;
    let digits = rest.strip_prefix(b"-").unwrap_or(rest);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(content: &[u8]) -> (tempfile::NamedTempFile, File, u64) {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(content).unwrap();
        let f = File::open(tmp.path()).unwrap();
        let len = content.len() as u64;
        (tmp, f, len)
    }

    fn texts(lines: &[RawLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| String::from_utf8_lossy(&l.bytes).into_owned())
            .collect()
    }

    #[test]
    fn last_lines_table() {
        let cases: &[(&[u8], usize, &[&str])] = &[
            (b"", 5, &[]),
            (b"a\nb\nc\n", 2, &["b", "c"]),
            (b"a\nb\nc", 2, &["b", "c"]),
            (b"a\nb\nc\n", 10, &["a", "b", "c"]),
            (b"\n\n", 5, &["", ""]),
            (b"only", 1, &["only"]),
            (b"a\r\nb\r\n", 1, &["b\r"]),
            (b"x\n", 0, &[]),
        ];
        for (content, n, want) in cases {
            let (_t, f, len) = file_with(content);
            let got = last_lines(&f, len, *n).unwrap();
            assert_eq!(texts(&got), *want, "{content:?} n={n}");
            assert!(got.iter().all(|l| !l.cut));
        }
    }

    #[test]
    fn lines_across_block_boundaries() {
        let content: String = (0..50_000).map(|i| format!("line {i}\n")).collect();
        let (_t, f, len) = file_with(content.as_bytes());
        let got = texts(&last_lines(&f, len, 3).unwrap());
        assert_eq!(got, ["line 49997", "line 49998", "line 49999"]);
        let many = last_lines(&f, len, 20_000).unwrap();
        assert_eq!(many.len(), 20_000);
        assert_eq!(texts(&many[..1]), ["line 30000"]);
    }

    #[test]
    fn a_huge_line_is_cut_to_its_end() {
        let mut content = vec![b'x'; 5 * 1024 * 1024];
        content.extend_from_slice(b"END\nshort\n");
        let (_t, f, len) = file_with(&content);
        let got = last_lines(&f, len, 2).unwrap();
        assert_eq!(got.len(), 2);
        assert!(got[0].cut);
        assert_eq!(got[0].bytes.len(), LINE_CAP);
        assert!(got[0].bytes.ends_with(b"END"));
        assert_eq!(
            got[1],
            RawLine {
                bytes: b"short".to_vec(),
                cut: false
            }
        );
    }

    #[test]
    fn a_budget_bounds_what_is_read_whatever_the_lines() {
        // A 5 MiB line without its newline after one short line.
        let mut content = b"first\n".to_vec();
        content.extend(std::iter::repeat_n(b'y', 5 * 1024 * 1024));
        let (_t, f, len) = file_with(&content);
        let got = last_lines_within(&f, len, 2000, 1024 * 1024).unwrap();
        assert_eq!(
            got.len(),
            1,
            "only the end of the long line is within the budget"
        );
        assert!(got[0].cut);
        assert_eq!(got[0].bytes.len(), LINE_CAP);
        let small: String = (0..100).map(|i| format!("l{i}\n")).collect();
        let (_t, f, len) = file_with(small.as_bytes());
        let got = last_lines_within(&f, len, 2000, 1024 * 1024).unwrap();
        assert_eq!(got.len(), 100);
        assert!(!got[0].cut);
    }

    #[test]
    fn cutting_keeps_utf8_boundaries() {
        let line = "é".repeat(LINE_CAP); // 2 bytes each
        let capped = RawLine::capped(line.as_bytes(), false);
        assert!(capped.cut);
        assert!(std::str::from_utf8(&capped.bytes).is_ok());
    }

    #[test]
    fn exit_line_table() {
        let cases: &[(&[u8], Option<i32>)] = &[
            (b"", None),
            (b"working\n", None),
            (b"done\n\nexit:0\n", Some(0)),
            (b"done\n\nexit:1", Some(1)),
            (b"done\n\nexit:-9\n\n\n", Some(-9)),
            (b"done\nexit:137\r\n", Some(137)),
            (b"exit:0\nstill going\n", None),
            (b"exit:\n", None),
            (b"exit:abc\n", None),
            (b"exit:1.5\n", None),
            (b"exit: 3\n", None),
            (b"exit:0", Some(0)),
            (b"  exit:100  \n", Some(100)),
            (b"\xff\xfe\nexit:2\n", Some(2)),
            (b"prefix exit:0\n", None),
        ];
        for (content, want) in cases {
            let (_t, f, len) = file_with(content);
            assert_eq!(exit_code(&f, len).unwrap(), *want, "{content:?}");
        }
    }

    /// The glance at the last bytes and the window behind it agree wherever the lines fall:
    /// every case, with lines around [`GLANCE`] long before it, reads as it does alone.
    #[test]
    fn exit_line_whatever_the_lines_before_it() {
        let ends: &[(&[u8], Option<i32>)] = &[
            (b"\nexit:0\n", Some(0)),
            (b"\nexit:7", Some(7)),
            (b"\nexit:-9\n\n  \n", Some(-9)),
            (b"\nnot an exit line\n", None),
            (b"", None),
        ];
        for long in [
            GLANCE - 10,
            GLANCE - 1,
            GLANCE,
            GLANCE + 1,
            GLANCE + 40,
            5000,
        ] {
            for (end, want) in ends {
                let mut content = b"first\n".to_vec();
                content.extend(std::iter::repeat_n(b'x', long));
                content.extend_from_slice(end);
                let (_t, f, len) = file_with(&content);
                assert_eq!(exit_code(&f, len).unwrap(), *want, "{long} then {end:?}");
            }
            // A last line that is itself long, ending with what looks like an exit line.
            let mut content = b"first\n".to_vec();
            content.extend(std::iter::repeat_n(b'x', long));
            content.extend_from_slice(b"exit:0\n");
            let (_t, f, len) = file_with(&content);
            assert_eq!(exit_code(&f, len).unwrap(), None, "{long} x then exit:0");
            // Blank bytes after the exit line, more than a glance of them.
            let mut content = b"out\nexit:4".to_vec();
            content.extend(std::iter::repeat_n(b' ', long));
            let (_t, f, len) = file_with(&content);
            assert_eq!(
                exit_code(&f, len).unwrap(),
                Some(4),
                "exit:4 then {long} blanks"
            );
        }
    }

    #[test]
    fn exit_line_after_much_blank_space() {
        let mut content = b"out\nexit:3".to_vec();
        content.extend(std::iter::repeat_n(b'\n', 10_000));
        let (_t, f, len) = file_with(&content);
        assert_eq!(exit_code(&f, len).unwrap(), Some(3));
    }

    #[test]
    fn exit_line_after_a_huge_last_line_is_not_found_but_costs_little() {
        let mut content = b"exit:0\n".to_vec();
        content.extend(std::iter::repeat_n(b'y', 1 << 20));
        let (_t, f, len) = file_with(&content);
        assert_eq!(exit_code(&f, len).unwrap(), None);
    }
}
