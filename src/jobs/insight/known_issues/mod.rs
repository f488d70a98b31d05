//! Known problems recognised in agent output: a database of patterns (built in, plus the
//! orchestrator's `known_issues.json`), each with a severity and what to do about it, matched
//! against the log as it grows. Only new bytes are ever scanned (see [`IssueScanner`]).
//!
//! The lines worth asking about are found without an automaton over every byte: every built-in
//! regex requires some literal text, and a SIMD search for pieces of those literals finds the
//! lines that hold one (`literals`); only the regexes that require what such a line holds are
//! run on it. A database with a regex that requires no literal falls back to one alternation of
//! all regexes, which finds the next line that matches anything, and a `RegexSet` then says
//! which patterns that line matches.

mod agents;
mod builtin;
mod cache;
mod file;
mod findings;
mod literals;
mod scanner;
mod strip;

use std::fmt;
use std::path::PathBuf;

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

pub use cache::{IssueCache, scan_problem};
pub use file::{KNOWN_ISSUES_FILE, load_file};
pub use findings::{EXCERPT_CHARS, Finding, Findings, scan_text};
pub use scanner::{IssueScanner, SCAN_WINDOW};
pub use strip::strip_escapes;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }

    /// The orchestrator's spellings too (`high`, `medium`, `low`, `info`).
    pub fn parse(s: &str) -> Option<Severity> {
        match s.trim().to_ascii_lowercase().as_str() {
            "warning" | "warn" | "low" | "medium" | "info" => Some(Severity::Warning),
            "error" | "high" => Some(Severity::Error),
            "critical" | "fatal" => Some(Severity::Critical),
            _ => None,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a pattern was defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Builtin,
    File(PathBuf),
}

/// One known problem: how to recognise it and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub name: String,
    pub description: String,
    pub severity: Severity,
    pub regexes: Vec<String>,
    pub fix: String,
    /// Match letters in either case (patterns from a file do; built-in ones say so inline).
    pub ignore_case: bool,
    pub origin: Origin,
}

/// A pattern, or one of its regexes, that could not be used: said with its file, and skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternProblem {
    pub origin: Origin,
    pub pattern: String,
    pub message: String,
}

impl fmt::Display for PatternProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::Builtin => write!(f, "built-in pattern '{}': {}", self.pattern, self.message),
            Origin::File(p) => write!(
                f,
                "{}: pattern '{}': {} (fix it there; it is skipped until then)",
                p.display(),
                self.pattern,
                self.message
            ),
        }
    }
}

/// The compiled database.
#[derive(Debug)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
    /// Any regex of any pattern: finds the next line worth asking `set` about.
    any: Option<Regex>,
    set: RegexSet,
    /// The pattern each regex of `set` belongs to.
    owner: Vec<usize>,
    /// Each regex of `set` alone, to ask a line the prefilter found about.
    alone: Vec<Regex>,
    /// Tells this set from others (a thread's copies of `alone` are of one set).
    id: u64,
    /// Finds the lines worth asking about, when every regex requires a literal. Planned at
    /// the first search (about 4 ms for the built-in database): a command that searches
    /// nothing (`luzia status` on a root without logs) never pays for it.
    literals: std::sync::OnceLock<Option<literals::Prefilter>>,
}

/// The lazy DFA's cache per regex. Throughput over 1 GiB is the same at 2, 8 and 32 MiB
/// (476-484 MB/s), so the smallest: the cockpit keeps one per thread for days.
const DFA_CACHE: usize = 2 * 1024 * 1024;
/// The same for each regex alone, which is run on one line at a time: every thread that scans
/// keeps a cache for each of them it has run (~150 regexes), so small ones.
const ALONE_DFA_CACHE: usize = 256 * 1024;

fn builder(pattern: &str) -> RegexBuilder {
    let mut b = RegexBuilder::new(pattern);
    // Byte-oriented matching: logs are not always UTF-8, and Unicode word boundaries would
    // push the search off the fast automaton on every non-ASCII byte.
    b.unicode(false)
        .multi_line(true)
        .crlf(true)
        .dfa_size_limit(DFA_CACHE);
    b
}

impl PatternSet {
    /// Compiles `patterns`; a regex that does not compile is reported and left out, and a pattern
    /// left with no regex at all is left out too.
    pub fn new(patterns: Vec<Pattern>) -> (PatternSet, Vec<PatternProblem>) {
        let mut problems = Vec::new();
        let mut kept = Vec::new();
        let mut regexes = Vec::new();
        let mut owner = Vec::new();
        let mut alone = Vec::new();
        for mut p in patterns {
            let before = p.regexes.len();
            p.regexes.retain(|re| {
                match builder(re)
                    .case_insensitive(p.ignore_case)
                    .dfa_size_limit(ALONE_DFA_CACHE)
                    .build()
                {
                    Ok(compiled) => {
                        alone.push(compiled);
                        true
                    }
                    Err(e) => {
                        problems.push(PatternProblem {
                            origin: p.origin.clone(),
                            pattern: p.name.clone(),
                            message: format!("regex `{re}` does not compile: {}", first_line(&e)),
                        });
                        false
                    }
                }
            });
            if p.regexes.is_empty() {
                if before == 0 {
                    problems.push(PatternProblem {
                        origin: p.origin.clone(),
                        pattern: p.name.clone(),
                        message: "has no error_patterns".into(),
                    });
                }
                continue;
            }
            for re in &p.regexes {
                // Compiled alone above, so its parentheses balance and a group cannot leak.
                let flags = if p.ignore_case { "i" } else { "" };
                regexes.push(format!("(?{flags}:{re})"));
                owner.push(kept.len());
            }
            kept.push(p);
        }
        // Each regex compiled alone; together they can still pass the compiled size limit (a
        // very large known_issues.json). Then no pattern is used, and the file is named.
        let together = RegexSetBuilder::new(&regexes)
            .unicode(false)
            .multi_line(true)
            .crlf(true)
            .dfa_size_limit(DFA_CACHE)
            .build()
            .and_then(|set| {
                let any = (!regexes.is_empty())
                    .then(|| builder(&regexes.join("|")).build())
                    .transpose()?;
                Ok((set, any))
            });
        let (set, any) = match together {
            Ok(built) => built,
            Err(e) => {
                problems.push(PatternProblem {
                    origin: kept.last().map_or(Origin::Builtin, |p| p.origin.clone()),
                    pattern: "(all patterns)".into(),
                    message: format!(
                        "together too large to compile ({}): no pattern is used; make the \
                         regexes fewer or simpler",
                        first_line(&e)
                    ),
                });
                kept.clear();
                owner.clear();
                alone.clear();
                (RegexSet::empty(), None)
            }
        };
        (
            PatternSet {
                patterns: kept,
                any,
                set,
                owner,
                alone,
                id: {
                    static NEXT: std::sync::atomic::AtomicU64 =
                        std::sync::atomic::AtomicU64::new(0);
                    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                },
                literals: std::sync::OnceLock::new(),
            },
            problems,
        )
    }

    /// The built-in database, compiled once per process.
    pub fn shared_builtin() -> std::sync::Arc<PatternSet> {
        static BUILTIN: std::sync::OnceLock<std::sync::Arc<PatternSet>> =
            std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| std::sync::Arc::new(PatternSet::builtin()))
            .clone()
    }

    /// The built-in database alone.
    pub fn builtin() -> PatternSet {
        let (set, problems) = PatternSet::new(builtin::patterns());
        debug_assert!(problems.is_empty(), "{problems:?}");
        set
    }

    /// The built-in database, then the patterns of `known_issues.json` at `path` (when it
    /// exists). Problems name the file and the pattern.
    pub fn with_file(path: &std::path::Path) -> (PatternSet, Vec<PatternProblem>) {
        let mut patterns = builtin::patterns();
        let mut problems = Vec::new();
        match load_file(path) {
            Ok(extra) => {
                let (found, bad) = extra;
                patterns.extend(found);
                problems.extend(bad);
            }
            Err(p) => problems.push(p),
        }
        let (set, more) = PatternSet::new(patterns);
        problems.extend(more);
        (set, problems)
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    pub fn pattern(&self, index: impl TryInto<usize>) -> &Pattern {
        &self.patterns[index.try_into().unwrap_or(usize::MAX)]
    }

    /// The patterns `line` matches, most severe first (then in database order).
    pub fn line_matches(&self, line: &[u8]) -> Vec<usize> {
        self.ordered(
            self.set
                .matches(line)
                .iter()
                .map(|r| self.owner[r])
                .collect(),
        )
    }

    /// `found` (patterns) most severe first, then in database order, each once.
    fn ordered(&self, mut found: Vec<usize>) -> Vec<usize> {
        found.sort_by_key(|&p| (std::cmp::Reverse(self.patterns[p].severity), p));
        found.dedup();
        found
    }

    /// The patterns `line` matches, asking only the regexes in `candidates`: the prefilter found
    /// in the line what each of the others requires, so they cannot match.
    fn candidates_match(
        &self,
        line: &[u8],
        candidates: &[u32],
        carriage_return: bool,
        literals: &literals::Prefilter,
        alone: &[Regex],
    ) -> Vec<usize> {
        let found = candidates
            .iter()
            .filter(|&&r| {
                literals.may_match(r, line, carriage_return) && alone[r as usize].is_match(line)
            })
            .map(|&r| self.owner[r as usize])
            .collect();
        self.ordered(found)
    }

    /// The prefilter, planned on first use; `None` when a regex requires no literal.
    fn literals(&self) -> Option<&literals::Prefilter> {
        self.literals
            .get_or_init(|| {
                if self.owner.is_empty() {
                    return None;
                }
                let flagged: Vec<(&str, bool)> = self
                    .patterns
                    .iter()
                    .flat_map(|p| p.regexes.iter().map(|re| (re.as_str(), p.ignore_case)))
                    .collect();
                literals::Prefilter::new(&flagged)
            })
            .as_ref()
    }

    /// Whether lines are found by the literals the regexes require (see `literals`), not by the
    /// automaton of all of them.
    pub fn searches_literals(&self) -> bool {
        self.literals().is_some()
    }

    /// The grams the prefilter searches for, and in how many SIMD passes (for the benchmarks'
    /// report).
    pub fn literal_search(&self) -> Option<(usize, usize)> {
        self.literals().map(literals::Prefilter::shape)
    }

    /// The same set searching with the automaton of all regexes alone, as it does when a regex
    /// requires no literal: what the prefilter is measured against, in the same run.
    pub fn without_literals(mut self) -> PatternSet {
        self.literals = std::sync::OnceLock::from(None);
        self
    }

    /// The most severe pattern `line` matches, if any. `line` may hold escape sequences.
    pub fn match_line(&self, line: &[u8]) -> Option<usize> {
        let mut worst = None;
        self.match_each([line], |_, p| worst = Some(p));
        worst
    }

    /// Calls `hit(i, pattern)` for each of `lines` that matches a pattern, with the most severe
    /// one, in order. Each of `lines` is one line (no newline) and may hold escape sequences.
    /// They are searched together: one search for a screenful of new lines, not one each.
    pub fn match_each<'a>(
        &self,
        lines: impl IntoIterator<Item = &'a [u8]>,
        mut hit: impl FnMut(usize, usize),
    ) {
        let mut text = Vec::new();
        let mut starts = Vec::new();
        for line in lines {
            starts.push(text.len());
            if line.contains(&0x1b) {
                strip_escapes(line, &mut text);
            } else {
                text.extend_from_slice(line);
            }
            text.push(b'\n');
        }
        let base = text.as_ptr() as usize;
        self.scan_lines(&text, |line, patterns| {
            let at = line.as_ptr() as usize - base;
            let i = starts.partition_point(|&s| s <= at) - 1;
            if let Some(&p) = patterns.first() {
                hit(i, p);
            }
        });
    }

    /// Calls `hit(line, patterns)` for every line of `text` that matches a pattern. `text` is
    /// whole lines, escape sequences already stripped.
    pub fn scan_lines<'t>(&self, text: &'t [u8], mut hit: impl FnMut(&'t [u8], &[usize])) {
        let Some(literals) = self.literals() else {
            return self.scan_lines_automaton(text, hit);
        };
        thread_local! {
            static LOCAL: std::cell::RefCell<Local> = Default::default();
        }
        LOCAL.with(|cell| {
            // A scan called from within a scan (never, today) gets its own.
            let mut own = Local::default();
            let mut mine = cell.try_borrow_mut();
            let local = match mine.as_deref_mut() {
                Ok(shared) => shared,
                Err(_) => &mut own,
            };
            if local.set != Some(self.id) {
                // This thread's own copies: a regex's cache pool is fast for one thread only,
                // and the scanner and the output pane search at once.
                local.alone = self.alone.clone();
                local.set = Some(self.id);
            }
            let alone = &local.alone;
            literals.scan(text, &mut local.scratch, |line, candidates| {
                let patterns = match candidates {
                    literals::Candidates::Some(regexes, carriage_return) => {
                        self.candidates_match(line, regexes, carriage_return, literals, alone)
                    }
                    literals::Candidates::Any => match &self.any {
                        Some(any) if any.is_match(line) => self.line_matches(line),
                        _ => Vec::new(),
                    },
                };
                if !patterns.is_empty() {
                    hit(line, &patterns);
                }
            });
        });
    }

    /// [`PatternSet::scan_lines`] without the prefilter: one automaton of all regexes over every
    /// byte.
    fn scan_lines_automaton<'t>(&self, text: &'t [u8], mut hit: impl FnMut(&'t [u8], &[usize])) {
        let Some(any) = &self.any else { return };
        let mut pos = 0;
        while pos < text.len() {
            // Where the earliest match ends is enough: no reverse search for its start. Any
            // line that matches alone holds a match ending at or after the byte before that
            // end, so asking about the lines in turn from there misses none.
            let Some(end) = any.shortest_match_at(text, pos) else {
                return;
            };
            let at = end.saturating_sub(1).max(pos);
            let start = memchr::memrchr(b'\n', &text[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
            let line = &text[start..end];
            // The match may run across a line end; a line is a match only on its own.
            let patterns = self.line_matches(line);
            if !patterns.is_empty() {
                hit(line, &patterns);
            }
            pos = end + 1;
        }
    }
}

/// What a thread keeps for searching: the search's buffers, and its own copies of the regexes
/// of the set it last searched with.
#[derive(Default)]
struct Local {
    scratch: literals::Scratch,
    set: Option<u64>,
    alone: Vec<Regex>,
}

fn first_line(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests;
