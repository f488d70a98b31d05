//! Continuing a finished job's session (`luzia reply`, a resuming `luzia retry`, `luzia
//! attach`): a Claude Code session, or an ACP agent's (loaded again with `session/load`, by the
//! same command line). Which session, whether it may be continued now, and the link back from
//! the old job to the new one (meta.json `resumed_by`). A session is continued by one job at a
//! time: two agents resuming the same transcript at once would each write their own version of
//! it. The caller holds the dispatcher's slots lock across [`check`] and [`link`], so of two
//! replies at once the second sees the first's job and is refused, saying which.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::jobs::fs::names::META_FILE;
use crate::jobs::fs::publish::update_meta;
use crate::jobs::model::job::Job;
use crate::jobs::run::agents::Kind;
use crate::jobs::run::session::{Resume, is_claude};

#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(
        "job {id} is still {status}: its session can be continued once it has ended (wait for \
         it, or `luzia kill {id}`)"
    )]
    Active { id: String, status: String },
    #[error(
        "job {id} ran '{agent}', which keeps no session luzia can continue (Claude Code's and \
         those of the agents that speak ACP can be); `luzia retry {id}` starts the task over"
    )]
    NotClaude { id: String, agent: String },
    #[error(
        "job {id} has no session id in meta.json (it was started before luzia fixed session ids, \
         or by another dispatcher): nothing to continue; `luzia retry {id}` starts the task over"
    )]
    NoSession { id: String },
    #[error(
        "the session of job {id} is being continued by job {by} ({status}) now: one job at a \
         time continues a session; wait for {by} to end, then reply to it"
    )]
    Busy {
        id: String,
        by: String,
        status: String,
    },
    #[error("cannot record in {path} that job {by} continues it: {source}")]
    Link {
        path: PathBuf,
        by: String,
        source: io::Error,
    },
}

/// Whether a job of the agent `program` keeps a session luzia can continue: Claude Code's, or
/// an ACP agent's (loaded again with `session/load`).
pub fn continuable(program: &str) -> bool {
    is_claude(program) || Kind::of_program(program).profile().acp.is_some()
}

/// The session `job` ran, if it may be continued now: the job has ended, is a Claude Code job
/// and has a session id, and no other job (of `all`) is running that session.
pub fn check(job: &Job, all: &[Job]) -> Result<Resume, ResumeError> {
    let id = job.id.to_string();
    if job.status.is_active() {
        return Err(ResumeError::Active {
            id,
            status: job.status.to_string(),
        });
    }
    let meta = job.meta.clone().unwrap_or_default();
    // A Claude Code job, or one of an ACP kind: a plain run of the same program (`gemini -p`)
    // has no session id, and is refused below for that.
    if !continuable(&meta.agent) {
        return Err(ResumeError::NotClaude {
            id,
            agent: meta.agent.to_string(),
        });
    }
    if meta.session_id.is_empty() {
        return Err(ResumeError::NoSession { id });
    }
    let busy = all.iter().find(|other| {
        other.id != job.id
            && other.status.is_active()
            && other
                .meta
                .as_ref()
                .is_some_and(|m| m.session_id == meta.session_id)
    });
    if let Some(other) = busy {
        return Err(ResumeError::Busy {
            id,
            by: other.id.to_string(),
            status: other.status.to_string(),
        });
    }
    Ok(Resume {
        session_id: meta.session_id.to_string(),
        job: id,
    })
}

/// The argument vector the job in `dir` ran (meta.json's `argv`), when it names one.
pub fn argv(dir: &Path) -> Option<Vec<String>> {
    let bytes = crate::jobs::fs::files::read_capped(
        &dir.join(META_FILE),
        crate::jobs::fs::files::META_FILE_CAP,
    )
    .ok()??;
    let meta: Value = serde_json::from_slice(&bytes).ok()?;
    let argv: Vec<String> = meta["argv"]
        .as_array()?
        .iter()
        .map(|a| a.as_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    (!argv.is_empty()).then_some(argv)
}

/// Adds `by` to `dir`'s meta.json `resumed_by`, keeping every other field. Under the job
/// directory's lock, which the supervisor's own rewrite of meta.json (its finish) also takes,
/// so neither loses the other's change.
pub fn link(dir: &Path, by: &str) -> Result<(), ResumeError> {
    relink(dir, by, true)
}

/// Takes `by` out of `dir`'s `resumed_by` again: the job that was to continue the session
/// could not be started, and is gone.
pub fn unlink(dir: &Path, by: &str) -> Result<(), ResumeError> {
    relink(dir, by, false)
}

fn relink(dir: &Path, by: &str, add: bool) -> Result<(), ResumeError> {
    let path = dir.join(META_FILE);
    let failed = |source: io::Error| ResumeError::Link {
        path: path.clone(),
        by: by.to_owned(),
        source,
    };
    update_meta(dir, |meta| {
        let list = meta
            .entry("resumed_by")
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(ids) = list {
            if !add {
                ids.retain(|v| v != by);
            } else if !ids.iter().any(|v| v == by) {
                ids.push(Value::from(by));
            }
        }
        true
    })
    .map_err(failed)
}

/// Whether Claude Code saved session `id` under `home` (or under `config_dir`, when
/// `CLAUDE_CONFIG_DIR` moves it): `$HOME/.claude/projects/<the directory, encoded>/<id>.jsonl`.
/// `None` when it cannot be told (the projects directory cannot be read).
pub fn transcript_saved(home: &Path, config_dir: Option<&Path>, id: &str) -> Option<bool> {
    let base = config_dir.map_or_else(|| home.join(".claude"), Path::to_path_buf);
    let projects = match std::fs::read_dir(base.join("projects")) {
        Ok(p) => p,
        // Nothing was ever saved there, if the place itself can be seen.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let seen = config_dir.unwrap_or(home);
            return seen.is_dir().then_some(false);
        }
        Err(_) => return None,
    };
    let name = format!("{id}.jsonl");
    Some(projects.flatten().any(|p| p.path().join(&name).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::JobId;
    use crate::jobs::Meta;
    use crate::jobs::model::status::Status;

    fn job(id: &str, status: Status, agent: &str, session: &str) -> Job {
        Job {
            meta: Some(Box::new(Meta {
                more: Some(Box::new(crate::jobs::model::meta::MetaMore {
                    agent: agent.into(),
                    session_id: session.into(),
                    ..Default::default()
                })),
                ..Meta::default()
            })),
            status,
            ..Job::bare(
                JobId::parse(id).unwrap(),
                PathBuf::from("/nonexistent").join(id),
            )
        }
    }

    #[test]
    fn only_an_ended_claude_job_with_a_session_nobody_runs_can_be_continued() {
        let done = job("j1", Status::Killed, "/usr/bin/claude", "s1");
        assert_eq!(
            check(&done, std::slice::from_ref(&done)).unwrap(),
            Resume {
                session_id: "s1".into(),
                job: "j1".into()
            }
        );
        let cases = [
            (
                job("j1", Status::Running, "claude", "s1"),
                "is still running",
            ),
            (
                job("j1", Status::Waiting, "claude", "s1"),
                "is still waiting",
            ),
            (
                job("j1", Status::Failed, "aider", "s1"),
                "keeps no session luzia can continue",
            ),
            (
                job("j1", Status::Failed, "/opt/my-agent", "s1"),
                "keeps no session luzia can continue",
            ),
            (job("j1", Status::Completed, "gemini", ""), "no session id"),
            (job("j1", Status::Completed, "claude", ""), "no session id"),
        ];
        for (j, said) in cases {
            let e = check(&j, &[]).unwrap_err().to_string();
            assert!(e.contains(said), "{e}");
        }
        let reply = job("j2", Status::Running, "claude", "s1");
        let other = job("j3", Status::Running, "claude", "s2");
        let e = check(&done, &[done.clone(), other.clone(), reply])
            .unwrap_err()
            .to_string();
        assert!(e.contains("being continued by job j2 (running)"), "{e}");
        assert!(
            check(&done, &[other]).is_ok(),
            "another session is no obstacle"
        );
        let gemini = job("j5", Status::Completed, "/usr/bin/gemini", "g1");
        assert_eq!(
            check(&gemini, &[]).unwrap().session_id,
            "g1",
            "an ACP kind's session"
        );
    }

    #[test]
    fn the_link_keeps_every_field_and_each_job_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(META_FILE),
            r#"{"id": "j1", "x-kept": [1], "exit_code": 0}"#,
        )
        .unwrap();
        link(d.path(), "j2").unwrap();
        link(d.path(), "j3").unwrap();
        link(d.path(), "j2").unwrap();
        link(d.path(), "j4").unwrap();
        unlink(d.path(), "j4").unwrap();
        let meta: Value =
            serde_json::from_slice(&std::fs::read(d.path().join(META_FILE)).unwrap()).unwrap();
        assert_eq!(meta["resumed_by"], serde_json::json!(["j2", "j3"]));
        assert_eq!(meta["x-kept"], serde_json::json!([1]));
        assert_eq!(meta["exit_code"], 0);
        std::fs::write(d.path().join(META_FILE), "not json").unwrap();
        let e = link(d.path(), "j4").unwrap_err().to_string();
        assert!(e.contains("meta.json") && e.contains("j4"), "{e}");
    }

    #[test]
    fn concurrent_links_are_all_recorded() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(META_FILE), r#"{"id": "j1"}"#).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let dir = d.path().to_owned();
                std::thread::spawn(move || link(&dir, &format!("r{i}")).unwrap())
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let meta: Value =
            serde_json::from_slice(&std::fs::read(d.path().join(META_FILE)).unwrap()).unwrap();
        assert_eq!(meta["resumed_by"].as_array().unwrap().len(), 8, "{meta}");
    }

    #[test]
    fn a_saved_transcript_is_found_under_any_project_directory() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(transcript_saved(home.path(), None, "s1"), Some(false));
        let nowhere = home.path().join("nowhere");
        assert_eq!(transcript_saved(&nowhere, None, "s1"), None);
        let project = home.path().join(".claude/projects/-srv-my-proj");
        std::fs::create_dir_all(&project).unwrap();
        assert_eq!(transcript_saved(home.path(), None, "s1"), Some(false));
        std::fs::write(project.join("s1.jsonl"), "{}\n").unwrap();
        assert_eq!(transcript_saved(home.path(), None, "s1"), Some(true));
        let moved = tempfile::tempdir().unwrap();
        assert_eq!(
            transcript_saved(home.path(), Some(moved.path()), "s1"),
            Some(false)
        );
    }
}
