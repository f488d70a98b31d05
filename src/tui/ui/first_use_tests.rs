//! Snapshots of what a first use meets: the header with an alarm, messages longer than the
//! line, the diff view of a snapshot job, the read-only inbox, the empty cockpit.

use super::tests::{draw, snapshot};
use crate::tui::testing::*;

/// The first `n` lines of a screen.
fn top(screen: &str, n: usize) -> String {
    screen.lines().take(n).collect::<Vec<_>>().join("\n")
}

#[test]
fn an_alarm_leaves_the_header_full_where_it_fits() {
    for (w, h) in [(80, 24), (160, 45)] {
        let app = app(w, h);
        assert!(!app.insight.alarms.is_empty(), "the fixtures raise alarms");
        let header = top(&draw(&app), 1);
        insta::assert_snapshot!(format!("alarm_header_{w}x{h}"), header);
        if w >= 160 {
            // The long labels and the alarms' words: only the root is shortened.
            assert!(header.contains("2 running"), "{header}");
            assert!(header.contains("1 over budget"), "{header}");
        }
    }
}

#[test]
fn a_snapshot_jobs_diff_view_offers_no_merge_nor_discard() {
    use crate::jobs::model::review::Isolation;
    use crate::tui::event::Event;
    let make = |w, h, isolation| {
        let mut app = app(w, h);
        let job = reviewed("143002-c3d4", isolation);
        let id = job.id.clone();
        app.update(Event::JobsRead(vec![(id.clone(), Some(job))]), now());
        let i = app.table.view.iter().position(|j| *j == id).unwrap();
        for _ in 0..i {
            press(&mut app, [ch('j')]);
        }
        press(&mut app, [ch('d')]);
        let change = Ok(change());
        app.update(Event::ChangeLoaded { id, change }, now());
        app
    };
    snapshot("diff_snapshot_job", |w, h| make(w, h, Isolation::Snapshot));
    for (w, h) in [(80, 24), (160, 45)] {
        let footer = |isolation| {
            draw(&make(w, h, isolation))
                .lines()
                .last()
                .unwrap()
                .to_string()
        };
        let snap = footer(Isolation::Snapshot);
        assert!(
            !snap.contains("merge") && !snap.contains("discard"),
            "{snap}"
        );
        let worktree = footer(Isolation::Worktree);
        assert!(worktree.contains("M merge"), "{worktree}");
    }
}

#[test]
fn a_read_only_inbox_shows_the_question_or_gate_and_offers_no_answer() {
    use crossterm::event::KeyCode;
    let read_only = |w, h, keys: &[KeyCode]| {
        let (mut app, _) = app_with(options(true), w, h);
        press(&mut app, keys.iter().map(|k| key(*k)));
        app
    };
    let gate = [KeyCode::Enter];
    let choice = [
        KeyCode::Char('j'),
        KeyCode::Char('j'),
        KeyCode::Char('j'),
        KeyCode::Enter,
    ];
    snapshot("inbox_read_only_gate", |w, h| read_only(w, h, &gate));
    snapshot("inbox_read_only_choice", |w, h| read_only(w, h, &choice));
    for (w, h) in [(80, 24), (160, 45)] {
        for keys in [&gate[..], &choice[..]] {
            let screen = draw(&read_only(w, h, keys));
            // The popup's lines, from its title to its keys (the table around it says
            // `approve?` of the waiting job: a state, not an offer).
            let lines: Vec<&str> = screen.lines().collect();
            let start = lines
                .iter()
                .position(|l| l.contains("┌ question") || l.contains("┌ approval"));
            let end = lines.iter().position(|l| l.contains("answers are off"));
            let popup = lines[start.unwrap()..=end.unwrap()].join("\n");
            assert!(
                popup.contains("read-only: this cockpit shows the"),
                "{popup}"
            );
            for offer in ["approve", "deny", "send", "pick"] {
                assert!(!popup.contains(offer), "{offer} offered: {popup}");
            }
        }
    }
}

/// A cockpit on a root with no jobs at all, read.
fn empty(w: u16, h: u16, read_only: bool) -> crate::tui::app::App {
    use crate::tui::event::{Event, Synced};
    let mut app = crate::tui::app::App::new(
        crate::tui::app::Options {
            root: "/srv/jobs".into(),
            read_only,
            ..Default::default()
        },
        now(),
    );
    app.update(Event::Resize(w, h), now());
    let synced = Synced {
        present: vec![],
        read: vec![],
        error: None,
    };
    app.update(Event::Synced(synced), now());
    app
}

#[test]
fn the_empty_cockpit_names_the_next_step() {
    snapshot("empty_next_step", |w, h| empty(w, h, false));
    snapshot("empty_read_only", |w, h| empty(w, h, true));
    for (w, h) in [(80, 24), (160, 45)] {
        let screen = draw(&empty(w, h, false));
        for said in [
            "no jobs under /srv/jobs yet",
            "n dispatches a task",
            "luzia run \"task\" inside a git repository",
            "luzia doctor checks the setup",
            "? lists every key",
        ] {
            assert!(screen.contains(said), "{said}: {screen}");
        }
        let wall = draw(&empty(w, h, true));
        assert!(
            !wall.contains("dispatches"),
            "read-only starts nothing: {wall}"
        );
        assert!(wall.contains("luzia run"), "{wall}");
    }
}

#[test]
fn a_filter_that_hides_every_job_says_how_many_and_how_to_clear_it() {
    use crossterm::event::KeyCode;
    snapshot("filter_hides_all", |w, h| {
        let mut app = app(w, h);
        press(&mut app, [ch('/')]);
        press(&mut app, "zzz".chars().map(ch));
        press(&mut app, [key(KeyCode::Enter)]);
        app
    });
    let mut app = app(80, 24);
    press(&mut app, [ch('/')]);
    press(&mut app, "zzz".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    let screen = draw(&app);
    assert!(
        screen.contains("the filter \"zzz\" hides 15 jobs"),
        "{screen}"
    );
    assert!(screen.contains("esc clears it"), "{screen}");
}

/// A notice longer than any footer, its last words marked.
const LONG: &str = "cannot dispatch to musica: /srv/musica is not a directory (the project's \
                    path in /etc/luzia/config.toml); fix the path there or pick another \
                    project with tab, then press enter again END-OF-NOTICE";

fn with_long_notice(w: u16, h: u16) -> crate::tui::app::App {
    let mut app = app(w, h);
    app.update(crate::tui::event::Event::Notice(LONG.into()), now());
    app
}

#[test]
fn a_long_message_is_cut_with_an_ellipsis_and_read_whole_in_the_events_view() {
    snapshot("message_cut", with_long_notice);
    snapshot("message_whole", |w, h| {
        let mut app = with_long_notice(w, h);
        press(&mut app, [ch('e')]);
        app
    });
    for (w, h) in [(80, 24), (160, 45)] {
        let app = with_long_notice(w, h);
        let screen = draw(&app);
        // Too long to go beside the keys: on the row above them, cut.
        let rows: Vec<&str> = screen.lines().collect();
        let (above, footer) = (rows[rows.len() - 2], rows[rows.len() - 1]);
        assert!(above.contains("cannot dispatch to musica"), "{screen}");
        assert!(above.contains("…"), "cut with an ellipsis: {above}");
        assert!(
            above
                .trim_end_matches([' ', '"'])
                .ends_with("(e shows it whole)"),
            "{above}"
        );
        assert!(
            footer.contains("q quit") && footer.contains("? help"),
            "{footer}"
        );
        assert!(footer.contains("i inbox 2"), "{footer}");
        let mut app = app;
        press(&mut app, [ch('e')]);
        let events = draw(&app);
        // The whole notice, wrapped inside the view's border.
        let text: String = events
            .lines()
            .filter_map(|l| l.trim_matches('"').strip_prefix('│'))
            .map(|l| l.trim_end_matches('│'))
            .collect();
        let squeezed = |s: &str| s.split_whitespace().collect::<String>();
        assert!(squeezed(&text).contains(&squeezed(LONG)), "{events}");
    }
    // A message that fits is whole, with no ellipsis.
    let mut app = app(160, 45);
    app.update(
        crate::tui::event::Event::Notice("job 1 killed".into()),
        now(),
    );
    let screen = draw(&app);
    let footer = screen.lines().last().unwrap();
    assert!(
        footer.contains(" job 1 killed ") && !footer.contains('…'),
        "{footer}"
    );
    assert!(!screen.contains("shows it whole"), "{screen}");
}
