//! The recent-events view: what happened while the operator was away, newest first, read when
//! it opens; Enter goes back to the table on the event's job. Progress milestones are hidden
//! unless asked for (they are most of what is recorded), one kind of event can be picked, and a
//! mark separates what arrived since the view was last closed. What to show is worked out
//! here; drawing only reads `Feed::shown` and `Feed::new`.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::table::view::Tab;
use super::{App, Mode};
use crate::jobs::insight::timeline::{self, EventKind, TimelineEvent};
use crate::jobs::{JobId, Status};
use crate::tui::action::{EventsAction, Key};
use crate::tui::effect::{Effect, FEED_EVENTS};

/// The kinds of event the view can be narrowed to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kinds {
    #[default]
    All,
    /// Questions and gates asked, and their answers and decisions.
    Questions,
    /// Jobs that failed, died or were killed.
    Failures,
    /// Jobs finishing, however they ended.
    Finishes,
    /// Alarms and known issues.
    Alarms,
    Progress,
}

impl Kinds {
    pub fn title(self) -> &'static str {
        match self {
            Kinds::All => "every kind",
            Kinds::Questions => "questions and gates",
            Kinds::Failures => "failures",
            Kinds::Finishes => "finishes",
            Kinds::Alarms => "alarms and issues",
            Kinds::Progress => "progress",
        }
    }

    /// Whether an event is of these kinds; `failed`: it ends a job that failed, died or was
    /// killed.
    fn admits(self, e: &TimelineEvent, failed: bool) -> bool {
        let finish = e.kind == EventKind::Finished
            || (e.kind == EventKind::Notification && e.text.contains(" finished"));
        match self {
            Kinds::All => true,
            Kinds::Questions => matches!(e.kind, EventKind::Asked | EventKind::Answered),
            Kinds::Failures => finish && failed,
            Kinds::Finishes => finish,
            Kinds::Alarms => matches!(e.kind, EventKind::Alarm | EventKind::Issue),
            Kinds::Progress => e.kind == EventKind::Progress,
        }
    }
}

/// What the view shows, and when it was last closed: kept for the cockpit's lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventsView {
    pub kinds: Kinds,
    /// Progress events among the others (the `Progress` kind shows them whatever this says).
    pub progress: bool,
    /// When the view was last closed; `None` until it has been.
    pub seen: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Feed {
    /// Every event read, newest first.
    pub events: Vec<TimelineEvent>,
    /// The events shown (indices into `events`), newest first.
    pub shown: Vec<usize>,
    /// The selected row of `shown`.
    pub selected: usize,
    pub loading: bool,
    /// What could not be read, said above the events.
    pub problems: Vec<String>,
    /// How many of the events shown arrived since the view was last closed (the mark goes
    /// after them), and when that was; `None` the first time.
    pub new: Option<(usize, DateTime<Utc>)>,
}

impl Feed {
    pub fn selected_event(&self) -> Option<&TimelineEvent> {
        self.events.get(*self.shown.get(self.selected)?)
    }
}

/// How many events are read, whatever is shown: enough that a kind picked still finds some.
const READ_EVENTS: usize = FEED_EVENTS * 8;

impl App {
    pub(super) fn open_events(&mut self) -> Vec<Effect> {
        self.mode = Mode::Events(Feed {
            loading: true,
            ..Feed::default()
        });
        let shown = self
            .jobs
            .values()
            .map(|j| &**j)
            .filter(|j| super::table::view::in_projects(j, &self.table.projects));
        let ids = timeline::feed_jobs(shown)
            .into_iter()
            .map(|j| j.id.clone())
            .collect();
        vec![Effect::LoadFeed(ids)]
    }

    pub(super) fn on_feed_loaded(
        &mut self,
        histories: Vec<(JobId, Vec<Value>)>,
        notifications: Vec<TimelineEvent>,
        problems: Vec<String>,
    ) {
        let set = self.insight.patterns.as_deref();
        let rules = &self.opts.insight.rules;
        let timelines = histories
            .iter()
            .filter_map(|(id, h)| {
                let job = self.jobs.get(id)?;
                let issues = self.insight.issues.get(id).zip(set);
                Some(timeline::job_timeline(job, h, issues, rules, self.now))
            })
            .collect();
        // A notification names no project: with a project picked, only the jobs speak.
        let notifications = if self.table.projects.is_empty() {
            notifications
        } else {
            Vec::new()
        };
        let Mode::Events(feed) = &mut self.mode else {
            return;
        };
        feed.events = timeline::recent_events(timelines, notifications, READ_EVENTS);
        feed.loading = false;
        feed.problems = problems;
        self.refilter_events();
    }

    /// Works out which events are shown, and where the mark goes, after the events or the
    /// view's settings changed.
    fn refilter_events(&mut self) {
        let view = self.events_view;
        let jobs = &self.jobs;
        let Mode::Events(feed) = &mut self.mode else {
            return;
        };
        let failed = |e: &TimelineEvent| match e.job.as_ref().and_then(|id| jobs.get(id)) {
            Some(job) => matches!(
                job.status,
                Status::Failed | Status::ChecksFailed | Status::Died | Status::Killed
            ),
            // A notification of a job no longer on disk: its exit code says.
            None => e.text.contains("(exit ") && !e.text.contains("(exit 0)"),
        };
        let hide_progress = !view.progress && view.kinds != Kinds::Progress;
        feed.shown = (0..feed.events.len())
            .filter(|&i| {
                let e = &feed.events[i];
                !(hide_progress && e.kind == EventKind::Progress) && view.kinds.admits(e, failed(e))
            })
            .take(FEED_EVENTS)
            .collect();
        feed.new = view.seen.map(|seen| {
            let n = feed
                .shown
                .iter()
                .take_while(|&&i| feed.events[i].at.is_some_and(|t| t > seen))
                .count();
            (n, seen)
        });
        feed.selected = feed.selected.min(feed.shown.len().saturating_sub(1));
    }

    pub(super) fn on_events_key(&mut self, key: &Key) -> Vec<Effect> {
        let Some(actions) = self.bound::<EventsAction>(key) else {
            return self.ask_quit(key);
        };
        let page = self.areas().table.height.saturating_sub(4).max(1) as usize;
        let Some(action) = actions.first().copied() else {
            self.dirty = false;
            return vec![];
        };
        let Mode::Events(feed) = &mut self.mode else {
            return vec![];
        };
        let last = feed.shown.len().saturating_sub(1);
        let sel = &mut feed.selected;
        use EventsAction as A;
        match action {
            A::Up => *sel = sel.saturating_sub(1),
            A::Down => *sel = (*sel + 1).min(last),
            A::PageUp => *sel = sel.saturating_sub(page),
            A::PageDown => *sel = (*sel + page).min(last),
            A::Top => *sel = 0,
            A::Bottom => *sel = last,
            A::Close => self.close_events(),
            A::Help => self.open_help(),
            A::Open => return self.go_to_event_job(),
            A::Progress => {
                self.events_view.progress = !self.events_view.progress;
                self.refilter_events();
            }
            A::AllKinds => self.pick_kinds(Kinds::All),
            A::Questions => self.pick_kinds(Kinds::Questions),
            A::Failures => self.pick_kinds(Kinds::Failures),
            A::Finishes => self.pick_kinds(Kinds::Finishes),
            A::Alarms => self.pick_kinds(Kinds::Alarms),
            A::OnlyProgress => self.pick_kinds(Kinds::Progress),
        }
        vec![]
    }

    /// Shows only `kinds`; the same kinds again show every kind.
    fn pick_kinds(&mut self, kinds: Kinds) {
        let view = &mut self.events_view;
        view.kinds = if view.kinds == kinds {
            Kinds::All
        } else {
            kinds
        };
        if let Mode::Events(feed) = &mut self.mode {
            feed.selected = 0;
        }
        self.refilter_events();
    }

    /// Back to the main screen; what is shown now counts as seen.
    fn close_events(&mut self) {
        self.events_view.seen = Some(self.now);
        self.mode = Mode::Normal;
    }

    /// Back to the table with the event's job selected (shown whatever the filters).
    fn go_to_event_job(&mut self) -> Vec<Effect> {
        let Mode::Events(feed) = &self.mode else {
            return vec![];
        };
        let Some(id) = feed.selected_event().and_then(|e| e.job.clone()) else {
            return vec![];
        };
        self.close_events();
        if !self.jobs.contains_key(&id) {
            self.message = Some(format!("job {id} is no longer on disk"));
            return vec![];
        }
        self.table.select_when_seen = Some(id.clone());
        let mut effects = self.refresh_view();
        if self.table.selected.as_ref() != Some(&id) {
            // Hidden by the view or the filter: show everything (of the projects picked).
            self.table.tab = Tab::All;
            self.table.filter.clear();
            effects.extend(self.refresh_view());
        }
        effects
    }
}
