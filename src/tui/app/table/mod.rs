//! The jobs table: which jobs it shows in what order (`view`: tabs, project and text filters,
//! sort), which one is selected, and the first row on screen; its keys, and typing the filter,
//! are in `keys`.

mod keys;
pub mod note;
pub mod view;

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::jobs::{JobId, Status};
use view::{SortKey, Tab, ViewSpec};

pub struct Table {
    /// The rows, in order.
    pub view: Vec<JobId>,
    /// Jobs per status, among those the project filter admits.
    pub counts: HashMap<Status, usize>,
    pub selected: Option<JobId>,
    /// The first row on screen.
    pub top: usize,
    pub tab: Tab,
    pub sort: SortKey,
    pub projects: Vec<String>,
    pub filter: String,
    /// A job just dispatched (or picked in the recent events): selected as soon as it is seen.
    pub select_when_seen: Option<JobId>,
}

impl Table {
    pub fn new(projects: Vec<String>) -> Table {
        Table {
            view: Vec::new(),
            counts: HashMap::new(),
            selected: None,
            top: 0,
            tab: Tab::All,
            sort: SortKey::Status,
            projects,
            filter: String::new(),
            select_when_seen: None,
        }
    }

    pub fn selected_index(&self) -> Option<usize> {
        let id = self.selected.as_ref()?;
        self.view.iter().position(|v| v == id)
    }

    /// Whether the job is a row of the table.
    pub fn shows(&self, id: &JobId) -> bool {
        self.view.contains(id)
    }

    /// Whether the job is one the table's tab and filters let in: what `shows` says once the
    /// rows are rebuilt, without looking through them (a large root's rows are 100,000 ids).
    pub fn admits(&self, job: &crate::jobs::Job) -> bool {
        self.tab.admits(job)
            && view::in_projects(job, &self.projects)
            && view::matches_text(job, &self.filter.to_lowercase())
    }

    /// Rebuilds the rows after data or filters changed; keeps the selection on the same job,
    /// or on the same row if that job left the view. `rows`: how many fit on screen.
    pub fn rebuild(&mut self, jobs: &crate::tui::app::Jobs, now: DateTime<Utc>, rows: usize) {
        let old_index = self.selected_index();
        let spec = ViewSpec {
            tab: self.tab,
            projects: &self.projects,
            text: &self.filter,
            sort: self.sort,
        };
        self.view = view::build(jobs, &spec, now);
        self.counts = view::counts(jobs, &self.projects);
        if let Some(id) = self.select_when_seen.take() {
            if self.view.contains(&id) {
                self.selected = Some(id);
            } else {
                self.select_when_seen = Some(id);
            }
        }
        let still_there = self.selected.as_ref().is_some_and(|id| self.shows(id));
        if !still_there {
            self.selected = match old_index {
                Some(i) if !self.view.is_empty() => {
                    Some(self.view[i.min(self.view.len() - 1)].clone())
                }
                _ => self.view.first().cloned(),
            };
        }
        self.keep_visible(rows);
    }

    /// Scrolls so the selected row is among the `rows` on screen.
    pub fn keep_visible(&mut self, rows: usize) {
        let rows = rows.max(1);
        let Some(i) = self.selected_index() else {
            self.top = 0;
            return;
        };
        if i < self.top {
            self.top = i;
        } else if i >= self.top + rows {
            self.top = i + 1 - rows;
        }
        self.top = self.top.min(self.view.len().saturating_sub(rows));
    }

    /// Selects row `i` (the last row if past it); false when there are no rows.
    pub fn select_index(&mut self, i: usize, rows: usize) -> bool {
        if self.view.is_empty() {
            return false;
        }
        self.selected = Some(self.view[i.min(self.view.len() - 1)].clone());
        self.keep_visible(rows);
        true
    }

    /// Moves the selection `delta` rows (negative: up), stopping at either end.
    pub fn move_by(&mut self, delta: i64, rows: usize) -> bool {
        let cur = self.selected_index().unwrap_or(0) as i64;
        let max = self.view.len().saturating_sub(1) as i64;
        self.select_index((cur + delta).clamp(0, max) as usize, rows)
    }
}
