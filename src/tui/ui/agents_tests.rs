//! Snapshots of the AGENT column, at 80x24 and 160x45: the jobs in view ran Claude Code,
//! Codex, Gemini CLI and Aider, each row saying which; with one kind in view (or none named)
//! the column takes no room.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::render_with;
use super::table::Columns;
use crate::jobs::Job;
use crate::tui::app::App;
use crate::tui::event::Event;
use crate::tui::testing::*;
use crate::tui::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 45)];

fn draw(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| render_with(app, &Theme::default(), f))
        .unwrap();
    term.backend().to_string()
}

/// The fixtures, with the agents of some named as luzia's dispatcher names them (a program, a
/// name or a path); the others name none, as the orchestrator's jobs do.
fn with_agents(w: u16, h: u16, agents: &[(&str, &str)]) -> App {
    let mut app = app(w, h);
    let read = jobs()
        .into_iter()
        .filter_map(|mut job| {
            let (_, program) = agents.iter().find(|(id, _)| *id == job.id.as_str())?;
            job.meta.as_mut()?.agent = (*program).into();
            Some((job.id.clone(), Some(job)))
        })
        .collect();
    app.update(Event::JobsRead(read), now());
    app
}

const MIXED: [(&str, &str); 5] = [
    ("142315-a1b2", "claude"),
    ("143002-c3d4", "/usr/local/bin/codex"),
    ("150110-e5f6", "gemini"),
    ("151200-q1q1", "/opt/aider/bin/aider"),
    ("152000-f00d", "claude"),
];

fn columns(app: &App) -> Columns {
    let listed: Vec<&Job> = app.table.view.iter().map(|id| &*app.jobs[id]).collect();
    Columns::fit(app, &listed, &Theme::default(), app.size.width - 2)
}

#[test]
fn the_agent_column_names_each_jobs_kind_of_agent() {
    for (w, h) in SIZES {
        let app = with_agents(w, h, &MIXED);
        assert!(columns(&app).agent > 0, "{w}x{h}: four kinds in view");
        insta::assert_snapshot!(format!("agents_mixed_{w}x{h}"), draw(&app));
    }
}

#[test]
fn one_kind_of_agent_in_view_or_none_named_takes_no_column() {
    let claude: Vec<(&str, &str)> = MIXED.iter().map(|(id, _)| (*id, "claude")).collect();
    for (w, h) in SIZES {
        for agents in [&claude[..], &[]] {
            let app = with_agents(w, h, agents);
            assert_eq!(columns(&app).agent, 0, "{w}x{h} {agents:?}");
            assert!(!draw(&app).contains("AGENT"), "{w}x{h} {agents:?}");
        }
    }
    // A plain command beside Claude Code is another kind.
    let app = with_agents(160, 45, &[("142315-a1b2", "claude"), ("143002-c3d4", "sh")]);
    assert!(columns(&app).agent > 0);
    assert!(draw(&app).contains("command"));
}

#[test]
fn where_room_is_short_the_agent_goes_before_the_task_is_squeezed() {
    let app = with_agents(50, 20, &MIXED);
    let c = columns(&app);
    assert_eq!(c.agent, 0, "{c:?}");
}
