//! The recent-events view: what happened while the operator was away, newest first, read when
//! it opens; Enter goes back to the table on the event's job.

use serde_json::Value;

use super::table::view::Tab;
use super::{App, Mode};
use crate::jobs::JobId;
use crate::jobs::insight::timeline::{self, TimelineEvent};
use crate::tui::action::{EventsAction, Key};
use crate::tui::effect::{Effect, FEED_EVENTS};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Feed {
    pub events: Vec<TimelineEvent>,
    pub selected: usize,
    pub loading: bool,
    /// What could not be read, said above the events.
    pub problems: Vec<String>,
}

impl App {
    pub(super) fn open_events(&mut self) -> Vec<Effect> {
        self.mode = Mode::Events(Feed {
            loading: true,
            ..Feed::default()
        });
        let shown = self
            .jobs
            .values()
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
        let Mode::Events(feed) = &mut self.mode else {
            return;
        };
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
        feed.events = timeline::recent_events(timelines, notifications, FEED_EVENTS);
        feed.selected = feed.selected.min(feed.events.len().saturating_sub(1));
        feed.loading = false;
        feed.problems = problems;
    }

    pub(super) fn on_events_key(&mut self, key: &Key) -> Vec<Effect> {
        let Some(actions) = self.bound::<EventsAction>(key) else {
            return self.quit();
        };
        let page = self.areas().table.height.saturating_sub(4).max(1) as usize;
        let Mode::Events(feed) = &mut self.mode else {
            return vec![];
        };
        let last = feed.events.len().saturating_sub(1);
        let sel = &mut feed.selected;
        use EventsAction as A;
        let Some(action) = actions.first() else {
            self.dirty = false;
            return vec![];
        };
        match action {
            A::Up => *sel = sel.saturating_sub(1),
            A::Down => *sel = (*sel + 1).min(last),
            A::PageUp => *sel = sel.saturating_sub(page),
            A::PageDown => *sel = (*sel + page).min(last),
            A::Top => *sel = 0,
            A::Bottom => *sel = last,
            A::Close => self.mode = Mode::Normal,
            A::Quit => return self.quit(),
            A::Open => return self.go_to_event_job(),
        }
        vec![]
    }

    /// Back to the table with the event's job selected (shown whatever the filters).
    fn go_to_event_job(&mut self) -> Vec<Effect> {
        let Mode::Events(feed) = &self.mode else {
            return vec![];
        };
        let Some(id) = feed.events.get(feed.selected).and_then(|e| e.job.clone()) else {
            return vec![];
        };
        self.mode = Mode::Normal;
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
