//! The first stage of a scan: the literals every match must contain, searched for all at once.
//!
//! The alternation of every regex runs on a lazy DFA at about 480 MB/s; most of that time goes
//! through lines that hold nothing like a known issue. Each regex of the database (almost every
//! one) has a literal that any match of it contains, such as `No space left on device` or
//! `error[E0432]: unresolved import`; one multi-literal automaton finds the next place where any
//! of them occurs, and only the line there is asked about. A regex without such a literal (three
//! bytes at least) is searched for by its own alternation, as before.
//!
//! Literals are searched for in either ASCII case, whatever the regex says: that finds more
//! places than needed (each is then asked about), never fewer.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex::bytes::Regex;
use regex_syntax::hir::{Class, Hir, HirKind};

/// Shorter literals would stop the search on almost every line.
const MIN_LITERAL: usize = 3;

#[derive(Debug)]
pub struct Prefilter {
    literals: AhoCorasick,
    /// The regexes with no literal to look for, searched for as they are.
    rest: Option<Regex>,
}

/// How a regex is looked for: by its literals, or by itself.
pub enum Found {
    Literals(Vec<Vec<u8>>),
    Itself,
}

/// What every match of `re` (compiled with these flags) must contain.
pub fn literals_of(re: &str, ignore_case: bool) -> Found {
    let parsed = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .multi_line(true)
        .crlf(true)
        .case_insensitive(ignore_case)
        .build()
        .parse(re);
    match parsed.ok().and_then(|hir| required(&hir)) {
        Some(set) if set.iter().all(|l| l.len() >= MIN_LITERAL) => Found::Literals(set),
        _ => Found::Itself,
    }
}

impl Prefilter {
    /// `literals` of the regexes that have them, and the alternation of those that have not
    /// (built as the whole database's alternation is). `None` when the literals cannot be
    /// built into one automaton: the alternation of every regex is used alone then.
    pub fn new(literals: &[Vec<u8>], rest: Option<Regex>) -> Option<Prefilter> {
        let literals = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(literals)
            .or_else(|_| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(literals)
            })
            .ok()?;
        Some(Prefilter { literals, rest })
    }

    /// Where, from `pos` on, a line worth asking about may be: a byte of it (the start of a
    /// literal, or the end of a match of a regex without one), or `None` when no line after
    /// `pos` can match. Any line that matches a regex alone holds a byte at or after the one
    /// returned, so asking about the lines in turn from there misses none.
    pub fn next(&self, text: &[u8], pos: usize, cached: &mut Next) -> Option<usize> {
        if cached.literal.is_some_and(|at| at < pos) || !cached.started {
            cached.literal = self
                .literals
                .find(aho_corasick::Input::new(text).span(pos..text.len()))
                .map(|m| m.start());
        }
        if cached.rest.is_some_and(|at| at < pos) || !cached.started {
            cached.rest = self
                .rest
                .as_ref()
                .and_then(|r| r.shortest_match_at(text, pos))
                // The end of a match: the byte before it is in the match's last line.
                .map(|end| end.saturating_sub(1).max(pos));
        }
        cached.started = true;
        match (cached.literal, cached.rest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The next candidates of each kind, kept while the search moves on through the lines before
/// them.
#[derive(Default)]
pub struct Next {
    started: bool,
    literal: Option<usize>,
    rest: Option<usize>,
}

/// The bytes `h` matches when it matches exactly one string (letters in either case counted as
/// one), lowercased.
fn exact(h: &Hir) -> Option<Vec<u8>> {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Some(Vec::new()),
        HirKind::Literal(l) => Some(l.0.to_ascii_lowercase()),
        HirKind::Class(c) => one_byte(c).map(|b| vec![b]),
        HirKind::Capture(c) => exact(&c.sub),
        HirKind::Concat(subs) => {
            let mut all = Vec::new();
            for s in subs {
                all.extend(exact(s)?);
            }
            Some(all)
        }
        HirKind::Repetition(_) | HirKind::Alternation(_) => None,
    }
}

/// The byte a class matches when it is one byte, or one ASCII letter in either case.
fn one_byte(c: &Class) -> Option<u8> {
    let mut bytes = Vec::new();
    match c {
        Class::Bytes(b) => {
            for r in b.ranges() {
                if bytes.len() + usize::from(r.end() - r.start()) + 1 > 2 {
                    return None;
                }
                bytes.extend(r.start()..=r.end());
            }
        }
        Class::Unicode(u) => {
            for r in u.ranges() {
                let (s, e) = (u32::from(r.start()), u32::from(r.end()));
                if e > 0x7f || bytes.len() + (e - s) as usize + 1 > 2 {
                    return None;
                }
                bytes.extend((s..=e).map(|b| b as u8));
            }
        }
    }
    match bytes[..] {
        [b] => Some(b.to_ascii_lowercase()),
        [a, b] if a.is_ascii_alphabetic() && a.eq_ignore_ascii_case(&b) => {
            Some(a.to_ascii_lowercase())
        }
        _ => None,
    }
}

/// Literals one of which every match of `h` contains (lowercased), the longest such set found;
/// `None` when there is none (a match may be empty, or made of classes only).
fn required(h: &Hir) -> Option<Vec<Vec<u8>>> {
    if let Some(e) = exact(h) {
        return (!e.is_empty()).then(|| vec![e]);
    }
    match h.kind() {
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub),
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Alternation(alts) => {
            let mut all = Vec::new();
            for a in alts {
                all.extend(required(a)?);
            }
            all.sort();
            all.dedup();
            Some(all)
        }
        HirKind::Concat(subs) => {
            let mut best: Option<Vec<Vec<u8>>> = None;
            let mut run = Vec::new();
            let consider = |set: Vec<Vec<u8>>, best: &mut Option<Vec<Vec<u8>>>| {
                if best.as_ref().is_none_or(|b| score(&set) > score(b)) {
                    *best = Some(set);
                }
            };
            for s in subs {
                match exact(s) {
                    Some(e) => run.extend(e),
                    None => {
                        if !run.is_empty() {
                            consider(vec![std::mem::take(&mut run)], &mut best);
                        }
                        if let Some(set) = required(s) {
                            consider(set, &mut best);
                        }
                    }
                }
            }
            if !run.is_empty() {
                consider(vec![run], &mut best);
            }
            best
        }
        _ => None,
    }
}

/// Better: a longer shortest literal, then fewer literals.
fn score(set: &[Vec<u8>]) -> (usize, std::cmp::Reverse<usize>) {
    let shortest = set.iter().map(Vec::len).min().unwrap_or(0);
    (shortest, std::cmp::Reverse(set.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(re: &str, ignore_case: bool) -> Option<Vec<String>> {
        match literals_of(re, ignore_case) {
            Found::Literals(set) => Some(
                set.into_iter()
                    .map(|l| String::from_utf8(l).unwrap())
                    .collect(),
            ),
            Found::Itself => None,
        }
    }

    #[test]
    fn every_match_holds_one_of_the_literals_found() {
        let cases: &[(&str, bool, Option<&[&str]>)] = &[
            (
                "No space left on device",
                false,
                Some(&["no space left on device"]),
            ),
            (r"\bEPERM\b", false, Some(&["eperm"])),
            (
                r"(?i)permission denied",
                false,
                Some(&["permission denied"]),
            ),
            ("permission denied", true, Some(&["permission denied"])),
            (
                r"\[?ERR_MODULE_NOT_FOUND\]?",
                false,
                Some(&["err_module_not_found"]),
            ),
            (
                r"Cannot find package '[^']+' imported from ",
                false,
                Some(&["cannot find package '"]),
            ),
            (r"(?:foo|barbaz) went wrong", false, Some(&[" went wrong"])),
            (
                r"(?:timeout|timed out)",
                false,
                Some(&["timed out", "timeout"]),
            ),
            (r"^\S+: \d+x", false, None),
            (r"(?:oauth )?x", false, None),
            (r"a?", false, None),
            (r"[0-9]+ errors?", false, Some(&[" error"])),
        ];
        for (re, ic, want) in cases {
            let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(lits(re, *ic), want, "{re}");
        }
    }

    #[test]
    fn the_builtin_database_is_looked_for_by_its_literals() {
        let mut by_itself = Vec::new();
        for p in super::super::builtin::patterns() {
            for re in &p.regexes {
                if matches!(literals_of(re, p.ignore_case), Found::Itself) {
                    by_itself.push(re.clone());
                }
            }
        }
        // A regex without a literal makes every scan run the slower automaton over all bytes.
        assert!(by_itself.is_empty(), "{by_itself:#?}");
    }
}
