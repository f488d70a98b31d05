//! The output pane's state: following, pausing, the ring of lines, search, known issues,
//! sideways scrolling.

use super::log::*;
use crate::jobs::JobId;
use crate::jobs::fs::follow::Reset;
use crate::jobs::fs::tail::RawLine;
use crate::jobs::insight::known_issues::PatternSet;
use crate::tui::testing::lines;

fn numbered(n: usize) -> Vec<RawLine> {
    (0..n)
        .map(|i| RawLine {
            bytes: format!("line {i}").into_bytes(),
            cut: false,
        })
        .collect()
}

#[test]
fn follow_pause_and_resume() {
    let mut v = LogView::default();
    v.open(JobId::parse("a").unwrap());
    v.loaded(numbered(100), None);
    assert!(v.follow);
    assert_eq!(v.top_for(10), 90);
    v.scroll(-5, 10);
    assert!(!v.follow, "scrolling up pauses");
    assert_eq!(v.top_for(10), 85);
    v.append(None, numbered(3));
    assert_eq!(
        v.top_for(10),
        85,
        "a paused view stays put while lines arrive"
    );
    v.scroll(1000, 10);
    assert_eq!(v.top_for(10), 93, "scrolling down stops at the end");
    assert!(!v.follow, "only an explicit follow resumes");
    v.resume_follow();
    v.append(None, numbered(2));
    assert_eq!(v.top_for(10), 95);
    v.to_top();
    assert_eq!(v.top_for(10), 0);
}

#[test]
fn a_paused_view_counts_the_lines_that_arrive() {
    let mut v = LogView::default();
    v.loaded(numbered(20), None);
    v.append(None, numbered(2));
    assert_eq!(v.unseen, 0, "following: nothing is unseen");
    v.scroll(-3, 10);
    v.append(None, numbered(4));
    v.append(None, numbered(1));
    assert_eq!(v.unseen, 5);
    v.resume_follow();
    assert_eq!(v.unseen, 0);
}

#[test]
fn long_lines_scroll_sideways_up_to_the_widest() {
    let mut v = LogView::default();
    v.loaded(lines(&["short", &"x".repeat(100)]), None);
    assert!(v.scroll_sideways(30, 40, 10));
    assert_eq!(v.left, 30);
    v.scroll_sideways(1000, 40, 10);
    assert_eq!(v.left, 80, "half a pane of the widest line stays");
    v.scroll_sideways(-1000, 40, 10);
    assert_eq!(v.left, 0);
    v.wrap = true;
    assert!(
        !v.scroll_sideways(10, 40, 10),
        "wrapped lines do not scroll"
    );
}

#[test]
fn ring_drops_old_lines_and_keeps_positions() {
    let mut v = LogView::default();
    v.loaded(numbered(KEEP_LINES), None);
    v.to_top();
    v.append(None, numbered(5));
    assert_eq!(v.lines.len(), KEEP_LINES);
    assert_eq!(v.first_abs, 5);
    assert_eq!(v.top_for(10), 5);
    assert_eq!(v.line(5).unwrap().bytes, b"line 5");
}

#[test]
fn search_finds_jumps_and_wraps() {
    let mut v = LogView::default();
    v.loaded(
        lines(&["ok", "ERROR one", "ok", "\x1b[31merror\x1b[0m two", "ok"]),
        None,
    );
    v.set_search("error", 2);
    let s = v.search.as_ref().unwrap();
    assert_eq!(s.matches, [1, 3]);
    assert_eq!(v.current_match(), Some(3), "following: the newest match");
    assert!(!v.follow);
    v.next_match(true, 2);
    assert_eq!(v.current_match(), Some(1), "wraps around");
    v.next_match(false, 2);
    assert_eq!(v.current_match(), Some(3));
    v.append(None, lines(&["another error"]));
    assert_eq!(v.search.as_ref().unwrap().matches, [1, 3, 5]);
    v.set_search("", 2);
    assert!(v.search.is_none());
}

#[test]
fn issue_lines_are_found_as_they_arrive_and_jumped_between() {
    let mut v = LogView {
        patterns: Some(PatternSet::shared_builtin()),
        ..LogView::default()
    };
    v.open(JobId::parse("a").unwrap());
    assert!(
        v.patterns.is_some(),
        "opening another job keeps the patterns"
    );
    let mut first = numbered(50);
    first[10] = lines(&["ModuleNotFoundError: No module named 'yaml'"]).remove(0);
    v.loaded(first, None);
    assert_eq!(v.issues.len(), 1);
    assert!(v.next_issue(true, 5));
    assert_eq!(v.issue_at, Some(10));
    assert!(!v.follow, "a jump pauses");
    assert_eq!(v.top_for(5), 9);
    v.append(
        None,
        lines(&["ok", "\x1b[31mNo space left on device\x1b[0m"]),
    );
    assert_eq!(v.issues.last().map(|i| i.0), Some(51));
    let disk = v.issue_on(51).unwrap();
    assert_eq!(v.patterns.as_ref().unwrap().pattern(disk).name, "disk-full");
    v.next_issue(true, 5);
    assert_eq!(v.issue_at, Some(51));
    v.next_issue(true, 5);
    assert_eq!(v.issue_at, Some(10), "wraps around");
    v.next_issue(false, 5);
    assert_eq!(v.issue_at, Some(51), "and back");
    v.append(Some(Reset::Replaced), lines(&["fresh"]));
    assert!(v.issues.is_empty() && !v.next_issue(true, 5));
}

#[test]
fn reset_starts_over() {
    let mut v = LogView::default();
    v.loaded(numbered(10), None);
    v.append(Some(Reset::Truncated), lines(&["fresh"]));
    assert_eq!(v.lines.len(), 1);
    assert!(v.note.as_deref().unwrap().contains("truncated"));
    assert_eq!(v.line(v.first_abs).unwrap().bytes, b"fresh");
}

fn raw(text: &str, cut: bool) -> RawLine {
    RawLine {
        bytes: text.as_bytes().to_vec(),
        cut,
    }
}

#[test]
fn the_line_being_written_shows_last_and_is_replaced_as_it_grows() {
    let mut v = LogView::default();
    v.open(JobId::parse("a").unwrap());
    // A log whose only line so far has no newline: shown, not "no output yet".
    v.loaded(vec![], None);
    v.set_partial(raw("zzzz", true));
    assert_eq!(v.lines.len(), 1);
    assert!(v.line(v.end_abs() - 1).unwrap().cut, "shown cut");
    v.set_partial(raw("zzzzzzzz", true));
    assert_eq!(v.lines.len(), 1, "replaced, not added");
    assert_eq!(v.line(0).unwrap().bytes, b"zzzzzzzz");
    // Its newline came: the complete line takes its place, and the next one follows.
    v.set_search("zz", 10);
    assert_eq!(v.search.as_ref().unwrap().matches, [0]);
    v.append(None, vec![raw("zzzzzzzzz!", true), raw("next", false)]);
    assert_eq!(v.end_abs(), 2);
    assert_eq!(v.line(0).unwrap().bytes, b"zzzzzzzzz!");
    assert_eq!(v.line(1).unwrap().bytes, b"next");
    assert_eq!(
        v.search.as_ref().unwrap().matches,
        [0],
        "the open line's match went with it, the complete line's is there once"
    );
    assert!(!v.open_last);
}

#[test]
fn skipping_ahead_says_so_and_starts_the_lines_again() {
    let mut v = LogView::default();
    v.open(JobId::parse("a").unwrap());
    v.loaded(numbered(50), None);
    v.append(Some(Reset::Skipped(1_500_000_000)), numbered(3));
    assert_eq!(
        v.lines.len(),
        3,
        "the lines before the gap are not shown with those after"
    );
    assert!(
        v.note.as_deref().unwrap().contains("1500 MB skipped"),
        "{:?}",
        v.note
    );
    assert_eq!(v.top_for(10), v.first_abs);
}
