//! Choosing what to search for. Each regex requires one of a few strings (`extract`); the
//! search looks for short grams, four bytes each, and a gram found is then compared with the
//! strings it stands in. Few grams make a fast search (one SIMD pass finds up to 16 at once),
//! and a gram that many regexes share costs one: so grams are chosen greedily, the one that
//! takes most regexes closest to being found for the least chance of turning up in ordinary
//! text, until every regex can be found.

use std::collections::HashMap;

use super::extract::AnyOf;
use super::rarity::Model;
use super::{GRAM, Gram};

/// A string a regex requires, where it is found: when `gram` is found at `p`, the window is
/// what the text holds from `p - offset` on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub bytes: Box<[u8]>,
    pub offset: usize,
    /// The regex it stands for (its index in the set).
    pub owner: u32,
}

#[derive(Debug, Default)]
pub struct Chosen {
    /// In the order chosen: those shared by most regexes first.
    pub grams: Vec<Gram>,
    /// By gram: the windows it stands in.
    pub windows: Vec<Vec<Window>>,
}

/// What a gram costs beside how often it turns up, in the same unit (found per byte searched):
/// a sixteenth of a SIMD pass over the text, about a tenth of a nanosecond a byte, is what
/// finding a gram once every ten thousand bytes costs (checking where it stands, a few tens of
/// nanoseconds). Without it every regex would get a gram of its own (the rarest), and 150 grams
/// search slower than 50 that turn up a little more often. Measured on two texts (see
/// docs/performance.md): half or twice this made both slower.
const GRAM_COST: f64 = 1e-4;

/// Chooses grams for `regexes` (each: the sets one of which it requires). `None` when one of
/// them requires nothing that can be searched for.
pub fn choose(regexes: &[Vec<AnyOf>], model: &Model) -> Option<Chosen> {
    let table = Table::new(regexes, model)?;
    let mut covered = vec![false; table.strings.len()];
    let mut chosen: Vec<Gram> = Vec::new();
    loop {
        let progress: Vec<f64> = (0..regexes.len())
            .map(|r| table.progress(r, &covered, None))
            .collect();
        if progress.iter().all(|&p| p >= 1.0) {
            break;
        }
        let mut best: Option<(f64, usize)> = None;
        for (g, strings) in table.by_gram.iter().enumerate() {
            if strings.iter().all(|&s| covered[s]) {
                continue;
            }
            let gain: f64 = table
                .regexes_of(strings)
                .map(|r| table.progress(r, &covered, Some(g)) - progress[r])
                .sum();
            if gain > 0.0 {
                let cost = (table.rarity[g] + GRAM_COST) / gain;
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, g));
                }
            }
        }
        let (_, g) = best?;
        for &s in &table.by_gram[g] {
            covered[s] = true;
        }
        chosen.push(table.grams[g]);
    }
    let mut windows = vec![Vec::new(); chosen.len()];
    for (owner, sets) in regexes.iter().enumerate() {
        // Of the sets now found, the one whose strings turn up least.
        let set = sets
            .iter()
            .filter(|set| set.iter().all(|s| has_any(s, &chosen)))
            .min_by(|a, b| model.of_set(a).total_cmp(&model.of_set(b)))?;
        for s in set {
            let (offset, g) = grams_of(s)
                .filter_map(|(at, gram)| Some((at, chosen.iter().position(|c| *c == gram)?)))
                .min_by(|a, b| model.of(&chosen[a.1]).total_cmp(&model.of(&chosen[b.1])))?;
            windows[g].push(Window {
                bytes: s.clone().into_boxed_slice(),
                offset,
                owner: u32::try_from(owner).ok()?,
            });
        }
    }
    Some(Chosen {
        grams: chosen,
        windows,
    })
}

fn grams_of(s: &[u8]) -> impl Iterator<Item = (usize, Gram)> + '_ {
    s.windows(GRAM)
        .enumerate()
        .filter_map(|(at, w)| Some((at, w.try_into().ok()?)))
}

fn has_any(s: &[u8], grams: &[Gram]) -> bool {
    grams_of(s).any(|(_, g)| grams.contains(&g))
}

/// The regexes' strings and grams, indexed both ways.
struct Table<'a> {
    /// Every distinct string, and the (regex, set) pairs it stands in.
    strings: Vec<&'a [u8]>,
    users: Vec<Vec<(usize, usize)>>,
    /// Every distinct gram, and the strings that hold it.
    grams: Vec<Gram>,
    by_gram: Vec<Vec<usize>>,
    /// By gram: how often it turns up.
    rarity: Vec<f64>,
    /// Per regex, per set: its strings' indices.
    sets: Vec<Vec<Vec<usize>>>,
}

impl<'a> Table<'a> {
    fn new(regexes: &'a [Vec<AnyOf>], model: &Model) -> Option<Table<'a>> {
        let mut index: HashMap<&[u8], usize> = HashMap::new();
        let mut strings = Vec::new();
        let mut users: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut sets = Vec::with_capacity(regexes.len());
        for (r, regex) in regexes.iter().enumerate() {
            if regex.is_empty() {
                return None;
            }
            let mut of_regex = Vec::with_capacity(regex.len());
            for (k, set) in regex.iter().enumerate() {
                let mut of_set = Vec::with_capacity(set.len());
                for s in set {
                    let i = *index.entry(s).or_insert_with(|| {
                        strings.push(s.as_slice());
                        users.push(Vec::new());
                        strings.len() - 1
                    });
                    users[i].push((r, k));
                    of_set.push(i);
                }
                of_regex.push(of_set);
            }
            sets.push(of_regex);
        }
        let mut gram_index: HashMap<Gram, usize> = HashMap::new();
        let mut grams = Vec::new();
        let mut by_gram: Vec<Vec<usize>> = Vec::new();
        for (i, s) in strings.iter().enumerate() {
            for (_, g) in grams_of(s) {
                let gi = *gram_index.entry(g).or_insert_with(|| {
                    grams.push(g);
                    by_gram.push(Vec::new());
                    grams.len() - 1
                });
                if by_gram[gi].last() != Some(&i) {
                    by_gram[gi].push(i);
                }
            }
        }
        let rarity = grams.iter().map(|g| model.of(g)).collect();
        Some(Table {
            rarity,
            strings,
            users,
            grams,
            by_gram,
            sets,
        })
    }

    /// The regexes that use any of `strings`, each once.
    fn regexes_of<'s>(&'s self, strings: &'s [usize]) -> impl Iterator<Item = usize> + 's {
        let mut seen = Vec::new();
        strings
            .iter()
            .flat_map(|&s| self.users[s].iter().map(|&(r, _)| r))
            .filter(move |&r| {
                let new = !seen.contains(&r);
                if new {
                    seen.push(r);
                }
                new
            })
    }

    /// How close regex `r` is to being found: of its sets, the largest share of strings that
    /// hold a chosen gram (`covered`), or also gram `with`.
    fn progress(&self, r: usize, covered: &[bool], with: Option<usize>) -> f64 {
        let holds = |s: usize| {
            covered[s] || with.is_some_and(|g| self.by_gram[g].binary_search(&s).is_ok())
        };
        self.sets[r]
            .iter()
            .map(|set| set.iter().filter(|&&s| holds(s)).count() as f64 / set.len() as f64)
            .fold(0.0, f64::max)
    }
}
