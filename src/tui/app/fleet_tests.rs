//! Remote hosts in the cockpit's state: what each link reports, in; state and effects, out.

use chrono::Duration as Ch;
use crossterm::event::KeyCode;

use super::fleet::Link;
use super::{App, Mode, Options};
use crate::jobs::insight::alarms::AlarmKind;
use crate::jobs::{Job, JobId, Status};
use crate::tui::effect::Effect;
use crate::tui::event::{Event, HostNews, Synced};
use crate::tui::testing::*;

fn fleet_options() -> Options {
    Options {
        hosts: vec!["gpu2".into(), "gpu3".into()],
        ..options(false)
    }
}

fn fleet_app() -> App {
    app_with(fleet_options(), 160, 45).0
}

fn key_of(host: &str, local: &str) -> JobId {
    JobId::on_host(host, &id(local))
}

/// Two of the fixture jobs as `host` has them: one running, one finished.
fn two_jobs(host: &str) -> Vec<Job> {
    vec![
        remote(host, live("142315-a1b2", "160001-r1", 5, |_| {})),
        remote(host, sample("143002-c3d4")),
    ]
}

fn sample(of: &str) -> Job {
    jobs()
        .into_iter()
        .find(|j| j.id.as_str() == of)
        .expect("a fixture job")
}

fn news(
    app: &mut App,
    host: &str,
    news: HostNews,
    at: chrono::DateTime<chrono::Utc>,
) -> Vec<Effect> {
    app.update(host_news(host, news), at)
}

fn remote_keys(app: &App, host: &str) -> Vec<String> {
    let mut keys: Vec<String> = app
        .jobs
        .keys()
        .filter(|k| k.host() == Some(host))
        .map(|k| k.to_string())
        .collect();
    keys.sort();
    keys
}

/// Every job key an effect carries.
fn keys_in(effect: &Effect) -> Vec<JobId> {
    match effect {
        Effect::ReadJobs(ids) | Effect::ForgetIssues(ids) | Effect::LoadFeed(ids) => ids.clone(),
        Effect::ScanIssues(logs) => logs.iter().map(|l| l.id.clone()).collect(),
        Effect::Sync { skip } => skip.iter().cloned().collect(),
        Effect::LoadPrompt(id) | Effect::LoadHistory(id) | Effect::PollLog(id) => vec![id.clone()],
        _ => vec![],
    }
}

/// The effects that read this machine's files name no remote job.
fn assert_local_reads(effects: &[Effect]) {
    for e in effects {
        assert!(
            keys_in(e).iter().all(|k| k.host().is_none()),
            "a local read of a remote job: {e:?}"
        );
    }
}

#[test]
fn the_hosts_start_connecting_in_their_order() {
    let app = fleet_app();
    let names: Vec<&str> = app.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["gpu2", "gpu3"]);
    assert!(app.hosts.iter().all(|h| h.link == Link::Connecting));
    assert!(app.troubled_hosts().next().is_none());
}

#[test]
fn a_hosts_jobs_come_in_under_their_keys_and_go_under_them() {
    let mut app = fleet_app();
    let local_count = app.jobs.len();
    let effects = host_up(&mut app, "gpu2", &["api"], two_jobs("gpu2"));
    assert_local_reads(&effects);
    assert_eq!(
        remote_keys(&app, "gpu2"),
        ["143002-c3d4@gpu2", "160001-r1@gpu2"]
    );
    assert_eq!(app.jobs.len(), local_count + 2, "the local jobs stay");
    assert!(
        app.jobs.contains_key(&id("143002-c3d4")),
        "the local one too"
    );
    assert!(app.table.view.contains(&key_of("gpu2", "160001-r1")));
    match &app.host("gpu2").map(|h| &h.link) {
        Some(Link::Up { luzia, projects }) => {
            assert_eq!(
                (luzia.as_str(), projects.as_slice()),
                ("0.1.0", &["api".to_string()][..])
            );
        }
        other => panic!("not up: {other:?}"),
    }

    news(
        &mut app,
        "gpu2",
        HostNews::Gone(vec![key_of("gpu2", "160001-r1")]),
        now(),
    );
    assert_eq!(remote_keys(&app, "gpu2"), ["143002-c3d4@gpu2"]);
    assert!(!app.table.view.contains(&key_of("gpu2", "160001-r1")));

    // A host speaks for itself only: another host's keys, or a local id, are not its to add
    // or remove.
    news(&mut app, "gpu2", HostNews::Jobs(two_jobs("gpu3")), now());
    news(
        &mut app,
        "gpu2",
        HostNews::Gone(vec![id("143002-c3d4")]),
        now(),
    );
    assert!(remote_keys(&app, "gpu3").is_empty());
    assert!(app.jobs.contains_key(&id("143002-c3d4")));
}

#[test]
fn synced_removes_the_hosts_jobs_not_sent_since_up_and_nothing_else() {
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    host_up(&mut app, "gpu3", &[], two_jobs("gpu3"));
    let local_count = app.jobs.iter().filter(|(k, _)| k.host().is_none()).count();
    // gpu2 reconnects; one of its two jobs was removed meanwhile.
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "dropped".into(),
        },
        now(),
    );
    news(&mut app, "gpu2", HostNews::Connecting, now());
    news(
        &mut app,
        "gpu2",
        HostNews::Up {
            luzia: "0.1.0".into(),
            projects: vec![],
        },
        now(),
    );
    news(
        &mut app,
        "gpu2",
        HostNews::Jobs(vec![remote("gpu2", sample("143002-c3d4"))]),
        now(),
    );
    assert_eq!(
        remote_keys(&app, "gpu2").len(),
        2,
        "kept until the state is whole"
    );
    let effects = news(&mut app, "gpu2", HostNews::Synced, now());
    assert_local_reads(&effects);
    assert_eq!(remote_keys(&app, "gpu2"), ["143002-c3d4@gpu2"]);
    assert_eq!(
        remote_keys(&app, "gpu3").len(),
        2,
        "another host is untouched"
    );
    let local_now = app.jobs.iter().filter(|(k, _)| k.host().is_none()).count();
    assert_eq!(local_now, local_count, "the local jobs are untouched");
}

#[test]
fn a_local_listing_keeps_the_remote_jobs() {
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    app.update(
        Event::Synced(Synced {
            present: vec![id("142315-a1b2")],
            read: vec![],
            error: None,
        }),
        now(),
    );
    assert_eq!(remote_keys(&app, "gpu2").len(), 2);
    assert!(
        !app.jobs.contains_key(&id("143002-c3d4")),
        "the local one went"
    );
}

#[test]
fn down_keeps_the_jobs_stale_from_then_and_up_again_clears_them_once_synced() {
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    host_up(&mut app, "gpu3", &[], two_jobs("gpu3"));
    let r1 = key_of("gpu2", "160001-r1");
    let c3 = key_of("gpu2", "143002-c3d4");
    assert_eq!(app.stale_since(&r1), None);

    let dropped = now() + Ch::seconds(10);
    app.dirty = false;
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "ssh: connection reset".into(),
        },
        dropped,
    );
    assert!(app.dirty);
    assert_eq!(remote_keys(&app, "gpu2").len(), 2, "its jobs stay");
    assert_eq!(app.stale_since(&r1), Some(dropped));
    assert_eq!(app.stale_since(&c3), Some(dropped));
    assert_eq!(
        app.stale_since(&key_of("gpu3", "160001-r1")),
        None,
        "gpu3 is up"
    );
    assert_eq!(
        app.stale_since(&id("142315-a1b2")),
        None,
        "a local job is never stale"
    );
    assert_eq!(
        app.host("gpu2").map(|h| &h.link),
        Some(&Link::Down {
            error: "ssh: connection reset".into(),
            since: dropped
        })
    );

    // Retrying and failing again: still down since it first dropped, stale since then.
    let later = dropped + Ch::minutes(2);
    news(&mut app, "gpu2", HostNews::Connecting, later);
    let host = app.host("gpu2").expect("shown");
    assert!(host.retrying && host.trouble().is_some(), "{host:?}");
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "ssh: no route to host".into(),
        },
        later,
    );
    let host = app.host("gpu2").expect("shown");
    assert_eq!(host.trouble(), Some("ssh: no route to host"));
    assert_eq!(host.trouble_since(), Some(dropped));
    assert!(!host.retrying);
    assert_eq!(app.stale_since(&r1), Some(dropped));

    // Up again: a job sent again is fresh at once, the others stay stale until synced.
    news(
        &mut app,
        "gpu2",
        HostNews::Up {
            luzia: "0.1.0".into(),
            projects: vec![],
        },
        later,
    );
    assert_eq!(app.host("gpu2").and_then(|h| h.trouble()), None);
    app.dirty = false;
    news(
        &mut app,
        "gpu2",
        HostNews::Jobs(vec![remote(
            "gpu2",
            live("142315-a1b2", "160001-r1", 5, |_| {}),
        )]),
        later,
    );
    assert!(
        app.dirty,
        "the row loses its stale mark, though nothing else changed"
    );
    assert_eq!(app.stale_since(&r1), None);
    assert_eq!(app.stale_since(&c3), Some(dropped));
    news(
        &mut app,
        "gpu2",
        HostNews::Jobs(vec![remote("gpu2", sample("143002-c3d4"))]),
        later,
    );
    news(&mut app, "gpu2", HostNews::Synced, later);
    assert_eq!(app.stale_since(&c3), None);
    assert_eq!(app.host("gpu2").and_then(|h| h.stale_since), None);
}

#[test]
fn an_incompatible_host_says_what_to_install_and_its_jobs_go_stale() {
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    let at = now() + Ch::seconds(3);
    let message = "gpu2 runs luzia 0.0.9, which has no `watch`: install luzia 0.1.0 there";
    news(
        &mut app,
        "gpu2",
        HostNews::Incompatible {
            message: message.into(),
        },
        at,
    );
    let host = app.host("gpu2").expect("shown");
    assert_eq!(host.trouble(), Some(message));
    assert!(matches!(host.link, Link::Incompatible { since, .. } if since == at));
    assert_eq!(app.stale_since(&key_of("gpu2", "160001-r1")), Some(at));
    let troubled: Vec<&str> = app.troubled_hosts().map(|h| h.name.as_str()).collect();
    assert_eq!(troubled, ["gpu2"]);
}

#[test]
fn a_heartbeat_is_noted_and_draws_nothing() {
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    let (changes, at) = (app.changes, now() + Ch::seconds(5));
    app.dirty = false;
    let effects = news(&mut app, "gpu2", HostNews::Heartbeat, at);
    assert!(effects.is_empty());
    assert!(!app.dirty);
    assert_eq!(app.changes, changes, "nothing the table lists changed");
    assert_eq!(app.host("gpu2").and_then(|h| h.heartbeat), Some(at));
}

#[test]
fn news_of_a_host_not_started_with_adds_it_after_the_others() {
    let mut app = fleet_app();
    news(
        &mut app,
        "gpu9",
        HostNews::Down {
            error: "unreachable".into(),
        },
        now(),
    );
    let names: Vec<&str> = app.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["gpu2", "gpu3", "gpu9"]);
}

#[test]
fn a_remote_question_is_in_the_inbox_rings_and_is_answered_under_its_key() {
    let mut opts = fleet_options();
    opts.bell = true;
    let (mut app, _) = app_with(opts, 160, 45);
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    let mut asking = remote("gpu2", sample("151200-q1q1"));
    if let Some(q) = asking.question.as_mut() {
        // Older than every local one: the inbox opens on it.
        q.asked_at = Some(now() - Ch::hours(3));
    }
    let key = asking.id.clone();
    let effects = news(&mut app, "gpu2", HostNews::Jobs(vec![asking]), now());
    assert!(effects.contains(&Effect::Bell), "{effects:?}");
    assert!(app.inbox_items().iter().any(|i| i.job == key));

    press(&mut app, [ch('i')]);
    let Mode::Inbox(inbox) = &app.mode else {
        panic!("the inbox is not open: {:?}", app.mode);
    };
    assert_eq!(inbox.item.job, key);
    assert_eq!(
        app.table.selected.as_ref(),
        Some(&key),
        "its output shows under the popup"
    );
    let effects = press(&mut app, [ch('j'), key_press(KeyCode::Enter)]);
    assert_eq!(
        effects,
        [Effect::Answer {
            job: key.clone(),
            question_id: "q1".into(),
            answer: "staging".into()
        }]
    );
    // The host's luzia answered: the inbox goes on, and the question is not offered again
    // before the host reports it settled.
    app.update(
        Event::Answered {
            job: key.clone(),
            ok: true,
            message: "answered".into(),
        },
        now(),
    );
    assert!(app.inbox_items().iter().all(|i| i.job != key));
}

fn key_press(code: KeyCode) -> Event {
    key(code)
}

#[test]
fn a_remote_gate_is_decided_under_its_key() {
    let mut app = fleet_app();
    let mut gated = remote("gpu3", sample("155700-gate"));
    if let Some(g) = gated.gate.as_mut() {
        g.awaiting_since = Some(now() - Ch::hours(5));
    }
    let key = gated.id.clone();
    host_up(&mut app, "gpu3", &[], vec![gated]);
    press(&mut app, [ch('i')]);
    let effects = press(&mut app, [ch('a')]);
    assert!(
        matches!(&effects[..], [Effect::Decide { job, approved: true, .. }] if *job == key),
        "{effects:?}"
    );
}

#[test]
fn remote_jobs_raise_alarms_like_local_ones_but_not_while_stale() {
    let mut app = fleet_app();
    let silent = remote(
        "gpu2",
        live("142315-a1b2", "160002-sil", 20, |j| {
            j.log_mtime = Some(now() - Ch::minutes(11));
        }),
    );
    let key = silent.id.clone();
    let effects = host_up(&mut app, "gpu2", &[], vec![silent]);
    assert!(effects.contains(&Effect::Bell), "{effects:?}");
    assert_eq!(app.insight.alarms[&key][0].kind, AlarmKind::Stalled);

    // A quiet job on a host that then drops is not called stalled: the silence is the link's.
    let mut app = fleet_app();
    let quiet = remote("gpu2", live("142315-a1b2", "160003-qui", 20, |_| {}));
    let key = quiet.id.clone();
    host_up(&mut app, "gpu2", &[], vec![quiet]);
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "dropped".into(),
        },
        now(),
    );
    let effects = app.update(Event::Tick, now() + Ch::minutes(30));
    assert!(
        !app.insight.alarms.contains_key(&key),
        "{:?} {effects:?}",
        app.insight.alarms
    );
}

#[test]
fn reads_of_local_files_never_carry_a_remote_key() {
    let mut app = fleet_app();
    let mut grown = remote("gpu2", live("142315-a1b2", "160004-log", 5, |_| {}));
    grown.log_len = 4096;
    let key = grown.id.clone();
    let mut effects = host_up(&mut app, "gpu2", &[], vec![grown]);
    assert!(
        !app.insight.scan_asked.contains_key(&key),
        "its log is not a file here"
    );

    // Only remote jobs live: nothing here to check for dead processes, nor a queue to look at.
    let mut remote_only = app_with(fleet_options(), 160, 45).0;
    remote_only.jobs.clear();
    host_up(
        &mut remote_only,
        "gpu2",
        &[],
        vec![remote("gpu2", live("142315-a1b2", "160005-liv", 5, |_| {}))],
    );
    let ticked = remote_only.update(Event::Tick, now());
    assert!(!ticked.contains(&Effect::CheckAlive), "{ticked:?}");
    assert!(!ticked.contains(&Effect::SyncQueue), "{ticked:?}");
    // A local live job still has its process checked.
    assert!(app.update(Event::Tick, now()).contains(&Effect::CheckAlive));

    // Selected, opened in detail, listed in the feed, polled, reviewed.
    let at = app
        .table
        .view
        .iter()
        .position(|k| *k == key)
        .expect("listed");
    effects.extend(app.update(Event::Resize(160, 45), now()));
    app.table.select_index(at, 40);
    effects.extend(press(&mut app, [ch('v')]));
    assert!(matches!(&app.mode, Mode::Detail(d) if d.job == key));
    if let Mode::Detail(d) = &app.mode {
        assert!(
            matches!(&d.prompt, Some(Err(e)) if e.contains("on gpu2")),
            "{:?}",
            d.prompt
        );
        assert!(matches!(&d.history, Some(Err(e)) if e.contains("on gpu2")));
    }
    effects.extend(press(&mut app, [key_press(KeyCode::Esc)]));
    effects.extend(app.update(Event::PollTick, now()));
    effects.extend(app.update(
        Event::Reviewed {
            job: key.clone(),
            op: crate::tui::effect::ReviewOp::Merge,
            result: Ok("merged".into()),
        },
        now(),
    ));
    effects.extend(press(&mut app, [ch('e')]));
    news(&mut app, "gpu2", HostNews::Gone(vec![key.clone()]), now());
    assert_local_reads(&effects);
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::ReadJobs(_))),
        "a read of nothing is not asked: {effects:?}"
    );
}

#[test]
fn a_remote_session_is_not_opened_here() {
    let mut app = fleet_app();
    let mut done = remote("gpu2", sample("142315-a1b2"));
    done.status = Status::Completed;
    if let Some(m) = done.meta.as_mut() {
        m.agent = "claude".into();
    }
    let key = done.id.clone();
    host_up(&mut app, "gpu2", &[], vec![done]);
    let at = app
        .table
        .view
        .iter()
        .position(|k| *k == key)
        .expect("listed");
    app.table.select_index(at, 40);
    let effects = press(&mut app, [ch('a')]);
    assert!(
        effects.iter().all(|e| !matches!(e, Effect::Attach(_))),
        "{effects:?}"
    );
    let message = app.message.clone().unwrap_or_default();
    assert!(
        message.contains("on gpu2") && message.contains("luzia attach 142315-a1b2"),
        "{message}"
    );
}

#[test]
fn a_remote_retry_links_to_the_job_of_its_own_host() {
    let mut app = fleet_app();
    let first = remote("gpu2", sample("143002-c3d4"));
    let again = remote(
        "gpu2",
        live("143002-c3d4", "160006-again", 1, |j| {
            if let Some(m) = j.meta.as_mut() {
                m.retry_of = "143002-c3d4".into();
            }
        }),
    );
    host_up(&mut app, "gpu2", &[], vec![first, again]);
    let first = &app.jobs[&key_of("gpu2", "143002-c3d4")];
    assert_eq!(first.retried_by, [key_of("gpu2", "160006-again")].into());
    assert!(
        app.jobs[&id("143002-c3d4")].retried_by.is_empty(),
        "the local job of the same id was not retried"
    );
}

fn picker_of(app: &App) -> &super::picker::Picker {
    match &app.mode {
        Mode::Picker(p) => p,
        other => panic!("no picker: {other:?}"),
    }
}

fn dispatching_app() -> App {
    let opts = Options {
        dispatch_projects: vec!["musica".into(), "overbits".into()],
        ..fleet_options()
    };
    app_with(opts, 160, 45).0
}

fn select_key(app: &mut App, key: &JobId) {
    press(app, [ch('g')]);
    for _ in 0..app.table.view.len() {
        if app.table.selected.as_ref() == Some(key) {
            return;
        }
        press(app, [ch('j')]);
    }
    panic!("{key} is not listed");
}

#[test]
fn n_picks_the_host_then_the_project_and_the_dispatch_goes_there() {
    let mut app = dispatching_app();
    host_up(&mut app, "gpu2", &["ranker", "search"], two_jobs("gpu2"));
    // gpu3 is up but has no projects: no task can go there.
    host_up(&mut app, "gpu3", &[], two_jobs("gpu3"));
    select_key(&mut app, &key_of("gpu2", "160001-r1"));
    press(&mut app, [ch('n')]);
    let picker = picker_of(&app);
    assert_eq!(picker.purpose, super::picker::Purpose::DispatchHost);
    assert_eq!(picker.items, ["local", "gpu2"]);
    assert_eq!(picker.notes, ["musica, overbits", "ranker, search"]);
    assert_eq!(picker.selected, 1, "the selected job's host first");

    press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(app.mode, Mode::InputBar);
    let draft = app.draft.as_ref().expect("a draft");
    assert_eq!(draft.host.as_deref(), Some("gpu2"));
    assert_eq!(draft.projects, ["ranker", "search"], "gpu2's own projects");
    press(&mut app, [key(KeyCode::Tab)]);
    let effects = press(
        &mut app,
        "train".chars().map(ch).chain([key(KeyCode::Enter)]),
    );
    assert_eq!(
        effects,
        [Effect::Dispatch {
            host: Some("gpu2".into()),
            project: "search".into(),
            task: "train".into(),
            retry_of: None,
            agent: None,
        }]
    );
}

#[test]
fn picking_local_dispatches_here_with_the_local_projects() {
    let mut app = dispatching_app();
    host_up(&mut app, "gpu2", &["ranker"], two_jobs("gpu2"));
    select_key(&mut app, &id("142315-a1b2"));
    press(&mut app, [ch('n')]);
    assert_eq!(picker_of(&app).selected, 0, "a local job: local first");
    press(&mut app, [key(KeyCode::Enter)]);
    let draft = app.draft.as_ref().expect("a draft");
    assert_eq!(
        (draft.host.as_deref(), draft.project_name()),
        (None, Some("musica"))
    );
    let effects = press(&mut app, [ch('x'), key(KeyCode::Enter)]);
    assert!(
        matches!(&effects[..], [Effect::Dispatch { host: None, project, .. }] if project == "musica"),
        "{effects:?}"
    );
}

#[test]
fn hosts_down_or_connecting_are_not_offered_and_one_choice_is_no_choice() {
    let mut app = dispatching_app();
    // Neither remote host is up: this machine is the only place a task can go.
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "refused".into(),
        },
        now(),
    );
    press(&mut app, [ch('n')]);
    assert_eq!(app.mode, Mode::InputBar, "no picker for one host");
    assert_eq!(app.draft.as_ref().and_then(|d| d.host.clone()), None);

    // Nowhere at all: said, nothing opened.
    let mut app = fleet_app();
    press(&mut app, [ch('n')]);
    assert_eq!(app.mode, Mode::Normal);
    let message = app.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("no host can take a task now"),
        "{message}"
    );

    // Only a remote host: straight to its projects.
    host_up(&mut app, "gpu3", &["search"], vec![]);
    press(&mut app, [ch('n')]);
    let draft = app.draft.as_ref().expect("a draft");
    assert_eq!(draft.host.as_deref(), Some("gpu3"));
}

#[test]
fn a_draft_with_text_comes_back_without_picking_again() {
    let mut app = dispatching_app();
    host_up(&mut app, "gpu2", &["ranker"], two_jobs("gpu2"));
    press(&mut app, [ch('n')]);
    picker_of(&app);
    press(
        &mut app,
        [ch('j'), key(KeyCode::Enter), ch('a'), key(KeyCode::Esc)],
    );
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, [ch('n')]);
    assert_eq!(app.mode, Mode::InputBar);
    assert_eq!(
        app.draft.as_ref().and_then(|d| d.host.clone()).as_deref(),
        Some("gpu2")
    );
    // The host went down meanwhile: the dispatch still says where it was meant to go (the
    // executor says it cannot reach it).
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "gone".into(),
        },
        now(),
    );
    let effects = press(&mut app, [key(KeyCode::Enter)]);
    assert!(
        matches!(&effects[..], [Effect::Dispatch { host: Some(h), .. }] if h == "gpu2"),
        "{effects:?}"
    );
}

#[test]
fn the_filter_matches_the_host_name() {
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    host_up(&mut app, "gpu3", &[], two_jobs("gpu3"));
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "gone".into(),
        },
        now(),
    );
    press(&mut app, [ch('/')]);
    press(&mut app, "GPU3".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    let mut listed: Vec<&str> = app.table.view.iter().map(|k| k.as_str()).collect();
    listed.sort();
    assert_eq!(listed, ["143002-c3d4@gpu3", "160001-r1@gpu3"]);
    assert_eq!(
        app.troubled_hosts().count(),
        0,
        "gpu2's row does not match either"
    );
    press(&mut app, [key(KeyCode::Esc)]);
    press(&mut app, [ch('/')]);
    press(&mut app, "gpu2".chars().map(ch));
    press(&mut app, [key(KeyCode::Enter)]);
    assert_eq!(app.table.view.len(), 2);
    assert_eq!(app.troubled_hosts().count(), 1);
}

#[test]
fn a_host_row_takes_a_row_of_the_table_but_never_the_selection() {
    use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], two_jobs("gpu2"));
    let rows = app.job_rows();
    news(
        &mut app,
        "gpu3",
        HostNews::Down {
            error: "refused".into(),
        },
        now(),
    );
    assert_eq!(app.host_rows(), 1);
    assert!(
        app.job_rows() + 1 >= rows,
        "the table grew for it, or gave it a row"
    );
    press(&mut app, [ch('g')]);
    assert_eq!(app.table.selected_index(), Some(0));
    assert!(
        app.selected_job().is_some(),
        "a job is selected, not the host"
    );
    // A click on the first job's row (under the header and the host's row) selects it.
    let table = app.areas().table;
    press(&mut app, [ch('j'), ch('j')]);
    app.update(
        Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 10,
            row: table.y + 3,
            modifiers: KeyModifiers::NONE,
        }),
        now(),
    );
    assert_eq!(app.table.selected_index(), Some(0));
    // A click on the host's row selects nothing.
    press(&mut app, [ch('j')]);
    app.update(
        Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 10,
            row: table.y + 2,
            modifiers: KeyModifiers::NONE,
        }),
        now(),
    );
    assert_eq!(app.table.selected_index(), Some(1));
}

#[test]
fn many_hosts_down_take_at_most_half_the_table() {
    let hosts: Vec<String> = (1..=12).map(|i| format!("gpu{i}")).collect();
    let opts = Options {
        hosts: hosts.clone(),
        ..options(false)
    };
    let (mut app, _) = app_with(opts, 80, 24);
    for h in &hosts {
        news(
            &mut app,
            h,
            HostNews::Down {
                error: "refused".into(),
            },
            now(),
        );
    }
    let all = app.areas().table_rows();
    assert_eq!(app.host_rows(), all / 2, "{all} rows");
    assert!(app.job_rows() >= all / 2);
}

#[test]
fn a_host_in_trouble_keeps_the_clock_going_for_its_age() {
    let mut app = fleet_app();
    app.jobs.retain(|_, j| !j.status.is_active());
    assert!(!app.wants_tick(), "nothing live, nothing down");
    news(
        &mut app,
        "gpu2",
        HostNews::Down {
            error: "refused".into(),
        },
        now(),
    );
    assert!(app.wants_tick());
    app.dirty = false;
    app.update(Event::Tick, now() + Ch::minutes(1));
    assert!(app.dirty, "its age moved");
    host_up(&mut app, "gpu2", &[], vec![]);
    assert!(!app.wants_tick());
}

/// A job just started may reach the cockpit before its pid does, on another host or here: the
/// kill is asked for (the stop waits for the pid, off the event loop); an ended one is not.
#[test]
fn a_running_job_without_its_pid_yet_can_be_killed() {
    let mut app = fleet_app();
    let mut fresh = remote("gpu2", live("142315-a1b2", "160001-r1", 5, |_| {}));
    fresh.pid = None;
    let key = fresh.id.clone();
    host_up(&mut app, "gpu2", &[], vec![fresh]);
    select_key(&mut app, &key);
    press(&mut app, [ch('K')]);
    assert_eq!(
        app.mode,
        Mode::Confirm(super::Confirm::Kill(key)),
        "{:?}",
        app.message
    );

    let read = |app: &mut App, job: Job| {
        let key = job.id.clone();
        app.update(
            Event::JobsRead(vec![(key.clone(), Some(job))]),
            crate::tui::testing::now(),
        );
        select_key(app, &key);
        press(app, [ch('K')]);
    };
    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], vec![]);
    let mut local = live("142315-a1b2", "160001-r1", 5, |_| {});
    local.pid = None;
    let key = local.id.clone();
    read(&mut app, local.clone());
    assert_eq!(
        app.mode,
        Mode::Confirm(super::Confirm::Kill(key)),
        "{:?}",
        app.message
    );

    let mut app = fleet_app();
    host_up(&mut app, "gpu2", &[], vec![]);
    local.status = Status::Died;
    read(&mut app, local);
    assert_eq!(app.mode, Mode::Normal);
    assert!(
        app.message
            .as_deref()
            .unwrap_or("")
            .contains("is not running")
    );
}
