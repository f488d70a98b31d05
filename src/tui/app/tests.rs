//! `update` tests: key (or event) in, state and effects out. No terminal, no disk.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::table::view::{SortKey, Tab};
use super::*;
use crate::config::KeyBindings;
use crate::jobs::Status;
use crate::jobs::fs::follow::Reset;
use crate::jobs::hitl::operator::Scope;
use crate::tui::event::Event;
use crate::tui::event::Synced;
use crate::tui::testing::*;

#[test]
fn loading_selects_the_first_row_and_opens_its_log() {
    let (app, effects) = app_with(options(false), 160, 45);
    assert!(app.loaded);
    assert_eq!(app.table.view.len(), 15, "12 samples + 3 live jobs");
    // Status order: the waiting job first, then running, then the rest.
    assert_eq!(
        &ids_of(&app)[..4],
        ["155700-gate", "155900-run1", "155800-run2", "151200-q1q1"]
    );
    assert_eq!(
        app.table.selected.as_ref().map(JobId::as_str),
        Some("155700-gate")
    );
    let (scans, rest): (Vec<_>, Vec<_>) = effects
        .into_iter()
        .partition(|e| matches!(e, Effect::ScanIssues(_)));
    assert_eq!(rest, [Effect::OpenLog(id("155700-gate"))]);
    // Every log is handed to the scanner once, the live jobs' first.
    let [Effect::ScanIssues(logs)] = &scans[..] else {
        panic!("{scans:?}")
    };
    assert!(logs.len() > 5);
    assert!(logs[..3].iter().all(|l| app.jobs[&l.id].status.is_active()));
}

#[test]
fn selection_moves_and_clamps() {
    let mut app = app(160, 45);
    let effects = press(&mut app, [ch('j'), ch('j')]);
    assert_eq!(app.table.selected_index(), Some(2));
    assert_eq!(effects.last(), Some(&Effect::OpenLog(id("155800-run2"))));
    press(&mut app, [ch('k'), ch('k'), ch('k')]);
    assert_eq!(app.table.selected_index(), Some(0), "clamps at the top");
    press(&mut app, [ch('G')]);
    assert_eq!(app.table.selected_index(), Some(14), "G: last row");
    press(&mut app, [key(KeyCode::Down)]);
    assert_eq!(app.table.selected_index(), Some(14), "clamps at the bottom");
    press(&mut app, [ch('g')]);
    assert_eq!(app.table.selected_index(), Some(0));
    press(&mut app, [key(KeyCode::PageDown)]);
    assert_eq!(
        app.table.selected_index(),
        Some(app.areas().table_rows().min(14))
    );
}

/// What is worked out from every job for a frame (the columns' widths, the tabs' counts) is
/// kept while `changes` stays: moving the selection keeps it, what rebuilds the rows does not.
#[test]
fn moving_the_selection_is_not_a_change_to_what_is_listed() {
    let mut app = app(160, 45);
    let before = app.changes;
    press(&mut app, [ch('j'), ch('j'), ch('k'), ch('G'), ch('g')]);
    press(&mut app, [key(KeyCode::PageDown), key(KeyCode::Up)]);
    assert_eq!(app.changes, before, "only the selection moved");
    press(&mut app, [key(KeyCode::Right)]);
    assert!(app.changes > before, "another tab lists other jobs");
    let before = app.changes;
    press(&mut app, [ch('/'), ch('m')]);
    assert!(matches!(app.mode, Mode::Filter(_)), "{:?}", app.mode);
    assert!(app.changes > before, "typing the filter rebuilds the rows");
    let before = app.changes;
    press(&mut app, [key(KeyCode::Esc)]);
    assert!(
        app.changes > before,
        "clearing the filter rebuilds them again"
    );
}

/// `admits` says of one job what rebuilding the rows says of them all, for every tab and filter.
#[test]
fn admitting_one_job_agrees_with_the_rows() {
    let mut app = app(160, 45);
    let mut tried = 0;
    for filter in ["", "musica", "HOSTILE", "1558", "no such job"] {
        for _ in 0..Tab::ALL.len() {
            press(&mut app, [key(KeyCode::Right)]);
            app.table.filter = filter.to_string();
            app.refresh_view();
            for job in app.jobs.values() {
                assert_eq!(
                    app.table.admits(job),
                    app.table.shows(&job.id),
                    "{} on {:?} with {filter:?}",
                    job.id,
                    app.table.tab
                );
                tried += 1;
            }
        }
    }
    assert!(tried > 100, "{tried}");
}

#[test]
fn the_table_scrolls_to_keep_the_selection_visible() {
    let mut app = app(80, 24);
    let rows = app.areas().table_rows();
    assert!(rows < 15, "the fixture must not fit: {rows}");
    press(&mut app, [ch('G')]);
    assert_eq!(app.table.top, 15 - rows);
    press(&mut app, [ch('g')]);
    assert_eq!(app.table.top, 0);
}

#[test]
fn text_filter_narrows_live_and_esc_clears() {
    let mut app = app(160, 45);
    press(&mut app, [ch('/')]);
    assert!(matches!(app.mode, Mode::Filter(_)));
    press(&mut app, "MUSICA".chars().map(ch));
    assert!(
        app.table
            .view
            .iter()
            .all(|i| app.jobs[i].project() == "musica"),
        "{:?}",
        ids_of(&app)
    );
    press(&mut app, (0..6).map(|_| key(KeyCode::Backspace)));
    press(&mut app, "hostile".chars().map(ch));
    assert_eq!(ids_of(&app), ["155500-evil"]);
    assert_eq!(
        app.table.selected.as_ref().map(JobId::as_str),
        Some("155500-evil")
    );
    press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.table.filter, "hostile", "Enter keeps the filter");
    press(&mut app, [key(KeyCode::Esc)]);
    assert_eq!(app.table.filter, "");
    assert_eq!(app.table.view.len(), 15);
}

#[test]
fn tabs_select_by_state() {
    let mut app = app(160, 45);
    let expect = [
        (
            Tab::Active,
            vec!["155700-gate", "155900-run1", "155800-run2"],
        ),
        (Tab::Waiting, vec!["155700-gate", "151200-q1q1"]),
        (Tab::Done, vec!["154500-trnc", "142315-a1b2"]),
    ];
    for (tab, ids) in expect {
        press(&mut app, [key(KeyCode::Right)]);
        assert_eq!(app.table.tab, tab);
        let mut got = ids_of(&app);
        got.sort();
        let mut want = ids.clone();
        want.sort();
        assert_eq!(got, want, "{tab:?}");
    }
    press(&mut app, [key(KeyCode::Right)]);
    assert_eq!(app.table.tab, Tab::Failed);
    assert!(app.table.view.iter().all(|i| matches!(
        app.jobs[i].status,
        Status::Failed | Status::Killed | Status::Died
    )));
    press(&mut app, [key(KeyCode::Right)]);
    assert_eq!(app.table.tab, Tab::All, "wraps around");
    press(&mut app, [key(KeyCode::Left)]);
    assert_eq!(app.table.tab, Tab::Failed);
}

#[test]
fn sort_cycles_and_reorders() {
    let mut app = app(160, 45);
    press(&mut app, [ch('s')]);
    assert_eq!(app.table.sort, SortKey::Started);
    assert_eq!(ids_of(&app)[0], "155900-run1", "newest first");
    press(&mut app, [ch('s')]);
    assert_eq!(app.table.sort, SortKey::Project);
    let projects: Vec<&str> = app
        .table
        .view
        .iter()
        .map(|i| app.jobs[i].project())
        .collect();
    let mut sorted = projects.clone();
    sorted.sort();
    assert_eq!(projects, sorted);
    press(&mut app, [ch('s')]);
    assert_eq!(app.table.sort, SortKey::Elapsed);
    let elapsed: Vec<Option<i64>> = app
        .table
        .view
        .iter()
        .map(|i| app.jobs[i].elapsed_secs(now()))
        .collect();
    assert!(elapsed.windows(2).all(|w| w[0] >= w[1]), "{elapsed:?}");
    assert_eq!(app.message.as_deref(), Some("sorted by longest"));
    press(&mut app, [ch('s')]);
    assert_eq!(app.table.sort, SortKey::Status);
}

#[test]
fn selection_follows_its_job_through_reorders_and_removal() {
    let mut app = app(160, 45);
    press(&mut app, [ch('j'), ch('j')]);
    let picked = app.table.selected.clone().unwrap();
    press(&mut app, [ch('s')]);
    assert_eq!(
        app.table.selected.as_ref(),
        Some(&picked),
        "a re-sort keeps the job selected"
    );
    let index = app.table.selected_index().unwrap();
    let effects = app.update(Event::JobsRead(vec![(picked.clone(), None)]), now());
    assert!(!app.jobs.contains_key(&picked));
    assert_eq!(
        app.table.selected_index(),
        Some(index),
        "the row below moves up into the selection"
    );
    assert_eq!(
        effects,
        [
            Effect::OpenLog(app.table.selected.clone().unwrap()),
            Effect::ForgetIssues(vec![picked])
        ]
    );
}

#[test]
fn changes_to_the_selected_job_read_it_and_poll_its_log() {
    let mut app = app(160, 45);
    let sel = app.table.selected.clone().unwrap();
    let other = id("142315-a1b2");
    let effects = app.update(Event::JobsChanged(vec![other.clone()]), now());
    assert_eq!(effects, [Effect::ReadJobs(vec![other.clone()])]);
    let effects = app.update(Event::JobsChanged(vec![other.clone(), sel.clone()]), now());
    assert_eq!(
        effects,
        [
            Effect::ReadJobs(vec![other, sel.clone()]),
            Effect::PollLog(sel)
        ]
    );
}

#[test]
fn output_growing_polls_the_pane_at_once_and_reads_a_running_job_at_the_next_tick() {
    let mut app = app(160, 45);
    let sel = app.table.selected.clone().unwrap();
    let running = id("155900-run1");
    let settled = id("142315-a1b2");
    assert!(app.jobs[&running].status.is_active() && !app.jobs[&settled].status.is_active());
    // An agent printing: its job is not read for each write.
    app.dirty = false;
    let effects = app.update(Event::OutputGrew(vec![running.clone()]), now());
    assert_eq!(effects, []);
    assert!(!app.dirty, "nothing on screen changed");
    let effects = app.update(Event::OutputGrew(vec![running.clone(), sel.clone()]), now());
    assert_eq!(
        effects,
        [Effect::PollLog(sel.clone())],
        "the pane follows at once"
    );
    // A job that does not run is read at once: its output may say how it ended.
    let effects = app.update(Event::OutputGrew(vec![settled.clone()]), now());
    assert_eq!(effects, [Effect::ReadJobs(vec![settled])]);
    // The next tick reads each running job whose output grew, once.
    let effects = app.update(Event::Tick, now());
    let read: Vec<&Vec<JobId>> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::ReadJobs(ids) => Some(ids),
            _ => None,
        })
        .collect();
    let [ids] = &read[..] else {
        panic!("{effects:?}")
    };
    let mut ids = (*ids).clone();
    ids.sort();
    let mut want = vec![running, sel];
    want.sort();
    assert_eq!(ids, want);
    let effects = app.update(Event::Tick, now());
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::ReadJobs(_))),
        "read once: {effects:?}"
    );
}

#[test]
fn a_rescan_drops_jobs_that_are_gone_and_keeps_the_rest() {
    let mut app = app(160, 45);
    let keep = id("142315-a1b2");
    let synced = Synced {
        present: vec![keep.clone()],
        read: vec![],
        error: None,
    };
    app.update(Event::Synced(synced), now());
    assert_eq!(ids_of(&app), ["142315-a1b2"]);
    assert_eq!(app.table.selected, Some(keep));
    assert_eq!(app.table.counts.get(&Status::Completed), Some(&1));
}

#[test]
fn follow_pauses_on_scroll_up_and_resumes_on_g_or_end() {
    let mut app = app(160, 45);
    let sel = app.table.selected.clone().unwrap();
    let many: Vec<String> = (0..200).map(|i| format!("line {i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    app.update(
        Event::LogLoaded {
            id: sel.clone(),
            lines: lines(&refs),
            error: None,
        },
        now(),
    );
    assert!(app.log.follow);
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(app.focus, Focus::Output);
    press(&mut app, [ch('k')]);
    assert!(!app.log.follow, "scrolling up pauses");
    let top = app.log.top_for(app.areas().output_lines());
    app.update(
        Event::LogAppended {
            id: sel.clone(),
            reset: None,
            lines: lines(&["new"]),
        },
        now(),
    );
    assert_eq!(
        app.log.top_for(app.areas().output_lines()),
        top,
        "paused: the view stays"
    );
    press(&mut app, [ch('G')]);
    assert!(app.log.follow, "G resumes (in the output pane)");
    press(&mut app, [ch('k'), key(KeyCode::End)]);
    assert!(app.log.follow, "End resumes");
    press(&mut app, [key(KeyCode::Tab), ch('k')]);
    assert_eq!(app.focus, Focus::Table);
    assert!(
        app.log.follow,
        "in the table, k moves the selection, not the output"
    );
}

#[test]
fn log_events_for_another_job_are_ignored() {
    let mut app = app(160, 45);
    app.update(
        Event::LogLoaded {
            id: id("142315-a1b2"),
            lines: lines(&["stale"]),
            error: None,
        },
        now(),
    );
    assert!(
        app.log.lines.is_empty(),
        "a late answer for a job no longer selected"
    );
    let sel = app.table.selected.clone().unwrap();
    app.update(
        Event::LogAppended {
            id: sel,
            reset: Some(Reset::Replaced),
            lines: lines(&["x"]),
        },
        now(),
    );
    assert!(app.log.note.as_deref().unwrap().contains("replaced"));
}

#[test]
fn search_in_the_output_pane() {
    let mut app = app(160, 45);
    let sel = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id: sel,
            lines: lines(&["a", "boom 1", "b", "BOOM 2", "c"]),
            error: None,
        },
        now(),
    );
    press(&mut app, [ch('/')]);
    assert!(
        matches!(app.mode, Mode::Filter(_)),
        "in the table, / filters jobs"
    );
    press(&mut app, [key(KeyCode::Esc), key(KeyCode::Tab), ch('/')]);
    assert!(matches!(app.mode, Mode::Search(_)));
    press(&mut app, "boom".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(app.log.search.as_ref().unwrap().matches, [1, 3]);
    assert_eq!(app.log.current_match(), Some(3));
    press(&mut app, [ch('N')]);
    assert_eq!(app.log.current_match(), Some(1));
    press(&mut app, [ch('n')]);
    assert_eq!(app.log.current_match(), Some(3));
    press(&mut app, [ch('/')]);
    press(&mut app, [key(KeyCode::Char('u')).with_ctrl()]);
    press(&mut app, "nothing".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(app.message.as_deref().unwrap().contains("no match"));
    press(&mut app, [key(KeyCode::Esc)]);
    assert!(
        app.log.search.is_none(),
        "Esc in the output pane clears the search"
    );
}

trait WithCtrl {
    fn with_ctrl(self) -> Event;
}

impl WithCtrl for Event {
    fn with_ctrl(self) -> Event {
        match self {
            Event::Key(k) => Event::Key(KeyEvent::new(k.code, KeyModifiers::CONTROL)),
            other => other,
        }
    }
}

#[test]
fn wrap_toggles() {
    let mut app = app(160, 45);
    press(&mut app, [ch('w')]);
    assert!(app.log.wrap);
    press(&mut app, [ch('j')]);
    assert!(
        app.log.wrap,
        "wrap is a preference: it survives changing jobs"
    );
}

#[test]
fn project_picker_filters_and_can_clear() {
    let opts = Options {
        known_projects: vec!["zeta".into()],
        ..options(false)
    };
    let (mut app, _) = app_with(opts, 160, 45);
    press(&mut app, [ch('p')]);
    let Mode::Picker(picker) = &app.mode else {
        panic!("no picker: {:?}", app.mode)
    };
    assert_eq!(
        picker.items,
        ["(all projects)", "librec", "musica", "overbits", "zeta"]
    );
    assert_eq!(picker.selected, 0);
    press(&mut app, [ch('j'), ch('j'), key(KeyCode::Enter)]);
    assert_eq!(app.table.projects, ["musica"]);
    assert!(
        app.table
            .view
            .iter()
            .all(|i| app.jobs[i].project() == "musica")
    );
    assert_eq!(
        app.table.counts.values().sum::<usize>(),
        app.table.view.len()
    );
    press(&mut app, [ch('p'), ch('g'), key(KeyCode::Enter)]);
    assert!(app.table.projects.is_empty());
    assert_eq!(app.table.view.len(), 15);
    press(&mut app, [ch('p'), key(KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn project_filter_from_the_command_line() {
    let opts = Options {
        projects: vec!["overbits".into()],
        ..options(false)
    };
    let (app, _) = app_with(opts, 160, 45);
    assert!(!app.table.view.is_empty());
    assert!(
        app.table
            .view
            .iter()
            .all(|i| app.jobs[i].project() == "overbits")
    );
}

#[test]
fn an_unknown_project_is_named_and_esc_goes_back_to_the_whole_fleet() {
    let opts = Options {
        projects: vec!["overbitz".into()],
        ..options(false)
    };
    let (mut app, _) = app_with(opts, 160, 45);
    assert!(app.table.view.is_empty());
    assert_eq!(app.unknown_projects(), vec!["overbitz"]);
    // The text filter goes first, then the project filter.
    app.table.filter = "x".into();
    app.update(key(KeyCode::Esc), now());
    assert!(app.table.filter.is_empty());
    assert_eq!(app.table.projects, vec!["overbitz".to_string()]);
    app.update(key(KeyCode::Esc), now());
    assert!(app.table.projects.is_empty());
    assert!(app.unknown_projects().is_empty());
    assert!(!app.table.view.is_empty());
}

#[test]
fn a_configured_project_without_jobs_is_not_unknown() {
    let mut opts = Options {
        projects: vec!["newproj".into()],
        ..options(false)
    };
    opts.known_projects.push("newproj".into());
    let (app, _) = app_with(opts, 160, 45);
    assert!(app.unknown_projects().is_empty());
}

#[test]
fn help_and_detail_take_keys_first() {
    let mut app = app(160, 45);
    press(&mut app, [ch('?')]);
    assert_eq!(app.mode, Mode::Help);
    press(&mut app, [ch('j')]);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(
        app.table.selected_index(),
        Some(0),
        "the key closed help and did nothing else"
    );
    let effects = press(&mut app, [ch('v')]);
    assert!(matches!(app.mode, Mode::Detail(_)), "{:?}", app.mode);
    assert_eq!(
        effects,
        [
            Effect::LoadPrompt(id("155700-gate")),
            Effect::LoadHistory(id("155700-gate"))
        ]
    );
    press(&mut app, [ch('j'), ch('j')]);
    let Mode::Detail(detail) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert_eq!(detail.scroll, 2, "in the detail view, j scrolls");
    assert_eq!(app.table.selected_index(), Some(0));
    press(&mut app, [key(KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
    let effects = press(&mut app, [ch('?'), ch('q')]);
    assert!(effects.is_empty(), "q closes the help, it does not quit");
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn quit_keys() {
    for ev in [ch('q'), key(KeyCode::Char('c')).with_ctrl()] {
        let mut app = app(80, 24);
        assert_eq!(press(&mut app, [ev]), [Effect::Quit]);
        assert!(app.quit);
    }
    let mut app = app(80, 24);
    app.update(Event::Signal(crate::tui::event::Stop::Hangup), now());
    assert!(app.quit);
}

#[test]
fn remapped_keys_and_ctrl_c_always_quits() {
    let keys = KeyBindings::from_toml("quit = \"x\"").unwrap();
    let opts = Options {
        keymap: KeyMap::new(&keys).unwrap(),
        ..options(false)
    };
    let (mut app, _) = app_with(opts, 80, 24);
    assert!(press(&mut app, [ch('q')]).is_empty());
    assert!(!app.quit);
    assert_eq!(
        press(&mut app, [key(KeyCode::Char('c')).with_ctrl()]),
        [Effect::Quit]
    );
    let (mut app, _) = app_with(
        Options {
            keymap: KeyMap::new(&keys).unwrap(),
            ..options(false)
        },
        80,
        24,
    );
    assert_eq!(press(&mut app, [ch('x')]), [Effect::Quit]);
}

#[test]
fn mouse_click_selects_and_wheel_scrolls() {
    let mut app = app(160, 45);
    let table = app.areas().table;
    let click = |row: u16| {
        Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 10,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    press(&mut app, [click(table.y + 2 + 3)]);
    assert_eq!(app.table.selected_index(), Some(3));
    press(&mut app, [click(table.y + 1)]);
    assert_eq!(
        app.table.selected_index(),
        Some(3),
        "the header row selects nothing"
    );
    let wheel = |kind, row| {
        Event::Mouse(MouseEvent {
            kind,
            column: 10,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    press(&mut app, [wheel(MouseEventKind::ScrollDown, table.y + 3)]);
    assert_eq!(app.table.selected_index(), Some(4));
    let sel = app.table.selected.clone().unwrap();
    let many: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    app.update(
        Event::LogLoaded {
            id: sel,
            lines: lines(&refs),
            error: None,
        },
        now(),
    );
    let out = app.areas().output;
    press(&mut app, [wheel(MouseEventKind::ScrollUp, out.y + 3)]);
    assert!(!app.log.follow);
    press(&mut app, [click(out.y + 3)]);
    assert_eq!(app.focus, Focus::Output);
}

#[test]
fn the_wall_display_cycles_through_live_jobs() {
    let opts = Options {
        cycle_secs: Some(2),
        read_only: true,
        ..options(true)
    };
    let (mut app, _) = app_with(opts, 160, 45);
    assert!(app.wants_tick());
    let live = ["155700-gate", "155900-run1", "155800-run2"];
    assert_eq!(
        app.table.selected.as_ref().map(JobId::as_str),
        Some(live[0])
    );
    let mut seen = vec![];
    for _ in 0..6 {
        press(&mut app, [Event::Tick]);
        seen.push(app.table.selected.clone().unwrap().to_string());
    }
    assert_eq!(seen, [live[0], live[1], live[1], live[2], live[2], live[0]]);
}

#[test]
fn ticks_check_liveness_and_redraw_only_what_moves() {
    let mut app = app(160, 45);
    assert!(
        app.wants_tick(),
        "live jobs: pids may die, elapsed times move"
    );
    let effects = app.update(Event::Tick, now());
    // Which pids are asked after is the reads worker's: those whose end no pidfd reports.
    assert_eq!(effects.first(), Some(&Effect::CheckAlive), "{effects:?}");
    assert!(app.dirty, "elapsed times on screen move");
    press(&mut app, [key(KeyCode::Left)]);
    assert_eq!(app.table.tab, Tab::Failed);
    app.dirty = false;
    app.update(Event::Tick, now());
    assert!(!app.dirty, "nothing on screen changes by itself: no frame");

    let mut finished = crate::tui::testing::app(160, 45);
    let gone: Vec<(JobId, Option<Job>)> = ["155700-gate", "155800-run2", "155900-run1"]
        .iter()
        .map(|i| (id(i), None))
        .collect();
    finished.update(Event::JobsRead(gone), now());
    assert!(
        !finished.wants_tick(),
        "with nothing live, nothing wakes the cockpit"
    );
}

#[test]
fn a_job_dying_while_in_its_detail_view_closes_it() {
    let mut app = app(160, 45);
    press(&mut app, [ch('v')]);
    assert!(matches!(app.mode, Mode::Detail(_)), "{:?}", app.mode);
    let sel = app.table.selected.clone().unwrap();
    app.update(Event::JobsRead(vec![(sel.clone(), None)]), now());
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.message, Some(format!("job {sel} is gone")));
    assert_ne!(app.table.selected, Some(sel));
}

#[test]
fn read_only_keys_lead_only_to_reads() {
    let (mut app, _) = app_with(options(true), 160, 45);
    let mut all = Vec::new();
    let codes = [
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Tab,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::F(1),
        KeyCode::Backspace,
        KeyCode::Delete,
    ];
    for c in (b' '..=b'~').map(char::from).filter(|c| *c != 'q') {
        all.extend(press(&mut app, [ch(c), key(KeyCode::Esc)]));
        all.extend(press(
            &mut app,
            [
                key(KeyCode::Tab),
                ch(c),
                key(KeyCode::Esc),
                key(KeyCode::Tab),
            ],
        ));
    }
    for code in codes {
        all.extend(press(&mut app, [key(code), key(KeyCode::Esc)]));
    }
    assert!(!all.is_empty());
    for effect in &all {
        assert!(
            matches!(
                effect,
                Effect::OpenLog(_)
                    | Effect::PollLog(_)
                    | Effect::CloseLog
                    | Effect::LoadPrompt(_)
                    | Effect::LoadHistory(_)
                    | Effect::LoadFeed(_)
                    | Effect::LoadChange(_)
                    | Effect::ScanIssues(_)
                    | Effect::ForgetIssues(_)
                    | Effect::ReadJobs(_)
                    | Effect::Sync { .. }
            ),
            "read-only produced {effect:?}"
        );
        assert!(!effect.writes());
    }
    assert!(!app.quit);
}

#[test]
fn polling_reads_only_jobs_that_can_change() {
    let mut app = app(160, 45);
    let effects = app.update(Event::PollTick, now());
    let Effect::Sync { skip } = &effects[0] else {
        panic!("{effects:?}")
    };
    assert!(skip.contains(&id("142315-a1b2")), "completed: settled");
    assert!(
        !skip.contains(&id("151200-q1q1")),
        "needs_input can still be answered"
    );
    assert!(!skip.contains(&id("155900-run1")));
    assert!(
        !skip.contains(&id("153000-dead")),
        "died: a retry or late exit line may come"
    );
    assert_eq!(
        effects[1],
        Effect::PollLog(app.table.selected.clone().unwrap())
    );
    let _ = no_skip();
}

#[test]
fn resize_updates_layout() {
    let mut app = app(160, 45);
    let big = app.areas().table_rows();
    app.update(Event::Resize(80, 24), now());
    assert!(app.areas().table_rows() < big);
}

// ----- the inbox -----

fn alt(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::ALT))
}

fn inbox_of(app: &App) -> &inbox::Inbox {
    match &app.mode {
        Mode::Inbox(inbox) => inbox,
        other => panic!("the inbox is not open: {other:?}"),
    }
}

#[test]
fn enter_on_a_waiting_job_opens_the_inbox_on_it_and_i_on_the_oldest() {
    let mut app = app(160, 45);
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(matches!(app.mode, Mode::Inbox(_)), "{:?}", app.mode);
    let inbox = inbox_of(&app);
    assert_eq!(
        (inbox.item.job.as_str(), inbox.item.kind),
        ("155700-gate", inbox::InboxKind::Gate)
    );
    press(&mut app, [key(KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, [ch('i')]);
    let inbox = inbox_of(&app);
    assert_eq!(
        inbox.item.job.as_str(),
        "151200-q1q1",
        "oldest first: asked 15:14, the gate at 15:56"
    );
    assert_eq!(
        app.table.selected.as_ref().map(JobId::as_str),
        Some("151200-q1q1"),
        "its output shows under the popup"
    );
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(inbox_of(&app).item.job.as_str(), "155700-gate");
    press(&mut app, [key(KeyCode::Tab)]);
    assert_eq!(
        inbox_of(&app).item.job.as_str(),
        "151200-q1q1",
        "wraps around"
    );
}

#[test]
fn choosing_an_option_answers_that_question_of_that_job() {
    let mut app = app(160, 45);
    press(&mut app, [ch('i')]);
    let effects = press(&mut app, [ch('j'), key(KeyCode::Enter)]);
    assert_eq!(
        effects,
        [Effect::Answer {
            job: id("151200-q1q1"),
            question_id: "q1".into(),
            answer: "staging".into()
        }]
    );
    assert!(inbox_of(&app).sending);
    assert!(
        press(&mut app, [key(KeyCode::Enter)]).is_empty(),
        "no second answer while one is on its way"
    );
    let mut app = crate::tui::testing::app(160, 45);
    press(&mut app, [ch('i')]);
    let effects = press(&mut app, [ch('1'), key(KeyCode::Enter)]);
    assert!(
        matches!(&effects[0], Effect::Answer { answer, .. } if answer == "production"),
        "number keys pick"
    );
}

#[test]
fn success_moves_on_and_failure_stays_with_the_reason() {
    let mut app = app(160, 45);
    press(&mut app, [ch('i'), key(KeyCode::Enter)]);
    app.update(
        Event::Answered {
            job: id("151200-q1q1"),
            ok: false,
            message: "already answered by x@y".into(),
        },
        now(),
    );
    let inbox = inbox_of(&app);
    assert_eq!(inbox.item.job.as_str(), "151200-q1q1");
    assert_eq!(
        inbox.result,
        Some((false, "already answered by x@y".into()))
    );
    assert!(!inbox.sending);
    press(&mut app, [key(KeyCode::Enter)]);
    app.update(
        Event::Answered {
            job: id("151200-q1q1"),
            ok: true,
            message: "answered 151200-q1q1: production".into(),
        },
        now(),
    );
    let inbox = inbox_of(&app);
    assert_eq!(inbox.item.job.as_str(), "155700-gate", "on to the next");
    assert_eq!(
        inbox.result,
        Some((true, "answered 151200-q1q1: production".into()))
    );
    // The answered question is not offered again before its job is read anew.
    assert_eq!(app.inbox_items().len(), 1);
    press(&mut app, [ch('a')]);
    app.update(
        Event::Answered {
            job: id("155700-gate"),
            ok: true,
            message: "approved".into(),
        },
        now(),
    );
    assert_eq!(app.mode, Mode::Normal, "nothing left: the inbox closes");
    assert_eq!(app.message.as_deref(), Some("approved"));
}

#[test]
fn gates_approve_or_deny_with_a_reason() {
    let mut app = app(160, 45);
    press(&mut app, [key(KeyCode::Enter)]);
    let approve = press(&mut app, [ch('a')]);
    assert_eq!(
        approve,
        [Effect::Decide {
            job: id("155700-gate"),
            gate_id: "g1".into(),
            approved: true,
            scope: Scope::Once,
            reason: String::new()
        }]
    );

    let mut app = crate::tui::testing::app(160, 45);
    press(&mut app, [key(KeyCode::Enter), ch('d')]);
    assert!(inbox_of(&app).editing_reason());
    assert!(
        press(&mut app, [key(KeyCode::Enter)]).is_empty(),
        "an empty reason is refused"
    );
    assert!(
        inbox_of(&app)
            .result
            .as_ref()
            .unwrap()
            .1
            .contains("needs a reason")
    );
    press(&mut app, "not during".chars().map(ch));
    press(&mut app, [alt(KeyCode::Enter)]);
    press(&mut app, "business hours".chars().map(ch));
    let deny = press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(
        deny,
        [Effect::Decide {
            job: id("155700-gate"),
            gate_id: "g1".into(),
            approved: false,
            scope: Scope::Once,
            reason: "not during\nbusiness hours".into()
        }]
    );
    let mut app = crate::tui::testing::app(160, 45);
    press(&mut app, [key(KeyCode::Enter), ch('d'), key(KeyCode::Esc)]);
    assert!(
        matches!(app.mode, Mode::Inbox(_)),
        "esc leaves the reason, not the inbox"
    );
    assert!(!inbox_of(&app).editing_reason());
}

#[test]
fn free_text_answers_keep_their_lines() {
    let mut app = app(160, 45);
    let job = text_question_job();
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    press(&mut app, [ch('j'), key(KeyCode::Enter)]);
    assert!(inbox_of(&app).editor.is_some());
    press(&mut app, "Spring".chars().map(ch));
    press(
        &mut app,
        [Event::Key(KeyEvent::new(
            KeyCode::Char('j'),
            KeyModifiers::CONTROL,
        ))],
    );
    press(&mut app, "q (for quiet)".chars().map(ch));
    let effects = press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(
        effects,
        [Effect::Answer {
            job: id("155600-text"),
            question_id: "q3".into(),
            answer: "Spring\nq (for quiet)".into()
        }]
    );
    assert!(!app.quit, "q typed in the editor is text, not quit");
}

#[test]
fn read_only_shows_questions_but_cannot_answer() {
    let (mut app, _) = app_with(options(true), 160, 45);
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(
        matches!(app.mode, Mode::Inbox(_)),
        "the question can be read"
    );
    let effects = press(&mut app, [ch('a'), ch('d')]);
    assert!(effects.iter().all(|e| !e.writes()), "{effects:?}");
    let mut app = app_with(options(true), 160, 45).0;
    press(&mut app, [ch('i')]);
    assert!(press(&mut app, [key(KeyCode::Enter)]).is_empty());
    assert!(
        inbox_of(&app)
            .result
            .as_ref()
            .unwrap()
            .1
            .contains("read-only")
    );
}

#[test]
fn the_bell_rings_when_a_job_starts_waiting_not_on_load() {
    let (_, effects) = app_with(
        Options {
            bell: true,
            ..options(false)
        },
        160,
        45,
    );
    assert!(
        !effects.contains(&Effect::Bell),
        "jobs already waiting at start ring nothing"
    );
    let (mut app, _) = app_with(
        Options {
            bell: true,
            ..options(false)
        },
        160,
        45,
    );
    let job = text_question_job();
    let effects = app.update(
        Event::JobsRead(vec![(job.id.clone(), Some(job.clone()))]),
        now(),
    );
    assert!(effects.contains(&Effect::Bell));
    let again = app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    assert!(
        !again.contains(&Effect::Bell),
        "once per question, not per read"
    );
    let mut opts = options(false);
    opts.insight.alarm_bell = false;
    let (mut quiet, _) = app_with(opts, 160, 45);
    let job = text_question_job();
    assert!(
        !quiet
            .update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now())
            .contains(&Effect::Bell)
    );
}

#[test]
fn ctrl_c_in_the_inbox_editor_clears_the_answer_then_closes() {
    let mut app = app(160, 45);
    let job = text_question_job();
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    press(&mut app, [ch('j'), key(KeyCode::Enter)]);
    press(&mut app, "Spring".chars().map(ch));
    let ctrl_c = || key(KeyCode::Char('c')).with_ctrl();
    assert!(press(&mut app, [ctrl_c()]).is_empty());
    let Mode::Inbox(inbox) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert_eq!(inbox.editor.as_ref().map(|e| e.text()).as_deref(), Some(""));
    assert!(press(&mut app, [ctrl_c()]).is_empty());
    assert_eq!(app.mode, Mode::Normal, "the second closes the inbox");
    assert!(!app.quit);
}

// ----- dispatch: the input bar, kill, retry -----

fn with_projects(read_only: bool) -> App {
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        ..options(read_only)
    };
    app_with(opts, 160, 45).0
}

/// Started inside a repository, the cockpit offers its project for a new task (unless the
/// selection or the project filter says otherwise); with no project at all, the message says
/// how to get one.
#[test]
fn the_input_bar_offers_the_repository_the_cockpit_started_in() {
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into(), "shop".into()],
        project_here: Some("shop".into()),
        ..options(false)
    };
    let mut app = app_with(opts, 160, 45).0;
    press(&mut app, [ch('n')]);
    let draft = app.draft.as_ref().unwrap();
    assert_eq!(draft.projects[draft.project], "shop");

    let mut bare = app_with(options(false), 160, 45).0;
    press(&mut bare, [ch('n')]);
    assert_eq!(bare.mode, Mode::Normal);
    let said = bare.message.clone().unwrap_or_default();
    assert!(
        said.contains("inside a git repository") && said.contains("luzia init"),
        "{said}"
    );
}

#[test]
fn the_input_bar_dispatches_and_keeps_the_text_on_error() {
    let mut app = with_projects(false);
    press(&mut app, [ch('n')]);
    assert_eq!(app.mode, Mode::InputBar);
    assert!(
        press(&mut app, [key(KeyCode::Enter)]).is_empty(),
        "an empty task is not sent"
    );
    assert!(app.draft.as_ref().unwrap().error.is_some());
    press(&mut app, [key(KeyCode::Tab)]);
    press(&mut app, "run the tests".chars().map(ch));
    press(&mut app, [alt(KeyCode::Enter)]);
    press(&mut app, "then report".chars().map(ch));
    let effects = press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(
        effects,
        [Effect::Dispatch {
            host: None,
            project: "musica".into(),
            task: "run the tests\nthen report".into(),
            retry_of: None,
            agent: None,
        }]
    );
    app.update(
        Event::Dispatched(Err("cannot create a job in /x: disk full".into())),
        now(),
    );
    assert_eq!(app.mode, Mode::InputBar, "the bar stays open");
    let draft = app.draft.as_ref().unwrap();
    assert_eq!(
        draft.text(),
        "run the tests\nthen report",
        "nothing typed is lost"
    );
    assert!(draft.error.as_deref().unwrap().contains("disk full"));
    press(&mut app, [key(KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, [ch('n')]);
    assert_eq!(
        app.draft.as_ref().unwrap().text(),
        "run the tests\nthen report",
        "Esc hides, it does not discard"
    );
    press(&mut app, [key(KeyCode::Enter)]);
    let new = id("160000-beef");
    let effects = app.update(
        Event::Dispatched(Ok((
            Some(new.clone()),
            "started 160000-beef on musica".into(),
        ))),
        now(),
    );
    assert!(effects.contains(&Effect::SyncQueue));
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.draft.is_none());
    // The new job is selected as soon as it is seen.
    let mut job = text_question_job();
    job.id = new.clone();
    job.question = None;
    job.status = Status::Running;
    app.update(Event::JobsRead(vec![(new.clone(), Some(job))]), now());
    assert_eq!(app.table.selected, Some(new));
}

#[test]
fn the_project_filter_preselects_the_project() {
    let opts = Options {
        dispatch_projects: vec!["librec".into(), "musica".into()],
        projects: vec!["musica".into()],
        ..options(false)
    };
    let (mut app, _) = app_with(opts, 160, 45);
    press(&mut app, [ch('n')]);
    assert_eq!(app.draft.as_ref().unwrap().project_name(), Some("musica"));
}

#[test]
fn kill_asks_first_and_retry_starts_again() {
    let mut app = with_projects(false);
    press(&mut app, [ch('j')]); // 155900-run1, running
    assert!(press(&mut app, [ch('K')]).is_empty());
    assert!(matches!(app.mode, Mode::Confirm(_)));
    assert!(
        press(&mut app, [ch('n')]).is_empty(),
        "anything but y declines"
    );
    assert_eq!(app.mode, Mode::Normal);
    let effects = press(&mut app, [ch('K'), ch('y')]);
    assert_eq!(effects, [Effect::Kill(id("155900-run1"))]);

    assert!(
        press(&mut app, [ch('r')]).is_empty(),
        "a running job is not retried"
    );
    assert!(app.message.as_deref().unwrap().contains("kill it first"));
    press(&mut app, [ch('G')]); // the last row: a finished job
    let last = app.table.selected.clone().unwrap();
    assert_eq!(press(&mut app, [ch('r')]), [Effect::Retry(last)]);
}

#[test]
fn a_job_that_stopped_for_an_answer_is_answered_before_retry() {
    let mut app = with_projects(false);
    press(&mut app, [ch('j'), ch('j'), ch('j')]);
    assert_eq!(
        app.table.selected.as_ref().map(JobId::as_str),
        Some("151200-q1q1")
    );
    assert!(press(&mut app, [ch('r')]).is_empty());
    assert!(app.message.as_deref().unwrap().contains("answer it first"));
    press(&mut app, [key(KeyCode::Enter), key(KeyCode::Enter)]);
    app.update(
        Event::Answered {
            job: id("151200-q1q1"),
            ok: true,
            message: "answered".into(),
        },
        now(),
    );
    press(&mut app, [key(KeyCode::Esc)]);
    app.table.selected = Some(id("151200-q1q1"));
    assert_eq!(
        press(&mut app, [ch('r')]),
        [Effect::Retry(id("151200-q1q1"))]
    );
}

#[test]
fn read_only_has_no_input_bar_kill_or_retry() {
    let mut app = with_projects(true);
    for k in ['n', 'K', 'r'] {
        assert!(press(&mut app, [ch(k)]).is_empty(), "{k}");
        assert_eq!(app.mode, Mode::Normal, "{k}");
        assert!(app.message.as_deref().unwrap().contains("read-only"), "{k}");
    }
}

#[test]
fn queued_tasks_show_as_rows_with_their_place() {
    let mut app = with_projects(false);
    let q = |id: &str| crate::jobs::run::queue::Queued {
        id: id.into(),
        project: "musica".into(),
        priority: crate::jobs::run::queue::Priority::Normal,
        task: format!("queued {id}"),
        enqueued_at: String::new(),
        enqueued_by: String::new(),
        project_path: None,
        agent: None,
        path: std::path::PathBuf::from("/q").join(id),
    };
    let rows = crate::jobs::run::queue::rows;
    app.update(
        Event::QueueListed(rows(&[q("aaaa0001"), q("aaaa0002")]), Default::default()),
        now(),
    );
    assert_eq!(app.table.counts.get(&Status::Queued), Some(&2));
    assert!(app.wants_tick());
    assert!(
        app.update(Event::Tick, now()).contains(&Effect::SyncQueue),
        "the queue is watched while not empty"
    );
    app.update(
        Event::QueueListed(rows(&[q("aaaa0002")]), Default::default()),
        now(),
    );
    assert_eq!(app.table.counts.get(&Status::Queued), Some(&1));
    let key = JobId::queued("aaaa0002").unwrap();
    assert_eq!(app.jobs[&key].queue_position, Some(1));
}

#[test]
fn queued_rows_outlive_a_listing_of_the_root_and_offer_no_kill_retry_or_files() {
    let mut app = with_projects(false);
    assert!(app.start().contains(&Effect::SyncQueue), "listed at start");
    let q = |id: &str| crate::jobs::run::queue::Queued {
        id: id.into(),
        project: "musica".into(),
        priority: crate::jobs::run::queue::Priority::Normal,
        task: format!("queued {id}"),
        enqueued_at: String::new(),
        enqueued_by: String::new(),
        project_path: None,
        agent: None,
        path: std::path::PathBuf::from("/q").join(id),
    };
    // "bbbb" sorts before "aaaa" newest-first by id: the place decides, not the id.
    let rows = crate::jobs::run::queue::rows(&[q("aaaa0001"), q("bbbb0002")]);
    let (first, second) = (rows[0].id.clone(), rows[1].id.clone());
    app.update(Event::QueueListed(rows.clone(), Default::default()), now());
    let queued: Vec<&JobId> = app.table.view.iter().filter(|k| k.is_queued()).collect();
    assert_eq!(queued, [&first, &second], "in the order they will start");
    app.dirty = false;
    assert!(
        app.update(Event::QueueListed(rows, Default::default()), now())
            .is_empty()
    );
    assert!(!app.dirty, "the same queue draws nothing");

    // A listing of the root (where queued tasks are not) keeps them.
    let present: Vec<JobId> = app
        .jobs
        .keys()
        .filter(|k| !k.is_queued())
        .cloned()
        .collect();
    let synced = Synced {
        present,
        read: vec![],
        error: None,
    };
    app.update(Event::Synced(synced), now());
    assert_eq!(app.table.counts.get(&Status::Queued), Some(&2));

    app.table.selected = Some(second.clone());
    for k in ['K', 'r'] {
        assert!(press(&mut app, [ch(k)]).is_empty(), "{k}");
        assert_eq!(app.mode, Mode::Normal, "{k}");
        let note = app.message.clone().unwrap_or_default();
        assert!(
            note.contains("bbbb0002 is queued") && note.contains("luzia queue cancel bbbb0002"),
            "{k}: {note}"
        );
    }
    assert!(
        press(&mut app, [key(KeyCode::Enter)]).is_empty(),
        "no job directory to read"
    );
    let Mode::Detail(d) = &app.mode else {
        panic!("no detail view: {:?}", app.mode);
    };
    assert_eq!((&d.job, &d.prompt), (&second, &Some(Ok(None))));
    assert!(app.timeline(&app.jobs[&second]).is_some_and(|t| t.is_ok()));
}

#[test]
fn only_followed_output_changing_is_known_to_the_pacer() {
    let mut app = app(160, 45);
    app.dirty = false;
    let sel = app.table.selected.clone().unwrap();
    app.update(
        Event::LogAppended {
            id: sel.clone(),
            reset: None,
            lines: lines(&["x"]),
        },
        now(),
    );
    assert!(app.dirty && app.log_only);
    app.update(
        Event::LogAppended {
            id: sel.clone(),
            reset: None,
            lines: lines(&["y"]),
        },
        now(),
    );
    assert!(app.log_only, "still only output");
    press(&mut app, [ch('j')]);
    assert!(app.dirty && !app.log_only, "a key makes it a real change");
    app.update(
        Event::LogAppended {
            id: sel,
            reset: None,
            lines: lines(&["z"]),
        },
        now(),
    );
    assert!(
        !app.log_only,
        "output on top of a real change is still a real change"
    );
}

#[test]
fn output_flooding_in_is_paced_as_a_flood() {
    use crate::tui::pacing::Pace;
    let mut app = app(160, 45);
    app.dirty = false;
    let sel = app.table.selected.clone().unwrap();
    let many: Vec<String> = (0..FLOOD_LINES).map(|i| format!("line {i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    app.update(
        Event::LogAppended {
            id: sel.clone(),
            reset: None,
            lines: lines(&many),
        },
        now(),
    );
    assert_eq!(app.pace(), Pace::Flood, "a pane's worth at once");
    app.dirty = false;
    app.update(
        Event::LogAppended {
            id: sel.clone(),
            reset: Some(Reset::Skipped(1 << 30)),
            lines: lines(&["the end of a gigabyte"]),
        },
        now(),
    );
    assert_eq!(app.pace(), Pace::Flood, "so much that some was skipped");
    app.dirty = false;
    app.update(
        Event::LogAppended {
            id: sel,
            reset: None,
            lines: lines(&["one line"]),
        },
        now(),
    );
    assert_eq!(
        app.pace(),
        Pace::Output,
        "a line at a time is drawn at once"
    );
    press(&mut app, [ch('j')]);
    assert_eq!(app.pace(), Pace::Change);
}

#[test]
fn a_reread_that_changes_nothing_on_screen_draws_nothing_and_loses_nothing() {
    let mut app = app(160, 45);
    app.dirty = false;
    let id0 = app.table.selected.clone().unwrap();
    let mut same = crate::jobs::Job::clone(&app.jobs[&id0]);
    same.log_len += 4096; // the log grew; nothing shown changed
    app.update(
        Event::JobsRead(vec![(id0.clone(), Some(same.clone()))]),
        now(),
    );
    assert!(!app.dirty, "no frame for a job that only wrote output");
    assert_eq!(app.jobs[&id0].log_len, same.log_len);
    // A pending change survives an event that changes nothing.
    press(&mut app, [ch('j')]);
    assert!(app.dirty);
    app.update(
        Event::JobsRead(vec![(id0.clone(), Some(same.clone()))]),
        now(),
    );
    assert!(app.dirty, "the key's frame is still owed");
    let mut moved = same;
    moved.progress = Some(Box::new(crate::jobs::Progress {
        percent: Some(99.0),
        ..Default::default()
    }));
    app.dirty = false;
    app.update(Event::JobsRead(vec![(id0, Some(moved))]), now());
    assert!(app.dirty, "new progress is a change");
}

#[test]
fn a_choice_of_several_is_picked_with_space_and_sent_with_enter() {
    let mut app = app(160, 45);
    let job = multi_question_job();
    app.update(
        Event::JobsRead(vec![(job.id.clone(), Some(job.clone()))]),
        now(),
    );
    press(&mut app, [ch('i')]);
    while inbox_of(&app).item.job != job.id {
        press(&mut app, [key(KeyCode::Tab)]);
    }
    press(
        &mut app,
        [
            ch('3'),
            ch(' '),
            ch('k'),
            ch('k'),
            ch(' '),
            ch(' '),
            ch(' '),
        ],
    );
    assert_eq!(
        inbox_of(&app).picked,
        [2, 0],
        "space picks, and picks again after an unpick"
    );
    let effects = press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(
        effects,
        [Effect::Answer {
            job: job.id.clone(),
            question_id: "q4".into(),
            answer: "unit tests, load tests".into()
        }],
        "the options in their order, as `luzia answer` takes them"
    );
    let mut app = crate::tui::testing::app(160, 45);
    app.update(
        Event::JobsRead(vec![(job.id.clone(), Some(job.clone()))]),
        now(),
    );
    press(&mut app, [ch('i')]);
    while inbox_of(&app).item.job != job.id {
        press(&mut app, [key(KeyCode::Tab)]);
    }
    let effects = press(&mut app, [ch('2'), key(KeyCode::Enter)]);
    assert!(
        matches!(&effects[0], Effect::Answer { answer, .. } if answer == "smoke tests"),
        "nothing picked sends the highlighted option: {effects:?}"
    );
}
