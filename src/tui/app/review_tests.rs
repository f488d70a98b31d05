//! `update` tests of a job's change: the diff view (`d`), merging (`M`) and discarding (`X`).

use crossterm::event::KeyCode;

use super::*;
use crate::jobs::model::review::Isolation;
use crate::tui::effect::ReviewOp;
use crate::tui::event::Event;
use crate::tui::testing::*;

/// An app whose job `142315-a1b2` (completed) had its change recorded, selected.
fn reviewing(read_only: bool) -> App {
    let (mut app, _) = app_with(options(read_only), 160, 45);
    let job = reviewed("142315-a1b2", Isolation::Worktree);
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    select(&mut app, "142315-a1b2");
    app
}

fn select(app: &mut App, job: &str) {
    let i = app.table.view.iter().position(|j| j.as_str() == job);
    app.select_index(i.expect("listed"));
}

fn loaded(app: &mut App) {
    let change = Ok(change());
    app.update(
        Event::ChangeLoaded {
            id: id("142315-a1b2"),
            change,
        },
        now(),
    );
}

fn view(app: &App) -> &diff::DiffView {
    match &app.mode {
        Mode::Diff(v) => v,
        other => panic!("not the diff view: {other:?}"),
    }
}

#[test]
fn d_reads_the_change_off_the_loop_and_shows_it_when_it_arrives() {
    let mut app = reviewing(false);
    assert_eq!(
        press(&mut app, [ch('d')]),
        [Effect::LoadChange(id("142315-a1b2"))]
    );
    assert_eq!(view(&app).change, None, "loading");
    // A change read for another job (the view was closed and opened elsewhere) is not shown.
    app.update(
        Event::ChangeLoaded {
            id: id("143002-c3d4"),
            change: Ok(change()),
        },
        now(),
    );
    assert_eq!(view(&app).change, None);
    loaded(&mut app);
    let v = view(&app);
    assert!(v.change().is_some());
    // A title, three files, a blank row, then the patch: each file's diff starts where its
    // `diff --git` line is.
    assert_eq!(v.patch_row(), 5);
    assert_eq!(v.file_rows, [5, 18, 27]);
    let (line, header) = v.patch_line(v.lines.len() - 1).unwrap();
    assert_eq!(
        (line, header),
        ("--- retried forever, without a cap", false),
        "a removed line is not taken for a file header"
    );
    assert!(v.patch_line(2).unwrap().1, "`--- a/src/retry.rs` is");
    press(&mut app, [key(KeyCode::Esc)]);
    assert_eq!(app.mode, Mode::Normal);
    press(&mut app, [ch('d'), ch('q')]);
    assert_eq!(
        app.mode,
        Mode::Normal,
        "q closes the view, it does not quit"
    );
    assert!(!app.quit);
}

#[test]
fn the_diff_scrolls_jumps_file_to_file_and_sideways() {
    // Short enough that the page scrolls.
    let (mut app, _) = app_with(options(false), 80, 24);
    let job = reviewed("142315-a1b2", Isolation::Snapshot);
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    select(&mut app, "142315-a1b2");
    press(&mut app, [ch('d')]);
    loaded(&mut app);
    let page = app.diff_page(view(&app));
    let last = view(&app).rows() - page;
    assert!(last > 0, "the page is taller than the screen: {page}");
    press(&mut app, [ch('j'), ch('j')]);
    assert_eq!(view(&app).scroll, 2);
    press(&mut app, [ch('k'), ch('k'), ch('k')]);
    assert_eq!(view(&app).scroll, 0, "stops at the top");
    press(&mut app, [ch('n')]);
    assert_eq!(view(&app).scroll, 5, "the first file's diff");
    press(&mut app, [ch('n')]);
    assert_eq!(view(&app).scroll, 18.min(last), "the second");
    press(&mut app, [ch('G')]);
    assert_eq!(view(&app).scroll, last, "the last page, not past it");
    press(&mut app, [key(KeyCode::PageDown), ch('j')]);
    assert_eq!(view(&app).scroll, last);
    press(&mut app, [ch('p')]);
    assert!(view(&app).scroll < last);
    press(&mut app, [ch('g')]);
    assert_eq!(view(&app).scroll, 0);
    press(&mut app, [ch('p')]);
    assert_eq!(view(&app).scroll, 0, "before the first file: the list");
    // The wheel scrolls the page, not the table under it.
    let selected = app.table.selected.clone();
    let wheel = |kind| {
        Event::Mouse(crossterm::event::MouseEvent {
            kind,
            column: 10,
            row: 8,
            modifiers: crossterm::event::KeyModifiers::NONE,
        })
    };
    app.update(wheel(crossterm::event::MouseEventKind::ScrollDown), now());
    assert_eq!(view(&app).scroll, 3);
    app.update(wheel(crossterm::event::MouseEventKind::ScrollUp), now());
    assert_eq!(view(&app).scroll, 0);
    assert_eq!(app.table.selected, selected);
    press(&mut app, [ch('l'), ch('l')]);
    assert_eq!(view(&app).left, 16);
    press(&mut app, [ch('h'), ch('h'), ch('h')]);
    assert_eq!(view(&app).left, 0);
}

#[test]
fn what_cannot_be_read_is_said_in_the_view() {
    let mut app = reviewing(false);
    press(&mut app, [ch('d')]);
    let why = "/srv/api is not a git repository (git: not a git repository)".to_string();
    app.update(
        Event::ChangeLoaded {
            id: id("142315-a1b2"),
            change: Err(why.clone()),
        },
        now(),
    );
    assert_eq!(view(&app).change, Some(Err(why)));
    assert_eq!(view(&app).rows(), 1);
    press(&mut app, [ch('j'), ch('G'), ch('n')]);
    assert_eq!(view(&app).scroll, 0, "nothing to scroll");
}

#[test]
fn merge_asks_with_what_it_will_do_then_does_it() {
    let mut app = reviewing(false);
    let job = id("142315-a1b2");
    let effects = press(&mut app, [ch('M')]);
    assert_eq!(
        effects,
        [Effect::PreviewReview {
            job: job.clone(),
            op: ReviewOp::Merge
        }]
    );
    assert_eq!(
        app.mode,
        Mode::Normal,
        "no popup before the preview is known"
    );
    let preview = "merge branch luzia/142315-a1b2 into main (3 files)".to_string();
    app.update(
        Event::ReviewPreviewed {
            job: job.clone(),
            op: ReviewOp::Merge,
            preview: Ok(preview.clone()),
        },
        now(),
    );
    assert_eq!(
        app.mode,
        Mode::Confirm(Confirm::Review {
            job: job.clone(),
            op: ReviewOp::Merge,
            preview
        })
    );
    let effects = press(&mut app, [key(KeyCode::Enter)]);
    assert!(effects.is_empty(), "only yes merges");
    assert_eq!(app.mode, Mode::Normal);

    press(&mut app, [ch('M')]);
    app.update(
        Event::ReviewPreviewed {
            job: job.clone(),
            op: ReviewOp::Merge,
            preview: Ok("merge".into()),
        },
        now(),
    );
    let effects = press(&mut app, [ch('y')]);
    assert_eq!(
        effects,
        [Effect::Review {
            job: job.clone(),
            op: ReviewOp::Merge
        }]
    );
    assert!(effects[0].writes());
    let effects = app.update(
        Event::Reviewed {
            job: job.clone(),
            op: ReviewOp::Merge,
            result: Ok("merged luzia/142315-a1b2 into main".into()),
        },
        now(),
    );
    assert_eq!(effects, [Effect::ReadJobs(vec![job])], "its row read again");
    assert_eq!(
        app.message.as_deref(),
        Some("merged luzia/142315-a1b2 into main")
    );
}

#[test]
fn discard_says_what_stands_in_its_way() {
    let mut app = reviewing(false);
    let job = id("142315-a1b2");
    press(&mut app, [ch('X')]);
    app.update(
        Event::ReviewPreviewed {
            job: job.clone(),
            op: ReviewOp::Discard,
            preview: Err("the worktree /srv/api-wt has uncommitted changes".into()),
        },
        now(),
    );
    assert_eq!(app.mode, Mode::Normal, "a refusal opens no popup");
    assert_eq!(
        app.message.as_deref(),
        Some("the worktree /srv/api-wt has uncommitted changes")
    );
    // A preview nobody waits for any more (another was asked since) opens nothing.
    press(&mut app, [ch('X')]);
    app.update(
        Event::ReviewPreviewed {
            job: job.clone(),
            op: ReviewOp::Merge,
            preview: Ok("merge".into()),
        },
        now(),
    );
    assert_eq!(app.mode, Mode::Normal);
    // The refusal of the deed itself is said too.
    app.update(
        Event::Reviewed {
            job,
            op: ReviewOp::Discard,
            result: Err("job 142315-a1b2 is still running".into()),
        },
        now(),
    );
    assert_eq!(
        app.message.as_deref(),
        Some("job 142315-a1b2 is still running")
    );
}

#[test]
fn merge_and_discard_from_the_diff_view() {
    let mut app = reviewing(false);
    press(&mut app, [ch('d')]);
    loaded(&mut app);
    let effects = press(&mut app, [ch('X')]);
    assert_eq!(
        effects,
        [Effect::PreviewReview {
            job: id("142315-a1b2"),
            op: ReviewOp::Discard
        }]
    );
    assert_eq!(
        app.mode,
        Mode::Normal,
        "the view made way for the confirmation"
    );
}

#[test]
fn read_only_shows_changes_and_never_merges() {
    let mut app = reviewing(true);
    assert_eq!(
        press(&mut app, [ch('d')]),
        [Effect::LoadChange(id("142315-a1b2"))]
    );
    loaded(&mut app);
    assert!(press(&mut app, [ch('M')]).is_empty(), "not from the view");
    assert!(app.message.as_deref().unwrap().starts_with("read-only"));
    for k in ['M', 'X'] {
        assert!(press(&mut app, [ch(k)]).is_empty(), "{k}");
        assert_eq!(app.mode, Mode::Normal);
        assert!(
            app.message.as_deref().unwrap().starts_with("read-only"),
            "{k}: {:?}",
            app.message
        );
    }
}

#[test]
fn a_live_job_or_one_without_a_record_is_refused_at_once() {
    let mut app = reviewing(false);
    // 155900-run1 runs (and the fixture has its change recorded as a snapshot would).
    let mut live = crate::jobs::Job::clone(&app.jobs[&id("155900-run1")]);
    live.meta.as_mut().unwrap().review = reviewed("142315-a1b2", Isolation::Snapshot)
        .meta
        .unwrap()
        .review
        .clone();
    app.update(Event::JobsRead(vec![(live.id.clone(), Some(live))]), now());
    select(&mut app, "155900-run1");
    for k in ['M', 'X'] {
        assert!(press(&mut app, [ch(k)]).is_empty(), "{k}");
        let said = app.message.clone().unwrap();
        assert!(said.contains("still running"), "{k}: {said}");
        assert_eq!(app.mode, Mode::Normal);
    }
    // Its change so far can be looked at.
    assert_eq!(
        press(&mut app, [ch('d')]),
        [Effect::LoadChange(id("155900-run1"))]
    );
    press(&mut app, [key(KeyCode::Esc)]);
    // A job that ran in place recorded nothing to merge.
    select(&mut app, "143002-c3d4");
    assert!(press(&mut app, [ch('M')]).is_empty());
    assert!(
        app.message
            .as_deref()
            .unwrap()
            .contains("without isolation"),
        "{:?}",
        app.message
    );
}

#[test]
fn a_change_merged_or_discarded_is_drawn_when_its_job_is_read_again() {
    let mut app = reviewing(false);
    app.dirty = false;
    let job = reviewed("142315-a1b2", Isolation::Worktree);
    app.update(
        Event::JobsRead(vec![(job.id.clone(), Some(job.clone()))]),
        now(),
    );
    assert!(!app.dirty, "read again unchanged: no frame");
    let mut merged = job;
    if let Some(r) = merged.meta.as_mut().and_then(|m| m.review.as_mut()) {
        r.outcome = "merged into main at 4f1c2a9".into();
    }
    app.update(
        Event::JobsRead(vec![(merged.id.clone(), Some(merged))]),
        now(),
    );
    assert!(app.dirty, "the CHANGES column says merged now");
}

#[test]
fn a_snapshot_jobs_diff_view_neither_merges_nor_discards_and_says_why() {
    let (mut app, _) = app_with(options(false), 160, 45);
    let job = reviewed("143002-c3d4", Isolation::Snapshot);
    app.update(Event::JobsRead(vec![(job.id.clone(), Some(job))]), now());
    select(&mut app, "143002-c3d4");
    press(&mut app, [ch('d')]);
    for k in ['M', 'X'] {
        assert_eq!(press(&mut app, [ch(k)]), [], "{k} does nothing");
        assert!(
            matches!(app.mode, Mode::Diff(_)),
            "{k}: the view stays open"
        );
        assert!(
            app.message
                .as_deref()
                .unwrap_or("")
                .contains("ran in the project itself (isolation = \"snapshot\")"),
            "{k}: {:?}",
            app.message
        );
    }
}
