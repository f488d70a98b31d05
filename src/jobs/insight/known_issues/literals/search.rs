//! The search: the text a block of whole lines at a time, folded into a buffer framed by line
//! ends, searched for the grams (SIMD, up to 16 grams a pass), each gram found compared with the
//! windows it stands in; the lines holding a window are handed on with the regexes those
//! windows stand for.

use aho_corasick::Span;
use aho_corasick::packed::Searcher;

use super::fold_into;
use super::plan::Window;

/// Lines are searched this many bytes at a time (in the cache, with their folded copy).
pub const BLOCK: usize = 64 * 1024;

/// What the search keeps between calls, so that it allocates nothing once warm.
#[derive(Debug, Default)]
pub struct Scratch {
    folded: Vec<u8>,
    /// Windows found: (the block's index of the window's last byte, its regex).
    found: Vec<(u32, u32)>,
    owners: Vec<u32>,
}

/// What may match a line.
pub enum Candidates<'a> {
    /// Only these regexes (sorted, each once): the line holds one of their windows. With
    /// whether the line may hold a carriage return (its block does).
    Some(&'a [u32], bool),
    /// A line longer than a block, not searched here: any.
    Any,
}

pub struct Passes {
    /// Each with the index of its first gram.
    pub passes: Vec<(Searcher, usize)>,
    /// By gram: the windows it stands in.
    pub probes: Vec<Box<[Probe]>>,
}

/// Bytes on each side of the folded block, so that a probe's eight-byte load never leaves it.
const PAD: usize = 16;

/// A window as the search checks it: eight of its bytes beside the gram first (one load and
/// compare, which rules out almost every window that is not there), then the whole of it.
#[derive(Debug)]
pub struct Probe {
    window: Window,
    /// Where the eight bytes start, from the gram's position (negative: before it).
    quick_at: isize,
    quick: u64,
    mask: u64,
    /// The gram and the eight bytes are the whole window: nothing more to compare.
    whole: bool,
}

impl Probe {
    pub fn new(window: Window) -> Probe {
        let w = &window.bytes;
        let after = window.offset + super::GRAM;
        // The bytes right after the gram, else those right before it.
        let (from, len) = if w.len() > after {
            (after, (w.len() - after).min(8))
        } else {
            let from = window.offset.saturating_sub(8);
            (from, window.offset - from)
        };
        let mut quick = [0u8; 8];
        quick[..len].copy_from_slice(&w[from..from + len]);
        let mask = if len == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * len)) - 1
        };
        let whole = w.len() == super::GRAM + len;
        Probe {
            quick_at: from as isize - window.offset as isize,
            quick: u64::from_le_bytes(quick),
            mask,
            whole,
            window,
        }
    }

    /// Whether the window stands in `folded` for its gram found at `gram_at`; then its start.
    #[inline]
    fn check(&self, folded: &[u8], gram_at: usize) -> Option<usize> {
        let at = gram_at.checked_add_signed(self.quick_at)?;
        let eight: [u8; 8] = folded.get(at..at + 8)?.try_into().ok()?;
        if u64::from_le_bytes(eight) & self.mask != self.quick {
            return None;
        }
        let start = gram_at.checked_sub(self.window.offset)?;
        if self.whole {
            return Some(start);
        }
        let there = folded.get(start..start + self.window.bytes.len())?;
        // Windows are short: comparing here beats a call to memcmp.
        there
            .iter()
            .zip(&self.window.bytes)
            .all(|(a, b)| a == b)
            .then_some(start)
    }
}

impl Passes {
    /// Calls `line(text, candidates)` for every line of `text` (whole lines, split at `\n`) that
    /// holds a window, in order, each once, and for every line longer than a block.
    pub fn scan<'t>(
        &self,
        text: &'t [u8],
        scratch: &mut Scratch,
        mut line: impl FnMut(&'t [u8], Candidates<'_>),
    ) {
        let mut pos = 0;
        while pos < text.len() {
            let cap = (pos + BLOCK).min(text.len());
            let end = if cap == text.len() {
                cap
            } else if let Some(nl) = memchr::memrchr(b'\n', &text[pos..cap]) {
                pos + nl + 1
            } else {
                // One line longer than a block: asked about whole, by the caller.
                let stop = memchr::memchr(b'\n', &text[pos..]).map_or(text.len(), |i| pos + i);
                line(&text[pos..stop], Candidates::Any);
                pos = stop + 1;
                continue;
            };
            self.scan_block(&text[pos..end], scratch, &mut line);
            pos = end;
        }
    }

    fn scan_block<'t>(
        &self,
        block: &'t [u8],
        scratch: &mut Scratch,
        line: &mut impl FnMut(&'t [u8], Candidates<'_>),
    ) {
        // The block framed by line ends, padded: `folded[PAD + 1 + i]` is `block[i]`, folded.
        let folded = &mut scratch.folded;
        let total = PAD + block.len() + 2 + PAD;
        // Only the padding is cleared: the rest is written over (clearing it all would write
        // every byte twice).
        folded.resize(total, 0);
        folded[..PAD].fill(0);
        folded[PAD] = b'\n';
        fold_into(&mut folded[PAD + 1..PAD + 1 + block.len()], block);
        folded[PAD + 1 + block.len()] = b'\n';
        folded[total - PAD..].fill(0);
        let folded = &*folded;
        let framed = Span::from(PAD..PAD + block.len() + 2);
        let found = &mut scratch.found;
        found.clear();
        for (searcher, first) in &self.passes {
            let mut span = framed;
            while let Some(m) = searcher.find_in(folded, span) {
                // Grams may overlap ("fail", "aile"): the next search starts one byte on.
                span.start = m.start() + 1;
                for probe in &self.probes[first + m.pattern().as_usize()] {
                    let Some(start) = probe.check(folded, m.start()) else {
                        continue;
                    };
                    // The window's last byte, in the block (a window ending on the frame's last
                    // byte ends the last line, as the block's own last byte does).
                    let last = (start + probe.window.bytes.len() - PAD - 2).min(block.len() - 1);
                    found.push((u32::try_from(last).unwrap_or(u32::MAX), probe.window.owner));
                }
            }
        }
        if found.is_empty() {
            return;
        }
        let carriage_return = memchr::memchr(b'\r', block).is_some();
        // Sorted runs, one a pass: a stable sort merges them.
        found.sort();
        let owners = &mut scratch.owners;
        let mut i = 0;
        while i < found.len() {
            let last = found[i].0 as usize;
            let start = memchr::memrchr(b'\n', &block[..last]).map_or(0, |j| j + 1);
            let stop = memchr::memchr(b'\n', &block[last..]).map_or(block.len(), |j| last + j);
            owners.clear();
            // A window ending in `$` ends on its line's own newline (`stop`).
            while let Some(&(at, owner)) = found.get(i)
                && at as usize <= stop
            {
                owners.push(owner);
                i += 1;
            }
            owners.sort_unstable();
            owners.dedup();
            line(
                &block[start..stop],
                Candidates::Some(owners, carriage_return),
            );
        }
    }
}
