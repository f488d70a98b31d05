//! The operator's commands: `luzia questions`, `luzia answer`, `luzia approve`, `luzia deny`.

use crate::jobs::fs::names::{GATE_FILE, QUESTION_FILE};
use std::io::Write;

use anyhow::{Result, bail};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::cli::{AnswerArgs, ApproveArgs, DenyArgs, QuestionsArgs, Relay};
use crate::commands::question_rows::{QuestionRow, write_sections};
use crate::commands::table::{Column, Table, plain};
use crate::config::Config;
use crate::jobs::hitl::operator::{self, Answerer, Decision, Outcome, Scope, Verdict};
use crate::jobs::model::job::Standing;
use crate::jobs::text::sanitize::plain_text;
use crate::jobs::{Job, scan};

pub fn answer(cfg: &Config, args: &AnswerArgs, out: &mut dyn Write) -> Result<u8> {
    let job = super::find_job(cfg, &args.id)?;
    let text = args.answer.join(" ");
    let (source, by) = author(&args.relay)?;
    let who = Answerer {
        source: &source,
        by: &by,
    };
    let target = args.question.as_deref();
    match operator::answer_question(&job, target, &text, who, Utc::now())? {
        Outcome::Done(r) => {
            if target.is_none() {
                crate::say!(
                    "luzia: question {} was the one pending",
                    plain_text(&r.question_id)
                );
            }
            writeln!(out, "answered {}: {}", job.id, plain_text(&r.answer))?;
            if job.standing() == Standing::AnswerThenRetry {
                writeln!(
                    out,
                    "the agent has stopped: retry the job so that it reads the answer"
                )?;
            }
            Ok(0)
        }
        Outcome::Already(r) => bail!(
            "question {} of job {} was already answered by {}: '{}'",
            plain_text(&r.question_id),
            job.id,
            r.who(),
            plain_text(&r.answer)
        ),
    }
}

pub fn approve(cfg: &Config, args: &ApproveArgs, out: &mut dyn Write) -> Result<u8> {
    let reason = args.reason.as_deref().unwrap_or("");
    let gate = args.gate.as_deref();
    let scope = if args.always {
        Scope::Session
    } else {
        Scope::Once
    };
    let verdict = Verdict::approve(scope, reason);
    decide(cfg, &args.id, gate, verdict, &args.relay, out)
}

pub fn deny(cfg: &Config, args: &DenyArgs, out: &mut dyn Write) -> Result<u8> {
    let verdict = Verdict::deny(&args.reason);
    decide(
        cfg,
        &args.id,
        args.gate.as_deref(),
        verdict,
        &args.relay,
        out,
    )
}

/// Who answers and through what: this user at the CLI, or the person another luzia relays
/// the answer for (`--by`, `--source`: the Telegram bridge answering on this host).
fn author(relay: &Relay) -> Result<(String, String)> {
    let (Some(by), Some(source)) = (&relay.by, &relay.source) else {
        return Ok(("cli".into(), operator::operator()));
    };
    if source.is_empty() || !source.bytes().all(|b| b.is_ascii_lowercase()) {
        bail!(
            "--source '{}' is not a source: give one lowercase word, such as telegram",
            plain_text(source)
        );
    }
    if by.trim().is_empty() || by.chars().any(char::is_control) {
        bail!("--by must name who answered, on one line");
    }
    Ok((source.clone(), by.clone()))
}

fn decide(
    cfg: &Config,
    id: &crate::jobs::JobId,
    target: Option<&str>,
    verdict: Verdict<'_>,
    relay: &Relay,
    out: &mut dyn Write,
) -> Result<u8> {
    let job = super::find_job(cfg, id)?;
    let (source, by) = author(relay)?;
    let who = Answerer {
        source: &source,
        by: &by,
    };
    match operator::decide_gate(&job, target, verdict, who, Utc::now())? {
        Outcome::Done(d) => {
            if target.is_none() {
                crate::say!("luzia: gate {} was the one pending", gate_name(&d));
            }
            let word = d.verb();
            writeln!(out, "{word} {} at gate '{}'", job.id, plain_text(&d.gate))?;
            Ok(0)
        }
        Outcome::Already(d) => {
            let reason = match d.reason.as_str() {
                "" => String::new(),
                r => format!(": '{}'", plain_text(r)),
            };
            bail!(
                "gate {} of job {} was already {} by {}{reason}",
                gate_name(&d),
                job.id,
                d.verb(),
                d.who()
            )
        }
    }
}

/// `'deploy' (g2)`: the gate's name and its instance.
fn gate_name(d: &Decision) -> String {
    match d.gate_id.as_str() {
        "" => format!("'{}'", plain_text(&d.gate)),
        id => format!("'{}' ({})", plain_text(&d.gate), plain_text(id)),
    }
}

/// One question or gate somebody could answer.
struct Item<'a> {
    job: &'a Job,
    kind: &'static str,
    /// The instance id an answer names (`--question` / `--gate`).
    instance: &'a str,
    since: Option<DateTime<Utc>>,
    /// When the agent stops waiting (takes its default, or auto-approves).
    deadline: Option<DateTime<Utc>>,
    text: String,
}

fn items(jobs: &[Job]) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    for job in jobs {
        if let Some(q) = &job.question {
            items.push(Item {
                job,
                kind: "question",
                instance: &q.id,
                since: q.asked_at,
                deadline: q.deadline(),
                text: plain_text(&q.question),
            });
        }
        if let Some(g) = &job.gate {
            items.push(Item {
                job,
                kind: "approval",
                instance: &g.id,
                since: g.awaiting_since,
                deadline: g.deadline(),
                text: plain_text(&format!("{}: {}", g.gate, g.description)),
            });
        }
    }
    // Oldest first: the one waiting longest is the one to answer first.
    items.sort_by_key(|i| i.since);
    items
}

pub fn list(cfg: &Config, args: &QuestionsArgs, out: &mut dyn Write) -> Result<u8> {
    let Some(root) = super::existing_jobs_root(cfg)? else {
        super::check_projects(cfg, &[], &args.projects)?;
        match args.json {
            true => writeln!(out, "[]")?,
            false => writeln!(out, "{}", super::no_jobs_yet(cfg))?,
        }
        return Ok(0);
    };
    let now = Utc::now();
    let all = scan(root, now)?;
    super::check_projects(cfg, &all, &args.projects)?;
    let jobs: Vec<Job> = all
        .into_iter()
        .filter(|j| args.projects.is_empty() || args.projects.iter().any(|p| p == j.project()))
        .collect();
    let all = items(&jobs);
    if args.json {
        let list: Vec<ItemJson> = all.iter().map(|i| item_json(i, now)).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(0);
    }
    let rows: Vec<QuestionRow> = all.iter().map(|i| item_row(i, now)).collect();
    let any_pending = write_sections(&rows, out)?;
    let any_unreadable = write_unreadable(&jobs, out)?;
    if !any_pending && !any_unreadable {
        writeln!(out, "no pending questions or gates")?;
    }
    Ok(0)
}

/// An agent may be waiting on a file nobody can read: say so, with the path and the error.
/// Returns whether there was any.
fn write_unreadable(jobs: &[Job], out: &mut dyn Write) -> Result<bool> {
    let unreadable: Vec<_> = jobs
        .iter()
        .flat_map(|j| j.problems.iter().map(move |p| (j, p)))
        .filter(|(_, p)| {
            [QUESTION_FILE, GATE_FILE]
                .iter()
                .any(|f| p.path.ends_with(f))
        })
        .collect();
    if unreadable.is_empty() {
        return Ok(false);
    }
    writeln!(
        out,
        "Cannot be read (the agent may be waiting; fix or remove the file):"
    )?;
    let mut table = Table::new(vec![Column::left().min(13).gap(1), Column::left()]).indent("  ");
    for (job, p) in unreadable {
        table.push(vec![
            plain(job.id.to_string()),
            plain(plain_text(&p.to_string())),
        ]);
    }
    for line in table.lines() {
        writeln!(out, "{}", line.render(false, None))?;
    }
    Ok(true)
}

/// The row `luzia questions` shows of an item.
fn item_row(i: &Item, now: DateTime<Utc>) -> QuestionRow {
    QuestionRow {
        host: None,
        job_id: i.job.id.to_string(),
        project: i.job.project().to_owned(),
        kind: i.kind.to_owned(),
        instance: i.instance.to_owned(),
        standing: i.job.standing(),
        waiting_secs: i.since.map(|t| (now - t).num_seconds()),
        left: QuestionRow::left_of(i.deadline, now),
        text: i.text.clone(),
        note: i
            .job
            .question
            .as_ref()
            .and_then(|q| q.note.clone())
            .filter(|_| i.kind == "question"),
    }
}

/// One element of `luzia questions --json`; the fields in this order, the content last under
/// its kind (`question` or `approval`).
#[derive(Serialize)]
struct ItemJson<'a> {
    job_id: &'a str,
    project: &'a str,
    status: &'static str,
    kind: &'static str,
    standing: &'static str,
    waiting_seconds: Option<i64>,
    seconds_left: Option<i64>,
    #[serde(flatten)]
    content: Content<'a>,
}

#[derive(Serialize)]
enum Content<'a> {
    #[serde(rename = "question")]
    Question(Option<QuestionJson<'a>>),
    #[serde(rename = "approval")]
    Approval(Option<GateJson<'a>>),
}

#[derive(Serialize)]
struct QuestionJson<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    question: &'a str,
    options: &'a [String],
    context: &'a str,
    asked_at: Option<String>,
    timeout_minutes: Option<f64>,
    default_if_timeout: Option<&'a str>,
    note: Option<&'a str>,
    /// The richer fields, present only when the question has them.
    #[serde(skip_serializing_if = "str::is_empty")]
    header: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    option_descriptions: &'a [String],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    multi_select: bool,
}

#[derive(Serialize)]
struct GateJson<'a> {
    id: &'a str,
    gate: &'a str,
    description: &'a str,
    context: &'a str,
    awaiting_since: Option<String>,
    auto_approve_after_minutes: Option<f64>,
    /// Present only when the gate may be approved for the session (`luzia approve --always`):
    /// what that covers, in the agent's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    allow_session: Option<&'a str>,
}

fn rfc3339(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

fn item_json<'a>(i: &Item<'a>, now: DateTime<Utc>) -> ItemJson<'a> {
    let standing = match i.job.standing() {
        Standing::Pending => "pending",
        Standing::AnswerThenRetry => "answer_then_retry",
        Standing::Orphaned => "orphaned",
    };
    let content = match i.kind {
        "question" => Content::Question(i.job.question.as_ref().map(|q| QuestionJson {
            id: &q.id,
            kind: q.kind.as_str(),
            question: &q.question,
            options: &q.options,
            context: &q.context,
            asked_at: rfc3339(q.asked_at),
            timeout_minutes: q.timeout_minutes,
            default_if_timeout: q.default_if_timeout.as_deref(),
            note: q.note.as_deref(),
            header: &q.header,
            option_descriptions: &q.descriptions,
            multi_select: q.multi_select,
        })),
        _ => Content::Approval(i.job.gate.as_ref().map(|g| GateJson {
            id: &g.id,
            gate: &g.gate,
            description: &g.description,
            context: &g.context,
            awaiting_since: rfc3339(g.awaiting_since),
            auto_approve_after_minutes: g.auto_approve_after_minutes,
            allow_session: g.allow_session.as_deref(),
        })),
    };
    ItemJson {
        job_id: i.job.id.as_str(),
        project: i.job.project(),
        status: i.job.status.as_str(),
        kind: i.kind,
        standing,
        waiting_seconds: i.since.map(|t| (now - t).num_seconds()),
        seconds_left: i.deadline.map(|d| (d - now).num_seconds().max(0)),
        content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fixtures;

    /// Today's `questions --json`, byte for byte.
    const GOLDEN: &str = include_str!("../../tests/golden/questions.json");

    #[test]
    fn the_json_keeps_its_fields_and_their_order() {
        let jobs = fixtures::jobs();
        let list: Vec<_> = items(&jobs)
            .iter()
            .map(|i| item_json(i, fixtures::now()))
            .collect();
        let text = serde_json::to_string_pretty(&list).unwrap();
        assert_eq!(format!("{text}\n"), GOLDEN);
    }

    /// A relayed answer is recorded as its author and source; anything else is this user at
    /// the CLI, and a source that is no word is refused.
    #[test]
    fn a_relayed_answer_names_its_author() {
        let relay = |by: Option<&str>, source: Option<&str>| Relay {
            by: by.map(str::to_owned),
            source: source.map(str::to_owned),
        };
        let (source, by) = author(&relay(Some("telegram:@bruno (111)"), Some("telegram"))).unwrap();
        assert_eq!(
            (source.as_str(), by.as_str()),
            ("telegram", "telegram:@bruno (111)")
        );
        assert_eq!(author(&relay(None, None)).unwrap().0, "cli");
        let err = author(&relay(Some("x"), Some("Tele gram")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a source"), "{err}");
        assert!(author(&relay(Some("a\nb"), Some("telegram"))).is_err());
    }

    /// An item read here and the same item read from `questions --json` make the same row: one
    /// list for every host.
    #[test]
    fn a_row_from_json_is_the_row_of_the_item() {
        let jobs = fixtures::jobs();
        let now = fixtures::now();
        let all = items(&jobs);
        assert!(all.len() >= 2);
        for i in &all {
            let json = serde_json::to_value(item_json(i, now)).unwrap();
            let mut from_json = QuestionRow::from_json("b", &json);
            assert_eq!(from_json.host.take().as_deref(), Some("b"));
            assert_eq!(from_json, item_row(i, now), "{} {}", i.job.id, i.kind);
        }
    }
}
