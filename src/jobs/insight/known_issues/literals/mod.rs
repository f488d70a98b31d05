//! Finding the lines worth asking the regexes about without running an automaton over every
//! byte. Every built-in regex requires some literal text (`No space left on device`, `error[E`,
//! a line starting `FAILED `); the text is searched for short pieces of those literals with SIMD
//! (Teddy, from the aho-corasick crate), and only a line that holds one of them is asked about,
//! and only by the regexes that require what it holds.
//!
//! What is searched is the text folded: ASCII upper case as lower case and a carriage return as
//! a line feed, each line framed by a line feed. A regex that ignores case, `^` and `$` (which
//! also hold at a carriage return), all require the folded form of their literals there. The
//! answer for a line is still the regexes' own: this only decides which lines to ask about.
//!
//! A set of regexes of which one requires no literal of four bytes or more (`\d+ errors`) gets
//! no prefilter: its logs go through the automaton of all regexes, as before.

mod extract;
mod plan;
mod rarity;
mod search;

#[cfg(test)]
mod tests;

use aho_corasick::packed::{Config, MatchKind};

pub use search::{Candidates, Scratch};

/// Grams are this long: the widest Teddy compares.
const GRAM: usize = 4;
/// The shortest literal searched for.
const MIN_LEN: usize = GRAM;
/// Grams per SIMD pass: past 16, Teddy's buckets share nibbles and it finds many false grams.
const PER_PASS: usize = 16;

type Gram = [u8; GRAM];

/// A byte as searched: ASCII lower case, and a carriage return as a line feed.
#[inline]
pub fn fold(b: u8) -> u8 {
    let b = b | (u8::from(b.wrapping_sub(b'A') < 26) << 5);
    if b == b'\r' { b'\n' } else { b }
}

/// `dst[i] = fold(src[i])`, written so that the compiler makes it SIMD.
fn fold_into(dst: &mut [u8], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = fold(s);
    }
}

/// The regexes of a pattern set, as the prefilter knows them.
#[derive(Debug)]
pub struct Prefilter {
    passes: search::Passes,
    /// By regex: the bytes a line must start with for it to match, when it is anchored at a line
    /// start (a cheap no before the regex is run).
    starts: Vec<Option<Box<[bool; 256]>>>,
}

impl std::fmt::Debug for search::Passes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passes")
            .field("passes", &self.passes.len())
            .field("grams", &self.probes.len())
            .finish()
    }
}

impl Prefilter {
    /// For `regexes` (each with whether it ignores case), compiled by the matcher with the
    /// same flags as [`extract::parse`]. `None` when one of them requires no literal to search
    /// for, or this CPU has no SIMD search.
    pub fn new(regexes: &[(&str, bool)]) -> Option<Prefilter> {
        let model = rarity::Model::new();
        let mut required = Vec::with_capacity(regexes.len());
        let mut starts = Vec::with_capacity(regexes.len());
        for &(re, ignore_case) in regexes {
            let hir = extract::parse(re, ignore_case)?;
            required.push(extract::requirements(&hir, MIN_LEN, &model));
            starts.push(extract::line_start_bytes(&hir));
        }
        let chosen = plan::choose(&required, &model)?;
        let mut passes = Vec::new();
        for (k, grams) in chosen.grams.chunks(PER_PASS).enumerate() {
            let mut config = Config::new();
            // Teddy or nothing: its fallback (Rabin-Karp) is slower than the automaton.
            config
                .match_kind(MatchKind::LeftmostFirst)
                .only_teddy(true)
                .heuristic_pattern_limits(false);
            let mut builder = config.builder();
            builder.extend(grams);
            passes.push((builder.build()?, k * PER_PASS));
        }
        let probes = chosen
            .windows
            .into_iter()
            .map(|ws| ws.into_iter().map(search::Probe::new).collect())
            .collect();
        Some(Prefilter {
            passes: search::Passes { passes, probes },
            starts,
        })
    }

    /// See [`search::Passes::scan`].
    pub fn scan<'t>(
        &self,
        text: &'t [u8],
        scratch: &mut Scratch,
        line: impl FnMut(&'t [u8], Candidates<'_>),
    ) {
        self.passes.scan(text, scratch, line);
    }

    /// Whether regex `r` can match `line` at all, judged by its first byte: a regex anchored at a
    /// line start, on a line without a carriage return (after which `^` matches too), cannot
    /// unless the line starts with one of the bytes it starts with.
    pub fn may_match(&self, r: u32, line: &[u8], carriage_return: bool) -> bool {
        match self.starts.get(r as usize) {
            Some(Some(starts)) if !carriage_return => {
                starts[usize::from(fold(line.first().copied().unwrap_or(b'\n')))]
            }
            _ => true,
        }
    }

    /// How many grams are searched for, and in how many passes.
    pub fn shape(&self) -> (usize, usize) {
        (self.passes.probes.len(), self.passes.passes.len())
    }
}
