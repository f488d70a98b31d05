//! Snapshots of every screen, drawn on ratatui's TestBackend at 80x24 and 160x45 from the
//! sample job directories (plus live jobs made from them, see `testing`).

use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::render_with;
use crate::jobs::fs::files::open_nofollow;
use crate::jobs::fs::tail::last_lines;
use crate::tui::app::{App, Options};
use crate::tui::event::Event;
use crate::tui::testing::*;
use crate::tui::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 45)];
/// The sizes the layout is checked at: SSH's default, a laptop, a large window, the smallest the
/// cockpit draws, a 4K wall.
const LAYOUT_SIZES: [(u16, u16); 5] = [(80, 24), (120, 35), (160, 45), (60, 15), (250, 70)];

pub(super) fn draw(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| render_with(app, &Theme::default(), f))
        .unwrap();
    term.backend().to_string()
}

/// The selected job's output is the hostile sample's log, so every snapshot also shows that
/// nothing but text reaches the screen.
pub(super) fn with_log(mut app: App) -> App {
    let file = open_nofollow(std::path::Path::new(
        "assets/sample-jobs/155500-evil/output.log",
    ))
    .unwrap()
    .unwrap();
    let len = file.metadata().unwrap().len();
    let lines = last_lines(&file, len, 100).unwrap();
    let id = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id,
            lines,
            error: None,
        },
        now(),
    );
    app
}

pub(super) fn snapshot(name: &str, make: impl Fn(u16, u16) -> App) {
    for (w, h) in SIZES {
        let screen = draw(&make(w, h));
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

#[test]
fn main_screen() {
    for (w, h) in LAYOUT_SIZES {
        let screen = draw(&with_log(app(w, h)));
        insta::assert_snapshot!(format!("main_{w}x{h}"), screen);
    }
}

#[test]
fn zoomed_table_and_output() {
    for (w, h) in [(80, 24), (60, 15)] {
        let mut app = with_log(app(w, h));
        press(&mut app, [ch('z')]);
        insta::assert_snapshot!(format!("zoom_table_{w}x{h}"), draw(&app));
        press(&mut app, [key(KeyCode::Tab)]);
        insta::assert_snapshot!(format!("zoom_output_{w}x{h}"), draw(&app));
    }
}

#[test]
fn detail_view() {
    snapshot("detail", |w, h| {
        let mut app = app(w, h);
        press(&mut app, [ch('j'), ch('j'), ch('j')]); // the needs_input job, with its question
        press(&mut app, [ch('v')]);
        let id = app.table.selected.clone().unwrap();
        app.update(
            Event::PromptLoaded {
                id,
                text: Ok(Some(
                    "Apply the pending migrations.\nAsk before touching production.".into(),
                )),
            },
            now(),
        );
        app
    });
}

#[test]
fn help_popup() {
    snapshot("help", |w, h| {
        let mut app = app(w, h);
        press(&mut app, [ch('?')]);
        app
    });
}

#[test]
fn read_only_wall_display() {
    snapshot("read_only", |w, h| {
        with_log(app_with(options(true), w, h).0)
    });
}

#[test]
fn too_small() {
    for (w, h) in [(59, 24), (80, 14)] {
        insta::assert_snapshot!(format!("too_small_{w}x{h}"), draw(&app(w, h)));
    }
}

#[test]
fn paused_output_with_search_and_filter() {
    snapshot("search", |w, h| {
        let mut app = with_log(app(w, h));
        press(&mut app, [key(KeyCode::Tab), ch('/')]);
        press(&mut app, "line".chars().map(ch));
        press(&mut app, [key(KeyCode::Enter)]);
        app
    });
}

#[test]
fn project_picker() {
    snapshot("picker", |w, h| {
        let mut app = app(w, h);
        press(&mut app, [ch('p'), ch('j')]);
        app
    });
}

#[test]
fn empty_root() {
    let mut app = App::new(
        Options {
            root: "/srv/jobs".into(),
            ..Options::default()
        },
        now(),
    );
    app.update(Event::Resize(80, 24), now());
    let before = draw(&app);
    assert!(before.contains("reading jobs"), "{before}");
    app.update(
        Event::Synced(crate::tui::event::Synced {
            present: vec![],
            read: vec![],
            error: None,
        }),
        now(),
    );
    insta::assert_snapshot!("empty_80x24", draw(&app));
}

#[test]
fn no_color_and_ascii_theme_keep_every_state_distinct() {
    let app = app(160, 45);
    let mut term = Terminal::new(TestBackend::new(160, 45)).unwrap();
    let theme = Theme {
        color: false,
        ascii: true,
    };
    term.draw(|f| render_with(&app, &theme, f)).unwrap();
    let buf = term.backend().buffer();
    for cell in buf.content() {
        assert_eq!(
            cell.fg,
            ratatui::style::Color::Reset,
            "NO_COLOR: no foreground colour at {:?}",
            cell.symbol()
        );
        assert_eq!(cell.bg, ratatui::style::Color::Reset);
    }
    let screen = term.backend().to_string();
    for word in [
        "! waiting",
        "> running",
        "? needs_input",
        "x failed",
        "d died",
        "k killed",
        "+ completed",
    ] {
        assert!(screen.contains(word), "missing {word:?} in\n{screen}");
    }
}

#[test]
fn inbox_popups() {
    // A choice (with the output under it), a text answer being typed, a gate, a denial reason.
    snapshot("inbox_choice", |w, h| {
        let mut app = with_log(app(w, h));
        press(
            &mut app,
            [ch('j'), ch('j'), ch('j'), key(KeyCode::Enter), ch('j')],
        );
        app
    });
    snapshot("inbox_text", |w, h| {
        let mut app = app(w, h);
        let job = text_question_job();
        app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
        press(&mut app, [ch('j'), key(KeyCode::Enter)]); // Enter on the waiting row answers it
        press(&mut app, "Spring release".chars().map(ch));
        app
    });
    snapshot("inbox_gate_deny", |w, h| {
        let mut app = app(w, h);
        press(&mut app, [key(KeyCode::Enter), ch('d')]);
        press(&mut app, "not today".chars().map(ch));
        app
    });
    // A gate of an agent that offers approving for the session: its key, and what it covers.
    snapshot("inbox_gate_session", |w, h| {
        let mut app = app(w, h);
        let job = session_gate_job();
        app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
        press(&mut app, [ch('i'), key(KeyCode::BackTab)]);
        app
    });
}

#[test]
fn input_bar_and_kill_confirm() {
    let projects = || Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        ..options(false)
    };
    snapshot("input_bar", |w, h| {
        let mut app = app_with(projects(), w, h).0;
        press(&mut app, [ch('n')]);
        press(&mut app, "Run the migrations on staging".chars().map(ch));
        app.update(
            Event::Dispatched(Err("unknown project 'x' (known: librec, musica)".into())),
            now(),
        );
        // An error only shows for a dispatch from the bar: send one, then fail it.
        press(&mut app, [key(KeyCode::Enter)]);
        app.update(
            Event::Dispatched(Err(
                "cannot create a job in /var/log/luz-orchestrator/jobs: No space left on device"
                    .into(),
            )),
            now(),
        );
        app
    });
    // The agent: the project's own (said so), then one picked by name.
    let with_agents = || Options {
        dispatch_agents: crate::tui::app::input_bar::AgentChoice {
            names: ["claude", "codex", "gemini"].map(String::from).to_vec(),
            of_project: [("librec", "claude"), ("musica", "gemini")]
                .map(|(p, a)| (p.to_owned(), a.to_owned()))
                .into_iter()
                .collect(),
        },
        ..projects()
    };
    snapshot("input_bar_agent_own", |w, h| {
        let mut app = app_with(with_agents(), w, h).0;
        press(&mut app, [ch('n')]);
        press(&mut app, "Port the importer".chars().map(ch));
        app
    });
    snapshot("input_bar_agent_picked", |w, h| {
        let mut app = app_with(with_agents(), w, h).0;
        let ctrl_t = Event::Key(crossterm::event::KeyEvent::new(
            KeyCode::Char('t'),
            crossterm::event::KeyModifiers::CONTROL,
        ));
        press(&mut app, [ch('n'), ctrl_t]);
        press(&mut app, "Port the importer".chars().map(ch));
        app
    });
    snapshot("kill_confirm", |w, h| {
        let mut app = app_with(projects(), w, h).0;
        press(&mut app, [ch('j'), ch('K')]);
        app
    });
}

/// Known issues found in two failed jobs' output, as the scanner would report them.
fn with_issues(mut app: App) -> App {
    use crate::jobs::insight::known_issues::{PatternSet, scan_text};
    let set = PatternSet::shared_builtin();
    let found = [
        (
            "152000-f00d",
            &b"src/api.ts:14:3 - error TS2322: Type 'string' is not assignable to type 'number'.\n"[..],
        ),
        (
            "155500-evil",
            &b"Traceback (most recent call last):\nModuleNotFoundError: No module named 'yaml'\nModuleNotFoundError: No module named 'yaml'\n"[..],
        ),
    ];
    let found = found
        .iter()
        .map(|(job, text)| (id(job), scan_text(&set, text)))
        .collect();
    app.update(Event::IssuesFound(found), now());
    app
}

#[test]
fn insight_on_the_main_screen() {
    // Alert column, header alarm counts, a server alert, and output lines showing issues.
    snapshot("insight", |w, h| {
        let mut app = with_issues(app(w, h));
        app.update(
            Event::SystemAlerts(vec![crate::jobs::os::system::SystemAlert::Memory {
                used_percent: 91.0,
            }]),
            now(),
        );
        let sel = app.table.selected.clone().unwrap();
        app.update(
            Event::LogLoaded {
                id: sel,
                lines: lines(&[
                    "   Compiling importer v0.3.0",
                    "\x1b[1m\x1b[31merror[E0432]\x1b[0m: unresolved import `serde_yml`",
                    "warning: build failed, waiting for other jobs to finish...",
                    "OSError: [Errno 28] No space left on device: '/tmp/build'",
                ]),
                error: None,
            },
            now(),
        );
        app
    });
}

#[test]
fn insight_in_the_detail_view() {
    snapshot("insight_detail", |w, h| {
        let mut app = with_issues(app(w, h));
        while app.table.selected.as_ref().map(|s| s.as_str()) != Some("155500-evil") {
            press(&mut app, [ch('j')]);
        }
        press(&mut app, [ch('v')]);
        let at = |m: i64| (now() - chrono::Duration::minutes(m)).to_rfc3339();
        app.update(
            Event::HistoryLoaded {
                id: id("155500-evil"),
                history: Ok(vec![
                    serde_json::json!({"progress": {"percent": 25, "step_name": "installing"}, "at": at(50)}),
                    serde_json::json!({"clarification": {"question": "Pin yaml?", "asked_at": at(49)},
                        "response": {"answer": "yes", "answered_by": "ana", "answered_at": at(48)}}),
                ]),
            },
            now(),
        );
        app
    });
}

#[test]
fn recent_events_view() {
    snapshot("events", |w, h| {
        let mut app = with_issues(app(w, h));
        let effects = press(&mut app, [ch('e')]);
        let Some(crate::tui::effect::Effect::LoadFeed(ids)) = effects.into_iter().next() else {
            panic!("e asks for the feed")
        };
        app.update(
            Event::FeedLoaded {
                histories: ids.into_iter().map(|i| (i, Vec::new())).collect(),
                notifications: vec![],
                problems: vec![],
            },
            now(),
        );
        press(&mut app, [ch('j')]);
        app
    });
}

#[test]
fn the_footer_the_help_and_the_popups_name_the_keys_in_force() {
    let written = "quit = \"x\"\n[inbox]\nnext = \"ctrl-n\"\nclose = \"ctrl-x\"\n\
                   [confirm]\nyes = \"o\"\n[filter]\nkeep = \"tab\"";
    let keys = crate::config::KeyBindings::from_toml(written).unwrap();
    let opts = Options {
        keymap: crate::tui::action::KeyMap::new(&keys).unwrap(),
        ..options(false)
    };
    let fresh = || app_with(opts.clone(), 160, 45).0;
    let last_line = |screen: &str| screen.lines().last().unwrap_or_default().to_string();

    let mut app = fresh();
    assert!(
        last_line(&draw(&app)).contains(" x quit "),
        "{}",
        draw(&app)
    );
    press(&mut app, [ch('?')]);
    let help = draw(&app);
    assert!(
        help.contains(" x  quit") && !help.contains("q/ctrl-c"),
        "{help}"
    );

    let mut app = fresh();
    press(&mut app, [key(KeyCode::Enter)]); // the waiting gate
    let inbox = draw(&app);
    assert!(
        last_line(&inbox).contains("ctrl-n next  ctrl-x close the inbox"),
        "{inbox}"
    );
    assert!(inbox.contains("ctrl-n next · ctrl-x close"), "{inbox}");

    let mut app = fresh();
    press(&mut app, [ch('j'), ch('K')]);
    assert!(draw(&app).contains("o kill · any other key: no"));

    let mut app = fresh();
    press(&mut app, [ch('/')]);
    assert!(last_line(&draw(&app)).contains("tab keeps · esc clears"));
}

/// Every job re-read as `change` leaves it, as the scanner would deliver it.
fn resync(app: &mut App, change: impl Fn(&mut crate::jobs::Job)) {
    let mut read: Vec<crate::jobs::Job> = app
        .jobs
        .values()
        .map(|j| crate::jobs::Job::clone(j))
        .collect();
    read.iter_mut().for_each(change);
    let present = read.iter().map(|j| j.id.clone()).collect();
    app.update(
        Event::Synced(crate::tui::event::Synced {
            present,
            read,
            error: None,
        }),
        now(),
    );
}

fn table_header(screen: &str) -> &str {
    screen
        .lines()
        .find(|l| l.contains("ELAPSED"))
        .expect("a header")
}

#[test]
fn the_cost_column_comes_with_the_first_cost_and_only_where_the_task_keeps_room() {
    let mut wide = app(160, 45);
    let header = draw(&wide);
    assert!(table_header(&header).contains("COST"), "{header}");
    let narrow = draw(&app(80, 24));
    let head = table_header(&narrow);
    assert!(!head.contains("COST") && head.contains("TASK"), "{narrow}");
    // Just under the width where the task would keep 30 columns beside it: no cost.
    let screen = draw(&app(124, 45));
    assert!(!table_header(&screen).contains("COST"), "{screen}");
    let screen = draw(&app(125, 45));
    assert!(table_header(&screen).contains("COST"), "{screen}");
    // Just below the wide layout the narrow one would have room, but takes no cost column.
    for w in [107, 111, 112] {
        let screen = draw(&app(w, 45));
        assert!(!table_header(&screen).contains("COST"), "{w}: {screen}");
    }
    // Only the jobs the table lists count: filtered to one without a cost, no column.
    let mut filtered = app(160, 45);
    press(&mut filtered, [ch('/')]);
    press(&mut filtered, "Type-check".chars().map(ch));
    press(&mut filtered, [key(KeyCode::Enter)]);
    let screen = draw(&filtered);
    assert!(screen.contains("152000-f00d"), "{screen}");
    assert!(!table_header(&screen).contains("COST"), "{screen}");

    resync(&mut wide, |j| {
        if let Some(m) = j.meta.as_mut() {
            m.usage = None;
        }
    });
    let screen = draw(&wide);
    assert!(!table_header(&screen).contains("COST"), "{screen}");
    resync(&mut wide, |j| {
        if j.id.as_str() == "152000-f00d"
            && let Some(m) = j.meta.as_mut()
        {
            m.usage = Some(Box::new(claude_usage(12.5, 40)));
        }
    });
    let screen = draw(&wide);
    let row = screen.lines().find(|l| l.contains("152000-f00d")).unwrap();
    assert!(row.contains("$12.50"), "{screen}");
}

#[test]
fn the_table_says_what_the_agent_is_doing_and_the_step_when_nothing_is_in_flight() {
    let mut app = app(160, 45);
    let row = |app: &App| {
        let screen = draw(app);
        screen
            .lines()
            .find(|l| l.contains("155800-run2"))
            .unwrap()
            .to_string()
    };
    assert!(
        row(&app).contains("Bash: cargo test --wor… 2m"),
        "{}",
        row(&app)
    );
    resync(&mut app, |j| {
        if let Some(a) = j.activity.as_mut() {
            a.what = "Read: src/main.rs".into();
            a.since = Some(now() - chrono::Duration::seconds(9));
        }
    });
    assert!(row(&app).contains("Read: src/main.rs 9s"), "{}", row(&app));
    resync(&mut app, |j| j.activity = None);
    assert!(row(&app).contains("2/5 Running tests"), "{}", row(&app));
    // A finished job's last call is over, whatever a stale activity.json says.
    resync(&mut app, |j| {
        if j.id.as_str() == "142315-a1b2" {
            j.activity = Some(Box::new(crate::jobs::model::session::Activity {
                what: "Bash: stale".into(),
                since: None,
            }));
        }
    });
    assert!(!draw(&app).contains("Bash: stale"));
}

#[test]
fn an_unknown_project_says_so_in_the_header_at_every_size() {
    for (w, h) in [(80, 24), (160, 45)] {
        let opts = Options {
            projects: vec!["overbitz".into()],
            ..options(false)
        };
        let app = app_with(opts, w, h).0;
        let screen = draw(&app);
        let header = screen.lines().next().unwrap_or_default();
        assert!(header.contains("NO PROJECT overbitz"), "{w}x{h}: {header}");
        insta::assert_snapshot!(format!("unknown_project_{w}x{h}"), screen);
    }
}

#[test]
fn a_choice_of_several_shows_its_header_descriptions_and_what_is_picked() {
    let mut app = app(160, 45);
    let job = crate::tui::testing::multi_question_job();
    app.update(
        Event::JobsRead(vec![(job.id.clone(), Some(job.clone()))]),
        now(),
    );
    press(&mut app, [ch('i')]);
    while !matches!(&app.mode, crate::tui::app::Mode::Inbox(i) if i.item.job == job.id) {
        press(&mut app, [key(KeyCode::Tab)]);
    }
    press(&mut app, [ch('2'), ch(' ')]);
    let screen = draw(&app);
    for want in [
        "Checks",
        "pick one or several",
        "[ ] 1) unit tests",
        "Fast, no database",
        "› [x] 2) smoke tests",
        "Against the migrated database",
        "space pick",
    ] {
        assert!(screen.contains(want), "{want:?} not on screen:\n{screen}");
    }
}
