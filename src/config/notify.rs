//! `[notify]`: the command that tells a person, away from the terminal, that an agent needs
//! them (docs/notifications.md). The command is an argv, never a shell line: `{title}`-style
//! placeholders in its arguments are replaced by the event's words, which so can never become
//! shell syntax.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use crate::jobs::insight::notify::{Filter, Kind};

/// Commands run per minute at most, unless `max_per_minute` says otherwise.
const DEFAULT_MAX_PER_MINUTE: u32 = 10;
/// How long the command may run before it is killed, unless `timeout_seconds` says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `[notify]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NotifyFile {
    command: Option<Vec<String>>,
    events: Option<Vec<String>>,
    projects: Option<Vec<String>>,
    max_per_minute: Option<u32>,
    timeout_seconds: Option<u64>,
}

/// The notifications, as `luzia notify` runs them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotifyConfig {
    /// The program and its arguments; it reads one JSON event on stdin.
    pub command: Vec<String>,
    pub filter: Filter,
    pub max_per_minute: u32,
    pub timeout: Duration,
}

pub(super) fn notify_config(
    file: Option<NotifyFile>,
    invalid: &dyn Fn(String) -> ConfigError,
) -> Result<Option<NotifyConfig>, ConfigError> {
    let Some(file) = file else {
        return Ok(None);
    };
    let command = file.command.unwrap_or_default();
    if command.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(invalid(
            "[notify] command is missing or empty: give the program and its arguments, such as \
             command = [\"notify-send\", \"{title}\", \"{body}\"], then check it with `luzia notify --test`"
                .into(),
        ));
    }
    if let Some(arg) = command.iter().find(|a| a.contains('\0')) {
        return Err(invalid(format!(
            "[notify] command: the argument '{}' holds a NUL character",
            arg.escape_debug()
        )));
    }
    let mut filter = Filter::default();
    if let Some(events) = file.events {
        filter.kinds = kinds(&events).map_err(invalid)?;
    }
    if let Some(projects) = file.projects {
        if let Some(bad) = projects
            .iter()
            .find(|p| !crate::jobs::model::id::is_valid(p))
        {
            return Err(invalid(format!(
                "[notify] projects: '{}' is not a project name",
                bad.escape_debug()
            )));
        }
        filter.projects = Some(projects.into_iter().collect());
    }
    let max_per_minute = file.max_per_minute.unwrap_or(DEFAULT_MAX_PER_MINUTE);
    if !(1..=1000).contains(&max_per_minute) {
        return Err(invalid(format!(
            "[notify] max_per_minute = {max_per_minute}: give a number from 1 to 1000"
        )));
    }
    let timeout = match file.timeout_seconds {
        None => DEFAULT_TIMEOUT,
        Some(s) if (1..=3600).contains(&s) => Duration::from_secs(s),
        Some(s) => {
            return Err(invalid(format!(
                "[notify] timeout_seconds = {s}: give a number of seconds from 1 to 3600"
            )));
        }
    };
    Ok(Some(NotifyConfig {
        command,
        filter,
        max_per_minute,
        timeout,
    }))
}

fn kinds(names: &[String]) -> Result<BTreeSet<Kind>, String> {
    let known = || {
        Kind::FILTERABLE
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if names.is_empty() {
        return Err(format!(
            "[notify] events is empty: leave it out for every event, or name some of: {}",
            known()
        ));
    }
    names
        .iter()
        .map(|n| {
            Kind::filterable(n).ok_or_else(|| {
                format!(
                    "[notify] events: unknown event '{}' (known: {})",
                    n.escape_debug(),
                    known()
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Option<NotifyConfig>, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Top {
            notify: Option<NotifyFile>,
        }
        let top: Top = toml::from_str(body).map_err(|e| e.to_string())?;
        notify_config(top.notify, &|message| ConfigError::Invalid {
            path: "c.toml".into(),
            message,
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_every_key() {
        assert_eq!(parse("").unwrap(), None);
        let plain = parse("[notify]\ncommand = [\"notify-send\", \"{title}\"]")
            .unwrap()
            .unwrap();
        assert_eq!(plain.filter, Filter::default());
        assert_eq!(plain.max_per_minute, DEFAULT_MAX_PER_MINUTE);
        assert_eq!(plain.timeout, DEFAULT_TIMEOUT);
        let full = parse(
            "[notify]\ncommand = [\"/usr/local/bin/tell\"]\nevents = [\"question\", \"failed\"]\n\
             projects = [\"musica\"]\nmax_per_minute = 3\ntimeout_seconds = 5",
        )
        .unwrap()
        .unwrap();
        assert_eq!(full.filter.kinds, [Kind::Question, Kind::Failed].into());
        assert_eq!(full.filter.projects, Some(["musica".to_string()].into()));
        assert_eq!(
            (full.max_per_minute, full.timeout),
            (3, Duration::from_secs(5))
        );
    }

    #[test]
    fn each_mistake_is_named() {
        let cases = [
            ("[notify]\nevents = [\"failed\"]", "command is missing"),
            ("[notify]\ncommand = []", "command is missing"),
            (
                "[notify]\ncommand = [\"x\"]\nevents = [\"fail\"]",
                "unknown event 'fail'",
            ),
            (
                "[notify]\ncommand = [\"x\"]\nevents = [\"more\"]",
                "known: question, gate",
            ),
            (
                "[notify]\ncommand = [\"x\"]\nevents = []",
                "events is empty",
            ),
            (
                "[notify]\ncommand = [\"x\"]\nprojects = [\"../p\"]",
                "not a project name",
            ),
            (
                "[notify]\ncommand = [\"x\"]\nmax_per_minute = 0",
                "from 1 to 1000",
            ),
            (
                "[notify]\ncommand = [\"x\"]\ntimeout_seconds = 0",
                "from 1 to 3600",
            ),
            (
                "[notify]\ncommand = [\"x\"]\nrate = 5",
                "unknown field `rate`",
            ),
            ("[notify]\ncommand = \"notify-send hi\"", "invalid type"),
        ];
        for (body, want) in cases {
            let err = parse(body).unwrap_err();
            assert!(err.contains(want), "{body}: {err}");
        }
    }
}
