//! The detail view: everything known about one job in one scrollable page, with its
//! `prompt.txt` and its timeline (from history.jsonl), both read when the page opens.

use serde_json::Value;

use super::{App, Mode};
use crate::jobs::insight::timeline::{self, TimelineEvent};
use crate::jobs::{Job, JobId};
use crate::tui::action::{DetailAction, Key};
use crate::tui::effect::Effect;

#[derive(Clone, Debug, PartialEq)]
pub struct Detail {
    /// The job the page is about.
    pub job: JobId,
    /// Lines scrolled down.
    pub scroll: u16,
    /// prompt.txt (`Ok(None)`: there is none); `None` until read.
    pub prompt: Option<Result<Option<String>, String>>,
    /// history.jsonl, or why it could not be read; `None` until read.
    pub history: Option<Result<Vec<Value>, String>>,
}

impl App {
    pub(super) fn open_details(&mut self, id: JobId) -> Vec<Effect> {
        // A queued task has no job directory yet: no prompt.txt, no history to read.
        let queued = id.is_queued();
        self.mode = Mode::Detail(Detail {
            job: id.clone(),
            scroll: 0,
            prompt: queued.then_some(Ok(None)),
            history: queued.then(|| Ok(Vec::new())),
        });
        if queued {
            return vec![];
        }
        if let Some(host) = id.host() {
            // Its files are on that host: nothing here to read.
            let elsewhere = format!("on {host}: not read from here (`luzia` there shows it)");
            if let Mode::Detail(d) = &mut self.mode {
                d.prompt = Some(Err(format!("prompt.txt is {elsewhere}")));
                d.history = Some(Err(format!("history.jsonl is {elsewhere}")));
            }
            return vec![];
        }
        vec![Effect::LoadPrompt(id.clone()), Effect::LoadHistory(id)]
    }

    fn detail_of(&mut self, id: &JobId) -> Option<&mut Detail> {
        match &mut self.mode {
            Mode::Detail(d) if d.job == *id => Some(d),
            _ => None,
        }
    }

    pub(super) fn on_prompt_loaded(&mut self, id: JobId, text: Result<Option<String>, String>) {
        if let Some(d) = self.detail_of(&id) {
            d.prompt = Some(text);
        }
    }

    pub(super) fn on_history_loaded(&mut self, id: JobId, history: Result<Vec<Value>, String>) {
        if let Some(d) = self.detail_of(&id) {
            d.history = Some(history);
        }
    }

    pub(super) fn on_detail_key(&mut self, key: &Key) -> Vec<Effect> {
        let Some(actions) = self.bound::<DetailAction>(key) else {
            return self.ask_quit(key);
        };
        let Mode::Detail(d) = &mut self.mode else {
            return vec![];
        };
        use DetailAction as A;
        if let Some(action) = actions.first() {
            match action {
                A::Close => self.mode = Mode::Normal,
                A::Help => self.open_help(),
                A::Up => d.scroll = d.scroll.saturating_sub(1),
                A::Down => d.scroll = d.scroll.saturating_add(1),
                A::PageUp => d.scroll = d.scroll.saturating_sub(10),
                A::PageDown => d.scroll = d.scroll.saturating_add(10),
                A::Top => d.scroll = 0,
            }
        }
        vec![]
    }

    /// Whether the detail view shows job `id`.
    pub fn shows_detail_of(&self, id: &JobId) -> bool {
        matches!(&self.mode, Mode::Detail(d) if d.job == *id)
    }

    /// The timeline of the job the detail view shows: `None` until its history is read.
    pub fn timeline(&self, job: &Job) -> Option<Result<Vec<TimelineEvent>, String>> {
        let Mode::Detail(d) = &self.mode else {
            return None;
        };
        let history = d.history.as_ref().filter(|_| d.job == job.id)?;
        let issues = self.insight.issues.get(&job.id);
        let set = self.insight.patterns.as_deref();
        Some(history.as_ref().map_err(Clone::clone).map(|h| {
            timeline::job_timeline(job, h, issues.zip(set), &self.opts.insight.rules, self.now)
        }))
    }
}
