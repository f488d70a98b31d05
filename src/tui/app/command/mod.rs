//! The command line, opened with `:` as in k9s or vim: `:q`, `:run TASK`, `:project NAME`,
//! `:sort KEY`, `:view NAME`, `:help`, Tab completing. It is one text input; what a line means
//! is `parse`'s to say, and a line that means nothing says so in the line and does nothing.

pub mod parse;

use crossterm::event::KeyEvent;

use super::keys::Typed;
use super::{App, Mode};
use crate::tui::action::{CommandAction, Key};
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;
use parse::Command;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandLine {
    pub input: TextInput,
    /// What the line says after the text: why the command was refused, or what Tab could
    /// complete to. Typing clears it.
    pub note: Option<Note>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    Error(String),
    Choices(Vec<String>),
}

impl App {
    pub(super) fn open_command_line(&mut self) -> Vec<Effect> {
        self.mode = Mode::Command(CommandLine {
            input: TextInput::line(""),
            note: None,
        });
        vec![]
    }

    pub(super) fn on_command_key(&mut self, ev: &KeyEvent, key: &Key) -> Vec<Effect> {
        let typed = self.typed::<CommandAction>(ev, key);
        let projects = self.project_names();
        let Mode::Command(line) = &mut self.mode else {
            return vec![];
        };
        match typed {
            Typed::Edit => {
                if line.input.edit(ev) {
                    line.note = None;
                }
            }
            // Ctrl-C: the text first, then the line.
            Typed::Interrupt => {
                line.note = None;
                if !line.input.clear() {
                    self.mode = Mode::Normal;
                }
            }
            Typed::Act(CommandAction::Close) => self.mode = Mode::Normal,
            Typed::Act(CommandAction::Complete) => {
                let done = parse::complete(&line.input.text(), &projects);
                line.input = TextInput::line(&done.text);
                line.note = (!done.choices.is_empty()).then_some(Note::Choices(done.choices));
            }
            Typed::Act(CommandAction::Run) => {
                return match parse::parse(&line.input.text()) {
                    Ok(command) => self.run_command(command),
                    Err(e) => {
                        line.note = Some(Note::Error(e));
                        vec![]
                    }
                };
            }
        }
        vec![]
    }

    /// Does what the command says; an error keeps the line open with it.
    fn run_command(&mut self, command: Command) -> Vec<Effect> {
        match self.command_effects(command) {
            Ok(effects) => {
                if matches!(self.mode, Mode::Command(_)) {
                    self.mode = Mode::Normal;
                }
                effects
            }
            Err(e) => {
                if let Mode::Command(line) = &mut self.mode {
                    line.note = Some(Note::Error(e));
                }
                vec![]
            }
        }
    }

    fn command_effects(&mut self, command: Command) -> Result<Vec<Effect>, String> {
        Ok(match command {
            Command::Quit => self.quit(),
            Command::Help => {
                self.open_help();
                vec![]
            }
            Command::Run(task) => vec![self.run_task(task)?],
            Command::Project(None) => {
                self.table.projects.clear();
                self.refresh_view()
            }
            Command::Project(Some(name)) => {
                let known = self.project_names();
                if !known.contains(&name) {
                    return Err(format!("no project '{name}': {}", known.join(", ")));
                }
                self.table.projects = vec![name];
                self.refresh_view()
            }
            Command::Sort(key) => {
                self.table.sort = key;
                self.message = Some(format!("sorted by {}", key.title()));
                self.refresh_view()
            }
            Command::View(tab) => {
                self.table.tab = tab;
                self.refresh_view()
            }
        })
    }

    /// `:run TASK`: the task dispatched to the project the input bar would pick, on this
    /// machine.
    fn run_task(&mut self, task: String) -> Result<Effect, String> {
        if self.opts.read_only {
            return Err("read-only: this cockpit cannot start jobs".into());
        }
        let projects = &self.opts.dispatch_projects;
        let Some(project) = projects.get(self.preselected_project()).cloned() else {
            return Err(
                "no projects are configured: add [projects.NAME] path = \"...\" to the config"
                    .into(),
            );
        };
        self.message = Some(format!("dispatching to {project}..."));
        Ok(Effect::Dispatch {
            host: None,
            project,
            task,
            retry_of: None,
            agent: None,
        })
    }

    /// Every project with jobs or in the config, by name (as the picker lists them).
    pub(super) fn project_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .jobs
            .values()
            .map(|j| j.project().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        names.extend(self.opts.known_projects.iter().cloned());
        names.sort();
        names.dedup();
        names
    }
}
