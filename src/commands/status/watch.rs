//! `luzia status --watch`: the dashboard redrawn in place, in the normal screen (no alternate
//! screen, no raw mode, nothing to restore): each frame moves the cursor home, writes every line
//! followed by clear-to-end-of-line, then clears to the end of the screen. Lines are cut to the
//! terminal's width so nothing wraps, and frames to its height so nothing scrolls. Between
//! frames the process sleeps; Ctrl-C ends it with 0, SIGTERM and SIGHUP with 128 + the signal.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::Result;
use chrono::Utc;
use tokio::signal::unix::{SignalKind, signal};

use super::Collector;
use super::render;
use super::text::{DIM, Line, RED, Span, colored, plain};
use crate::jobs::text::sanitize::plain_text;

const HOME: &str = "\x1b[H";
const CLEAR_LINE: &str = "\x1b[K";
const CLEAR_BELOW: &str = "\x1b[J";
/// Columns when stdout is not a terminal.
const FALLBACK_WIDTH: usize = 80;

/// Exit codes when a signal ends the watch (the shell's 128 + signal number).
const SIGTERM_EXIT: u8 = 143;
const SIGHUP_EXIT: u8 = 129;

pub fn run(collector: &mut Collector, interval: Duration, out: &mut dyn Write) -> Result<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(watch(collector, interval, out))
}

async fn watch(
    collector: &mut Collector<'_>,
    interval: Duration,
    out: &mut dyn Write,
) -> Result<u8> {
    // Registered before the first frame: a signal that arrives while a frame is built or
    // written is kept, and acted on once the frame is whole.
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let tty = std::io::stdout().is_terminal();
    let footer = format!("refreshing every {} · Ctrl-C to stop", every(interval));
    loop {
        let text = frame(collector, tty, &footer);
        out.write_all(text.as_bytes())?;
        out.flush()?;
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = sigint.recv() => return Ok(0),
            _ = sigterm.recv() => return Ok(SIGTERM_EXIT),
            _ = sighup.recv() => return Ok(SIGHUP_EXIT),
        }
    }
}

/// `500ms`, `2s`, `1m30s`.
fn every(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        crate::jobs::model::time::format_duration(d.as_secs() as i64)
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The terminal's size, or 80 columns and no height limit when stdout is not a terminal.
fn size(tty: bool) -> (usize, Option<usize>) {
    if !tty {
        return (FALLBACK_WIDTH, None);
    }
    match crossterm::terminal::size() {
        Ok((w, h)) if w > 0 && h > 0 => (usize::from(w), Some(usize::from(h))),
        _ => (FALLBACK_WIDTH, None),
    }
}

/// One whole frame, escape sequences included.
fn frame(collector: &mut Collector, tty: bool, footer: &str) -> String {
    let (width, height) = size(tty);
    // The last column stays empty: a character there leaves the cursor waiting to wrap, and
    // some terminals would then clear it with the line's clear-to-end.
    let cols = width.saturating_sub(1).max(1);
    let now = Utc::now();
    let mut lines: Vec<Line> = match collector.collect(now) {
        Ok(report) => render::lines(&report, now, Some(cols)),
        Err(e) => vec![Line(vec![render_error(&e)])],
    };
    lines.push(Line::default());
    lines.push(Line(vec![colored(footer, DIM)]));
    let colors = super::super::stdout_colors();
    let mut text: Vec<String> = lines.iter().map(|l| l.render(colors, Some(cols))).collect();
    // One row is kept for the cursor after the last line, so the screen never scrolls.
    if let Some(rows) = height.map(|h| h.saturating_sub(1).max(1))
        && text.len() > rows
    {
        let hidden = text.len() - rows + 1;
        text.truncate(rows - 1);
        let more = format!("… {hidden} more lines: make the terminal taller");
        text.push(Line(vec![plain(more)]).render(false, Some(cols)));
    }
    let mut s = String::from(HOME);
    for line in text {
        s.push_str(&line);
        s.push_str(CLEAR_LINE);
        s.push('\n');
    }
    s.push_str(CLEAR_BELOW);
    s
}

fn render_error(e: &anyhow::Error) -> Span {
    colored(
        format!("luzia: error: {}", plain_text(&super::super::describe(e))),
        RED,
    )
}
