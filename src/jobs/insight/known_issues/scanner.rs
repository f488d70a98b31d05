//! Scanning a growing log for known issues, one call per growth: each call reads only the bytes
//! appended since the previous one, with the same follower as the output pane (offset and the
//! file's identity, like `tail -F`), so a log is scanned once however often it is looked at.
//! The lines another follower of the log has read can be handed in instead ([`IssueScanner::take`]),
//! so the log on screen is not read twice.

use std::io;
use std::path::Path;
use std::time::SystemTime;

use chrono::{DateTime, Utc};

use super::{Findings, PatternSet, strip_escapes};
use crate::jobs::fs::follow::{Follower, Handoff, Position, WholeLines};

/// A log seen for the first time is scanned from this far before its end, not from its start:
/// what went wrong is near the end, and a 2 GiB log must not cost seconds to open.
pub const SCAN_WINDOW: u64 = 8 * 1024 * 1024;
/// Bytes read at a time, into one buffer kept for the whole scan: a log far ahead of the scanner
/// (a gigabyte written at once) costs this much memory, not more. Larger reads scan no faster.
const CHUNK: u64 = 256 * 1024;

#[derive(Debug, Default)]
pub struct IssueScanner {
    /// Where the scan stands in the log between two scans: a position only (no path, no file,
    /// no buffer), as the cockpit keeps one scanner for every job of the root. The follower
    /// that reads is made from it for one scan.
    stand: Stand,
    pub findings: Findings,
    /// Bytes read and scanned so far (what proves old bytes are not scanned again).
    pub bytes_scanned: u64,
}

/// Where a scan stopped. Most logs end with a newline (an exit line last): their place is a
/// file and an offset; a log whose last line has not ended keeps that line, boxed.
#[derive(Debug, Default)]
enum Stand {
    #[default]
    Unread,
    At {
        /// The file's device and inode: a replaced log is read again from its start.
        file: (u64, u64),
        offset: u64,
    },
    Within(Box<Position>),
}

impl IssueScanner {
    pub fn new() -> IssueScanner {
        IssueScanner::default()
    }

    /// Scans what was appended to the log at `path` since the last call; the first call scans
    /// at most the last `window` bytes. Returns whether the findings changed. A truncated or
    /// replaced log is scanned again from its start (within the window).
    pub fn advance(&mut self, path: &Path, set: &PatternSet, window: u64) -> io::Result<bool> {
        let mut follower = self.follower(path, window);
        let result = self.read_to(&mut follower, set, u64::MAX);
        self.keep(&follower);
        result
    }

    /// Takes the lines another follower of the log at `path` read (the output pane's), so they
    /// are scanned without being read again. Whatever the scanner had not read before them it
    /// reads first; what it had read already is not scanned twice. Returns whether the findings
    /// changed.
    pub fn take(
        &mut self,
        path: &Path,
        handed: &Handoff,
        set: &PatternSet,
        window: u64,
    ) -> io::Result<bool> {
        let mut follower = self.follower(path, window);
        let result = self.take_inner(&mut follower, handed, set);
        self.keep(&follower);
        result
    }

    fn take_inner(
        &mut self,
        follower: &mut Follower,
        handed: &Handoff,
        set: &PatternSet,
    ) -> io::Result<bool> {
        let mut changed = false;
        if handed.reset.is_some() {
            // The handed lines start the log over: what was found before is of another log.
            changed = !self.findings.is_empty();
            self.findings = Findings::default();
        } else {
            let Some(identity) = handed.end.identity else {
                return Ok(false);
            };
            let mine = follower.position();
            if mine.identity != Some(identity) || mine.offset < handed.start {
                // Behind, or never read this file: read what comes before the handed lines.
                changed |= self.read_to(follower, set, handed.start)?;
            }
            let mine = follower.position();
            if mine.identity != Some(identity) || mine.offset > handed.start {
                if mine.identity == Some(identity) && mine.offset < handed.end.offset {
                    // Read past where the handed lines begin (asked to scan meanwhile): the
                    // rest of them is read again rather than scanned twice.
                    changed |= self.read_to(follower, set, handed.end.offset)?;
                }
                // Otherwise the file changed under both: the next handoff says how.
                return Ok(changed);
            }
        }
        let mut plain = Vec::new();
        changed |= scan_whole(
            &mut self.findings,
            set,
            &handed.text,
            &mut plain,
            handed.modified,
        );
        follower.set_position(handed.end.clone());
        Ok(changed)
    }

    /// A follower of the log at `path` standing where the last scan stopped (at most `window`
    /// bytes before the end of a log not read yet).
    fn follower(&mut self, path: &Path, window: u64) -> Follower {
        let mut follower = Follower::windowed(path, window).read_at_most(CHUNK);
        match std::mem::take(&mut self.stand) {
            Stand::Unread => {}
            Stand::At { file, offset } => {
                let mut pos = Position::default();
                pos.identity = Some(file);
                pos.offset = offset;
                follower.set_position(pos);
            }
            Stand::Within(pos) => follower.set_position(*pos),
        }
        follower
    }

    /// Keeps where `follower` stands, and nothing else of it: the file is closed (thousands of
    /// scanners must not hold thousands of open files) and its buffer dropped. The findings
    /// lose their spare room too: most logs never grow again once scanned.
    fn keep(&mut self, follower: &Follower) {
        let pos = follower.position();
        let mut plain = Position::default();
        plain.identity = pos.identity;
        plain.offset = pos.offset;
        self.stand = match pos.identity {
            None if *pos == Position::default() => Stand::Unread,
            Some(file) if *pos == plain => Stand::At {
                file,
                offset: pos.offset,
            },
            _ => Stand::Within(Box::new(pos.clone())),
        };
    }

    /// Reads and scans the log up to byte `limit`, [`CHUNK`] bytes at a time into one buffer.
    fn read_to(
        &mut self,
        follower: &mut Follower,
        set: &PatternSet,
        limit: u64,
    ) -> io::Result<bool> {
        let mut changed = false;
        let mut buf = Vec::new();
        let mut plain = Vec::new();
        loop {
            let (chunk, text) = follower.poll_whole(limit, buf)?;
            if chunk.reset.is_some() {
                changed |= !self.findings.is_empty();
                self.findings = Findings::default();
            }
            self.bytes_scanned += chunk.read;
            changed |= scan_whole(&mut self.findings, set, &text, &mut plain, chunk.modified);
            buf = text.into_buf();
            if !chunk.more {
                return Ok(changed);
            }
        }
    }
}

/// Scans whole lines into `findings`, stripping escape sequences into `plain` only where there
/// are any (most text has none, and is scanned where it lies). Every matching line changes the
/// findings (a count at least): returns whether any matched.
fn scan_whole(
    findings: &mut Findings,
    set: &PatternSet,
    text: &WholeLines,
    plain: &mut Vec<u8>,
    modified: Option<SystemTime>,
) -> bool {
    let at = modified.map(DateTime::<Utc>::from);
    let mut found = false;
    for part in [text.head.as_slice(), text.body()] {
        // Without its final newline, which would end one more, empty, line.
        let part = part.strip_suffix(b"\n").unwrap_or(part);
        if part.is_empty() {
            continue;
        }
        if memchr::memchr(0x1b, part).is_none() {
            found |= findings.record_lines(set, part, at);
        } else {
            plain.clear();
            strip_escapes(part, plain);
            found |= findings.record_lines(set, plain, at);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::fs::files::tests::{mkfifo, returns};
    use std::io::Write;

    fn append(path: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    fn names(set: &PatternSet, f: &Findings) -> Vec<(String, u32)> {
        f.found
            .iter()
            .map(|x| (set.pattern(x.pattern).name.clone(), x.count))
            .collect()
    }

    const DISK: &[u8] = b"OSError: [Errno 28] No space left on device\n";
    const HOST: &[u8] = b"curl: (6) Could not resolve host: github.com\n";

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        mkfifo(&path);
        let err = returns("scanning a FIFO", move || {
            IssueScanner::new().advance(&path, &PatternSet::builtin(), SCAN_WINDOW)
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("is a FIFO, not a regular file"), "{err}");
    }

    #[test]
    fn a_scanned_log_keeps_no_more_than_its_findings_need() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let set = PatternSet::builtin();
        append(&path, b"building\n");
        let mut scanner = IssueScanner::new();
        scanner.advance(&path, &set, SCAN_WINDOW).unwrap();
        assert!(
            std::sync::Arc::ptr_eq(&scanner.findings.found, &Findings::default().found),
            "nothing found: the one shared empty list"
        );
        append(&path, DISK);
        assert!(scanner.advance(&path, &set, SCAN_WINDOW).unwrap());
        let found = &scanner.findings.found;
        assert_eq!(found.len(), 1);
        assert!(
            matches!(scanner.stand, Stand::At { .. }),
            "{:?}",
            scanner.stand
        );
        // A last line without its newline yet is kept, and completed by the next scan.
        append(&path, b"OSError: [Errno 28] No space");
        scanner.advance(&path, &set, SCAN_WINDOW).unwrap();
        assert!(
            matches!(scanner.stand, Stand::Within(_)),
            "{:?}",
            scanner.stand
        );
        append(&path, b" left on device\n");
        assert!(scanner.advance(&path, &set, SCAN_WINDOW).unwrap());
        assert_eq!(scanner.findings.found[0].count, 2, "{:?}", scanner.findings);
        // The scanner's whole state stays small: the cockpit keeps one per live job (the
        // findings' slice is a wide pointer, 8 bytes more than a `Vec`'s, whose header and
        // allocation it saves).
        assert!(std::mem::size_of::<IssueScanner>() <= 56);
    }

    #[test]
    fn lines_handed_in_are_scanned_without_being_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let set = PatternSet::builtin();
        append(&path, b"building\n");
        let mut scanner = IssueScanner::new();
        scanner.advance(&path, &set, SCAN_WINDOW).unwrap();
        let read_before = scanner.bytes_scanned;

        // The output pane follows the log from where it is now.
        let mut pane = Follower::from_start(&path);
        pane.poll().unwrap();
        append(&path, DISK);
        append(&path, b"still going\n");
        let chunk = pane.poll().unwrap();
        assert!(
            scanner
                .take(&path, &pane.handoff(&chunk), &set, SCAN_WINDOW)
                .unwrap()
        );
        assert_eq!(names(&set, &scanner.findings), [("disk-full".into(), 1)]);
        assert_eq!(scanner.bytes_scanned, read_before, "nothing read again");

        // Scanning on its own again carries on after the handed lines.
        append(&path, HOST);
        assert!(scanner.advance(&path, &set, SCAN_WINDOW).unwrap());
        assert_eq!(scanner.bytes_scanned, read_before + HOST.len() as u64);
        assert_eq!(
            names(&set, &scanner.findings),
            [("disk-full".into(), 1), ("network-error".into(), 1)]
        );
    }

    #[test]
    fn a_scanner_behind_reads_up_to_the_handed_lines_and_one_ahead_skips_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let set = PatternSet::builtin();
        append(&path, DISK);
        let mut pane = Follower::from_start(&path);
        pane.poll().unwrap();
        append(&path, HOST);
        let handed = {
            let chunk = pane.poll().unwrap();
            pane.handoff(&chunk)
        };

        // Never scanned: reads what comes before the handed lines, takes the rest.
        let mut behind = IssueScanner::new();
        behind.take(&path, &handed, &set, SCAN_WINDOW).unwrap();
        assert_eq!(behind.bytes_scanned, DISK.len() as u64);
        assert_eq!(
            names(&set, &behind.findings),
            [("disk-full".into(), 1), ("network-error".into(), 1)]
        );

        // Already scanned past them (asked to scan meanwhile): nothing is counted twice.
        let mut ahead = IssueScanner::new();
        ahead.advance(&path, &set, SCAN_WINDOW).unwrap();
        let read = ahead.bytes_scanned;
        assert!(!ahead.take(&path, &handed, &set, SCAN_WINDOW).unwrap());
        assert_eq!(ahead.bytes_scanned, read);
        assert_eq!(names(&set, &ahead.findings), names(&set, &behind.findings));
    }

    #[test]
    fn a_handed_reset_starts_the_findings_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let set = PatternSet::builtin();
        append(&path, DISK);
        let mut pane = Follower::from_start(&path);
        let mut scanner = IssueScanner::new();
        let chunk = pane.poll().unwrap();
        scanner
            .take(&path, &pane.handoff(&chunk), &set, SCAN_WINDOW)
            .unwrap();
        assert_eq!(names(&set, &scanner.findings), [("disk-full".into(), 1)]);

        std::fs::write(&path, b"Segmentation fault (core dumped)\n").unwrap(); // shorter
        let chunk = pane.poll().unwrap();
        assert!(chunk.reset.is_some());
        assert!(
            scanner
                .take(&path, &pane.handoff(&chunk), &set, SCAN_WINDOW)
                .unwrap()
        );
        assert_eq!(names(&set, &scanner.findings), [("crash".into(), 1)]);
        assert_eq!(scanner.bytes_scanned, 0, "the scanner itself read nothing");
    }
}
