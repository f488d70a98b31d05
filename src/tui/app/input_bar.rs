//! The input bar: pick a project (and the agent, the project's own unless another is picked),
//! type a task (several lines if need be), dispatch it. An error keeps the bar open with the
//! text in it; hiding the bar keeps the draft, so nothing typed is ever lost.

use std::collections::BTreeMap;

use crossterm::event::KeyEvent;

use super::fleet::{LOCAL, Link};
use super::keys::Typed;
use super::picker::{Picker, Purpose};
use super::{App, Mode};
use crate::jobs::JobId;
use crate::tui::action::{InputBarAction, Key};
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;

/// The agents a new task may run: every name `luzia run --agent` takes, and the agent each
/// project runs when none is picked (what `[projects.X] agent`, `[agent] kind` or `[agent]
/// command` say). Empty (another host's projects): the bar offers no choice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentChoice {
    pub names: Vec<String>,
    pub of_project: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Draft {
    /// The host the task goes to (`None`: this machine).
    pub host: Option<String>,
    pub projects: Vec<String>,
    pub project: usize,
    pub agents: AgentChoice,
    /// The agent picked by name; `None`: the project's own.
    pub agent: Option<String>,
    pub task: TextInput,
    pub error: Option<String>,
    pub sending: bool,
    /// A reply to this job's session, not a new task.
    pub reply_to: Option<JobId>,
}

impl Draft {
    /// An empty task for `projects` of `host` (`None`: this machine), `project` preselected.
    pub fn new(host: Option<String>, projects: Vec<String>, project: usize) -> Draft {
        Draft {
            host,
            projects,
            project,
            agents: AgentChoice::default(),
            agent: None,
            task: TextInput::lines(),
            error: None,
            sending: false,
            reply_to: None,
        }
    }

    pub fn project_name(&self) -> Option<&str> {
        self.projects.get(self.project).map(String::as_str)
    }

    pub fn text(&self) -> String {
        self.task.text()
    }

    /// The agent the task will run, and whether it was picked (else it is the project's own);
    /// `None` where the bar offers no choice.
    pub fn agent_shown(&self) -> Option<(&str, bool)> {
        if self.agents.names.is_empty() {
            return None;
        }
        match &self.agent {
            Some(name) => Some((name, true)),
            None => Some((self.own_agent()?, false)),
        }
    }

    /// The agent the project picked runs when none is chosen.
    fn own_agent(&self) -> Option<&str> {
        let project = self.project_name()?;
        self.agents.of_project.get(project).map(String::as_str)
    }

    /// The next (or previous) agent: the project's own first, then every other by name.
    fn step_agent(&mut self, forward: bool) {
        let own = self.own_agent().map(str::to_owned);
        let ring: Vec<Option<&String>> = std::iter::once(None)
            .chain(
                self.agents
                    .names
                    .iter()
                    .filter(|n| Some(n.as_str()) != own.as_deref())
                    .map(Some),
            )
            .collect();
        let n = ring.len();
        if n <= 1 {
            return;
        }
        let at = ring
            .iter()
            .position(|r| r.map(String::as_str) == self.agent.as_deref())
            .unwrap_or(0);
        let next = if forward {
            (at + 1) % n
        } else {
            (at + n - 1) % n
        };
        self.agent = ring[next].cloned();
    }

    fn step_project(&mut self, forward: bool) {
        let n = self.projects.len().max(1);
        self.project = if forward {
            (self.project + 1) % n
        } else {
            (self.project + n - 1) % n
        };
    }

    /// The dispatch the bar asks for, or why there is none.
    fn dispatch(&mut self) -> Option<Effect> {
        let task = self.text();
        if task.trim().is_empty() {
            self.error = Some("type what the agent should do".into());
            return None;
        }
        if self.sending {
            return None;
        }
        if let Some(job) = &self.reply_to {
            self.sending = true;
            self.error = None;
            return Some(Effect::Reply {
                job: job.clone(),
                text: task,
            });
        }
        let project = self.project_name()?.to_owned();
        self.sending = true;
        self.error = None;
        Some(Effect::Dispatch {
            host: self.host.clone(),
            project,
            task,
            retry_of: None,
            agent: self.agent.clone(),
        })
    }
}

impl App {
    pub(super) fn open_input_bar(&mut self) -> Vec<Effect> {
        if self.opts.read_only {
            self.message = Some("read-only: this cockpit cannot start jobs".into());
            return vec![];
        }
        if !self.opts.hosts.is_empty() {
            return self.pick_dispatch_host();
        }
        if self.opts.dispatch_projects.is_empty() {
            self.message = Some(
                "no project to start a task in: start the cockpit inside a git repository, or \
                 configure projects with `luzia init`"
                    .into(),
            );
            return vec![];
        }
        // An empty reply gives way; one with text in it comes back, to be sent or hidden.
        if self
            .draft
            .as_ref()
            .is_some_and(|d| d.reply_to.is_some() && d.text().trim().is_empty())
        {
            self.draft = None;
        }
        let project = self.preselected_project();
        match self.draft.as_mut() {
            // Nothing typed yet: the bar follows the selection as if opened afresh.
            Some(d) if d.reply_to.is_none() && !d.sending && d.text().is_empty() => {
                d.project = project;
            }
            Some(_) => {}
            None => self.draft = Some(self.local_draft(project)),
        }
        self.mode = Mode::InputBar;
        vec![]
    }

    /// An empty task for this machine's projects, `project` preselected, with its agents.
    fn local_draft(&self, project: usize) -> Draft {
        let mut draft = Draft::new(None, self.opts.dispatch_projects.clone(), project);
        draft.agents = self.opts.dispatch_agents.clone();
        draft
    }

    /// With remote hosts a new task's host is picked first: this machine, or a host that is up
    /// with projects (the remote's own, from its hello). A draft with text in it comes back as
    /// it was instead, host and all.
    fn pick_dispatch_host(&mut self) -> Vec<Effect> {
        if self
            .draft
            .as_ref()
            .is_some_and(|d| d.sending || !d.text().trim().is_empty())
        {
            self.mode = Mode::InputBar;
            return vec![];
        }
        let mut items = Vec::new();
        let mut notes = Vec::new();
        if !self.opts.dispatch_projects.is_empty() {
            items.push(LOCAL.to_string());
            notes.push(self.opts.dispatch_projects.join(", "));
        }
        for host in &self.hosts {
            if let Link::Up { projects, .. } = &host.link
                && !projects.is_empty()
            {
                items.push(host.name.clone());
                notes.push(projects.join(", "));
            }
        }
        if items.len() <= 1 {
            return match items.pop() {
                Some(only) => self.open_input_bar_on(&only),
                None => {
                    self.message = Some(
                        "no host can take a task now: none is up with projects, and this \
                         machine has none (add [projects.NAME] path = \"...\" to a config)"
                            .into(),
                    );
                    vec![]
                }
            };
        }
        let host = self
            .selected_job()
            .map_or(LOCAL, |j| j.id.host().unwrap_or(LOCAL));
        let selected = items.iter().position(|i| i == host).unwrap_or(0);
        self.mode = Mode::Picker(Picker {
            items,
            selected,
            purpose: Purpose::DispatchHost,
            notes,
        });
        vec![]
    }

    /// The input bar for a new task on `host` (`local`: this machine), with its projects.
    pub(super) fn open_input_bar_on(&mut self, host: &str) -> Vec<Effect> {
        let (host, projects) = if host == LOCAL {
            (None, self.opts.dispatch_projects.clone())
        } else {
            match self.host(host).map(|h| &h.link) {
                Some(Link::Up { projects, .. }) => (Some(host.to_string()), projects.clone()),
                _ => {
                    self.message = Some(format!("{host} is not up: no task can go there now"));
                    return vec![];
                }
            }
        };
        let at = |name: &str| projects.iter().position(|p| p == name);
        let project = self
            .selected_job()
            .filter(|j| j.id.host() == host.as_deref())
            .and_then(|j| at(j.project()))
            .or_else(|| self.table.projects.iter().find_map(|p| at(p)))
            .unwrap_or(0);
        let mut draft = Draft::new(host, projects, project);
        if draft.host.is_none() {
            draft.agents = self.opts.dispatch_agents.clone();
        }
        self.draft = Some(draft);
        self.mode = Mode::InputBar;
        vec![]
    }

    /// The project a new task most likely goes to: the selected job's, else the project
    /// filter's, else the repository the cockpit was started in, else the first one.
    pub(super) fn preselected_project(&self) -> usize {
        let projects = &self.opts.dispatch_projects;
        let at = |name: &str| projects.iter().position(|p| p == name);
        self.selected_job()
            .and_then(|j| at(j.project()))
            .or_else(|| self.table.projects.iter().find_map(|p| at(p)))
            .or_else(|| self.opts.project_here.as_deref().and_then(at))
            .unwrap_or(0)
    }

    pub(super) fn on_input_bar_key(&mut self, ev: &KeyEvent, key: &Key) -> Vec<Effect> {
        let typed = self.typed::<InputBarAction>(ev, key);
        let Some(draft) = self.draft.as_mut() else {
            self.mode = Mode::Normal;
            return vec![];
        };
        use InputBarAction as A;
        match typed {
            // Ctrl-C: the task typed first (ctrl-z brings it back), then the bar.
            Typed::Interrupt => {
                if !draft.task.clear() {
                    self.mode = Mode::Normal;
                }
            }
            Typed::Edit => {
                draft.task.edit(ev);
            }
            // Hidden, not discarded: the bar comes back as it was.
            Typed::Act(A::Hide) => self.mode = Mode::Normal,
            Typed::Act(A::NextProject) => draft.step_project(true),
            Typed::Act(A::PrevProject) => draft.step_project(false),
            Typed::Act(A::NextAgent) => draft.step_agent(true),
            Typed::Act(A::PrevAgent) => draft.step_agent(false),
            Typed::Act(A::NewLine) => draft.task.new_line(),
            Typed::Act(A::Dispatch) => return draft.dispatch().into_iter().collect(),
        }
        vec![]
    }

    /// A dispatch came back: the new job is selected once it appears; an error stays in the bar.
    pub(super) fn on_dispatched(
        &mut self,
        result: Result<(Option<JobId>, String), String>,
    ) -> Vec<Effect> {
        match result {
            Ok((id, message)) => {
                let from_bar = self.draft.as_ref().is_some_and(|d| d.sending);
                if from_bar {
                    self.draft = None;
                    if self.mode == Mode::InputBar {
                        self.mode = Mode::Normal;
                    }
                }
                self.message = Some(message);
                self.table.select_when_seen = id;
                let mut effects = self.refresh_view();
                effects.push(Effect::SyncQueue);
                effects
            }
            Err(e) => {
                match self.draft.as_mut().filter(|d| d.sending) {
                    Some(d) => {
                        d.sending = false;
                        d.error = Some(e);
                    }
                    None => self.message = Some(e),
                }
                vec![]
            }
        }
    }
}
