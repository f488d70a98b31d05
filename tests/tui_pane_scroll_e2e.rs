//! The output pane scrolled on the terminal (a scroll region, then only the new rows) leaves
//! on screen exactly what drawing the whole frame leaves: lines are appended one frame at a
//! time to the followed log, the screen is read, then the cockpit is made to draw everything
//! again (the window resized away and back: a resize clears the screen and draws the whole
//! frame), and the two screens must be the same, characters, colours and attributes. At
//! 80x24 and 160x45, and with a popup (the kill confirmation) over the pane, whose rows then do not move as a whole.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use tmux::{Cockpit, Opts, Sandbox, Screen};

const ID: &str = "100040-stream";

/// Line `n` of the log: short marks that stay visible left of a centred popup, some coloured,
/// some wide, some longer than the pane.
fn line(n: usize) -> String {
    match n % 5 {
        0 => format!("L{n} \x1b[31mred\x1b[0m and \x1b[1mbold\x1b[0m"),
        1 => format!("L{n} 日本語の行 ✅"),
        2 => format!("L{n} {}", "long ".repeat(40)),
        _ => format!("L{n} plain"),
    }
}

fn shows(s: &Screen, n: usize) -> bool {
    let mark = format!("L{n} ");
    s.text().lines().any(|l| l.contains(&mark))
}

/// The width the cockpit drew for: its jobs box spans the screen.
fn width(s: &Screen) -> u16 {
    let top = s
        .text()
        .lines()
        .find(|l| l.starts_with("┌ jobs"))
        .map(|l| l.chars().count());
    top.map_or(0, |n| n as u16)
}

fn resize(ck: &Cockpit, w: u16, h: u16) {
    let (w, h) = (w.to_string(), h.to_string());
    ck.tmux(&["resize-window", "-t", "e2e", "-x", &w, "-y", &h]);
}

/// Appends lines `from..to`, one write at a time, each waited for on screen (so each is its
/// own frame), now and then three in one write (one frame scrolling by three).
fn stream(sb: &Sandbox, ck: &Cockpit, from: usize, to: usize) {
    let mut n = from;
    while n < to {
        let k = if n % 4 == 3 { 3.min(to - n) } else { 1 };
        let text: String = (n..n + k).map(|i| line(i) + "\n").collect();
        sb.append(ID, "output.log", text);
        n += k;
        let last = n - 1;
        ck.wait_for(&format!("line {last} on screen"), |s| shows(s, last));
    }
}

/// The screen as drawn so far, then as drawn whole at the same size: they must be the same.
fn assert_same_as_redrawn(ck: &Cockpit, w: u16, h: u16, last: usize, what: &str) {
    let scrolled = ck.wait_stable("the streamed screen", |s| shows(s, last));
    let scrolled_escaped = ck.screen_escaped();
    resize(ck, w + 9, h + 3);
    ck.wait_stable("the screen at another size", |s| width(s) == w + 9);
    resize(ck, w, h);
    let redrawn = ck.wait_stable("the screen drawn whole", |s| {
        shows(s, last) && width(s) == w
    });
    assert_eq!(
        scrolled.text(),
        redrawn.text(),
        "{what} at {w}x{h}: the scrolled screen (left) differs from the redrawn one (right)"
    );
    assert_eq!(
        scrolled_escaped,
        ck.screen_escaped(),
        "{what} at {w}x{h}: colours or attributes differ from the redrawn screen"
    );
}

fn run(w: u16, h: u16) {
    let sb = Sandbox::new();
    // Running, without a start time: nothing on its row moves while the screens are compared.
    sb.running_job(ID, "musica", "Stream lines", None);
    sb.write(ID, "output.log", "Stream lines: done\n");
    let ck = Cockpit::start(&sb, Opts::default().size(w, h));
    ck.wait_ready();
    ck.wait_text("Stream lines: done");
    stream(&sb, &ck, 0, 40);
    assert_same_as_redrawn(&ck, w, h, 39, "full-width pane");

    // The kill confirmation over the pane: rows hold the popup and the pane, and no longer
    // move whole.
    ck.key("K");
    ck.wait_text("Kill job");
    stream(&sb, &ck, 40, 60);
    assert_same_as_redrawn(&ck, w, h, 59, "pane under a popup");
    ck.key("Escape");
    ck.wait_for("the popup closed", |s| !s.contains("Kill job"));
    stream(&sb, &ck, 60, 70);
    assert_same_as_redrawn(&ck, w, h, 69, "pane after the popup");
}

#[test]
fn a_scrolled_pane_shows_what_a_full_redraw_shows_at_80x24() {
    require_tmux!();
    run(80, 24);
}

#[test]
fn a_scrolled_pane_shows_what_a_full_redraw_shows_at_160x45() {
    require_tmux!();
    run(160, 45);
}
