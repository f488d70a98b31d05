//! What the fleet worker says to another host's `luzia`, and how it reads what comes back:
//! argument lists and the parsing of the CLI's output, kept apart from ssh so that they can be
//! checked without one.

use std::process::Output;

use serde_json::Value;

use crate::jobs::JobId;
use crate::jobs::model::review::{Change, ChangeKind, FileChange};
use crate::jobs::text::sanitize::plain_text;
use crate::tui::effect::ReviewOp;

pub fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// The remote command's stdout when it succeeded; else what it said was wrong (its stderr's
/// last line, without the `luzia: error:` prefix), naming the host.
pub fn outcome(host: &str, out: &Output) -> Result<String, String> {
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| {
            let l = l.strip_prefix("luzia: ").unwrap_or(l);
            l.strip_prefix("error: ").unwrap_or(l)
        });
    Err(match said {
        Some(said) => format!("on {host}: {}", plain_text(said)),
        None => format!("on {host}: luzia failed ({}) and said nothing", out.status),
    })
}

/// The first line of what a command printed, safe to show.
pub fn first_line(out: &str) -> String {
    plain_text(out.lines().next().unwrap_or("").trim())
}

/// The new job of `luzia run`/`retry`/`reply`, keyed as the cockpit keys that host's jobs: the
/// command prints its id alone on the first line (or that the task was queued).
pub fn new_job(host: &str, out: &str) -> Option<JobId> {
    let first = out.lines().next()?.trim();
    JobId::parse(first).ok().map(|id| JobId::on_host(host, &id))
}

/// What a start says: the new job and the line the message bar shows.
pub fn started(host: &str, out: &str, project: Option<&str>) -> (Option<JobId>, String) {
    match new_job(host, out) {
        Some(id) => {
            let said = match project {
                Some(p) => format!("started {id} on {}", plain_text(p)),
                None => format!("started {id}"),
            };
            (Some(id), said)
        }
        // `queued Q (every one of the N slots is taken; ...)`
        None => (None, format!("on {host}: {}", first_line(out))),
    }
}

/// `luzia diff ID --json` read into the `Change` the diff view shows (`id` and `stat` are
/// derived there and ignored here).
pub fn change(out: &str) -> Result<Change, String> {
    let v: Value = serde_json::from_str(out)
        .map_err(|e| format!("`luzia diff --json` printed what is not its JSON: {e}"))?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let files = v["files"]
        .as_array()
        .ok_or("`luzia diff --json` printed no file list")?
        .iter()
        .map(|f| FileChange {
            path: text(&f["path"]),
            from: f["from"].as_str().map(str::to_owned),
            kind: match f["kind"].as_str() {
                Some("added") => ChangeKind::Added,
                Some("deleted") => ChangeKind::Deleted,
                Some("renamed") => ChangeKind::Renamed,
                _ => ChangeKind::Modified,
            },
            added: f["added"].as_u64().unwrap_or(0),
            removed: f["removed"].as_u64().unwrap_or(0),
            binary: f["binary"].as_bool().unwrap_or(false),
        })
        .collect();
    Ok(Change {
        files,
        patch: text(&v["patch"]),
        truncated: v["truncated"].as_bool().unwrap_or(false),
        notes: v["notes"]
            .as_array()
            .map(|n| n.iter().map(text).collect())
            .unwrap_or_default(),
    })
}

/// The confirmation of a merge or discard on another host: the CLI does it or refuses, but
/// has no command that says beforehand what it would do.
pub fn no_preview(host: &str, job: &JobId, op: ReviewOp) -> String {
    let id = job.local_id();
    match op {
        ReviewOp::Merge => format!(
            "merge {id} on {host} (`luzia merge {id}` there). What it would do cannot be \
             shown from here: luzia on {host} refuses a conflict and then changes nothing."
        ),
        ReviewOp::Discard => format!(
            "discard {id} on {host} (`luzia discard {id}` there): its worktree and branch are \
             removed; the change stays readable with `luzia diff {id}`. What it would remove \
             cannot be shown from here."
        ),
    }
}

/// Why a job's prompt is not shown for another host's job.
pub fn no_prompt(host: &str, job: &JobId) -> String {
    format!(
        "the prompt of a job on {host} is not read over ssh (`luzia jobs {}` there shows its \
         first line)",
        job.local_id()
    )
}

/// Why a job's timeline is not shown for another host's job.
pub fn no_history(host: &str, job: &JobId) -> String {
    format!(
        "the timeline of a job on {host} is not read over ssh (`luzia jobs {}` there shows it)",
        job.local_id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    fn id(s: &str) -> JobId {
        JobId::parse(s).unwrap()
    }

    fn output(code: i32, stdout: &str, stderr: &str) -> Output {
        Output {
            status: ExitStatus::from_raw(code << 8),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn a_failure_says_what_the_remote_luzia_said_and_where() {
        let out = output(
            1,
            "",
            "luzia: question q-1 was the one pending\nluzia: error: question q-1 of job 1 was already answered by cli (ana): 'yes'\n",
        );
        assert_eq!(
            outcome("gpu2", &out).unwrap_err(),
            "on gpu2: question q-1 of job 1 was already answered by cli (ana): 'yes'"
        );
        let silent = outcome("gpu2", &output(3, "", "")).unwrap_err();
        assert!(silent.starts_with("on gpu2: luzia failed"), "{silent}");
        assert_eq!(outcome("gpu2", &output(0, "ok\n", "")).unwrap(), "ok\n");
    }

    #[test]
    fn a_start_is_keyed_on_its_host_and_a_queued_task_said_as_it_is() {
        let (new, said) = started("gpu2", "130000-cd\n", Some("web"));
        assert_eq!(new, Some(JobId::on_host("gpu2", &id("130000-cd"))));
        assert_eq!(said, "started 130000-cd@gpu2 on web");
        let (new, said) = started(
            "gpu2",
            "queued q1 (every one of the 2 slots is taken)\n",
            None,
        );
        assert_eq!(new, None);
        assert_eq!(
            said,
            "on gpu2: queued q1 (every one of the 2 slots is taken)"
        );
    }

    #[test]
    fn the_diff_json_reads_back_into_the_change_it_was_written_from() {
        let change = Change {
            files: vec![
                FileChange {
                    path: "src/a.rs".into(),
                    from: Some("src/old.rs".into()),
                    kind: ChangeKind::Renamed,
                    added: 3,
                    removed: 1,
                    binary: false,
                },
                FileChange {
                    path: "logo.png".into(),
                    from: None,
                    kind: ChangeKind::Added,
                    added: 0,
                    removed: 0,
                    binary: true,
                },
            ],
            patch: "diff --git a/src/a.rs b/src/a.rs\n+x\n".into(),
            truncated: true,
            notes: vec!["the job is still running".into()],
        };
        // As `luzia diff --json` writes it: the change, its id and its stat.
        let mut v = serde_json::to_value(&change).unwrap();
        v["id"] = "120000-ab".into();
        v["stat"] = serde_json::to_value(change.stat()).unwrap();
        let text = serde_json::to_string_pretty(&v).unwrap();
        assert_eq!(super::change(&text).unwrap(), change);
        assert!(super::change("not json").is_err());
        assert!(super::change("{}").is_err());
    }
}
