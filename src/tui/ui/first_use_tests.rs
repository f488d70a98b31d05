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
