//! Following a growing `output.log` like `tail -F`: keep the offset and the file's identity
//! (device, inode). A shorter file was truncated (start over); a new inode was replaced
//! (reopen from its start); a last line without its newline is held until the newline comes.
//!
//! One implementation for every reader that follows a log: the output pane, `luzia logs -f`
//! and the known-issue scanner. What one follower read can be handed to another reader of the
//! same log ([`Handoff`]), so that the cockpit reads the bytes of the log it shows only once.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::tail::{LINE_CAP, RawLine};

/// Read at most this much per `poll`, so one burst cannot stall the caller.
const MAX_READ_PER_POLL: u64 = 8 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    Truncated,
    Replaced,
    /// The reader jumped ahead to the end, over this many bytes it will never read (a log
    /// growing faster than it is shown). Only a reader that asks for it skips
    /// ([`Follower::skip_to_end`]); a follower's own chunks never say so.
    Skipped(u64),
}

#[derive(Debug, Default)]
pub struct Chunk {
    /// Set when what was shown before no longer stands: the lines start again from the top.
    pub reset: Option<Reset>,
    pub lines: Vec<RawLine>,
    /// More bytes were waiting than one poll reads: poll again.
    pub more: bool,
    /// Where in the file the bytes read begin (after a reset, where reading started over).
    pub start: u64,
    /// Bytes read from the file.
    pub read: u64,
    /// The file's modification time as it was read.
    pub modified: Option<SystemTime>,
}

/// Where a follower stands: which file (device, inode), how far it has read, and the last line
/// so far, still waiting for its newline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// `None` until the file is first opened.
    pub identity: Option<(u64, u64)>,
    pub offset: u64,
    partial: Vec<u8>,
    partial_cut: bool,
    /// Reading began inside a line (a window's start): its rest, up to the newline, is dropped.
    skip_line: bool,
}

/// Whole lines read by one poll, as bytes, each ended by its newline: `head`, the line held
/// from the poll before and completed by this one (empty when there was none), then
/// `buf[from..]`. The bytes read are moved here, not copied, so that they can be handed on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WholeLines {
    pub head: Vec<u8>,
    /// The first line (`head`'s when there is one) had its beginning dropped.
    pub first_cut: bool,
    buf: Vec<u8>,
    from: usize,
}

impl WholeLines {
    /// Lines given whole, each ended by its newline (another reader's, or a test's).
    pub fn from_text(text: Vec<u8>, first_cut: bool) -> WholeLines {
        WholeLines {
            head: Vec::new(),
            first_cut,
            buf: text,
            from: 0,
        }
    }

    /// The lines after `head`.
    pub fn body(&self) -> &[u8] {
        &self.buf[self.from..]
    }

    pub fn len(&self) -> usize {
        self.head.len() + self.body().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer the lines were read into, for the next poll to read into again.
    pub fn into_buf(self) -> Vec<u8> {
        self.buf
    }
}

/// What a follower read, handed to another reader of the same log so that it need not read the
/// bytes again: the whole lines of one poll, where they begin, and where the follower stands
/// after them.
#[derive(Clone, Debug)]
pub struct Handoff {
    pub reset: Option<Reset>,
    pub start: u64,
    pub text: WholeLines,
    pub end: Position,
    pub modified: Option<SystemTime>,
}

impl Handoff {
    /// Nothing read yet: the follower stands at `pos`, and what comes after is handed on.
    pub fn at(pos: &Position) -> Handoff {
        Handoff {
            reset: None,
            start: pos.offset,
            text: WholeLines::default(),
            end: pos.clone(),
            modified: None,
        }
    }
}

#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    pos: Position,
    /// A file seen for the first time, or again from its start after a truncation or a
    /// replacement, is read from at most this far before its end.
    window: u64,
    read_cap: u64,
    /// What `poll_text` and `poll_lines` read into, kept between polls (a reader that polls
    /// again at once does not allocate its buffer again) and dropped by [`Follower::release`].
    scratch: Vec<u8>,
}

impl Follower {
    /// Follows `path` from byte `offset` of the already open `file`; `partial` is a last line
    /// already read whose newline has not come yet.
    pub fn resume(path: &Path, file: File, offset: u64, partial: Vec<u8>) -> io::Result<Follower> {
        let md = file.metadata()?;
        let mut f = Follower::from_start(path);
        f.pos = Position {
            identity: Some((md.dev(), md.ino())),
            offset,
            partial,
            ..Position::default()
        };
        f.file = Some(file);
        Ok(f)
    }

    /// The line held from before (see [`Follower::resume`]) had its start dropped.
    pub fn partial_was_cut(mut self, cut: bool) -> Follower {
        self.pos.partial_cut = cut;
        self
    }

    /// Follows `path` from its beginning, whether or not it exists yet.
    pub fn from_start(path: &Path) -> Follower {
        Follower {
            path: path.to_owned(),
            file: None,
            pos: Position::default(),
            window: u64::MAX,
            read_cap: MAX_READ_PER_POLL,
            scratch: Vec::new(),
        }
    }

    /// Follows `path` from `window` bytes before its end (the first line there skipped, as it
    /// is cut), and from that far before the end again after a truncation or a replacement.
    pub fn windowed(path: &Path, window: u64) -> Follower {
        Follower {
            window,
            ..Follower::from_start(path)
        }
    }

    /// Reads at most `cap` bytes per poll (a smaller buffer for a reader that polls again at
    /// once).
    pub fn read_at_most(mut self, cap: u64) -> Follower {
        self.read_cap = cap.max(1);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last line so far, still waiting for its newline.
    pub fn partial(&self) -> &[u8] {
        &self.pos.partial
    }

    /// The last line so far, still waiting for its newline, as shown: its end at most
    /// [`LINE_CAP`] bytes long, `cut` when its start was dropped. `None` when there is none.
    pub fn partial_line(&self) -> Option<RawLine> {
        if self.pos.partial.is_empty() || self.pos.skip_line {
            return None;
        }
        Some(RawLine::capped(&self.pos.partial, self.pos.partial_cut))
    }

    /// When more than `behind` bytes wait to be read, jumps to `keep` bytes before the end
    /// (the line cut there comes `cut`) and returns how many bytes were jumped over: a reader
    /// that shows the end of a log need not read a gigabyte to show its last screen.
    pub fn skip_to_end(&mut self, behind: u64, keep: u64) -> io::Result<u64> {
        let (Some(identity), Some(_)) = (self.pos.identity, &self.file) else {
            return Ok(0);
        };
        let md = match std::fs::symlink_metadata(&self.path) {
            Ok(md) => md,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let len = md.len();
        if (md.dev(), md.ino()) != identity || len < self.pos.offset {
            // Replaced or truncated: the next poll says so, and reads from the window.
            return Ok(0);
        }
        if len - self.pos.offset <= behind {
            return Ok(0);
        }
        let to = len - keep.min(len);
        let skipped = to - self.pos.offset;
        self.pos.offset = to;
        // The line the jump lands in is kept, cut, rather than dropped: an endless line is
        // still shown, by its end.
        self.pos.skip_line = false;
        self.pos.partial.clear();
        self.pos.partial_cut = true;
        Ok(skipped)
    }

    pub fn position(&self) -> &Position {
        &self.pos
    }

    /// Stands where another follower of the same log stands, after taking what it read.
    pub fn set_position(&mut self, pos: Position) {
        if pos.identity != self.pos.identity {
            self.file = None;
        }
        self.pos = pos;
    }

    /// Closes the file and keeps the position: the next poll opens it again and carries on if
    /// it is still the same file (a reader of thousands of logs must not hold them all open).
    pub fn release(&mut self) {
        self.file = None;
        self.scratch = Vec::new();
    }

    /// What was read in `chunk` (its lines, copied), to hand to another reader of the same log.
    pub fn handoff(&self, chunk: &Chunk) -> Handoff {
        let mut text = Vec::with_capacity(chunk.lines.iter().map(|l| l.bytes.len() + 1).sum());
        for line in &chunk.lines {
            text.extend_from_slice(&line.bytes);
            text.push(b'\n');
        }
        let cut = chunk.lines.first().is_some_and(|l| l.cut);
        self.handoff_whole(chunk, WholeLines::from_text(text, cut))
    }

    /// What [`Follower::poll_whole`] read, handed on without a copy.
    pub fn handoff_whole(&self, chunk: &Chunk, text: WholeLines) -> Handoff {
        Handoff {
            reset: chunk.reset,
            start: chunk.start,
            text,
            end: self.pos.clone(),
            modified: chunk.modified,
        }
    }

    /// Reads whatever was appended since the last call.
    pub fn poll(&mut self) -> io::Result<Chunk> {
        let mut lines = Vec::new();
        let mut chunk =
            self.poll_lines(u64::MAX, |line, cut| lines.push(RawLine::capped(line, cut)))?;
        chunk.lines = lines;
        Ok(chunk)
    }

    /// Reads what was appended since the last call, up to byte `limit` of the file, and hands
    /// each complete line to `line` (with whether its beginning was dropped) instead of
    /// collecting them: `lines` of the chunk returned stays empty.
    pub fn poll_lines(
        &mut self,
        limit: u64,
        mut line: impl FnMut(&[u8], bool),
    ) -> io::Result<Chunk> {
        let mut buf = std::mem::take(&mut self.scratch);
        let chunk = self.read_new(limit, &mut buf);
        if chunk.is_ok() {
            let mut rest = self.complete_partial(&buf, |whole, cut| line(whole, cut));
            while let Some(nl) = memchr::memchr(b'\n', &buf[rest..]) {
                line(&buf[rest..rest + nl], false);
                rest += nl + 1;
            }
            self.hold(&buf[rest..]);
        }
        self.scratch = buf;
        chunk
    }

    /// Like [`Follower::poll_lines`], for a reader that takes text rather than lines (the
    /// known-issue scanner): `text` gets whole lines, each ended by its newline, in at most two
    /// slices, without a call per line.
    pub fn poll_text(&mut self, limit: u64, mut text: impl FnMut(&[u8])) -> io::Result<Chunk> {
        let mut buf = std::mem::take(&mut self.scratch);
        let chunk = self.read_new(limit, &mut buf);
        if chunk.is_ok() {
            let rest = self.complete_partial(&buf, |whole, _| {
                text(whole);
                text(b"\n");
            });
            let end = memchr::memrchr(b'\n', &buf[rest..]).map_or(rest, |nl| rest + nl + 1);
            if end > rest {
                text(&buf[rest..end]);
            }
            self.hold(&buf[end..]);
        }
        self.scratch = buf;
        chunk
    }

    /// Reads what was appended since the last call, up to byte `limit`, and returns its whole
    /// lines as they were read: a reader that turns only some of them into lines (the output
    /// pane, when a poll brings more than it can show) hands the rest on without copying them.
    /// `buf` is an allocation to read into (a previous poll's, from [`WholeLines::into_buf`]).
    pub fn poll_whole(&mut self, limit: u64, mut buf: Vec<u8>) -> io::Result<(Chunk, WholeLines)> {
        let chunk = self.read_new(limit, &mut buf)?;
        let mut head = None;
        let from = self.complete_partial(&buf, |whole, cut| head = Some((whole.to_vec(), cut)));
        let end = memchr::memrchr(b'\n', &buf[from..]).map_or(from, |nl| from + nl + 1);
        self.hold(&buf[end..]);
        buf.truncate(end);
        let (mut head, first_cut) = head.unwrap_or_default();
        if !head.is_empty() || first_cut {
            head.push(b'\n');
        }
        let text = WholeLines {
            head,
            first_cut,
            buf,
            from,
        };
        Ok((chunk, text))
    }

    /// Reads the bytes appended since the last call, up to byte `limit`.
    /// `buf` is emptied first and holds them after; its allocation is reused.
    fn read_new(&mut self, limit: u64, buf: &mut Vec<u8>) -> io::Result<Chunk> {
        buf.clear();
        let mut chunk = Chunk::default();
        let Some((len, modified)) = self.open(&mut chunk)? else {
            chunk.start = self.pos.offset;
            return Ok(chunk);
        };
        if len < self.pos.offset {
            chunk.reset = Some(Reset::Truncated);
            self.start_over(len);
        }
        chunk.start = self.pos.offset;
        chunk.modified = modified;
        let Some(file) = &self.file else {
            return Ok(chunk);
        };
        let end = len.min(limit).max(self.pos.offset);
        let want = (end - self.pos.offset).min(self.read_cap);
        chunk.more = end - self.pos.offset > want;
        buf.resize(want as usize, 0);
        let mut filled = 0;
        while filled < buf.len() {
            match file.read_at(&mut buf[filled..], self.pos.offset + filled as u64)? {
                0 => break,
                n => filled += n,
            }
        }
        buf.truncate(filled);
        self.pos.offset += filled as u64;
        chunk.read = filled as u64;
        Ok(chunk)
    }

    /// The length and modification time of the file at the path, opening it when it is not
    /// open or was replaced; `None` when there is nothing to read (not created yet, or gone).
    fn open(&mut self, chunk: &mut Chunk) -> io::Result<Option<(u64, Option<SystemTime>)>> {
        if self.file.is_some() {
            let md = match std::fs::symlink_metadata(&self.path) {
                Ok(md) => md,
                // Gone for now (rotated away): nothing to read.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            if self.pos.identity == Some((md.dev(), md.ino())) {
                return Ok(Some((md.len(), md.modified().ok())));
            }
        }
        let Some(file) = open_nofollow(&self.path)? else {
            return Ok(None);
        };
        let md = file.metadata()?;
        let identity = (md.dev(), md.ino());
        match self.pos.identity {
            // Opened again after `release`: carry on where we were.
            Some(old) if old == identity => {}
            Some(_) => {
                chunk.reset = Some(Reset::Replaced);
                self.start_over(md.len());
            }
            None => self.start_over(md.len()),
        }
        self.pos.identity = Some(identity);
        self.file = Some(file);
        Ok(Some((md.len(), md.modified().ok())))
    }

    fn start_over(&mut self, len: u64) {
        self.pos.offset = len.saturating_sub(self.window);
        self.pos.skip_line = self.pos.offset > 0;
        self.pos.partial.clear();
        self.pos.partial_cut = false;
    }

    /// Drops the rest of a cut line (reading began inside it) and completes the line held from
    /// before with the first bytes of `buf`, handing it to `line`. Returns where the bytes not
    /// yet used begin (`buf.len()` when `buf` held no newline and went to the held line).
    fn complete_partial(&mut self, buf: &[u8], mut line: impl FnMut(&[u8], bool)) -> usize {
        let mut at = 0;
        if self.pos.skip_line {
            let Some(nl) = memchr::memchr(b'\n', buf) else {
                return buf.len();
            };
            at = nl + 1;
            self.pos.skip_line = false;
        }
        if self.pos.partial.is_empty() && !self.pos.partial_cut {
            return at;
        }
        let Some(nl) = memchr::memchr(b'\n', &buf[at..]) else {
            self.hold(&buf[at..]);
            return buf.len();
        };
        let pos = &mut self.pos;
        pos.partial.extend_from_slice(&buf[at..at + nl]);
        line(&pos.partial, pos.partial_cut);
        pos.partial.clear();
        pos.partial_cut = false;
        at + nl + 1
    }

    /// Keeps the start of a line whose newline has not come yet.
    fn hold(&mut self, bytes: &[u8]) {
        let pos = &mut self.pos;
        pos.partial.extend_from_slice(bytes);
        // An endless line without a newline keeps only its end, like every other line.
        if pos.partial.len() > 4 * LINE_CAP {
            let keep = pos.partial.len() - LINE_CAP;
            pos.partial.drain(..keep);
            pos.partial_cut = true;
        }
    }
}

#[cfg(test)]
mod tests;
