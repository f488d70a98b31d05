//! The layout's keys and what follows the selection: zooming a pane, the input bar's project,
//! the paused pane's count of new lines and long lines scrolled sideways.

use crossterm::event::KeyCode;

use super::{App, Focus, Mode, Options};
use crate::tui::event::Event;
use crate::tui::testing::*;

fn with_log(mut app: App, texts: &[&str]) -> App {
    let id = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id,
            lines: lines(texts),
            error: None,
        },
        now(),
    );
    app
}

#[test]
fn z_zooms_the_focused_pane_and_back() {
    let mut app = with_log(app(80, 24), &["one", "two"]);
    let shared = app.areas();
    assert!(shared.table.height > 0 && shared.output.height > 0);
    press(&mut app, [ch('z')]);
    let zoomed = app.areas();
    assert_eq!(zoomed.output.height, 0, "{zoomed:?}");
    assert_eq!(
        zoomed.table.height,
        shared.table.height + shared.output.height
    );
    assert!(
        app.areas().table_rows() >= app.table.view.len(),
        "every job shows"
    );
    // Tab gives the whole body to the other pane; z again shares it.
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(app.focus, Focus::Output);
    assert_eq!(app.areas().table.height, 0);
    press(&mut app, [ch('z')]);
    assert_eq!(app.areas(), shared);
}

#[test]
fn a_short_table_takes_only_its_rows() {
    let mut app = with_log(app(80, 24), &["a"; 200]);
    press(&mut app, [ch('/')]);
    press(&mut app, "Type-check".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(app.table.view.len(), 1);
    assert_eq!(
        app.areas().table.height,
        6,
        "one job, its header and borders (3 rows at least)"
    );
    press(&mut app, [key(KeyCode::Esc)]);
    assert!(
        app.areas().table_rows() > 3,
        "the whole fleet takes more room again"
    );
    let selected = app.table.selected_index().unwrap();
    assert!(selected >= app.table.top && selected < app.table.top + app.areas().table_rows());
}

fn with_projects(projects: &[&str], filter: &[&str]) -> App {
    let opts = Options {
        dispatch_projects: projects.iter().map(|p| p.to_string()).collect(),
        projects: filter.iter().map(|p| p.to_string()).collect(),
        ..options(false)
    };
    app_with(opts, 160, 45).0
}

fn bar_project(app: &App) -> &str {
    app.draft
        .as_ref()
        .and_then(|d| d.project_name())
        .unwrap_or("")
}

#[test]
fn the_input_bar_preselects_the_selected_jobs_project() {
    let mut app = with_projects(&["librec", "musica", "overbits"], &[]);
    press(&mut app, [ch('n')]);
    assert_eq!(bar_project(&app), "overbits", "the first job's project");
    press(&mut app, [key(KeyCode::Esc), ch('j'), ch('n')]);
    assert_eq!(
        bar_project(&app),
        "musica",
        "nothing typed: it follows the selection"
    );
    press(&mut app, "fix it".chars().map(ch));
    press(&mut app, [key(KeyCode::Esc), ch('k'), ch('n')]);
    assert_eq!(bar_project(&app), "musica", "a draft keeps its project");

    // Not a project the bar can dispatch to: the filter's, else the first.
    let mut app = with_projects(&["librec", "musica"], &["musica"]);
    press(&mut app, [ch('n')]);
    assert_eq!(bar_project(&app), "musica");
    let mut app = with_projects(&["librec", "musica"], &[]);
    assert_eq!(app.selected_job().unwrap().project(), "overbits");
    press(&mut app, [ch('n')]);
    assert_eq!(bar_project(&app), "librec");
}

#[test]
fn a_paused_pane_counts_the_lines_that_arrive() {
    let mut app = with_log(app(80, 24), &["x"; 50]);
    let id = app.table.selected.clone().unwrap();
    let append = |app: &mut App, n: usize| {
        app.update(
            Event::LogAppended {
                id: id.clone(),
                reset: None,
                lines: lines(&vec!["new"; n]),
            },
            now(),
        );
    };
    append(&mut app, 3);
    assert_eq!(app.log.unseen, 0, "following");
    press(&mut app, [key(KeyCode::Tab), ch('k')]);
    assert!(!app.log.follow);
    append(&mut app, 3);
    append(&mut app, 4);
    assert_eq!(app.log.unseen, 7);
    press(&mut app, [key(KeyCode::End)]);
    assert!(app.log.follow);
    assert_eq!(app.log.unseen, 0);
}

#[test]
fn long_lines_scroll_sideways_from_either_pane() {
    let long = "x".repeat(300);
    let mut app = with_log(app(80, 24), &["short", &long]);
    let half = app.areas().output_width() / 2;
    press(&mut app, [ch('>')]);
    assert_eq!(app.log.left, half);
    press(&mut app, [ch('>'), ch('>'), ch('<')]);
    assert_eq!(app.log.left, 2 * half);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, [ch('<'), ch('<'), ch('<')]);
    assert_eq!(app.log.left, 0);
    press(&mut app, [ch('w'), ch('>')]);
    assert_eq!(app.log.left, 0, "wrapped lines have nothing to scroll");
    assert!(app.message.as_deref().unwrap_or("").contains("wrapped"));
}
