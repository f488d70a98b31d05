//! Snapshots of what the keys put on screen: the command line (open, listing completions,
//! saying a command is wrong), the footer after a search, the help scrolled to its end.

use crossterm::event::KeyCode;

use super::tests::{draw, snapshot, with_log};
use crate::tui::app::Options;
use crate::tui::testing::*;

fn typed(app: &mut crate::tui::app::App, text: &str) {
    press(app, text.chars().map(ch));
}

fn with_projects(w: u16, h: u16) -> crate::tui::app::App {
    let opts = Options {
        known_projects: vec!["librec".into(), "musica".into(), "music-hall".into()],
        ..options(false)
    };
    app_with(opts, w, h).0
}

#[test]
fn command_line_open() {
    snapshot("command_line", |w, h| {
        let mut app = with_projects(w, h);
        press(&mut app, [ch(':')]);
        typed(&mut app, "sort new");
        app
    });
}

#[test]
fn command_line_listing_completions() {
    snapshot("command_line_completions", |w, h| {
        let mut app = with_projects(w, h);
        press(&mut app, [ch(':')]);
        typed(&mut app, "project m");
        press(&mut app, [key(KeyCode::Tab)]);
        app
    });
}

#[test]
fn command_line_with_an_error() {
    snapshot("command_line_error", |w, h| {
        let mut app = with_projects(w, h);
        press(&mut app, [ch(':')]);
        typed(&mut app, "wq");
        press(&mut app, [key(KeyCode::Enter)]);
        app
    });
}

/// After a search, back in the table: `n` goes to the next match there too, and the footer
/// says so instead of offering `n new`.
#[test]
fn footer_after_a_search() {
    snapshot("footer_after_search", |w, h| {
        let mut app = with_log(app(w, h));
        press(&mut app, [key(KeyCode::Tab), ch('/')]);
        typed(&mut app, "line");
        press(&mut app, [key(KeyCode::Enter), key(KeyCode::Tab)]);
        app
    });
    let mut app = with_log(app(160, 45));
    press(&mut app, [key(KeyCode::Tab), ch('/')]);
    typed(&mut app, "line");
    press(&mut app, [key(KeyCode::Enter), key(KeyCode::Tab)]);
    let footer = draw(&app).lines().last().unwrap_or_default().to_owned();
    assert!(footer.contains("n/N match"), "{footer}");
    assert!(!footer.contains("n new"), "{footer}");
    press(
        &mut app,
        [key(KeyCode::Tab), key(KeyCode::Esc), key(KeyCode::Tab)],
    );
    let footer = draw(&app).lines().last().unwrap_or_default().to_owned();
    assert!(
        footer.contains("n new"),
        "no search, n is new again: {footer}"
    );
}

/// The help at 80x24 is taller than the screen: scrolled to its end, its last line shows, with
/// nothing after it.
#[test]
fn help_scrolled_to_its_end() {
    let mut app = app(80, 24);
    press(&mut app, [ch('?')]);
    for _ in 0..60 {
        press(&mut app, [ch('j')]);
    }
    insta::assert_snapshot!("help_scrolled_to_end_80x24", draw(&app));
}
