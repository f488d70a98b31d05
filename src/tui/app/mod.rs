//! The cockpit's state and its one way to change: `update(event) -> effects`. Nothing in here
//! touches the disk, the terminal or a clock; time comes in with the event.

pub mod jobs_view;
pub mod log;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Rect};

use crate::jobs::{Job, JobId, Status};
use crate::watch::WatchMode;

use super::action::{Action, KeyMap};
use super::effects::Effect;
use super::event::{Event, Synced};
use super::input::{InputOutcome, LineInput};
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
    FilterInput(LineInput),
    SearchInput(LineInput),
    ProjectPicker { items: Vec<String>, selected: usize },
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
    cycle_elapsed: u64,
}

impl App {
    pub fn new(opts: Options, now: DateTime<Utc>) -> App {
        App {
            projects: opts.projects.clone(),
            opts,
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
            log: LogView::default(),
            prompt: None,
            detail_scroll: 0,
            watch_mode: WatchMode::Inotify,
            size: Rect::new(0, 0, 80, 24),
            now,
            loaded: false,
            message: None,
            scan_error: None,
            quit: false,
            dirty: true,
            cycle_elapsed: 0,
        }
    }

    /// What the cockpit must do first: read the whole root.
    pub fn start(&self) -> Vec<Effect> {
        vec![Effect::Sync {
            skip: HashSet::new(),
        }]
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

    /// Elapsed times are on screen and move, or the wall display rotates: tick once a second.
    pub fn wants_tick(&self) -> bool {
        self.opts.cycle_secs.is_some()
            || self
                .view
                .iter()
                .any(|id| self.jobs.get(id).is_some_and(|j| j.status.is_active()))
    }

    /// Ids of jobs whose status can still change on their own (for polling).
    pub fn settled_ids(&self) -> HashSet<JobId> {
        self.jobs
            .values()
            .filter(|j| j.exit_code.is_some() && j.status != Status::NeedsInput)
            .map(|j| j.id.clone())
            .collect()
    }

    pub fn update(&mut self, event: Event, now: DateTime<Utc>) -> Vec<Effect> {
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
            Event::PromptLoaded { id, text } => {
                self.prompt = Some((id, text));
                vec![]
            }
            Event::Signal(_) => {
                self.quit = true;
                vec![Effect::Quit]
            }
        }
    }

    // ----- data -----

    fn on_synced(&mut self, s: Synced) -> Vec<Effect> {
        self.loaded = true;
        self.scan_error = s.error;
        let present: HashSet<&JobId> = s.present.iter().collect();
        self.jobs.retain(|id, _| present.contains(id));
        for job in s.read {
            self.jobs.insert(job.id.clone(), job);
        }
        self.refresh_view()
    }

    fn on_jobs_changed(&mut self, ids: Vec<JobId>) -> Vec<Effect> {
        self.dirty = false; // nothing on screen changes until the jobs are read
        let mut effects = vec![Effect::ReadJobs(ids.clone())];
        if let Some(sel) = &self.log.job
            && ids.contains(sel)
        {
            effects.push(Effect::PollLog(sel.clone()));
        }
        effects
    }

    fn on_jobs_read(&mut self, read: Vec<(JobId, Option<Job>)>) -> Vec<Effect> {
        for (id, job) in read {
            match job {
                Some(job) => {
                    self.jobs.insert(id, job);
                }
                None => {
                    self.jobs.remove(&id);
                }
            }
        }
        self.refresh_view()
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
        let still_there = self
            .selected
            .as_ref()
            .is_some_and(|id| self.view.contains(id));
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

    // ----- time -----

    fn on_tick(&mut self) -> Vec<Effect> {
        let Some(every) = self.opts.cycle_secs else {
            return vec![];
        };
        self.cycle_elapsed += 1;
        if self.cycle_elapsed < every.max(1) || self.mode != Mode::Normal {
            return vec![];
        }
        self.cycle_elapsed = 0;
        // Rotate through the jobs that are alive; they are what a wall display is for.
        let live: Vec<usize> = (0..self.view.len())
            .filter(|&i| {
                self.jobs
                    .get(&self.view[i])
                    .is_some_and(|j| matches!(j.status, Status::Running | Status::Waiting))
            })
            .collect();
        let cur = self.selected_index();
        match live.iter().find(|&&i| Some(i) > cur).or(live.first()) {
            Some(&next) => self.select_index(next),
            None => vec![],
        }
    }

    // ----- keys -----

    fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        self.message = None;
        match &mut self.mode {
            Mode::FilterInput(input) => {
                let outcome = input.handle(&key);
                let text = input.text().to_owned();
                match outcome {
                    InputOutcome::Edited => {
                        self.filter = text;
                        return self.refresh_view();
                    }
                    InputOutcome::Submit => self.mode = Mode::Normal,
                    InputOutcome::Cancel => {
                        self.mode = Mode::Normal;
                        self.filter.clear();
                        return self.refresh_view();
                    }
                    InputOutcome::Moved | InputOutcome::Ignored => {}
                }
                return vec![];
            }
            Mode::SearchInput(input) => {
                match input.handle(&key) {
                    InputOutcome::Submit => {
                        let q = input.text().to_owned();
                        self.mode = Mode::Normal;
                        let height = self.areas().output_lines();
                        self.log.set_search(&q, height);
                        if self
                            .log
                            .search
                            .as_ref()
                            .is_some_and(|s| s.matches.is_empty())
                        {
                            self.message = Some(format!("no match for '{q}' in the output"));
                        }
                    }
                    InputOutcome::Cancel => self.mode = Mode::Normal,
                    _ => {}
                }
                return vec![];
            }
            _ => {}
        }
        let actions: Vec<Action> = self.opts.keymap.actions(&key).to_vec();
        // Ctrl-C always quits, whatever the key map says: a way out must never be remapped away.
        if actions.is_empty()
            && key.code == KeyCode::Char('c')
            && key.modifiers.contains(KeyModifiers::CONTROL)
        {
            return self.quit();
        }
        match self.mode.clone() {
            Mode::Help => self.on_help_key(&actions),
            Mode::Detail => self.on_detail_key(&actions),
            Mode::ProjectPicker { items, selected } => {
                self.on_picker_key(&key, &actions, items, selected)
            }
            _ => self.on_main_key(&actions),
        }
    }

    fn quit(&mut self) -> Vec<Effect> {
        self.quit = true;
        vec![Effect::Quit]
    }

    fn on_help_key(&mut self, actions: &[Action]) -> Vec<Effect> {
        if actions.contains(&Action::Quit) && !actions.contains(&Action::Back) {
            return self.quit();
        }
        // Any other key closes help: there is nothing to do inside it.
        self.mode = Mode::Normal;
        vec![]
    }

    fn on_detail_key(&mut self, actions: &[Action]) -> Vec<Effect> {
        for action in actions {
            match action {
                Action::Back | Action::Open => {
                    self.mode = Mode::Normal;
                    return vec![];
                }
                Action::Quit => return self.quit(),
                Action::Up => self.detail_scroll = self.detail_scroll.saturating_sub(1),
                Action::Down => self.detail_scroll = self.detail_scroll.saturating_add(1),
                Action::PageUp => self.detail_scroll = self.detail_scroll.saturating_sub(10),
                Action::PageDown => self.detail_scroll = self.detail_scroll.saturating_add(10),
                Action::Top => self.detail_scroll = 0,
                Action::Help => self.mode = Mode::Help,
                _ => continue,
            }
            return vec![];
        }
        vec![]
    }

    fn on_picker_key(
        &mut self,
        key: &KeyEvent,
        actions: &[Action],
        items: Vec<String>,
        selected: usize,
    ) -> Vec<Effect> {
        let last = items.len().saturating_sub(1);
        let mut sel = selected;
        if key.code == KeyCode::Enter || actions.contains(&Action::Open) {
            self.mode = Mode::Normal;
            self.projects = match selected {
                0 => vec![],
                i => vec![items[i].clone()],
            };
            return self.refresh_view();
        }
        for action in actions {
            match action {
                Action::Back => {
                    self.mode = Mode::Normal;
                    return vec![];
                }
                Action::Quit => return self.quit(),
                Action::Up => sel = sel.saturating_sub(1),
                Action::Down => sel = (sel + 1).min(last),
                Action::Top => sel = 0,
                Action::Bottom => sel = last,
                _ => continue,
            }
            break;
        }
        self.mode = Mode::ProjectPicker {
            items,
            selected: sel,
        };
        vec![]
    }

    fn on_main_key(&mut self, actions: &[Action]) -> Vec<Effect> {
        let table = self.focus == Focus::Table;
        let page = match self.focus {
            Focus::Table => self.areas().table_rows().max(1) as i64,
            Focus::Output => self.areas().output_lines().max(1) as i64,
        };
        let height = self.areas().output_lines();
        for action in actions {
            let effects = match action {
                Action::Quit => self.quit(),
                Action::Help => {
                    self.mode = Mode::Help;
                    vec![]
                }
                Action::FocusNext => {
                    self.focus = if table { Focus::Output } else { Focus::Table };
                    vec![]
                }
                Action::Up | Action::Down | Action::PageUp | Action::PageDown => {
                    let delta = match action {
                        Action::Up => -1,
                        Action::Down => 1,
                        Action::PageUp => -page,
                        _ => page,
                    };
                    if table {
                        self.move_selection(delta)
                    } else {
                        self.log.scroll(delta, height);
                        vec![]
                    }
                }
                Action::Top if table => self.select_index(0),
                Action::Top => {
                    self.log.to_top();
                    vec![]
                }
                Action::Bottom if table => self.select_index(self.view.len().saturating_sub(1)),
                Action::Follow => {
                    self.log.resume_follow();
                    vec![]
                }
                Action::NextTab | Action::PrevTab => {
                    self.tab = self.tab.step(*action == Action::NextTab);
                    self.refresh_view()
                }
                Action::Filter if table => {
                    self.mode = Mode::FilterInput(LineInput::with_text(&self.filter));
                    vec![]
                }
                Action::Search if !table => {
                    let current = self.log.search.as_ref().map_or("", |s| s.query.as_str());
                    self.mode = Mode::SearchInput(LineInput::with_text(current));
                    vec![]
                }
                Action::SearchNext | Action::SearchPrev if self.log.search.is_some() => {
                    self.log.next_match(*action == Action::SearchNext, height);
                    vec![]
                }
                Action::PickProject => {
                    self.open_picker();
                    vec![]
                }
                Action::Sort => {
                    self.sort = self.sort.next();
                    self.message = Some(format!("sorted by {}", self.sort.title()));
                    self.refresh_view()
                }
                Action::ToggleWrap => {
                    self.log.wrap = !self.log.wrap;
                    vec![]
                }
                Action::Open => match self.selected.clone() {
                    Some(id) => {
                        self.mode = Mode::Detail;
                        self.detail_scroll = 0;
                        vec![Effect::LoadPrompt(id)]
                    }
                    None => vec![],
                },
                Action::Back => {
                    if self.log.search.is_some() && !table {
                        self.log.search = None;
                    } else if !self.filter.is_empty() {
                        self.filter.clear();
                        return self.refresh_view();
                    }
                    vec![]
                }
                // Not meaningful where the focus is: try the key's next meaning.
                _ => continue,
            };
            return effects;
        }
        self.dirty = false;
        vec![]
    }

    fn open_picker(&mut self) {
        let mut names: Vec<String> = self
            .jobs
            .values()
            .map(|j| j.project().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        names.extend(self.opts.known_projects.iter().cloned());
        names.sort();
        names.dedup();
        let mut items = vec!["(all projects)".to_string()];
        items.extend(names);
        let selected = match self.projects.as_slice() {
            [one] => items.iter().position(|i| i == one).unwrap_or(0),
            _ => 0,
        };
        self.mode = Mode::ProjectPicker { items, selected };
    }

    // ----- mouse -----

    fn on_mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        let areas = self.areas();
        let at = Position::new(m.column, m.row);
        let in_table = areas.table.contains(at);
        let in_output = areas.output.contains(at);
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) if in_table && self.mode == Mode::Normal => {
                self.focus = Focus::Table;
                // Border and header row come first.
                let first_row = areas.table.y + 2;
                if m.row >= first_row {
                    let i = self.table_top + (m.row - first_row) as usize;
                    if i < self.view.len() {
                        return self.select_index(i);
                    }
                }
                vec![]
            }
            MouseEventKind::Down(MouseButton::Left) if in_output && self.mode == Mode::Normal => {
                self.focus = Focus::Output;
                vec![]
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let down = m.kind == MouseEventKind::ScrollDown;
                if self.mode == Mode::Detail {
                    self.detail_scroll = if down {
                        self.detail_scroll.saturating_add(3)
                    } else {
                        self.detail_scroll.saturating_sub(3)
                    };
                    vec![]
                } else if in_table {
                    self.move_selection(if down { 1 } else { -1 })
                } else if in_output {
                    self.log
                        .scroll(if down { 3 } else { -3 }, areas.output_lines());
                    vec![]
                } else {
                    self.dirty = false;
                    vec![]
                }
            }
            _ => {
                self.dirty = false;
                vec![]
            }
        }
    }
}

#[cfg(test)]
mod tests;
