//! The cockpit's state and its one way to change: `update(event) -> effects`. Nothing in here
//! touches the disk, the terminal or a clock; time comes in with the event.
//!
//! `App` is made of feature states, each in its own module with its own keys: the jobs `table`
//! (and typing its filter), the `output` pane (and typing a search), the `inbox`, the
//! `input_bar`, the `command` line, the recent `events`, the project `picker`, the `detail` view
//! and the `confirm` popup, and a job's `session` replied to or opened. What is on top of the main screen is the `Mode`, which owns that popup's state, and
//! gets the keys first (`keys`). `insight` is what the cockpit works out beyond each job's
//! status; `data`, `tick` and `mouse` are the other events coming in; `fleet` is the remote
//! hosts (each link's state, and their jobs under `"<id>@<host>"` keys, kept stale while down).

pub mod command;
mod confirm;
mod data;
pub mod detail;
pub mod diff;
pub mod events;
pub mod fleet;
pub mod inbox;
pub mod input_bar;
pub mod insight;
mod keys;
pub mod messages;
mod mouse;
pub mod output;
pub mod overlap;
mod paste;
pub mod picker;
mod route;
mod session;
pub mod table;
mod tick;
mod title;

use std::collections::HashSet;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use ratatui::layout::Rect;

use crate::jobs::{Job, JobId, Status};
use crate::watch::WatchMode;

use super::action::KeyMap;
use super::effect::{self, Effect};

use super::input::TextInput;
use super::layout::{self, Areas, Fill, Zoom};
use super::theme::Theme;
pub use confirm::Confirm;
use output::LogView;
use table::Table;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Table,
    Output,
}

/// What has the keyboard: the main screen, or what is on top of it, with that thing's state.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    Normal,
    Help,
    Detail(detail::Detail),
    /// The diff view of a job's change.
    Diff(diff::DiffView),
    Inbox(inbox::Inbox),
    /// The input bar; its draft is `App::draft`, kept while the bar is hidden.
    InputBar,
    Confirm(Confirm),
    Events(events::Feed),
    /// Typing the jobs filter (the table follows as it changes).
    Filter(TextInput),
    /// Typing a search of the output.
    Search(TextInput),
    /// The command line (`:q`, `:run TASK`, ...).
    Command(command::CommandLine),
    Picker(picker::Picker),
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
    pub theme: Theme,
    /// Ring the terminal bell once when a new question or gate arrives.
    pub bell: bool,
    /// Projects the input bar can dispatch to (from the config, and the repository the cockpit
    /// was started in first).
    pub dispatch_projects: Vec<String>,
    /// The agents a task of the input bar may run, and each project's own.
    pub dispatch_agents: input_bar::AgentChoice,
    /// The project of the repository the cockpit was started in: a new task goes there unless
    /// the selected job or the project filter says otherwise.
    pub project_here: Option<String>,
    pub insight: insight::InsightOptions,
    /// The remote hosts shown, in order (see `crate::fleet`); empty: this machine's jobs only,
    /// with no HOST column.
    pub hosts: Vec<String>,
}

/// Every job the cockpit knows, by id. Each job is boxed: a map's slots are allocated by the
/// power of two, a third of them empty at times, and a job is a few hundred bytes; at 100,000
/// jobs, empty slots the size of a pointer cost megabytes less. Hashed with foldhash (seeded
/// per process): SipHash made putting a listing of 100,000 jobs in the map a third slower.
pub type Jobs = foldhash::HashMap<JobId, Box<Job>>;

/// Lines of followed output arriving at once that make a flood (see [`App::log_flood`]): more
/// than a tall pane shows.
pub const FLOOD_LINES: usize = 100;

pub struct App {
    pub opts: Options,
    pub jobs: Jobs,
    pub table: Table,
    /// The output pane: the selected job's log.
    pub log: LogView,
    pub focus: Focus,
    pub mode: Mode,
    /// The input bar's task, kept while the bar is hidden.
    pub draft: Option<input_bar::Draft>,
    /// Answers given from here that the jobs' files do not show yet.
    pub answered: inbox::Answered,
    pub insight: insight::Insight,
    /// What the recent events show, and when they were last looked at.
    pub events_view: events::EventsView,
    pub watch_mode: WatchMode,
    /// The jobs root is not at its path (moved away, removed): the header says so.
    pub root_gone: bool,
    pub size: Rect,
    pub now: DateTime<Utc>,
    /// The first listing has arrived.
    pub loaded: bool,
    pub message: Option<String>,
    /// The messages said lately, oldest first, kept whole for the events view (the footer
    /// cuts a long one).
    pub said: messages::Said,
    pub scan_error: Option<String>,
    pub quit: bool,
    /// Something on screen changed since the last frame.
    pub dirty: bool,
    /// ...and it was only new lines of the followed output.
    pub log_only: bool,
    /// Running jobs whose output grew since they were last read: read at the next tick, not at
    /// each write (an agent printing changes nothing else about its job, and its end is an
    /// event of its own).
    pub output_grew: foldhash::HashSet<JobId>,
    /// The followed output's last lines came in a flood (a pane's worth at once, or so many
    /// that some were skipped): its frames are paced as a flood's (`pacing`).
    pub log_flood: bool,
    /// The pane with the focus has the whole body.
    pub zoomed: bool,
    /// The first line of the help shown, where it is taller than the screen.
    pub help_top: usize,
    /// What the help was opened over (a view, the inbox), shown again when it closes.
    help_over: Option<Mode>,
    /// A quit was asked for while a draft is kept: the same again quits.
    quit_asked: bool,
    /// The merge or discard whose preview is awaited: its answer opens the confirmation.
    pub review_asked: Option<(JobId, effect::ReviewOp)>,
    /// Seconds since the wall display last moved on.
    cycle_elapsed: u64,
    /// Which app this is, and how many updates may have changed what the table lists (every
    /// event but a tick that only moved the time, and input that did not rebuild the rows):
    /// what is worked out from the whole list for a frame (the columns' widths) is kept while
    /// both stay the same.
    pub id: u64,
    pub changes: u64,
    /// The queued rows as the queue last listed them, in its order.
    queue_listed: Vec<JobId>,
    /// The accounts' usage limits that stand, as the queue's last listing found them: the
    /// header says them, and the queued rows whose agent runs on one of them wait on it.
    pub holds: crate::jobs::model::limit::Holds,
    /// The remote hosts shown (`Options::hosts`, in order), and how each stands.
    pub hosts: Vec<fleet::Host>,
    /// Unmerged worktree jobs whose changes touch the same files.
    pub overlap: overlap::Overlap,
}

impl App {
    pub fn new(opts: Options, now: DateTime<Utc>) -> App {
        static APPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        App {
            id: APPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            changes: 0,
            queue_listed: Vec::new(),
            holds: Default::default(),
            overlap: overlap::Overlap::default(),
            table: Table::new(opts.projects.clone()),
            message: None,
            said: messages::Said::default(),
            jobs: Jobs::default(),
            focus: Focus::Table,
            mode: Mode::Normal,
            log: LogView {
                patterns: opts.insight.patterns.clone(),
                ..LogView::default()
            },
            insight: insight::Insight {
                patterns: opts.insight.patterns.clone(),
                ..insight::Insight::default()
            },
            draft: None,
            answered: inbox::Answered::default(),
            events_view: events::EventsView::default(),
            watch_mode: WatchMode::Inotify,
            root_gone: false,
            size: Rect::new(0, 0, 80, 24),
            now,
            loaded: false,
            scan_error: None,
            quit: false,
            dirty: true,
            log_only: false,
            log_flood: false,
            output_grew: foldhash::HashSet::default(),
            zoomed: false,
            help_top: 0,
            help_over: None,
            quit_asked: false,
            review_asked: None,
            cycle_elapsed: 0,
            hosts: opts.hosts.iter().cloned().map(fleet::Host::new).collect(),
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

    /// Where everything goes: the table and the output pane share the body by what they hold
    /// (see `layout::areas`), or the focused one has it all while zoomed.
    pub fn areas(&self) -> Areas {
        layout::areas(self.size, self.opts.read_only, self.fill())
    }

    /// What the table and the output pane hold, and which is zoomed.
    pub fn fill(&self) -> Fill {
        let zoom = match (self.zoomed, self.focus) {
            (false, _) => Zoom::None,
            (true, Focus::Table) => Zoom::Table,
            (true, Focus::Output) => Zoom::Output,
        };
        let log = &self.log;
        let lines = if log.job.is_none() || log.loading {
            1
        } else {
            log.lines.len() + usize::from(log.note.is_some())
        };
        Fill {
            // A host that cannot be reached is a row too.
            // An empty table says why and what to do next: its rows are lines of text (one
            // while the jobs are read).
            jobs: match self.table.view.len() + self.troubled_hosts().count() {
                0 if self.loaded => layout::EMPTY_TABLE_ROWS,
                n => n,
            },
            lines,
            zoom,
        }
    }

    /// The terminal is too small to show the cockpit: the screen says only that, and nothing
    /// the operator does may act on what it hides (but quitting).
    pub fn too_small(&self) -> bool {
        layout::too_small(self.size)
    }

    pub fn selected_job(&self) -> Option<&Job> {
        self.table
            .selected
            .as_ref()
            .and_then(|id| self.jobs.get(id))
            .map(|j| &**j)
    }

    /// What the next frame shows new, for its pacing.
    pub fn pace(&self) -> crate::tui::pacing::Pace {
        use crate::tui::pacing::Pace;
        match (self.log_only, self.log_flood) {
            (true, false) => Pace::Output,
            (true, true) => Pace::Flood,
            (false, _) => Pace::Change,
        }
    }

    /// Tick once a second while any job is live (elapsed times move, pids may die) or the
    /// wall display rotates; with nothing live, nothing wakes the cockpit.
    pub fn wants_tick(&self) -> bool {
        self.opts.cycle_secs.is_some()
            // A hold lapses, and a job the usage limit stopped is continued, at a time of their
            // own, which no file or process announces.
            || !self.holds.is_empty()
            || self.jobs.values().any(|j| {
                j.status.is_active()
                    || (j.status == Status::Limited
                        && j.continued_by().is_none()
                        && j.id.host().is_none())
            })
            || self.hosts_aging()
    }

    /// Ids of this machine's jobs whose status can still change on their own (for polling).
    pub fn settled_ids(&self) -> HashSet<JobId> {
        self.jobs
            .values()
            .filter(|j| j.is_settled() && j.id.host().is_none())
            .map(|j| j.id.clone())
            .collect()
    }

    /// A short log leaves the table more rows, a growing one takes some back (see `areas`):
    /// the selected row stays on screen. Past half the screen's height the log asks no more.
    fn keep_selection_shown(&mut self) {
        if self.log.lines.len() <= usize::from(self.size.height) {
            self.table.keep_visible(self.job_rows());
        }
    }

    fn quit(&mut self) -> Vec<Effect> {
        self.quit = true;
        vec![Effect::Quit]
    }

    /// Rebuilds the rows after data or filters changed (see `Table::rebuild`), and opens the
    /// log of the job selected if that changed.
    fn refresh_view(&mut self) -> Vec<Effect> {
        self.changes += 1;
        let rows = self.job_rows();
        self.table.rebuild(&self.jobs, self.now, rows);
        // The table's height follows what it lists: keep the selection on screen in the new one.
        self.table.keep_visible(self.job_rows());
        if let Mode::Detail(detail) = &self.mode
            && !self.table.shows(&detail.job)
        {
            // The page was about that job: do not show another one under its title.
            self.message = Some(format!("job {} is gone", detail.job));
            self.mode = Mode::Normal;
        }
        if let Mode::Diff(view) = &self.mode
            && !self.jobs.contains_key(&view.job)
        {
            self.message = Some(format!("job {} is gone", view.job));
            self.mode = Mode::Normal;
        }
        self.sync_log()
    }

    /// The output pane follows the selection.
    fn sync_log(&mut self) -> Vec<Effect> {
        if self.log.job == self.table.selected {
            return vec![];
        }
        match self.table.selected.clone() {
            Some(id) => {
                self.log.open(id.clone());
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

    fn select_index(&mut self, i: usize) -> Vec<Effect> {
        if self.table.select_index(i, self.job_rows()) {
            self.sync_log()
        } else {
            vec![]
        }
    }

    fn move_selection(&mut self, delta: i64) -> Vec<Effect> {
        if self.table.move_by(delta, self.job_rows()) {
            self.sync_log()
        } else {
            vec![]
        }
    }
}

#[cfg(test)]
mod command_tests;
#[cfg(test)]
mod events_tests;
#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod input_bar_tests;
#[cfg(test)]
mod key_rules_tests;
#[cfg(test)]
mod keys_tests;
#[cfg(test)]
mod layout_tests;
#[cfg(test)]
mod lifecycle_tests;
#[cfg(test)]
mod limit_tests;
#[cfg(test)]
mod paste_tests;
#[cfg(test)]
mod review_tests;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod too_small_tests;
