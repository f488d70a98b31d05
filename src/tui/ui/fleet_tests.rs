//! Snapshots of the cockpit across hosts, at 80x24 and 160x45: this machine and two remote
//! hosts, a host that dropped (its jobs stale), one never reached, one whose luzia cannot talk
//! to this one, and the host picked for a new task.

use chrono::Duration as Ch;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::render_with;
use crate::jobs::{Job, Status};
use crate::tui::app::{App, Options};
use crate::tui::event::{Event, HostNews, Synced};
use crate::tui::testing::*;
use crate::tui::theme::Theme;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 45)];

fn draw(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    term.draw(|f| render_with(app, &Theme::default(), f))
        .unwrap();
    term.backend().to_string()
}

fn fixture(of: &str) -> Job {
    jobs()
        .into_iter()
        .find(|j| j.id.as_str() == of)
        .expect("a fixture job")
}

/// gpu2's jobs: two running, one asking, two finished.
fn gpu2_jobs() -> Vec<Job> {
    vec![
        remote("gpu2", live("142315-a1b2", "154500-trn1", 15, |_| {})),
        remote(
            "gpu2",
            live("143002-c3d4", "154100-trn2", 19, |j| {
                if let Some(m) = j.meta.as_mut() {
                    m.task = "Fine-tune the ranking model on last week's clicks".into();
                }
            }),
        ),
        remote("gpu2", fixture("151200-q1q1")),
        remote("gpu2", fixture("142315-a1b2")),
        remote("gpu2", fixture("152000-f00d")),
    ]
}

fn gpu3_jobs() -> Vec<Job> {
    vec![
        remote("gpu3", live("150110-e5f6", "153000-idx", 30, |_| {})),
        remote("gpu3", fixture("143002-c3d4")),
    ]
}

/// This machine with three jobs and `hosts` shown, the log of the first row loaded.
fn fleet(w: u16, h: u16, hosts: &[&str], dispatch: bool) -> App {
    let opts = Options {
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
        dispatch_projects: if dispatch {
            vec!["musica".into(), "overbits".into()]
        } else {
            vec![]
        },
        ..options(false)
    };
    let mut app = App::new(opts, now());
    app.update(Event::Resize(w, h), now());
    let local: Vec<Job> = ["155900-run1", "155700-gate", "142315-a1b2"]
        .into_iter()
        .map(fixture)
        .collect();
    app.update(
        Event::Synced(Synced {
            present: local.iter().map(|j| j.id.clone()).collect(),
            read: local,
            error: None,
        }),
        now(),
    );
    app
}

fn with_log(mut app: App) -> App {
    let id = app.table.selected.clone().expect("a row is selected");
    app.update(
        Event::LogLoaded {
            id,
            lines: lines(&["epoch 3/10: loss 0.412", "epoch 4/10: loss 0.388"]),
            error: None,
        },
        now(),
    );
    app
}

fn two_hosts_up(w: u16, h: u16) -> App {
    let mut app = fleet(w, h, &["gpu2", "gpu3"], true);
    host_up(&mut app, "gpu2", &["ranker", "musica"], gpu2_jobs());
    host_up(&mut app, "gpu3", &["search"], gpu3_jobs());
    app
}

/// Moves the selection down to `key`, as the operator would (the output pane follows).
fn select(app: &mut App, key: &str) {
    press(app, [ch('g')]);
    for _ in 0..app.table.view.len() {
        if app
            .table
            .selected
            .as_ref()
            .is_some_and(|k| k.as_str() == key)
        {
            return;
        }
        press(app, [ch('j')]);
    }
    panic!("{key} is not listed: {:?}", app.table.view);
}

fn snapshot(name: &str, make: impl Fn(u16, u16) -> App) {
    for (w, h) in SIZES {
        let screen = draw(&make(w, h));
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

#[test]
fn two_hosts_with_jobs() {
    snapshot("fleet_two_hosts", |w, h| {
        let mut app = two_hosts_up(w, h);
        select(&mut app, "154500-trn1@gpu2");
        with_log(app)
    });
}

#[test]
fn a_host_down_with_its_jobs_stale() {
    snapshot("fleet_down_stale", |w, h| {
        let mut app = two_hosts_up(w, h);
        let dropped = now() - Ch::minutes(2);
        app.update(
            host_news(
                "gpu2",
                HostNews::Down {
                    error: "Connection to gpu2.example closed by remote host.".into(),
                },
            ),
            dropped,
        );
        app.update(host_news("gpu2", HostNews::Connecting), now());
        app.update(Event::Tick, now());
        select(&mut app, "154500-trn1@gpu2");
        with_log(app)
    });
}

#[test]
fn a_host_never_reached_is_a_row_with_its_error() {
    snapshot("fleet_unreachable", |w, h| {
        let mut app = fleet(w, h, &["gpu2", "gpu3"], true);
        host_up(&mut app, "gpu2", &["ranker"], gpu2_jobs());
        app.update(
            host_news(
                "gpu3",
                HostNews::Down {
                    error: "ssh: connect to host gpu3.example port 22: Connection refused".into(),
                },
            ),
            now() - Ch::seconds(40),
        );
        app.update(Event::Tick, now());
        with_log(app)
    });
}

#[test]
fn an_incompatible_host_says_what_to_install() {
    snapshot("fleet_incompatible", |w, h| {
        let mut app = fleet(w, h, &["gpu2", "gpu3"], true);
        host_up(&mut app, "gpu2", &["ranker"], gpu2_jobs());
        app.update(
            host_news(
                "gpu3",
                HostNews::Incompatible {
                    message: "gpu3 runs luzia 0.0.9, which has no `watch --json`: install luzia \
                              0.1.0 there (or set [hosts.gpu3] luzia to its path)"
                        .into(),
                },
            ),
            now(),
        );
        with_log(app)
    });
}

#[test]
fn the_host_picker_for_a_new_task() {
    snapshot("fleet_host_picker", |w, h| {
        let mut app = two_hosts_up(w, h);
        app.update(
            host_news(
                "gpu3",
                HostNews::Down {
                    error: "dropped".into(),
                },
            ),
            now(),
        );
        select(&mut app, "154500-trn1@gpu2");
        let mut app = with_log(app);
        press(&mut app, [ch('n')]);
        app
    });
}

#[test]
fn no_status_is_lost_in_the_fleet_header_at_80_columns() {
    let mut app = two_hosts_up(80, 24);
    app.update(
        host_news(
            "gpu3",
            HostNews::Down {
                error: "dropped".into(),
            },
        ),
        now(),
    );
    let screen = draw(&app);
    let header = screen.lines().next().unwrap_or_default();
    for part in ["local", "gpu2", "gpu3 ✕"] {
        assert!(header.contains(part), "{part:?} missing: {header}");
    }
    assert!(
        app.jobs
            .values()
            .filter(|j| j.status == Status::Running)
            .count()
            > 0
    );
}

#[test]
fn the_host_column_is_narrow_cut_and_the_first_to_go() {
    use crate::tui::ui::table::Columns;
    let theme = Theme::default();
    let mut app = fleet(160, 45, &["gpu2", "a-very-long-host-name"], true);
    host_up(&mut app, "gpu2", &[], gpu2_jobs());
    let long: Vec<Job> = gpu3_jobs()
        .into_iter()
        .map(|mut j| {
            j.id = crate::jobs::JobId::on_host("a-very-long-host-name", &j.id.local_id());
            j
        })
        .collect();
    host_up(&mut app, "a-very-long-host-name", &[], long);
    let listed: Vec<&Job> = app
        .table
        .view
        .iter()
        .filter_map(|k| app.jobs.get(k).map(|j| &**j))
        .collect();
    let wide = Columns::fit(&app, &listed, &theme, 158);
    assert_eq!(wide.host, 12, "cut: {wide:?}");
    let narrow = Columns::fit(&app, &listed, &theme, 78);
    assert_eq!(narrow.host, 6, "{narrow:?}");
    assert!(narrow.task >= 12, "{narrow:?}");
    // Where room is short the host column goes before the task is squeezed.
    let fits: Vec<Columns> = (40..=78)
        .map(|inner| Columns::fit(&app, &listed, &theme, inner))
        .collect();
    assert!(fits.iter().all(|c| c.host == 0 || c.task >= 12), "{fits:?}");
    assert!(
        fits.first().is_some_and(|c| c.host == 0),
        "{:?}",
        fits.first()
    );
    assert!(fits.last().is_some_and(|c| c.host > 0));
    drop(listed);
    app.update(Event::Resize(80, 24), now());
    let screen = draw(&app);
    assert!(screen.contains("│● a-ver… 153000"), "{screen}");
    // Without remote hosts there is no host column at all.
    let local = fleet(160, 45, &[], false);
    let listed: Vec<&Job> = local
        .table
        .view
        .iter()
        .filter_map(|k| local.jobs.get(k).map(|j| &**j))
        .collect();
    assert_eq!(Columns::fit(&local, &listed, &theme, 158).host, 0);
}

#[test]
fn every_fleet_row_fills_the_terminal_at_every_size() {
    for (w, h) in [(60, 15), (80, 24), (120, 35), (160, 45), (250, 70)] {
        let mut app = two_hosts_up(w, h);
        app.update(
            host_news(
                "gpu3",
                HostNews::Down {
                    error: "é".repeat(300),
                },
            ),
            now(),
        );
        let screen = draw(&app);
        for line in screen.lines() {
            let cols = crate::jobs::text::width::width(line.trim_matches('"'));
            assert_eq!(cols, usize::from(w), "{w}x{h}: {line}");
        }
    }
}
