//! Scanning a growing log for known issues, one call per growth: each call reads only the bytes
//! appended since the previous one (keeping the offset and the file's identity, like `tail -F`),
//! so a log is scanned once however often it is looked at.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use chrono::{DateTime, Utc};

use super::{Findings, PatternSet, strip_escapes};
use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::tail::LINE_CAP;

/// A log seen for the first time is scanned from this far before its end, not from its start:
/// what went wrong is near the end, and a 2 GiB log must not cost seconds to open.
pub const SCAN_WINDOW: u64 = 8 * 1024 * 1024;
/// Bytes read at a time.
const CHUNK: usize = 1024 * 1024;

#[derive(Debug, Default)]
pub struct IssueScanner {
    identity: Option<(u64, u64)>,
    offset: u64,
    /// A last line still waiting for its newline.
    carry: Vec<u8>,
    /// The first line of a window is cut: skip up to its newline.
    skip_partial: bool,
    pub findings: Findings,
    /// Bytes read and scanned so far (what proves old bytes are not scanned again).
    pub bytes_scanned: u64,
}

impl IssueScanner {
    pub fn new() -> IssueScanner {
        IssueScanner::default()
    }

    /// Scans what was appended to the log at `path` since the last call; the first call scans
    /// at most the last `window` bytes. Returns whether the findings changed. A truncated or
    /// replaced log is scanned again from its start (within the window).
    pub fn advance(&mut self, path: &Path, set: &PatternSet, window: u64) -> io::Result<bool> {
        let Some(file) = open_nofollow(path)? else {
            return Ok(false);
        };
        let md = file.metadata()?;
        let identity = (md.dev(), md.ino());
        let len = md.len();
        let mut changed = false;
        if self.identity != Some(identity) || len < self.offset {
            changed = !self.findings.is_empty();
            self.findings = Findings::default();
            self.identity = Some(identity);
            self.carry.clear();
            self.offset = len.saturating_sub(window);
            self.skip_partial = self.offset > 0;
        }
        let at = md.modified().ok().map(DateTime::<Utc>::from);
        Ok(self.read_to(&file, len, set, at)? || changed)
    }

    fn read_to(
        &mut self,
        file: &File,
        len: u64,
        set: &PatternSet,
        at: Option<DateTime<Utc>>,
    ) -> io::Result<bool> {
        if self.offset >= len {
            return Ok(false);
        }
        // Every matching line changes the findings (a count at least).
        let mut found = false;
        // Most logs are a few KiB: a buffer the size of what is new, up to a chunk.
        let size = ((len - self.offset) as usize).min(CHUNK);
        let mut buf = vec![0u8; size];
        let mut plain = Vec::with_capacity(size + self.carry.len());
        while self.offset < len {
            let want = ((len - self.offset) as usize).min(size);
            let n = file.read_at(&mut buf[..want], self.offset)?;
            if n == 0 {
                break;
            }
            self.offset += n as u64;
            self.bytes_scanned += n as u64;
            let mut data = &buf[..n];
            if self.skip_partial {
                match memchr::memchr(b'\n', data) {
                    Some(i) => {
                        data = &data[i + 1..];
                        self.skip_partial = false;
                    }
                    None => continue,
                }
            }
            let Some(last_nl) = memchr::memrchr(b'\n', data) else {
                self.hold(data);
                continue;
            };
            plain.clear();
            strip_escapes(&self.carry, &mut plain);
            self.carry.clear();
            strip_escapes(&data[..last_nl], &mut plain);
            let findings = &mut self.findings;
            set.scan_lines(&plain, |line, patterns| {
                found = true;
                findings.record(set, line, patterns, at)
            });
            self.hold(&data[last_nl + 1..]);
        }
        Ok(found)
    }

    /// Keeps a partial last line; a "line" longer than the cap is only its end.
    fn hold(&mut self, bytes: &[u8]) {
        self.carry.extend_from_slice(bytes);
        if self.carry.len() > LINE_CAP {
            let cut = self.carry.len() - LINE_CAP;
            self.carry.drain(..cut);
        }
    }
}
