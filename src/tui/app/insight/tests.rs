//! Insight in the cockpit: event in, state and effects out.

use chrono::Duration as Ch;
use serde_json::json;

use super::*;
use crate::jobs::Job;
use crate::jobs::insight::known_issues::scan_text;
use crate::tui::app::{Focus, Mode};
use crate::tui::event::Event;
use crate::tui::testing::*;

fn stalled_job(new_id: &str, silent_min: i64) -> Job {
    live("142315-a1b2", new_id, silent_min + 5, |j| {
        j.log_mtime = Some(now() - Ch::minutes(silent_min));
    })
}

fn read(app: &mut App, job: Job) -> Vec<Effect> {
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now())
}

#[test]
fn a_silent_job_is_stalled_the_bell_rings_once_and_output_clears_it() {
    let (mut app, _) = app_with(options(false), 160, 45);
    assert!(
        app.insight
            .alarms
            .values()
            .flatten()
            .all(|a| a.kind != AlarmKind::Stalled)
    );
    let effects = read(&mut app, stalled_job("150000-stal", 11));
    let alarms = &app.insight.alarms[&id("150000-stal")];
    assert_eq!(alarms[0].kind, AlarmKind::Stalled);
    assert_eq!(alarms[0].detail, "no output or progress for 11m00s");
    assert!(effects.contains(&Effect::Bell), "{effects:?}");
    // The next tick changes nothing: no second bell.
    let effects = app.update(Event::Tick, now() + Ch::seconds(1));
    assert!(!effects.contains(&Effect::Bell));
    // A line is written: the alarm clears and a frame is due.
    app.dirty = false;
    let mut alive = stalled_job("150000-stal", 0);
    alive.log_len += 10;
    let effects = read(&mut app, alive);
    assert!(!app.insight.alarms.contains_key(&id("150000-stal")));
    assert!(app.dirty, "the row's alarm went away");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::ScanIssues(l) if l[0].id == id("150000-stal"))),
        "the grown log is scanned: {effects:?}"
    );
}

#[test]
fn alarms_standing_at_start_ring_nothing_but_one_raised_by_the_clock_does() {
    let mut opts = options(false);
    opts.insight.rules.stall_after = std::time::Duration::from_secs(60);
    let (mut app, effects) = app_with(opts, 160, 45);
    assert!(!effects.contains(&Effect::Bell));
    // 155900-run1 wrote its last line 30 s before `now`: stalled 31 s later.
    assert!(!app.insight.alarms.contains_key(&id("155900-run1")));
    let effects = app.update(Event::Tick, now() + Ch::seconds(31));
    assert!(app.insight.alarms.contains_key(&id("155900-run1")));
    assert!(effects.contains(&Effect::Bell));

    let mut quiet = options(false);
    quiet.insight.alarm_bell = false;
    quiet.insight.rules.stall_after = std::time::Duration::from_secs(60);
    let (mut app, _) = app_with(quiet, 160, 45);
    let effects = app.update(Event::Tick, now() + Ch::seconds(31));
    assert!(app.insight.alarms.contains_key(&id("155900-run1")));
    assert!(!effects.contains(&Effect::Bell), "alarm bell off in config");
}

#[test]
fn a_log_is_handed_to_the_scanner_only_when_it_grew() {
    let (mut app, _) = app_with(options(false), 160, 45);
    let job = crate::jobs::Job::clone(&app.jobs[&id("155900-run1")]);
    let effects = read(&mut app, job.clone());
    assert!(!effects.iter().any(|e| matches!(e, Effect::ScanIssues(_))));
    let mut grown = job;
    grown.log_len += 100;
    let effects = read(&mut app, grown);
    let [Effect::ScanIssues(logs)] = &effects[..] else {
        panic!("{effects:?}")
    };
    let logs: Vec<_> = logs.iter().map(|l| (&l.id, l.at.path(&l.id))).collect();
    assert_eq!(
        logs,
        [(&id("155900-run1"), app.jobs[&id("155900-run1")].log_path())]
    );
}

#[test]
fn issues_found_are_kept_for_jobs_on_disk_and_an_empty_finding_clears() {
    let (mut app, _) = app_with(options(false), 160, 45);
    let set = PatternSet::shared_builtin();
    let findings = scan_text(&set, b"ModuleNotFoundError: No module named 'yaml'\n");
    app.dirty = false;
    app.update(
        Event::IssuesFound(vec![
            (id("155900-run1"), findings.clone()),
            (id("999999-gone"), findings.clone()),
        ]),
        now(),
    );
    assert!(app.dirty);
    assert_eq!(app.insight.issues.len(), 1);
    let worst = app.insight.issues[&id("155900-run1")].worst().unwrap();
    assert_eq!(set.pattern(worst.pattern).name, "python-module-not-found");
    app.update(
        Event::IssuesFound(vec![(id("155900-run1"), Findings::default())]),
        now(),
    );
    assert!(app.insight.issues.is_empty());
}

#[test]
fn a_known_issue_counted_again_draws_nothing_unless_its_counts_are_on_screen() {
    let (mut app, _) = app_with(options(false), 160, 45);
    let set = PatternSet::shared_builtin();
    let job = id("155900-run1");
    let once = scan_text(&set, b"ModuleNotFoundError: No module named 'yaml'\n");
    let twice = scan_text(
        &set,
        b"ModuleNotFoundError: No module named 'yaml'\nModuleNotFoundError: No module named 'x'\n",
    );
    let worse = scan_text(
        &set,
        b"ModuleNotFoundError: No module named 'yaml'\nOSError: No space left on device\n",
    );
    let found = |app: &mut App, f: &Findings| {
        app.dirty = false;
        app.update(Event::IssuesFound(vec![(job.clone(), f.clone())]), now());
        app.dirty
    };
    assert!(found(&mut app, &once), "a first finding shows in the table");
    assert!(
        !found(&mut app, &twice),
        "only its count moved: the table shows none"
    );
    assert_eq!(
        app.insight.issues[&job].found[0].count, 2,
        "kept all the same"
    );
    assert!(found(&mut app, &worse), "a worse one shows");
    // The detail view shows every count.
    while app.table.selected.as_ref() != Some(&job) {
        press(&mut app, [ch('j')]);
    }
    press(&mut app, [ch('v')]);
    assert!(app.shows_detail_of(&job));
    assert!(found(&mut app, &worse), "its counts are on screen");
}

#[test]
fn the_detail_view_asks_for_the_history_and_shows_a_timeline() {
    let (mut app, _) = app_with(options(false), 160, 45);
    press(&mut app, [ch('j')]);
    let sel = app.table.selected.clone().unwrap();
    let effects = press(&mut app, [ch('v')]);
    assert!(effects.contains(&Effect::LoadHistory(sel.clone())));
    let job = crate::jobs::Job::clone(&app.jobs[&sel]);
    assert!(app.timeline(&job).is_none(), "reading…");
    let history = vec![
        json!({"progress": {"percent": 50, "step_name": "tests"}, "at": (now() - Ch::minutes(1)).to_rfc3339()}),
    ];
    app.update(
        Event::HistoryLoaded {
            id: sel.clone(),
            history: Ok(history),
        },
        now(),
    );
    let events = app.timeline(&job).unwrap().unwrap();
    let texts: Vec<&str> = events.iter().map(|e| e.text.as_str()).collect();
    assert!(texts.contains(&"progress 50%: tests"), "{texts:?}");
    assert_eq!(
        events[0].kind,
        crate::jobs::insight::timeline::EventKind::Started
    );
}

#[test]
fn e_opens_the_feed_enter_goes_to_the_job_esc_closes() {
    let (mut app, _) = app_with(options(false), 160, 45);
    let effects = press(&mut app, [ch('e')]);
    assert!(matches!(app.mode, Mode::Events(_)), "{:?}", app.mode);
    let [Effect::LoadFeed(ids)] = &effects[..] else {
        panic!("{effects:?}")
    };
    assert!(ids.contains(&id("155900-run1")));
    let histories = ids.iter().map(|i| (i.clone(), Vec::new())).collect();
    app.update(
        Event::FeedLoaded {
            histories,
            notifications: vec![],
            problems: vec![],
        },
        now(),
    );
    let Mode::Events(feed) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    assert!(!feed.loading && feed.events.len() > 10);
    assert!(
        feed.events.windows(2).all(|w| w[0].at >= w[1].at),
        "newest first"
    );
    // Filter the table so the job is hidden; Enter still takes the operator to it.
    app.table.filter = "no such text".into();
    press(&mut app, [ch('j')]);
    let Mode::Events(feed) = &app.mode else {
        panic!("{:?}", app.mode)
    };
    let target = feed.events[1].job.clone().unwrap();
    press(&mut app, [key(crossterm::event::KeyCode::Enter)]);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.table.selected.as_ref(), Some(&target));
    assert!(app.table.filter.is_empty());
    press(&mut app, [ch('e'), key(crossterm::event::KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn brackets_jump_between_issue_lines_or_say_there_are_none() {
    let (mut app, _) = app_with(options(false), 160, 45);
    let sel = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id: sel.clone(),
            lines: lines(&[
                "ok",
                "error: could not compile `x` (bin \"x\") due to 2 previous errors",
                "ok",
            ]),
            error: None,
        },
        now(),
    );
    app.focus = Focus::Output;
    press(&mut app, [ch(']')]);
    assert_eq!(app.log.issue_at, Some(1));
    assert!(!app.log.follow);
    app.update(
        Event::LogLoaded {
            id: sel,
            lines: lines(&["all good"]),
            error: None,
        },
        now(),
    );
    press(&mut app, [ch('[')]);
    assert_eq!(
        app.message.as_deref(),
        Some("no known issue in the output shown")
    );
}

#[test]
fn system_alerts_are_kept_and_redraw_only_when_they_change() {
    use crate::jobs::os::system::SystemAlert;
    let (mut app, _) = app_with(options(false), 160, 45);
    let alerts = vec![SystemAlert::Memory { used_percent: 91.0 }];
    app.dirty = false;
    app.update(Event::SystemAlerts(alerts.clone()), now());
    assert!(app.dirty);
    app.dirty = false;
    app.update(Event::SystemAlerts(alerts), now());
    assert!(!app.dirty);
}

#[test]
fn patterns_compiled_after_start_mark_the_lines_already_shown_and_say_what_was_wrong() {
    let mut opts = options(false);
    opts.insight.patterns = None;
    let (mut app, _) = app_with(opts, 160, 45);
    let sel = app.table.selected.clone().unwrap();
    app.update(
        Event::LogLoaded {
            id: sel,
            lines: lines(&["ok", "Segmentation fault (core dumped)"]),
            error: None,
        },
        now(),
    );
    assert!(app.log.issues.is_empty(), "nothing to match with yet");
    // A jump asked for meanwhile is not lost.
    press(&mut app, [ch('[')]);
    assert_eq!(app.message, None);
    app.update(
        Event::PatternsReady {
            patterns: PatternSet::shared_builtin(),
            problems: vec!["/etc/luzia/known_issues.json: pattern 'x': bad".into()],
        },
        now(),
    );
    assert_eq!(app.log.issues.len(), 1);
    assert_eq!(
        app.log.issue_at,
        Some(1),
        "the jump asked for before is made"
    );
    assert!(app.insight.patterns.is_some());
    assert!(
        app.message
            .as_deref()
            .unwrap()
            .contains("known_issues.json")
    );
}

#[test]
fn a_job_that_goes_away_has_its_scanner_forgotten() {
    let (mut app, _) = app_with(options(false), 160, 45);
    let effects = app.update(Event::JobsRead(vec![(id("155900-run1"), None)]), now());
    assert!(
        effects.contains(&Effect::ForgetIssues(vec![id("155900-run1")])),
        "{effects:?}"
    );
    let again = app.update(Event::JobsRead(vec![(id("155900-run1"), None)]), now());
    assert!(!again.iter().any(|e| matches!(e, Effect::ForgetIssues(_))));
}

#[test]
fn the_logs_of_a_root_asked_share_their_job_s_root_and_name_each_log() {
    use crate::tui::effect::LogAt;
    let (mut app, mut effects) = app_with(options(false), 160, 45);
    // The live logs at once, the settled ones once the first frame is drawn.
    effects.extend(app.update(Event::FirstFrameDrawn, now()));
    let logs: Vec<&LogScan> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::ScanIssues(logs) => Some(logs),
            _ => None,
        })
        .flatten()
        .collect();
    // Each names the root its job keeps (the one the jobs read together share), not a path of
    // its own.
    for l in &logs {
        let LogAt::Under(root) = &l.at else {
            panic!("{l:?}")
        };
        let kept = app.jobs[&l.id].root().expect("under its root");
        assert!(std::sync::Arc::ptr_eq(root, kept), "{l:?}");
    }
    assert!(logs.len() > 5, "{effects:?}");
    for l in &logs {
        assert_eq!(l.at.path(&l.id), app.jobs[&l.id].log_path());
        assert_eq!(l.settled, app.jobs[&l.id].is_settled());
    }
    assert!(logs.iter().any(|l| l.settled) && logs.iter().any(|l| !l.settled));
    // A directory not named by its job's id keeps its own path.
    let mut elsewhere = Job::clone(&app.jobs[&logs[0].id]);
    elsewhere.set_dir("/elsewhere/dir".into());
    let at = LogAt::of(&elsewhere);
    assert_eq!(
        at,
        LogAt::Own(std::path::Path::new("/elsewhere/dir/output.log").into())
    );
    assert_eq!(at.path(&elsewhere.id), elsewhere.log_path());
}

#[test]
fn the_first_listing_s_settled_logs_are_asked_for_once_its_first_frame_is_drawn() {
    let scans = |effects: &[Effect]| -> Vec<LogScan> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::ScanIssues(logs) => Some(logs.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    };
    let (mut app, effects) = app_with(options(false), 160, 45);
    let before = scans(&effects);
    assert!(
        !before.is_empty() && before.iter().all(|l| !l.settled),
        "{before:?}"
    );
    app.dirty = false;
    let after = scans(&app.update(Event::FirstFrameDrawn, now()));
    let settled: Vec<&JobId> = app
        .jobs
        .values()
        .filter(|j| j.is_settled() && j.log_len > 0)
        .map(|j| &j.id)
        .collect();
    assert_eq!(after.len(), settled.len(), "{after:?}");
    assert!(after.iter().all(|l| l.settled && settled.contains(&&l.id)));
    assert!(!app.dirty, "nothing on screen changes for it");
    assert!(
        scans(&app.update(Event::FirstFrameDrawn, now())).is_empty(),
        "asked once"
    );
}

#[test]
fn a_settled_log_is_asked_for_when_its_job_is_read_and_not_kept_in_the_map_of_scans_asked() {
    use crate::tui::event::Synced;
    let (mut app, mut effects) = app_with(options(false), 160, 45);
    effects.extend(app.update(Event::FirstFrameDrawn, now()));
    let asked: Vec<LogScan> = effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::ScanIssues(logs) => Some(logs),
            _ => None,
        })
        .flatten()
        .collect();
    let settled: Vec<JobId> = app
        .jobs
        .values()
        .filter(|j| j.is_settled() && j.log_len > 0)
        .map(|j| j.id.clone())
        .collect();
    assert!(!settled.is_empty());
    for id in &settled {
        assert!(asked.iter().any(|l| &l.id == id && l.settled), "{id}");
        assert!(!app.insight.scan_asked.contains_key(id), "{id}");
    }
    // A rescan reads again only what can change: no settled log is asked for again, and no
    // other log that did not grow.
    let present: Vec<JobId> = app.jobs.keys().cloned().collect();
    let unsettled: Vec<Job> = app
        .jobs
        .values()
        .filter(|j| !j.is_settled())
        .map(|j| Job::clone(j))
        .collect();
    let synced = Synced {
        present: present.clone(),
        read: unsettled,
        error: None,
    };
    let effects = app.update(Event::Synced(synced), now());
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::ScanIssues(_))),
        "{effects:?}"
    );
    // A settled job with findings that goes is forgotten, though it was never in the map.
    let gone = settled[0].clone();
    let set = crate::jobs::insight::known_issues::PatternSet::builtin();
    let found = scan_text(&set, b"No space left on device\n");
    app.update(Event::IssuesFound(vec![(gone.clone(), found)]), now());
    assert!(app.insight.issues.contains_key(&gone));
    let synced = Synced {
        present: present.into_iter().filter(|id| *id != gone).collect(),
        read: vec![],
        error: None,
    };
    let effects = app.update(Event::Synced(synced), now());
    assert!(
        effects.contains(&Effect::ForgetIssues(vec![gone.clone()])),
        "{effects:?}"
    );
    assert!(!app.insight.issues.contains_key(&gone));
}
