//! How often a string turns up in ordinary agent output: counted in a sample of such output
//! that holds no known issue (`assets/known-issues/ordinary-output.txt`: a cargo build and test
//! run, git's log, prose and code of this project, a package listing), four bytes at a time;
//! a piece the sample lacks is estimated from its bytes. Only comparisons are made with it
//! (which of two literals to search for, which piece of one), so a rough count is enough: what
//! it must know is that `tion`, `erro` or `\ntes` turn up all the time and `[e0` hardly ever.

use super::{GRAM, Gram, fold};

/// Ordinary agent output, with no known issue in it (a test checks).
pub const SAMPLE: &str = include_str!("../../../../../assets/known-issues/ordinary-output.txt");

/// The sample's four-byte pieces, counted. Made for one plan and dropped after it.
pub struct Model {
    /// (piece, times seen), sorted by piece.
    counts: Vec<(Gram, u32)>,
    total: f64,
}

impl Model {
    pub fn new() -> Model {
        let folded: Vec<u8> = SAMPLE.bytes().map(fold).collect();
        let mut grams: Vec<Gram> = folded
            .windows(GRAM)
            .filter_map(|w| w.try_into().ok())
            .collect();
        grams.sort_unstable();
        let mut counts: Vec<(Gram, u32)> = Vec::new();
        for g in grams {
            match counts.last_mut() {
                Some((last, n)) if *last == g => *n += 1,
                _ => counts.push((g, 1)),
            }
        }
        Model {
            counts,
            total: folded.len().max(1) as f64,
        }
    }

    /// How often `s` turns up at a given place of the text: as often as its rarest piece, a
    /// little less for each byte more.
    pub fn of(&self, s: &[u8]) -> f64 {
        let Some(rarest) = s
            .windows(GRAM)
            .map(|w| self.of_gram(w))
            .min_by(f64::total_cmp)
        else {
            return by_bytes(s);
        };
        rarest * 0.5f64.powi(i32::try_from(s.len() - GRAM).unwrap_or(i32::MAX))
    }

    /// How often one of `set` turns up.
    pub fn of_set(&self, set: &[Vec<u8>]) -> f64 {
        set.iter().map(|s| self.of(s)).sum()
    }

    fn of_gram(&self, g: &[u8]) -> f64 {
        let seen = self
            .counts
            .binary_search_by(|(c, _)| c.as_slice().cmp(g))
            .map_or(0, |i| self.counts[i].1);
        (f64::from(seen) / self.total).max(by_bytes(g))
    }
}

/// A piece the sample lacks: as often as its bytes are, each by its share of ordinary output
/// (letters as in English, spaces, the digits and punctuation of logs and code).
fn by_bytes(s: &[u8]) -> f64 {
    s.iter().map(|&b| of_byte(b)).product()
}

/// Letters by their share of English text, in percent (a to z).
const LETTERS: [f64; 26] = [
    8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.8, 4.0, 2.4, 6.7, 7.5, 1.9, 0.1, 6.0,
    6.3, 9.1, 2.8, 1.0, 2.4, 0.15, 2.0, 0.07,
];

fn of_byte(b: u8) -> f64 {
    match b {
        b'a'..=b'z' => 0.0075 * LETTERS[usize::from(b - b'a')],
        b' ' => 0.15,
        b'\n' => 0.015,
        b'0'..=b'9' => 0.004,
        b'.' | b'/' | b'-' | b'_' | b':' | b',' => 0.006,
        b'(' | b')' | b'"' | b'\'' | b'=' => 0.003,
        b'[' | b']' | b'{' | b'}' | b';' | b'\t' => 0.0015,
        b'<' | b'>' | b'*' | b'#' | b'`' | b'+' | b'|' | b'!' | b'$' | b'?' | b'\\' | b'@'
        | b'%' | b'&' | b'~' | b'^' => 0.0005,
        _ => 0.0001,
    }
}
