//! The index file's bytes, read a block at a time so that a root of 100,000 jobs never has its
//! whole index in memory. Little-endian throughout:
//!
//! ```text
//! head:    "luzia-index\n"  FORMAT: u32  version: str16  root: str16
//! blocks:  entry * (up to BLOCK), ids ascending across the whole file; each entry:
//!              id: str8  dir: stamp  files: u8
//!              file * files:  tag: u8 (meta.json, output.log, progress.json, stop.json)
//!                             kind: u8 (0 absent | 1 bytes: stamp, len: u32, bytes
//!                                       | 2 log end: stamp, has code: u8, code: i32)
//! table:   count: u32, then per block: first id: str8, offset: u64, len: u32, entries: u32,
//!          checksum of the block: u64
//! trail:   table's offset: u64, checksum of head and table: u64
//! stamp:   dev major u32, dev minor u32, ino u64, size u64, mtime s i64 ns u32, ctime s i64 ns u32
//! ```
//!
//! Every read is bounds-checked: a torn, foreign or hostile file is refused whole (the head's and
//! the table's checksum) or block by block (each block's checksum, the order of its ids), never
//! trusted and never a panic.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{FILES, Stamp, Taken, Tape};

const MAGIC: &[u8] = b"luzia-index\n";
/// Bumped whenever what an entry means changes (a field, or what output.log's end is read for).
/// 2: meta.json's entry holds its parsed record (`Meta::record`), not its bytes.
const FORMAT: u32 = 2;
/// Entries a block: a block is read and checked whole (about 400 KB of a typical root).
pub const BLOCK: usize = 1024;
const TRAIL: u64 = 16;
/// A stamp's bytes.
const STAMP: usize = 48;
/// No table of a sane index is larger (a block per 1,024 jobs, 150 bytes each).
const TABLE_CAP: u64 = 64 * 1024 * 1024;
/// Nor a block (1,024 entries of meta.json files of up to 8 MiB are refused as too large).
const BLOCK_CAP: u32 = 256 * 1024 * 1024;

/// A 64-bit hash of `bytes`, eight at a time: enough to tell a torn or damaged file (and to name
/// a root's index file), at memory speed.
pub fn checksum(bytes: &[u8]) -> u64 {
    checksum_parts(&[bytes])
}

/// [`checksum`] of the parts laid end to end, each part's length mixed in.
fn checksum_parts(parts: &[&[u8]]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = K;
    for bytes in parts {
        h = (h ^ bytes.len() as u64).wrapping_mul(K);
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let w = u64::from_le_bytes(<[u8; 8]>::try_from(w).unwrap_or_default());
            h = (h ^ w).wrapping_mul(K).rotate_left(31);
        }
        let mut tail = [0u8; 8];
        tail[..words.remainder().len()].copy_from_slice(words.remainder());
        h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// Where a block is and what it must hash to.
#[derive(Clone, Debug)]
struct Block {
    first: Box<[u8]>,
    offset: u64,
    len: u32,
    entries: u32,
    checksum: u64,
}

/// An index file opened: its table of blocks, checked; the blocks are read as they are asked for.
#[derive(Debug)]
pub struct Index {
    file: File,
    blocks: Vec<Block>,
}

impl Index {
    /// Opens the index at `path` of the jobs root `root`. `None` when there is none, or it is
    /// not one this build wrote for that root, or its table is damaged: it is then rebuilt.
    pub fn load(path: &Path, root: &Path) -> Option<Index> {
        // Never blocks, never a link: a FIFO there must not hang a listing (see `files`).
        let file = crate::jobs::fs::files::open_nofollow(path).ok()??;
        let index = Index::open(file, root);
        if index.is_none() {
            tracing::info!(path = %path.display(), "the jobs index is not one to use: ignored");
        }
        index
    }

    fn open(file: File, root: &Path) -> Option<Index> {
        let len = file.metadata().ok()?.len();
        let trail: [u8; TRAIL as usize] = read_at(&file, len.checked_sub(TRAIL)?, TRAIL)?
            .try_into()
            .ok()?;
        let table_at = u64::from_le_bytes(trail[..8].try_into().ok()?);
        let sum = u64::from_le_bytes(trail[8..].try_into().ok()?);
        let table_len = (len - TRAIL).checked_sub(table_at)?;
        let head = head(root);
        if table_len > TABLE_CAP || table_at < head.len() as u64 {
            return None;
        }
        let table = read_at(&file, table_at, table_len)?;
        let on_disk = read_at(&file, 0, head.len() as u64)?;
        if on_disk != head || checksum_parts(&[&head, &table]) != sum {
            return None;
        }
        let mut r = Reader {
            bytes: &table,
            at: 0,
        };
        let count = r.u32()?;
        let mut blocks = Vec::with_capacity(usize::try_from(count).ok()?.min(table.len() / 25));
        let mut end = head.len() as u64;
        for _ in 0..count {
            let block = Block {
                first: r.str8()?.into(),
                offset: r.u64()?,
                len: r.u32()?,
                entries: r.u32()?,
                checksum: r.u64()?,
            };
            // Laid end to end, ids ascending from block to block.
            let ordered = blocks.last().is_none_or(|b: &Block| b.first < block.first);
            if block.offset != end || block.len > BLOCK_CAP || !ordered {
                return None;
            }
            end += u64::from(block.len);
            blocks.push(block);
        }
        (r.at == table.len() && end == table_at).then_some(Index { file, blocks })
    }

    /// Entries, by the table.
    pub fn len(&self) -> usize {
        self.blocks.iter().map(|b| b.entries as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// A cursor for looking jobs up in ascending order of their ids.
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            index: self,
            block: None,
            bytes: Vec::new(),
            at: 0,
        }
    }
}

/// Reads `len` bytes of `file` at `offset`, all of them or `None`.
fn read_at(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

/// What an index file begins with, for the root `root` and this build.
fn head(root: &Path) -> Vec<u8> {
    // The canonical path, as the file's name is made of: `jobs`, `./jobs` and `/srv/jobs` are
    // one root, and one index, not indexes rewritten in turn by whoever reads it.
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    let mut w = Vec::new();
    w.extend_from_slice(MAGIC);
    w.extend_from_slice(&FORMAT.to_le_bytes());
    put_str16(&mut w, env!("CARGO_PKG_VERSION").as_bytes());
    put_str16(&mut w, canonical.as_os_str().as_encoded_bytes());
    w
}

/// Looks entries up in ascending order of their ids, reading each block once (ids asked out of
/// order are still found, by reading the block from its start again).
pub struct Cursor<'a> {
    index: &'a Index,
    /// The block in `bytes` (`Some` even when it failed its checks: `bytes` is then empty).
    block: Option<usize>,
    bytes: Vec<u8>,
    /// Where the next entry of the block starts.
    at: usize,
}

impl Cursor<'_> {
    /// The entry of job `id`, as a tape to replay, and its bytes as they stand in the file.
    pub fn find(&mut self, id: &str) -> Option<(Tape<'_>, &[u8])> {
        let id = id.as_bytes();
        let blocks = &self.index.blocks;
        let n = blocks.partition_point(|b| &*b.first <= id).checked_sub(1)?;
        if self.block != Some(n) {
            self.load(n);
        }
        let mut r = Reader {
            bytes: &self.bytes,
            at: self.at,
        };
        // Asked out of order: from the block's start again.
        if r.peek_id().is_none_or(|next| next > id) {
            r.at = 0;
        }
        loop {
            let start = r.at;
            match r.peek_id()?.cmp(id) {
                std::cmp::Ordering::Less => {
                    r.skip_entry()?;
                }
                std::cmp::Ordering::Greater => {
                    self.at = start;
                    return None;
                }
                std::cmp::Ordering::Equal => {
                    let (_, tape) = r.entry()?;
                    self.at = r.at;
                    return Some((tape, &self.bytes[start..r.at]));
                }
            }
        }
    }

    /// Reads block `n` and checks it: its checksum, its count, its ids ascending from the
    /// first the table names. A block that fails is empty: its jobs are read from their files.
    fn load(&mut self, n: usize) {
        self.block = Some(n);
        self.at = 0;
        self.bytes.clear();
        let Some(b) = self.index.blocks.get(n) else {
            return;
        };
        let Ok(len) = usize::try_from(b.len) else {
            return;
        };
        self.bytes.resize(len, 0);
        let read = self.index.file.read_exact_at(&mut self.bytes, b.offset);
        if read.is_err() || checksum(&self.bytes) != b.checksum || !self.well_formed(b) {
            self.bytes.clear();
        }
    }

    fn well_formed(&self, b: &Block) -> bool {
        let mut r = Reader {
            bytes: &self.bytes,
            at: 0,
        };
        let mut last: Option<&[u8]> = None;
        for _ in 0..b.entries {
            let Some(id) = r.skip_entry() else {
                return false;
            };
            let in_order = match last {
                None => id == &*b.first,
                Some(last) => last < id,
            };
            if !in_order {
                return false;
            }
            last = Some(id);
        }
        r.at == self.bytes.len()
    }
}

/// Writes an index file: entries in ascending order of their ids, a block at a time, then the
/// table. Streamed: only the block being filled is in memory.
pub struct Writer<W: Write> {
    out: W,
    head: Vec<u8>,
    written: u64,
    table: Vec<u8>,
    blocks: u32,
    block: Vec<u8>,
    first: Vec<u8>,
    entries: u32,
}

impl<W: Write> Writer<W> {
    pub fn start(root: &Path, mut out: W) -> io::Result<Writer<W>> {
        let head = head(root);
        out.write_all(&head)?;
        Ok(Writer {
            out,
            written: head.len() as u64,
            head,
            table: Vec::new(),
            blocks: 0,
            block: Vec::new(),
            first: Vec::new(),
            entries: 0,
        })
    }

    /// The entry of job `id` (after every id written before it); `false`, nothing written, when
    /// it does not fit the format.
    pub fn entry(&mut self, id: &str, tape: &Tape<'_>) -> io::Result<bool> {
        let mut e = Vec::new();
        if !encode(&mut e, id, tape) {
            return Ok(false);
        }
        self.raw(id, &e)?;
        Ok(true)
    }

    /// An entry as an index file holds it (checked when that file's block was read).
    pub fn raw(&mut self, id: &str, entry: &[u8]) -> io::Result<()> {
        if self.entries == 0 {
            self.first = id.as_bytes().to_vec();
        }
        self.block.extend_from_slice(entry);
        self.entries += 1;
        if self.entries as usize == BLOCK {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.entries == 0 {
            return Ok(());
        }
        let len = u32::try_from(self.block.len()).map_err(io::Error::other)?;
        self.out.write_all(&self.block)?;
        put_str8(&mut self.table, &self.first);
        self.table.extend_from_slice(&self.written.to_le_bytes());
        self.table.extend_from_slice(&len.to_le_bytes());
        self.table.extend_from_slice(&self.entries.to_le_bytes());
        self.table
            .extend_from_slice(&checksum(&self.block).to_le_bytes());
        self.written += u64::from(len);
        self.blocks += 1;
        self.block.clear();
        self.entries = 0;
        Ok(())
    }

    /// Writes the last block, the table and the trail; gives the output back.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_block()?;
        let mut table = self.blocks.to_le_bytes().to_vec();
        table.extend_from_slice(&self.table);
        self.out.write_all(&table)?;
        self.out.write_all(&self.written.to_le_bytes())?;
        let sum = checksum_parts(&[&self.head, &table]);
        self.out.write_all(&sum.to_le_bytes())?;
        Ok(self.out)
    }
}

/// One entry's bytes; `false` when it does not fit the format (an id or a file too long).
fn encode(out: &mut Vec<u8>, id: &str, tape: &Tape<'_>) -> bool {
    let (Ok(_), Ok(files)) = (u8::try_from(id.len()), u8::try_from(tape.files.len())) else {
        return false;
    };
    put_str8(out, id.as_bytes());
    put_stamp(out, &tape.dir);
    out.push(files);
    for (name, taken) in &tape.files {
        let Some(tag) = FILES.iter().position(|f| f == name) else {
            return false;
        };
        out.push(tag as u8);
        match taken {
            Taken::Absent => out.push(0),
            Taken::Bytes { stamp, bytes } => {
                let Ok(len) = u32::try_from(bytes.len()) else {
                    return false;
                };
                out.push(1);
                put_stamp(out, stamp);
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Taken::LogEnd { stamp, exit_code } => {
                out.push(2);
                put_stamp(out, stamp);
                out.push(u8::from(exit_code.is_some()));
                out.extend_from_slice(&exit_code.unwrap_or(0).to_le_bytes());
            }
        }
    }
    true
}

fn put_str8(out: &mut Vec<u8>, s: &[u8]) {
    let len = u8::try_from(s.len()).unwrap_or(u8::MAX);
    out.push(len);
    out.extend_from_slice(&s[..usize::from(len)]);
}

fn put_str16(out: &mut Vec<u8>, s: &[u8]) {
    let len = u16::try_from(s.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&s[..usize::from(len)]);
}

fn put_stamp(out: &mut Vec<u8>, s: &Stamp) {
    for word in [s.dev.0, s.dev.1] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for word in [s.ino, s.size] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for (secs, nanos) in [s.mtime, s.ctime] {
        out.extend_from_slice(&secs.to_le_bytes());
        out.extend_from_slice(&nanos.to_le_bytes());
    }
}

/// Reads an index file's parts, each bounds-checked: `None` past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let got = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(got)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    fn i64(&mut self) -> Option<i64> {
        self.array().map(i64::from_le_bytes)
    }

    fn str8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }

    /// The id of the next entry, without moving on.
    fn peek_id(&self) -> Option<&'a [u8]> {
        Reader {
            bytes: self.bytes,
            at: self.at,
        }
        .str8()
    }

    fn stamp(&mut self) -> Option<Stamp> {
        Some(Stamp {
            dev: (self.u32()?, self.u32()?),
            ino: self.u64()?,
            size: self.u64()?,
            mtime: (self.i64()?, self.u32()?),
            ctime: (self.i64()?, self.u32()?),
        })
    }

    /// Moves past one entry, checking its shape as [`Reader::entry`] does, without building
    /// its tape; gives its id.
    fn skip_entry(&mut self) -> Option<&'a [u8]> {
        let id = self.str8()?;
        self.take(STAMP)?;
        for _ in 0..self.u8()? {
            FILES.get(usize::from(self.u8()?))?;
            match self.u8()? {
                0 => {}
                1 => {
                    self.take(STAMP)?;
                    let len = usize::try_from(self.u32()?).ok()?;
                    self.take(len)?;
                }
                2 => {
                    self.take(STAMP + 5)?;
                }
                _ => return None,
            }
        }
        Some(id)
    }

    /// One entry: its id, and what the reading it records took.
    fn entry(&mut self) -> Option<(&'a [u8], Tape<'a>)> {
        let id = self.str8()?;
        let dir = self.stamp()?;
        let count = self.u8()?;
        let mut files = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            let name = *FILES.get(usize::from(self.u8()?))?;
            let taken = match self.u8()? {
                0 => Taken::Absent,
                1 => {
                    let stamp = self.stamp()?;
                    let len = usize::try_from(self.u32()?).ok()?;
                    Taken::Bytes {
                        stamp,
                        bytes: Cow::Borrowed(self.take(len)?),
                    }
                }
                2 => {
                    let stamp = self.stamp()?;
                    let some = self.u8()?;
                    let code = i32::from_le_bytes(self.array()?);
                    Taken::LogEnd {
                        stamp,
                        exit_code: (some == 1).then_some(code),
                    }
                }
                _ => return None,
            };
            files.push((name, taken));
        }
        Some((
            id,
            Tape {
                dir,
                files,
                complete: true,
            },
        ))
    }
}
