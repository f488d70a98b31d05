//! What a scan found in a log: per pattern, how often and the last line that showed it.

use super::{PatternSet, Severity, strip_escapes};
use crate::jobs::text::sanitize::{ellipsize, sanitize_line};

/// One kind of problem found in a log: how often, and the last line that showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Index into the [`PatternSet`] the scan used. (Narrow, like the count: the cockpit keeps
    /// the findings of every log of the root, and a finding fits 40 bytes, not 48.)
    pub pattern: u32,
    pub severity: Severity,
    /// Lines that matched, counted up to `u32::MAX`.
    pub count: u32,
    /// The last matching line, as plain text (control characters dropped, capped). Boxed, not a
    /// `String`: the cockpit keeps the findings of every log of the root.
    pub last_line: Box<str>,
    /// When the log was last written as this was seen: the line is at least this old.
    pub seen_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Longest excerpt of a matching line kept.
pub const EXCERPT_CHARS: usize = 240;

/// What a scan found, most severe first. Shared, not copied, between the scanner that keeps it
/// and whoever shows it (the cockpit): a copy of every job's findings would cost as much again
/// as the findings themselves; the scanner copies them only when its log grows. A slice, in the
/// one allocation of its `Arc`: a `Vec` would add its header and an allocation of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Findings {
    pub found: std::sync::Arc<[Finding]>,
}

impl Default for Findings {
    /// Nothing found: one empty list shared by every log without findings (the cockpit keeps
    /// findings for every job of the root), copied only when something is found.
    fn default() -> Findings {
        static NONE: std::sync::OnceLock<std::sync::Arc<[Finding]>> = std::sync::OnceLock::new();
        Findings {
            found: NONE.get_or_init(|| Vec::new().into()).clone(),
        }
    }
}

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The one to show when there is room for one: the most severe, then the most recent.
    pub fn worst(&self) -> Option<&Finding> {
        self.found.first()
    }

    /// Scans `text` (whole lines, escape sequences stripped) and records every line that
    /// matches a pattern, as if one by one: counts, the last line of each pattern, and the order
    /// (most severe, then most recently seen, first). Each pattern's excerpt is made once, from
    /// its last line: a log that repeats one error a million times costs one excerpt per scan,
    /// not a million. Returns whether any line matched.
    pub fn record_lines(
        &mut self,
        set: &PatternSet,
        text: &[u8],
        at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> bool {
        // Per pattern: how many lines matched it, when it was last recorded (the matching
        // line's number, then its place among that line's patterns), and that line.
        let mut batch: Vec<(usize, u64, (usize, usize), &[u8])> = Vec::new();
        let mut seq = 0;
        set.scan_lines(text, |line, patterns| {
            for (k, &p) in patterns.iter().enumerate() {
                match batch.iter_mut().find(|b| b.0 == p) {
                    Some(b) => *b = (p, b.1 + 1, (seq, k), line),
                    None => batch.push((p, 1, (seq, k), line)),
                }
            }
            seq += 1;
        });
        // Recorded in the order of their last lines, the order comes out as recording each
        // line in turn would leave it.
        batch.sort_by_key(|b| b.2);
        if batch.is_empty() {
            return false;
        }
        let mut found = self.found.to_vec();
        let mut last: Option<(&[u8], Box<str>)> = None;
        for &(p, count, _, line) in &batch {
            let excerpt = match &last {
                Some((l, e)) if std::ptr::eq(*l, line) => e.clone(),
                _ => excerpt(line).into_boxed_str(),
            };
            record(&mut found, set, p, count, excerpt.clone(), at);
            last = Some((line, excerpt));
        }
        self.found = found.into();
        true
    }
}

/// `count` more lines matched pattern `p`, the last of them shown by `excerpt`.
pub(super) fn record(
    found: &mut Vec<Finding>,
    set: &PatternSet,
    p: usize,
    count: u64,
    excerpt: Box<str>,
    at: Option<chrono::DateTime<chrono::Utc>>,
) {
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    let at_pattern = u32::try_from(p).unwrap_or(u32::MAX);
    let f = match found.iter().position(|f| f.pattern == at_pattern) {
        Some(i) => {
            let mut f = found.remove(i);
            f.count = f.count.saturating_add(count);
            f.last_line = excerpt;
            f.seen_at = at;
            f
        }
        None => Finding {
            pattern: at_pattern,
            severity: set.patterns[p].severity,
            count,
            last_line: excerpt,
            seen_at: at,
        },
    };
    // Keeps the order: severity, then most recently seen first.
    let at = found
        .iter()
        .position(|g| g.severity <= f.severity)
        .unwrap_or(found.len());
    found.insert(at, f);
}

/// The line as the output pane would show it (controls, bidi overrides dropped), capped.
pub(super) fn excerpt(line: &[u8]) -> String {
    let text = sanitize_line(line).plain();
    ellipsize(text.trim(), EXCERPT_CHARS)
}

/// Scans a whole text at once (the CLI's one-shot reports and tests).
pub fn scan_text(set: &PatternSet, text: &[u8]) -> Findings {
    let mut findings = Findings::default();
    let mut plain = Vec::new();
    strip_escapes(text, &mut plain);
    findings.record_lines(set, &plain, None);
    findings
}
