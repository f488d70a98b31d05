//! The output pane's state: the last lines of the selected job's log, follow or paused, wrap,
//! and search. Lines are kept raw; they are sanitized and styled only when drawn.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::jobs::JobId;
use crate::jobs::fs::follow::Reset;
use crate::jobs::fs::tail::RawLine;
use crate::jobs::insight::known_issues::PatternSet;
use crate::jobs::text::sanitize::sanitize_line;

/// Lines kept for scrolling back; older ones are dropped.
pub const KEEP_LINES: usize = 10_000;

#[derive(Clone, Debug, Default)]
pub struct Search {
    pub query: String,
    /// Absolute line numbers (see `LogView::first_abs`) of matching lines, ascending.
    pub matches: Vec<u64>,
    pub current: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct LogView {
    pub job: Option<JobId>,
    pub lines: VecDeque<RawLine>,
    /// Absolute number of `lines[0]`: lines dropped from the front so far.
    pub first_abs: u64,
    pub follow: bool,
    /// First visible line (absolute) while paused.
    pub top_abs: u64,
    pub wrap: bool,
    pub search: Option<Search>,
    /// A notice shown above the output: a reset, or why there is none.
    pub note: Option<String>,
    pub loading: bool,
    /// Lines (absolute) that show a known issue, ascending, with the pattern each matches:
    /// matched once, as the lines arrive.
    pub issues: Vec<(u64, usize)>,
    /// The issue line `]` / `[` last jumped to.
    pub issue_at: Option<u64>,
    pub patterns: Option<Arc<PatternSet>>,
    /// A `]`/`[` pressed before the patterns were compiled: (forward, pane height), done then.
    pub pending_jump: Option<(bool, usize)>,
    /// Lines that arrived while paused, for the title: they are below what is shown.
    pub unseen: u64,
    /// Columns of each line scrolled off to the left (long lines, not wrapped).
    pub left: usize,
    /// The last of `lines` is still being written (no newline yet): the next lines replace it.
    pub open_last: bool,
}

impl Default for LogView {
    fn default() -> Self {
        LogView {
            job: None,
            lines: VecDeque::new(),
            first_abs: 0,
            follow: true,
            top_abs: 0,
            wrap: false,
            search: None,
            note: None,
            loading: false,
            issues: Vec::new(),
            issue_at: None,
            patterns: None,
            pending_jump: None,
            unseen: 0,
            left: 0,
            open_last: false,
        }
    }
}

fn plain_lower(line: &RawLine) -> String {
    sanitize_line(&line.bytes).plain().to_lowercase()
}

impl LogView {
    /// Starts showing `id` (wrap is a preference and survives the switch).
    pub fn open(&mut self, id: JobId) {
        *self = LogView {
            job: Some(id),
            loading: true,
            wrap: self.wrap,
            patterns: self.patterns.take(),
            ..LogView::default()
        };
    }

    pub fn end_abs(&self) -> u64 {
        self.first_abs + self.lines.len() as u64
    }

    pub fn loaded(&mut self, lines: Vec<RawLine>, error: Option<String>) {
        self.loading = false;
        self.note = error;
        self.lines = lines.into();
        self.open_last = false;
        self.issues.clear();
        self.match_issues(self.first_abs);
        self.trim();
        self.research();
    }

    /// The patterns have been compiled: mark the lines already here.
    pub fn set_patterns(&mut self, patterns: Arc<PatternSet>) {
        self.patterns = Some(patterns);
        self.issues.clear();
        self.match_issues(self.first_abs);
        if let Some((forward, height)) = self.pending_jump.take() {
            self.next_issue(forward, height);
        }
    }

    /// Notes the lines from `start` (absolute) on that show a known issue.
    fn match_issues(&mut self, start: u64) {
        let Some(set) = &self.patterns else { return };
        let from = (start - self.first_abs) as usize;
        let at = start;
        let issues = &mut self.issues;
        set.match_each(self.lines.iter().skip(from).map(|l| &*l.bytes), |i, p| {
            issues.push((at + i as u64, p))
        });
    }

    /// The known issue line `abs` shows, if any.
    pub fn issue_on(&self, abs: u64) -> Option<usize> {
        self.issues
            .binary_search_by_key(&abs, |&(a, _)| a)
            .ok()
            .map(|i| self.issues[i].1)
    }

    /// Moves to the next (or previous) line showing a known issue, from the last one jumped to
    /// or from the screen, wrapping around. Returns false when there is none.
    pub fn next_issue(&mut self, forward: bool, height: usize) -> bool {
        if self.patterns.is_none() {
            // Still compiling (a moment at start): the jump is made when they are ready.
            self.pending_jump = Some((forward, height));
            return true;
        }
        if self.issues.is_empty() {
            return false;
        }
        let from = self.issue_at.unwrap_or_else(|| {
            let top = self.top_for(height);
            if forward {
                top.saturating_sub(1)
            } else {
                top + height as u64
            }
        });
        let found = if forward {
            self.issues
                .iter()
                .find(|(a, _)| *a > from)
                .or(self.issues.first())
        } else {
            self.issues
                .iter()
                .rev()
                .find(|(a, _)| *a < from)
                .or(self.issues.last())
        };
        let Some(abs) = found.map(|(a, _)| *a) else {
            return false;
        };
        self.issue_at = Some(abs);
        self.show(abs, height);
        true
    }

    /// Pauses with line `abs` a third of the way down the pane.
    fn show(&mut self, abs: u64, height: usize) {
        self.follow = false;
        let max_top = self
            .end_abs()
            .saturating_sub(height as u64)
            .max(self.first_abs);
        self.top_abs = abs
            .saturating_sub(height as u64 / 3)
            .clamp(self.first_abs, max_top);
    }

    pub fn append(&mut self, reset: Option<Reset>, lines: Vec<RawLine>) {
        self.drop_open_line();
        if let Some(reset) = reset {
            self.note = Some(match reset {
                Reset::Truncated => "output.log was truncated: showing it from its start".into(),
                Reset::Replaced => {
                    "output.log was replaced: showing the new file from its start".into()
                }
                Reset::Skipped(bytes) => format!(
                    "output.log grew faster than it can be shown: {} MB skipped, showing its end",
                    bytes.div_ceil(1_000_000)
                ),
            });
            self.first_abs = self.end_abs();
            self.lines.clear();
            self.issues.clear();
            self.issue_at = None;
            self.top_abs = self.first_abs;
        }
        if !self.follow {
            self.unseen += lines.len() as u64;
        }
        self.push(lines);
    }

    /// Shows `line`, the log's last line so far (no newline yet), after the others, in place
    /// of the one shown before.
    pub fn set_partial(&mut self, line: RawLine) {
        self.drop_open_line();
        self.push(vec![line]);
        self.open_last = true;
    }

    /// Takes away the line still being written: it is sent again, longer or complete.
    fn drop_open_line(&mut self) {
        if !std::mem::take(&mut self.open_last) || self.lines.pop_back().is_none() {
            return;
        }
        let end = self.end_abs();
        self.issues.retain(|&(a, _)| a < end);
        if self.issue_at.is_some_and(|a| a >= end) {
            self.issue_at = None;
        }
        if let Some(s) = self.search.as_mut() {
            s.matches.retain(|&m| m < end);
            s.current = s.current.filter(|&c| c < s.matches.len());
        }
        self.top_abs = self.top_abs.min(end);
    }

    fn push(&mut self, lines: Vec<RawLine>) {
        let start = self.end_abs();
        if let Some(search) = self.search.as_mut().filter(|s| !s.query.is_empty()) {
            let q = search.query.to_lowercase();
            for (i, line) in lines.iter().enumerate() {
                if plain_lower(line).contains(&q) {
                    search.matches.push(start + i as u64);
                }
            }
        }
        self.lines.extend(lines);
        self.match_issues(start);
        self.trim();
    }

    fn trim(&mut self) {
        while self.lines.len() > KEEP_LINES {
            self.lines.pop_front();
            self.first_abs += 1;
        }
        self.top_abs = self.top_abs.max(self.first_abs);
        let first = self.first_abs;
        self.issues.retain(|&(a, _)| a >= first);
        if let Some(s) = self.search.as_mut() {
            let first = self.first_abs;
            let before = s.matches.len();
            s.matches.retain(|&m| m >= first);
            let dropped = before - s.matches.len();
            s.current = s.current.and_then(|c| c.checked_sub(dropped));
        }
    }

    /// The first visible line for a pane `height` lines tall (unwrapped).
    pub fn top_for(&self, height: usize) -> u64 {
        if self.follow {
            self.end_abs()
                .saturating_sub(height as u64)
                .max(self.first_abs)
        } else {
            self.top_abs
        }
    }

    /// Scrolls by `delta` lines (negative: up). Scrolling up pauses following.
    pub fn scroll(&mut self, delta: i64, height: usize) {
        let top = self.top_for(height) as i64;
        let max_top = self
            .end_abs()
            .saturating_sub(height as u64)
            .max(self.first_abs) as i64;
        let new_top =
            (top + delta).clamp(self.first_abs as i64, max_top.max(self.first_abs as i64));
        if delta < 0 && new_top < top {
            self.follow = false;
        }
        self.top_abs = new_top as u64;
    }

    pub fn to_top(&mut self) {
        self.follow = false;
        self.top_abs = self.first_abs;
    }

    pub fn resume_follow(&mut self) {
        self.follow = true;
        self.unseen = 0;
    }

    /// Scrolls long lines sideways by `delta` columns, no further than the widest line in a
    /// pane `height` lines tall leaves `width` columns of it on screen. Wrapped lines have
    /// nothing to scroll: false.
    pub fn scroll_sideways(&mut self, delta: i64, width: usize, height: usize) -> bool {
        if self.wrap {
            return false;
        }
        let top = self.top_for(height);
        let widest = (top..self.end_abs())
            .take(height)
            .filter_map(|abs| self.line(abs))
            .map(|l| crate::jobs::text::width::width(&sanitize_line(&l.bytes).plain()))
            .max()
            .unwrap_or(0);
        let max = widest.saturating_sub(width / 2) as i64;
        self.left = (self.left as i64 + delta).clamp(0, max.max(0)) as usize;
        true
    }

    pub fn line(&self, abs: u64) -> Option<&RawLine> {
        abs.checked_sub(self.first_abs)
            .and_then(|i| self.lines.get(i as usize))
    }

    pub fn set_search(&mut self, query: &str, height: usize) {
        if query.is_empty() {
            self.search = None;
            return;
        }
        self.search = Some(Search {
            query: query.to_owned(),
            ..Search::default()
        });
        self.research();
        // From the top of the screen down, like `less`; when following, the newest match.
        let from = self.top_for(height);
        let target = self.search.as_ref().and_then(|s| {
            if self.follow {
                s.matches.len().checked_sub(1)
            } else {
                s.matches
                    .iter()
                    .position(|&m| m >= from)
                    .or(s.matches.len().checked_sub(1))
            }
        });
        self.jump_to(target, height);
    }

    fn research(&mut self) {
        let first = self.first_abs;
        let Some(s) = self.search.as_mut() else {
            return;
        };
        let q = s.query.to_lowercase();
        s.matches = self
            .lines
            .iter()
            .enumerate()
            .filter(|(_, l)| plain_lower(l).contains(&q))
            .map(|(i, _)| first + i as u64)
            .collect();
        s.current = None;
    }

    /// Moves to the next (or previous) match, wrapping around.
    pub fn next_match(&mut self, forward: bool, height: usize) {
        let Some(s) = &self.search else { return };
        let n = s.matches.len();
        if n == 0 {
            return;
        }
        let next = match s.current {
            Some(c) if forward => (c + 1) % n,
            Some(c) => (c + n - 1) % n,
            None if forward => 0,
            None => n - 1,
        };
        self.jump_to(Some(next), height);
    }

    fn jump_to(&mut self, index: Option<usize>, height: usize) {
        let Some(s) = self.search.as_mut() else {
            return;
        };
        s.current = index;
        if let Some(&abs) = index.and_then(|i| s.matches.get(i)) {
            self.show(abs, height);
        }
    }

    pub fn current_match(&self) -> Option<u64> {
        let s = self.search.as_ref()?;
        s.current.and_then(|c| s.matches.get(c).copied())
    }
}
