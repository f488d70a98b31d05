//! Entering and leaving the full-screen terminal, with one restore path for every way out:
//! normal quit, Ctrl-C, SIGTERM, SIGHUP, and a panic on any thread. And the backend frames are
//! drawn through (`backend`), which leaves no glyph debris where a terminal's own Unicode tables
//! give a character fewer columns than the drawing does.

mod backend;
#[cfg(test)]
mod frame_tests;
mod scroll;

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use crossterm::{cursor, execute, queue};
use ratatui::Terminal;

pub use backend::Backend;

pub type Term = Terminal<Backend<BufWriter<Stdout>>>;

/// Set while the terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Set while the terminal shows a title of ours, its own saved on its stack of titles.
static TITLED: AtomicBool = AtomicBool::new(false);

/// XTWINOPS: save the window and icon titles on the terminal's stack, and put them back.
/// A terminal that keeps no such stack ignores both.
const PUSH_TITLE: &[u8] = b"\x1b[22;0t";
const POP_TITLE: &[u8] = b"\x1b[23;0t";

pub fn enter() -> io::Result<Term> {
    install_panic_hook();
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = BufWriter::with_capacity(64 * 1024, io::stdout());
    execute!(
        out,
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste,
        cursor::Hide
    )?;
    Terminal::new(Backend::new(out))
}

/// Puts the terminal back as it was. Safe to call more than once, from any thread; errors are
/// ignored because on SIGHUP the terminal may already be gone.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if TITLED.swap(false, Ordering::SeqCst) {
        let _ = out.write_all(POP_TITLE);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Takes the terminal back after a program run in it ([`restore`] first): raw mode, the
/// alternate screen, mouse and paste as [`enter`] set them, and the next frame drawn whole.
pub fn resume(term: &mut Term) -> io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(
        term.backend_mut(),
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste,
        cursor::Hide
    )?;
    // Not `clear`, which asks the terminal where its cursor is: a full-screen resize clears
    // the screen and forgets what was drawn, so the next frame is drawn whole.
    let size = term.size()?;
    term.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))
}

fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        default(info);
        // A panic on a helper thread would otherwise leave the loop drawing into a terminal
        // that is no longer in raw mode.
        std::process::exit(101);
    }));
}

/// One frame inside synchronized output (DEC mode 2026), so the terminal shows it whole.
///
/// ratatui renders the frame and sets the cursor; the backend is then handed the whole frame
/// rather than ratatui's cell diff, since it knows what the screen shows and scrolls rows that
/// moved.
pub fn draw(term: &mut Term, render: impl FnOnce(&mut ratatui::Frame)) -> io::Result<()> {
    queue!(term.backend_mut(), BeginSynchronizedUpdate)?;
    term.backend_mut().defer(true);
    let drawn = term.draw(render).map(|done| done.buffer.clone());
    term.backend_mut().defer(false);
    term.backend_mut().frame(drawn?)?;
    execute!(term.backend_mut(), EndSynchronizedUpdate)?;
    Ok(())
}

/// The terminal's title as the loop last set it, sent again only when it changes.
#[derive(Debug, Default)]
pub struct Title {
    shown: Option<String>,
}

impl Title {
    /// Sets the title to `text` if it is not what the terminal shows. The first time (and the
    /// first time after [`restore`], which puts the terminal's own title back) the terminal's
    /// title is saved first. `text` must be plain (no control character).
    pub fn show(&mut self, term: &mut Term, text: &str) -> io::Result<()> {
        if !TITLED.load(Ordering::SeqCst) {
            self.shown = None;
        }
        if self.shown.as_deref() == Some(text) {
            return Ok(());
        }
        let out = term.backend_mut();
        if !TITLED.swap(true, Ordering::SeqCst) {
            out.write_all(PUSH_TITLE)?;
        }
        execute!(out, crossterm::terminal::SetTitle(text))?;
        self.shown = Some(text.to_string());
        Ok(())
    }
}

/// One BEL: most terminals flash or beep, tmux marks the window.
pub fn bell(term: &mut Term) {
    let out = term.backend_mut();
    let _ = out.write_all(b"\x07");
    let _ = out.flush();
}
