//! Following a growing `output.log` like `tail -F`: keep the offset and the file's identity
//! (device, inode). A shorter file was truncated (start over); a new inode was replaced
//! (reopen from its start); a last line without its newline is held until the newline comes.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::tail::{LINE_CAP, RawLine};

/// Read at most this much per `poll`, so one burst cannot stall the caller.
const MAX_READ_PER_POLL: u64 = 8 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    Truncated,
    Replaced,
}

#[derive(Debug, Default)]
pub struct Chunk {
    /// Set when what was shown before no longer stands: the lines start again from the top.
    pub reset: Option<Reset>,
    pub lines: Vec<RawLine>,
    /// More bytes were waiting than one poll reads: poll again.
    pub more: bool,
}

pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    identity: Option<(u64, u64)>,
    offset: u64,
    partial: Vec<u8>,
    partial_cut: bool,
}

impl Follower {
    /// Follows `path` from byte `offset` of the already open `file`; `partial` is a last line
    /// already read whose newline has not come yet.
    pub fn resume(path: &Path, file: File, offset: u64, partial: Vec<u8>) -> io::Result<Follower> {
        let md = file.metadata()?;
        Ok(Follower {
            path: path.to_owned(),
            identity: Some((md.dev(), md.ino())),
            file: Some(file),
            offset,
            partial,
            partial_cut: false,
        })
    }

    /// Follows `path` from its beginning, whether or not it exists yet.
    pub fn from_start(path: &Path) -> Follower {
        Follower {
            path: path.to_owned(),
            file: None,
            identity: None,
            offset: 0,
            partial: Vec::new(),
            partial_cut: false,
        }
    }

    /// The last line so far, still waiting for its newline.
    pub fn partial(&self) -> &[u8] {
        &self.partial
    }

    /// Reads whatever was appended since the last call.
    pub fn poll(&mut self) -> io::Result<Chunk> {
        let mut chunk = Chunk::default();
        let md = match std::fs::symlink_metadata(&self.path) {
            Ok(md) => md,
            // Gone for now (rotated away, or not created yet): nothing to read.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(chunk),
            Err(e) => return Err(e),
        };
        let identity = (md.dev(), md.ino());
        if self.identity != Some(identity) || self.file.is_none() {
            let Some(file) = open_nofollow(&self.path)? else {
                return Ok(chunk);
            };
            let opened = file.metadata()?;
            if self.identity.is_some() {
                chunk.reset = Some(Reset::Replaced);
            }
            self.identity = Some((opened.dev(), opened.ino()));
            self.file = Some(file);
            self.start_over();
        }
        let Some(len) = self
            .file
            .as_ref()
            .map(|f| f.metadata().map(|m| m.len()))
            .transpose()?
        else {
            return Ok(chunk);
        };
        if len < self.offset {
            chunk.reset = Some(Reset::Truncated);
            self.start_over();
        }
        let Some(file) = &self.file else {
            return Ok(chunk);
        };
        let want = (len - self.offset).min(MAX_READ_PER_POLL);
        chunk.more = len - self.offset > want;
        if want == 0 {
            return Ok(chunk);
        }
        let mut buf = vec![0u8; want as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match file.read_at(&mut buf[filled..], self.offset + filled as u64)? {
                0 => break,
                n => filled += n,
            }
        }
        buf.truncate(filled);
        self.offset += filled as u64;
        self.split_lines(&buf, &mut chunk.lines);
        Ok(chunk)
    }

    fn start_over(&mut self) {
        self.offset = 0;
        self.partial.clear();
        self.partial_cut = false;
    }

    fn split_lines(&mut self, mut buf: &[u8], out: &mut Vec<RawLine>) {
        while let Some(nl) = memchr::memchr(b'\n', buf) {
            if self.partial.is_empty() {
                out.push(RawLine::capped(&buf[..nl], false));
            } else {
                self.partial.extend_from_slice(&buf[..nl]);
                let line = std::mem::take(&mut self.partial);
                let mut raw = RawLine::capped(&line, self.partial_cut);
                raw.cut |= self.partial_cut;
                out.push(raw);
                self.partial_cut = false;
            }
            buf = &buf[nl + 1..];
        }
        self.partial.extend_from_slice(buf);
        // An endless line without a newline keeps only its end, like every other line.
        if self.partial.len() > 4 * LINE_CAP {
            let keep = self.partial.len() - LINE_CAP;
            self.partial.drain(..keep);
            self.partial_cut = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn append(path: &Path, bytes: &[u8]) {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    fn texts(chunk: &Chunk) -> Vec<String> {
        chunk
            .lines
            .iter()
            .map(|l| String::from_utf8_lossy(&l.bytes).into_owned())
            .collect()
    }

    #[test]
    fn appends_partials_truncation_and_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let mut f = Follower::from_start(&path);
        assert!(
            f.poll().unwrap().lines.is_empty(),
            "absent file reads as nothing"
        );

        append(&path, b"one\ntw");
        let c = f.poll().unwrap();
        assert_eq!(texts(&c), ["one"]);
        assert_eq!(c.reset, None);
        assert_eq!(f.partial(), b"tw");

        append(&path, b"o\nthree\n");
        assert_eq!(texts(&f.poll().unwrap()), ["two", "three"]);
        assert!(f.poll().unwrap().lines.is_empty());

        std::fs::write(&path, b"x\n").unwrap(); // truncated in place, shorter
        let c = f.poll().unwrap();
        assert_eq!(c.reset, Some(Reset::Truncated));
        assert_eq!(texts(&c), ["x"]);

        let other = dir.path().join("new.log");
        std::fs::write(&other, b"fresh 1\nfresh 2\n").unwrap();
        std::fs::rename(&other, &path).unwrap(); // replaced: new inode
        let c = f.poll().unwrap();
        assert_eq!(c.reset, Some(Reset::Replaced));
        assert_eq!(texts(&c), ["fresh 1", "fresh 2"]);
    }

    #[test]
    fn an_endless_line_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let mut f = Follower::from_start(&path);
        for _ in 0..64 {
            append(&path, &[b'z'; 64 * 1024]);
            f.poll().unwrap();
            assert!(f.partial().len() <= 4 * LINE_CAP);
        }
        append(&path, b"END\n");
        let c = f.poll().unwrap();
        assert_eq!(c.lines.len(), 1);
        assert!(c.lines[0].cut);
        assert!(c.lines[0].bytes.ends_with(b"zEND"));
        assert!(c.lines[0].bytes.len() <= LINE_CAP);
    }
}
