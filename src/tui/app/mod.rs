//! The cockpit's state and its one way to change: `update(event) -> effects`. Nothing in here
//! touches the disk, the terminal or a clock; time comes in with the event.

mod data;
pub mod dispatch_bar;
pub mod inbox;
pub mod insight;
pub mod jobs_view;
mod keys;
pub mod log;
mod mouse;
mod tick;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use crossterm::event::KeyEventKind;
use ratatui::layout::Rect;

use crate::jobs::{Job, JobId, Status};
use crate::watch::WatchMode;

use super::action::KeyMap;
use super::effect::Effect;
use super::event::Event;
use super::input::LineInput;
use super::layout::{self, Areas};
use jobs_view::{SortKey, Tab, ViewSpec};
use log::LogView;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Table,
    Output,
}

/// What has the keyboard: the main screen, or something on top of it (which gets keys first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Help,
    Detail,
    /// Answering questions and gates; the state is in `App::inbox`.
    Inbox,
    /// Typing a task into the input bar; the state is in `App::draft`.
    Dispatch,
    Confirm(dispatch_bar::Confirm),
    /// The recent-events feed; the state is in `App::insight.feed`.
    Events,
    FilterInput(LineInput),
    SearchInput(LineInput),
    ProjectPicker {
        items: Vec<String>,
        selected: usize,
    },
}

/// Settings the cockpit starts with.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub root: PathBuf,
    pub projects: Vec<String>,
    pub read_only: bool,
    pub cycle_secs: Option<u64>,
    pub keymap: KeyMap,
    /// Projects named in the config, offered by the picker even with no jobs yet.
    pub known_projects: Vec<String>,
    pub theme: super::ui::Theme,
    /// Ring the terminal bell once when a new question or gate arrives.
    pub bell: bool,
    /// Projects the input bar can dispatch to (from the config).
    pub dispatch_projects: Vec<String>,
    pub insight: insight::InsightOptions,
}

pub struct App {
    pub opts: Options,
    pub jobs: HashMap<JobId, Job>,
    /// The rows of the table, in order.
    pub view: Vec<JobId>,
    pub counts: HashMap<Status, usize>,
    pub selected: Option<JobId>,
    /// First row of the table on screen.
    pub table_top: usize,
    pub tab: Tab,
    pub sort: SortKey,
    pub projects: Vec<String>,
    pub filter: String,
    pub focus: Focus,
    pub mode: Mode,
    pub log: LogView,
    pub prompt: Option<(JobId, Result<Option<String>, String>)>,
    pub inbox: Option<inbox::Inbox>,
    pub insight: insight::Insight,
    /// The input bar's task, kept while the bar is hidden.
    pub draft: Option<dispatch_bar::Draft>,
    /// A job just dispatched: selected as soon as it appears.
    select_when_seen: Option<JobId>,
    /// Answers given from here whose jobs have not been read again yet: (job, question id or gate).
    answered: Vec<(JobId, String)>,
    pub detail_scroll: u16,
    pub watch_mode: WatchMode,
    pub size: Rect,
    pub now: DateTime<Utc>,
    /// The first listing has arrived.
    pub loaded: bool,
    pub message: Option<String>,
    pub scan_error: Option<String>,
    pub quit: bool,
    /// Something on screen changed since the last frame.
    pub dirty: bool,
    /// ...and it was only new lines of the followed output.
    pub log_only: bool,
    cycle_elapsed: u64,
}

impl App {
    pub fn new(opts: Options, now: DateTime<Utc>) -> App {
        App {
            projects: opts.projects.clone(),
            message: None,
            jobs: HashMap::new(),
            view: Vec::new(),
            counts: HashMap::new(),
            selected: None,
            table_top: 0,
            tab: Tab::All,
            sort: SortKey::Status,
            filter: String::new(),
            focus: Focus::Table,
            mode: Mode::Normal,
            log: LogView {
                patterns: opts.insight.patterns.clone(),
                ..LogView::default()
            },
            prompt: None,
            inbox: None,
            insight: insight::Insight {
                patterns: opts.insight.patterns.clone(),
                ..insight::Insight::default()
            },
            draft: None,
            select_when_seen: None,
            answered: Vec::new(),
            detail_scroll: 0,
            watch_mode: WatchMode::Inotify,
            size: Rect::new(0, 0, 80, 24),
            now,
            loaded: false,
            scan_error: None,
            quit: false,
            dirty: true,
            log_only: false,
            cycle_elapsed: 0,
            opts,
        }
    }

    /// What the cockpit must do first: read the whole root, and the queue.
    pub fn start(&self) -> Vec<Effect> {
        vec![
            Effect::Sync {
                skip: HashSet::new(),
            },
            Effect::SyncQueue,
        ]
    }

    pub fn areas(&self) -> Areas {
        layout::areas(self.size, self.opts.read_only)
    }

    pub fn selected_job(&self) -> Option<&Job> {
        self.selected.as_ref().and_then(|id| self.jobs.get(id))
    }

    pub fn selected_index(&self) -> Option<usize> {
        let id = self.selected.as_ref()?;
        self.view.iter().position(|v| v == id)
    }

    /// Tick once a second while any job is live (elapsed times move, pids may die) or the
    /// wall display rotates; with nothing live, nothing wakes the cockpit.
    pub fn wants_tick(&self) -> bool {
        self.opts.cycle_secs.is_some() || self.jobs.values().any(|j| j.status.is_active())
    }

    /// Ids of jobs whose status can still change on their own (for polling).
    pub fn settled_ids(&self) -> HashSet<JobId> {
        self.jobs
            .values()
            .filter(|j| j.is_settled())
            .map(|j| j.id.clone())
            .collect()
    }

    pub fn update(&mut self, event: Event, now: DateTime<Utc>) -> Vec<Effect> {
        let log_event = matches!(event, Event::LogAppended { .. });
        let (was_dirty, was_log_only) = (self.dirty, self.log_only);
        // Inside `apply`, `dirty` says whether this event changed the screen; a change waiting
        // for the next frame must survive an event that changes nothing.
        let effects = self.apply(event, now);
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
            Event::Resize(w, h) => {
                self.size = Rect::new(0, 0, w, h);
                self.keep_selection_visible();
                vec![]
            }
            Event::Tick => self.on_tick(),
            Event::JobsChanged(ids) => self.on_jobs_changed(ids),
            Event::Rescan => vec![Effect::Sync {
                skip: HashSet::new(),
            }],
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
            Event::Synced(s) => self.on_synced(s),
            Event::JobsRead(read) => self.on_jobs_read(read),
            Event::LogLoaded { id, lines, error } => {
                if self.log.job.as_ref() == Some(&id) {
                    self.log.loaded(lines, error);
                }
                vec![]
            }
            Event::LogAppended { id, reset, lines } => {
                if self.log.job.as_ref() == Some(&id) {
                    self.log.append(reset, lines);
                }
                vec![]
            }
            Event::Answered { job, ok, message } => self.on_answered(job, ok, message),
            Event::Dispatched(result) => self.on_dispatched(result),
            Event::Notice(message) => {
                self.message = Some(message);
                vec![]
            }
            Event::QueueListed(queued) => self.on_queue_listed(queued),
            Event::PromptLoaded { id, text } => {
                self.prompt = Some((id, text));
                vec![]
            }
            insight @ (Event::IssuesFound(_)
            | Event::SystemAlerts(_)
            | Event::PatternsReady { .. }
            | Event::HistoryLoaded { .. }
            | Event::FeedLoaded { .. }) => {
                self.on_insight(insight);
                vec![]
            }
            Event::Signal(_) => {
                self.quit = true;
                vec![Effect::Quit]
            }
        }
    }

    /// Rebuilds the rows after data or filters changed; keeps the selection on the same job
    /// (or the same row, if that job left the view) and opens its log if it changed.
    fn refresh_view(&mut self) -> Vec<Effect> {
        let old_index = self.selected_index();
        let spec = ViewSpec {
            tab: self.tab,
            projects: &self.projects,
            text: &self.filter,
            sort: self.sort,
        };
        self.view = jobs_view::build(&self.jobs, &spec, self.now);
        self.counts = jobs_view::counts(&self.jobs, &self.projects);
        if let Some(id) = self.select_when_seen.take() {
            if self.view.contains(&id) {
                self.selected = Some(id);
            } else {
                self.select_when_seen = Some(id);
            }
        }
        let still_there = self
            .selected
            .as_ref()
            .is_some_and(|id| self.view.contains(id));
        if !still_there && self.mode == Mode::Detail {
            // The page was about that job: do not show another one under its title.
            self.mode = Mode::Normal;
            if let Some(id) = &self.selected {
                self.message = Some(format!("job {id} is gone"));
            }
        }
        if !still_there {
            self.selected = match old_index {
                Some(i) if !self.view.is_empty() => {
                    Some(self.view[i.min(self.view.len() - 1)].clone())
                }
                _ => self.view.first().cloned(),
            };
        }
        self.keep_selection_visible();
        self.sync_log()
    }

    /// The output pane follows the selection.
    fn sync_log(&mut self) -> Vec<Effect> {
        if self.log.job == self.selected {
            return vec![];
        }
        match self.selected.clone() {
            Some(id) => {
                self.log.open(id.clone());
                self.prompt = None;
                vec![Effect::OpenLog(id)]
            }
            None => {
                self.log = LogView {
                    wrap: self.log.wrap,
                    patterns: self.log.patterns.take(),
                    ..LogView::default()
                };
                vec![Effect::CloseLog]
            }
        }
    }

    fn keep_selection_visible(&mut self) {
        let rows = self.areas().table_rows().max(1);
        let Some(i) = self.selected_index() else {
            self.table_top = 0;
            return;
        };
        if i < self.table_top {
            self.table_top = i;
        } else if i >= self.table_top + rows {
            self.table_top = i + 1 - rows;
        }
        self.table_top = self.table_top.min(self.view.len().saturating_sub(rows));
    }

    fn select_index(&mut self, i: usize) -> Vec<Effect> {
        if self.view.is_empty() {
            return vec![];
        }
        self.selected = Some(self.view[i.min(self.view.len() - 1)].clone());
        self.keep_selection_visible();
        self.sync_log()
    }

    fn move_selection(&mut self, delta: i64) -> Vec<Effect> {
        let cur = self.selected_index().unwrap_or(0) as i64;
        let max = self.view.len().saturating_sub(1) as i64;
        self.select_index((cur + delta).clamp(0, max) as usize)
    }
}

#[cfg(test)]
mod tests;
