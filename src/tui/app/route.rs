//! Every event to the feature state it concerns: `update` (what any event does to the frame's
//! bookkeeping), `apply` (input and the loop's own events) and `on_result` (what the watcher,
//! readers and effects report).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use crossterm::event::KeyEventKind;
use ratatui::layout::Rect;

use super::{App, FLOOD_LINES, fleet};
use crate::tui::effect::Effect;
use crate::tui::event::{Event, HostNews};

impl App {
    pub fn update(&mut self, event: Event, now: DateTime<Utc>) -> Vec<Effect> {
        let log_event = matches!(event, Event::LogAppended { .. } | Event::LogPartial { .. });
        // What cannot change the jobs, their alarms, issues or the view: the clock, the
        // server's load, the pane's lines, the queue listed again unchanged (counted there).
        let quiet = matches!(
            event,
            Event::Tick
                | Event::PollTick
                | Event::SystemAlerts(_)
                | Event::LogAppended { .. }
                | Event::LogPartial { .. }
                | Event::LogLoaded { .. }
                | Event::OutputGrew(_)
                | Event::FirstFrameDrawn
                | Event::QueueListed(..)
                | Event::Host {
                    news: HostNews::Heartbeat,
                    ..
                }
        );
        // A key, a click or a paste changes what the table lists only through `refresh_view`,
        // which counts it: moving the selection must not cost a pass over every job.
        let input = matches!(event, Event::Key(_) | Event::Mouse(_) | Event::Paste(_));
        if !quiet && !input {
            self.changes += 1;
        }
        let (was_dirty, was_log_only) = (self.dirty, self.log_only);
        // Inside `apply`, `dirty` says whether this event changed the screen; a change waiting
        // for the next frame must survive an event that changes nothing.
        let effects = fleet::local_reads_only(self.apply(event, now));
        if let Some(message) = &self.message {
            self.said.note(now, message);
        }
        let changed = self.dirty;
        self.dirty = was_dirty || changed;
        if changed {
            // Only followed output moved since the last frame: the loop may pace such frames.
            self.log_only = log_event && (!was_dirty || was_log_only);
        }
        effects
    }

    fn apply(&mut self, event: Event, now: DateTime<Utc>) -> Vec<Effect> {
        self.now = now;
        self.dirty = true;
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key),
            Event::Key(_) => {
                self.dirty = false;
                vec![]
            }
            Event::Mouse(m) => self.on_mouse(m),
            Event::Paste(text) => self.on_paste(&text),
            Event::Resize(w, h) => {
                self.size = Rect::new(0, 0, w, h);
                self.table.keep_visible(self.job_rows());
                vec![]
            }
            Event::Tick => self.on_tick(),
            Event::PollTick => {
                self.dirty = false;
                let mut effects = vec![Effect::Sync {
                    skip: self.settled_ids(),
                }];
                effects.extend(self.log.job.clone().map(Effect::PollLog));
                // Where the root is polled, the queue is not watched either.
                effects.push(Effect::SyncQueue);
                effects
            }
            Event::WatchMode(mode) => {
                self.watch_mode = mode;
                vec![]
            }
            Event::RootGone => {
                self.root_gone = true;
                vec![]
            }
            Event::RootBack => {
                self.root_gone = false;
                vec![Effect::Sync {
                    skip: HashSet::new(),
                }]
            }
            Event::Signal(_) => self.quit(),
            other => self.on_result(other),
        }
    }

    /// What the watcher, the readers and the effects report.
    fn on_result(&mut self, event: Event) -> Vec<Effect> {
        match event {
            Event::JobsChanged(ids) => self.on_jobs_changed(ids),
            Event::OutputGrew(ids) => self.on_output_grew(ids),
            Event::FirstFrameDrawn => {
                self.dirty = false;
                self.on_first_frame()
            }
            Event::Rescan => vec![Effect::Sync {
                skip: HashSet::new(),
            }],
            Event::Synced(s) => self.on_synced(s),
            Event::Host { host, news } => self.on_host(host, news),
            Event::JobsRead(read) => self.on_jobs_read(read),
            Event::QueueListed(queued, holds) => self.on_queue_listed(queued, holds),
            Event::LogLoaded { id, lines, error } => {
                if self.log.job.as_ref() == Some(&id) {
                    self.log.loaded(lines, error);
                    self.keep_selection_shown();
                }
                vec![]
            }
            Event::LogAppended { id, reset, lines } => {
                if self.log.job.as_ref() == Some(&id) {
                    self.log_flood = lines.len() >= FLOOD_LINES
                        || matches!(reset, Some(crate::jobs::fs::follow::Reset::Skipped(_)));
                    self.log.append(reset, lines);
                    self.keep_selection_shown();
                }
                vec![]
            }
            Event::LogPartial { id, line } => {
                if self.log.job.as_ref() == Some(&id) {
                    self.log.set_partial(line);
                    self.keep_selection_shown();
                }
                vec![]
            }
            Event::Answered { job, ok, message } => self.on_answered(job, ok, message),
            Event::Dispatched(result) => self.on_dispatched(result),
            Event::Notice(message) => {
                self.message = Some(message);
                vec![]
            }
            Event::PromptLoaded { id, text } => {
                self.on_prompt_loaded(id, text);
                vec![]
            }
            Event::HistoryLoaded { id, history } => {
                self.on_history_loaded(id, history);
                vec![]
            }
            Event::Overlaps(found) => {
                self.on_overlaps(found);
                vec![]
            }
            Event::ChangeLoaded { id, change } => {
                self.on_change_loaded(id, change);
                vec![]
            }
            Event::ReviewPreviewed { job, op, preview } => {
                self.on_review_previewed(job, op, preview);
                vec![]
            }
            Event::Reviewed { job, result, .. } => self.on_reviewed(job, result),
            Event::FeedLoaded {
                histories,
                notifications,
                problems,
            } => {
                self.on_feed_loaded(histories, notifications, problems);
                vec![]
            }
            insight => {
                self.on_insight(insight);
                vec![]
            }
        }
    }
}
