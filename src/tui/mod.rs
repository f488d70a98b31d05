//! The cockpit: `luzia tui`. One event loop owns the state; the terminal, the watcher, timers
//! and signals send events into one channel; effects are performed in one place.

pub mod action;
pub mod app;
pub mod effect;
pub mod effects;
pub mod event;
pub mod input;
pub mod layout;
pub mod pacing;
pub mod suspend;
pub mod terminal;
#[cfg(test)]
pub mod testing;
pub mod theme;
pub mod ui;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::event::Event as TermEvent;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::time::sleep_until;

use crate::watch::POLL_EVERY;
use app::{App, Options};
use effect::Effect;
use effects::Executor;
use event::{Event, Stop};

const TICK: Duration = Duration::from_secs(1);
/// Events handled before drawing, so a storm of events cannot starve the screen.
const MAX_BATCH: usize = 512;

/// Runs the cockpit until the operator quits (`None`) or a signal stops it.
pub fn run(opts: Options, config: Option<crate::config::Config>) -> Result<Option<Stop>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    rt.block_on(event_loop(opts, config))
}

async fn event_loop(opts: Options, config: Option<crate::config::Config>) -> Result<Option<Stop>> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;

    let mut term = terminal::enter().context("cannot set up the terminal")?;
    let config_file = config.as_ref().and_then(|c| c.file.clone());
    let gate = suspend::InputGate::default();
    let result = async {
        let size = term.size()?;
        let mut app = App::new(opts.clone(), chrono::Utc::now());
        app.size = ratatui::layout::Rect::new(0, 0, size.width, size.height);
        let hosts = remote_hosts(&opts.hosts, config.as_ref());
        let setup = effects::Setup {
            root: opts.root.clone(),
            read_only: opts.read_only,
            config,
            patterns: opts.insight.patterns.clone(),
            known_issues: opts.insight.known_issues.clone(),
            memory_percent: opts.insight.rules.memory_percent,
            cache: crate::xdg::cache_home(&crate::xdg::process_env),
        };
        let mut exec =
            Executor::new(setup, tx.clone()).context("cannot start the cockpit's workers")?;
        exec.connect(hosts)
            .context("cannot start the links to the remote hosts")?;
        spawn_input_thread(tx.clone(), gate.clone());
        for effect in app.start() {
            exec.perform(effect);
        }

        let started = Instant::now();
        let mut first_full_frame = true;
        let mut title = terminal::Title::default();
        let mut pacer = pacing::FramePacer::default();
        let mut watches: Vec<(crate::jobs::JobId, bool)> = Vec::new();
        let mut next_tick = Instant::now() + TICK;
        let mut next_poll = Instant::now() + POLL_EVERY;
        loop {
            let now = Instant::now();
            if app.dirty && now >= pacer.next_allowed(app.pace(), now) {
                terminal::draw(&mut term, |f| ui::render(&app, f))?;
                // What waits, where the cockpit is out of sight (a tab, a tmux window).
                title.show(&mut term, &app.title())?;
                pacer.drawn(Instant::now());
                app.dirty = false;
                // The screen first: a thousand inotify watches can wait a frame.
                exec.apply_watches(std::mem::take(&mut watches));
                if first_full_frame && app.loaded {
                    first_full_frame = false;
                    exec.first_frame_drawn();
                    let ms = started.elapsed().as_secs_f64() * 1000.0;
                    tracing::info!(jobs = app.jobs.len(), ms, "first full frame");
                    for effect in app.update(Event::FirstFrameDrawn, chrono::Utc::now()) {
                        exec.perform(effect);
                    }
                }
            }
            if !app.dirty && !watches.is_empty() {
                exec.apply_watches(std::mem::take(&mut watches));
            }
            // Sleep until something happens; wake on a timer only for what needs one.
            let mut deadline: Option<Instant> = None;
            let mut at = |t: Instant| deadline = Some(deadline.map_or(t, |d: Instant| d.min(t)));
            if app.dirty {
                at(pacer.next_allowed(app.pace(), Instant::now()));
            }
            if app.wants_tick() {
                at(next_tick);
            }
            if exec.is_polling() {
                at(next_poll);
            }
            let first = tokio::select! {
                ev = rx.recv() => ev,
                _ = sigterm.recv() => Some(Event::Signal(Stop::Terminate)),
                _ = sighup.recv() => Some(Event::Signal(Stop::Hangup)),
                _ = sigint.recv() => Some(Event::Signal(Stop::Interrupt)),
                _ = sleep_or_never(deadline) => None,
            };
            let now = Instant::now();
            let mut batch: Vec<Event> = first.into_iter().collect();
            if app.wants_tick() && now >= next_tick {
                batch.push(Event::Tick);
                next_tick = now + TICK;
            }
            if exec.is_polling() && now >= next_poll {
                batch.push(Event::PollTick);
                next_poll = now + POLL_EVERY;
            }
            drain(&mut rx, &mut batch);
            for ev in coalesce(batch) {
                if let Event::Signal(stop) = ev {
                    return Ok(Some(stop));
                }
                watches.extend(Executor::watch_plan(&ev));
                for effect in app.update(ev, chrono::Utc::now()) {
                    if effect == Effect::Quit {
                        return Ok(None);
                    }
                    if effect == Effect::Bell {
                        terminal::bell(&mut term);
                        continue;
                    }
                    if let Effect::Attach(id) = &effect
                        && let Some(host) = id.host()
                    {
                        let _ = tx.send(Event::Notice(format!(
                            "a session on {host} is opened there: `luzia attach {}` on {host}",
                            id.local_id()
                        )));
                        continue;
                    }
                    if let Effect::Attach(id) = &effect
                        && !opts.read_only
                    {
                        let attach = suspend::Attach {
                            root: &opts.root,
                            config: config_file.as_deref(),
                        };
                        let said = attach.run(&mut term, &gate, id);
                        forget_interrupts(&mut sigint).await;
                        let _ = tx.send(Event::Notice(said));
                        let _ = tx.send(Event::Rescan);
                        continue;
                    }
                    exec.perform(effect);
                }
            }
            if app.quit {
                return Ok(None);
            }
        }
    }
    .await;
    terminal::restore();
    result
}

/// The remote hosts shown, with their config (`luzia tui` has checked that each is configured).
fn remote_hosts(
    names: &[String],
    config: Option<&crate::config::Config>,
) -> Vec<(String, crate::config::HostConfig)> {
    let Some(config) = config else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|n| config.hosts.get(n).map(|h| (n.clone(), h.clone())))
        .collect()
}

/// Drops the SIGINTs that came while a program had the terminal: a Ctrl-C typed there was the
/// program's, not a request to quit the cockpit.
async fn forget_interrupts(sigint: &mut tokio::signal::unix::Signal) {
    while let Ok(Some(())) = tokio::time::timeout(Duration::ZERO, sigint.recv()).await {}
}

async fn sleep_or_never(deadline: Option<Instant>) {
    match deadline {
        Some(d) => sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

fn drain(rx: &mut UnboundedReceiver<Event>, batch: &mut Vec<Event>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(ev) => batch.push(ev),
            Err(_) => break,
        }
    }
}

/// Merges the "these jobs changed" events of one batch, so a burst of writes to one job reads
/// it once.
fn coalesce(batch: Vec<Event>) -> Vec<Event> {
    let mut changed: Vec<crate::jobs::JobId> = Vec::new();
    let mut output: Vec<crate::jobs::JobId> = Vec::new();
    let mut rest = Vec::with_capacity(batch.len());
    for ev in batch {
        match ev {
            Event::JobsChanged(ids) => {
                for id in ids {
                    if !changed.contains(&id) {
                        changed.push(id);
                    }
                }
            }
            Event::OutputGrew(ids) => {
                for id in ids {
                    if !output.contains(&id) {
                        output.push(id);
                    }
                }
            }
            other => rest.push(other),
        }
    }
    // A job read again for a change needs no read for its output too.
    output.retain(|id| !changed.contains(id));
    if !output.is_empty() {
        rest.insert(0, Event::OutputGrew(output));
    }
    if !changed.is_empty() {
        rest.insert(0, Event::JobsChanged(changed));
    }
    rest
}

/// Terminal input on its own thread: a blocking read is the simplest thing that never spins.
fn spawn_input_thread(tx: UnboundedSender<Event>, gate: suspend::InputGate) {
    std::thread::spawn(move || {
        loop {
            // Parked here while a program run from the cockpit owns the terminal.
            gate.pass();
            let ev = match crossterm::event::read() {
                Ok(TermEvent::Key(k)) => Event::Key(k),
                Ok(TermEvent::Mouse(m)) => Event::Mouse(m),
                Ok(TermEvent::Paste(text)) => Event::Paste(text),
                Ok(TermEvent::Resize(w, h)) => Event::Resize(w, h),
                Ok(_) => continue,
                Err(e) => {
                    // The terminal is gone (SSH dropped): leave rather than spin on errors.
                    tracing::warn!("terminal input failed: {e}");
                    let _ = tx.send(Event::Signal(Stop::TerminalLost));
                    return;
                }
            };
            if tx.send(ev).is_err() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::JobId;

    #[test]
    fn coalesce_merges_job_changes_and_keeps_order_of_the_rest() {
        let id = |s: &str| JobId::parse(s).unwrap();
        let batch = vec![
            Event::JobsChanged(vec![id("a")]),
            Event::Tick,
            Event::JobsChanged(vec![id("b"), id("a")]),
            Event::Rescan,
        ];
        let out = coalesce(batch);
        assert!(matches!(&out[0], Event::JobsChanged(ids) if *ids == vec![id("a"), id("b")]));
        assert!(matches!(out[1], Event::Tick));
        assert!(matches!(out[2], Event::Rescan));
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn coalesce_merges_output_growth_and_leaves_out_jobs_read_anyway() {
        let id = |s: &str| JobId::parse(s).unwrap();
        let batch = vec![
            Event::OutputGrew(vec![id("a"), id("b")]),
            Event::Tick,
            Event::OutputGrew(vec![id("c"), id("a")]),
            Event::JobsChanged(vec![id("b")]),
        ];
        let out = coalesce(batch);
        assert!(matches!(&out[0], Event::JobsChanged(ids) if *ids == vec![id("b")]));
        assert!(matches!(&out[1], Event::OutputGrew(ids) if *ids == vec![id("a"), id("c")]));
        assert!(matches!(out[2], Event::Tick));
        assert_eq!(out.len(), 3);
    }
}
