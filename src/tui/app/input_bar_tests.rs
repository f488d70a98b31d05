//! The agent a task of the input bar runs: the project's own, or one picked by name with its
//! keys, passed on as `luzia run --agent` is.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::input_bar::AgentChoice;
use super::*;
use crate::tui::event::Event;
use crate::tui::testing::*;

fn agents() -> AgentChoice {
    AgentChoice {
        names: ["claude", "codex", "gemini", "scribe"]
            .map(String::from)
            .to_vec(),
        of_project: [("librec", "claude"), ("musica", "gemini")]
            .map(|(p, a)| (p.to_owned(), a.to_owned()))
            .into_iter()
            .collect(),
    }
}

fn with_agents(read_only: bool) -> App {
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        dispatch_agents: agents(),
        ..options(read_only)
    };
    app_with(opts, 160, 45).0
}

fn ctrl(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn alt(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT))
}

fn shown(app: &App) -> Option<(String, bool)> {
    let draft = app.draft.as_ref()?;
    draft
        .agent_shown()
        .map(|(n, picked)| (n.to_owned(), picked))
}

fn dispatched(app: &mut App) -> Effect {
    press(app, "fix the importer".chars().map(ch));
    let mut effects = press(app, [key(KeyCode::Enter)]);
    assert_eq!(effects.len(), 1, "{effects:?}");
    effects.remove(0)
}

#[test]
fn a_task_runs_the_projects_own_agent_unless_another_is_picked() {
    let mut app = with_agents(false);
    press(&mut app, [ch('n')]);
    assert_eq!(shown(&app), Some(("claude".into(), false)));
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(
        shown(&app),
        Some(("gemini".into(), false)),
        "another project, its own agent"
    );
    assert_eq!(
        dispatched(&mut app),
        Effect::Dispatch {
            host: None,
            project: "musica".into(),
            task: "fix the importer".into(),
            retry_of: None,
            agent: None,
        },
        "the project's own is not named: the dispatcher chooses it as it always did"
    );
}

#[test]
fn the_agent_keys_go_round_every_agent_by_name_after_the_projects_own() {
    let mut app = with_agents(false);
    press(&mut app, [ch('n')]);
    let mut seen = Vec::new();
    for _ in 0..4 {
        press(&mut app, [ctrl('t')]);
        seen.push(shown(&app).unwrap());
    }
    assert_eq!(
        seen,
        [
            ("codex".into(), true),
            ("gemini".into(), true),
            ("scribe".into(), true),
            ("claude".into(), false),
        ],
        "librec's own (claude) comes once, as the project's"
    );
    press(&mut app, [alt('t')]);
    assert_eq!(shown(&app), Some(("scribe".into(), true)), "backwards");
    // A pick stays when the project changes: it was chosen for this task.
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(shown(&app), Some(("scribe".into(), true)));
    match dispatched(&mut app) {
        Effect::Dispatch { project, agent, .. } => {
            assert_eq!(
                (project.as_str(), agent.as_deref()),
                ("musica", Some("scribe"))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_agent_keys_are_configurable() {
    let keys =
        crate::config::KeyBindings::from_toml("[input_bar]\nnext_agent = \"ctrl-g\"").unwrap();
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        dispatch_agents: agents(),
        keymap: crate::tui::action::KeyMap::new(&keys).unwrap(),
        ..options(false)
    };
    let mut app = app_with(opts, 160, 45).0;
    press(&mut app, [ch('n'), ctrl('g')]);
    assert_eq!(shown(&app), Some(("codex".into(), true)));
}

#[test]
fn a_read_only_cockpit_dispatches_nothing_and_no_agents_means_no_choice() {
    let mut app = with_agents(true);
    assert!(press(&mut app, [ch('n'), ctrl('t')]).is_empty());
    assert!(app.draft.is_none() && app.mode == Mode::Normal);

    // Without agents to choose (another host's projects), the bar says none and picks none.
    let opts = Options {
        dispatch_projects: vec!["librec".into()],
        ..options(false)
    };
    let mut app = app_with(opts, 160, 45).0;
    press(&mut app, [ch('n'), ctrl('t')]);
    assert_eq!(shown(&app), None);
    assert!(matches!(
        dispatched(&mut app),
        Effect::Dispatch { agent: None, .. }
    ));
}
