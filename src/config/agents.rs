//! Which agent a job runs, chosen by name: `luzia run --agent NAME`, else the project's
//! `agent`, else `[agent] kind`, else `[agent] command` as it always was. A name is a kind of
//! agent luzia knows (`gemini`: its own command line, `gemini --acp`) or a `[agents.NAME]`
//! table of the file, whose `command` says how it is started (over the kind's own when the name
//! is a kind's). Every name the file uses is checked when it is loaded.

use crate::jobs::run::agents::Kind;

use super::{Config, DEFAULT_AGENT_COMMAND};

/// A name that is no agent luzia knows, with the names it does.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "no agent named '{name}' (known: {}): choose one of those, or say how it is started with \
     [agents.{name}] command = [\"program\", \"arg\"] in {file}",
    known.join(", ")
)]
pub struct UnknownAgent {
    pub name: String,
    pub known: Vec<String>,
    /// The config file to edit.
    pub file: String,
}

impl Config {
    /// The names an agent may be chosen by: each kind luzia can start by itself, then the
    /// file's `[agents.NAME]`.
    pub fn agent_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Kind::ALL
            .into_iter()
            .filter(|k| *k == Kind::ClaudeCode || k.default_command().is_some())
            .map(|k| k.short().to_owned())
            .collect();
        for name in self.agents.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The command line of the agent named `name`: its `[agents.NAME]`, else the kind's own
    /// (Claude Code's is `[agent] command` when that runs Claude Code, else luzia's default).
    pub fn named_agent_command(&self, name: &str) -> Result<Vec<String>, UnknownAgent> {
        if let Some(a) = self.agents.get(name) {
            return Ok(a.command.clone());
        }
        let owned = |argv: &[&str]| argv.iter().map(|a| (*a).to_owned()).collect();
        match Kind::named(name) {
            Some(Kind::ClaudeCode) if Kind::of(&self.agent.command) == Kind::ClaudeCode => {
                Ok(self.agent.command.clone())
            }
            Some(Kind::ClaudeCode) => Ok(owned(DEFAULT_AGENT_COMMAND)),
            Some(kind) if kind.default_command().is_some() => {
                Ok(owned(kind.default_command().unwrap_or_default()))
            }
            _ => Err(UnknownAgent {
                name: name.to_owned(),
                known: self.agent_names(),
                file: self.file_to_edit(),
            }),
        }
    }

    /// The agent a job of `project` runs by choice: `chosen` (`--agent`), else the project's
    /// `agent`, else `[agent] kind`; `None` when nothing chooses one.
    pub fn agent_choice<'a>(&'a self, project: &str, chosen: Option<&'a str>) -> Option<&'a str> {
        chosen
            .or_else(|| self.projects.get(project)?.agent.as_deref())
            .or(self.agent.kind.as_deref())
    }

    /// The command line a job of `project` runs: the agent chosen (see
    /// [`Config::agent_choice`]), else `[agent] command`.
    pub fn agent_command(
        &self,
        project: &str,
        chosen: Option<&str>,
    ) -> Result<Vec<String>, UnknownAgent> {
        match self.agent_choice(project, chosen) {
            Some(name) => self.named_agent_command(name),
            None => Ok(self.agent.command.clone()),
        }
    }

    /// Every name the file chooses an agent by resolves, and every `[agents.NAME]` has a
    /// command: the sentence of what is wrong otherwise.
    pub(super) fn check_agents(&self) -> Result<(), String> {
        for (name, a) in &self.agents {
            if a.command.is_empty() {
                return Err(format!(
                    "[agents.{name}] command is empty: give the agent program and its arguments"
                ));
            }
            if !crate::jobs::model::id::is_valid(name) {
                return Err(format!(
                    "agent name '{name}' may hold only letters, digits, '.', '_' and '-'"
                ));
            }
        }
        let chosen = self
            .agent
            .kind
            .iter()
            .map(|k| ("[agent] kind".to_owned(), k))
            .chain(self.projects.iter().filter_map(|(p, project)| {
                Some((format!("[projects.{p}] agent"), project.agent.as_ref()?))
            }));
        for (key, name) in chosen {
            if let Err(e) = self.named_agent_command(name) {
                return Err(format!("{key} = \"{name}\": {e}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn loaded(toml: &str) -> Result<Config, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, toml).unwrap();
        let overrides = super::super::Overrides {
            config: Some(file),
            jobs_dir: Some(PathBuf::from("/tmp/jobs")),
        };
        Config::load_probed(&overrides, &|_| None, &|_| false).map_err(|e| e.to_string())
    }

    fn words(argv: &[String]) -> String {
        argv.join(" ")
    }

    #[test]
    fn an_agent_is_chosen_by_the_flag_then_the_project_then_the_kind() {
        let cfg = loaded(
            r#"
            [agent]
            kind = "gemini"
            [agents.qwen]
            command = ["/opt/qwen/bin/qwen", "--acp", "-m", "local"]
            [agents.mine]
            command = ["my-agent", "--acp"]
            [projects.a]
            path = "/srv/a"
            agent = "qwen"
            [projects.b]
            path = "/srv/b"
            "#,
        )
        .unwrap();
        let command = |project: &str, chosen: Option<&str>| {
            words(&cfg.agent_command(project, chosen).unwrap())
        };
        assert_eq!(command("b", None), "gemini --acp", "the kind's own");
        assert_eq!(command("a", None), "/opt/qwen/bin/qwen --acp -m local");
        assert_eq!(command("a", Some("opencode")), "opencode acp");
        assert_eq!(command("b", Some("codex")), "codex-acp");
        assert_eq!(command("b", Some("mine")), "my-agent --acp");
        assert!(command("b", Some("claude")).starts_with("claude --print"));
        let e = cfg.agent_command("b", Some("gpt")).unwrap_err().to_string();
        assert!(
            e.contains("no agent named 'gpt'")
                && e.contains("known: claude, codex, gemini, opencode, qwen, mine")
                && e.contains("[agents.gpt] command"),
            "{e}"
        );
    }

    #[test]
    fn without_a_choice_the_agent_command_runs_as_it_always_did() {
        let cfg = loaded("[agent]\ncommand = [\"/usr/local/bin/claude\", \"-p\"]\n").unwrap();
        assert_eq!(
            words(&cfg.agent_command("x", None).unwrap()),
            "/usr/local/bin/claude -p"
        );
        assert_eq!(
            words(&cfg.agent_command("x", Some("claude")).unwrap()),
            "/usr/local/bin/claude -p",
            "Claude Code by name is the configured one"
        );
        let plain = loaded("[agent]\ncommand = [\"./agent.sh\"]\n").unwrap();
        assert_eq!(
            words(&plain.agent_command("x", None).unwrap()),
            "./agent.sh"
        );
    }

    #[test]
    fn a_name_the_file_chooses_that_is_no_agent_is_refused_on_load() {
        for (toml, said) in [
            (
                "[agent]\nkind = \"gemeni\"\n",
                "[agent] kind = \"gemeni\": no agent named 'gemeni'",
            ),
            (
                "[projects.p]\npath = \"/srv/p\"\nagent = \"aider\"\n",
                "[projects.p] agent = \"aider\": no agent named 'aider'",
            ),
            ("[agents.x]\ncommand = []\n", "[agents.x] command is empty"),
            (
                "[agents.x]\ncommand = [\"x\"]\nargs = 1\n",
                "unknown field `args`",
            ),
        ] {
            let e = loaded(toml).unwrap_err();
            assert!(e.contains(said) && e.contains("config.toml"), "{e}");
        }
        let named = loaded(
            "[agents.aider]\ncommand = [\"aider\", \"--yes-always\"]\n[agent]\nkind = \"aider\"\n",
        )
        .unwrap();
        assert_eq!(
            words(&named.agent_command("x", None).unwrap()),
            "aider --yes-always"
        );
    }
}
