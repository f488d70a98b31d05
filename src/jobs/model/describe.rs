//! One job in full, as labelled facts in plain (sanitized) text. `luzia jobs ID` prints them;
//! the cockpit's detail view draws them. Said once, so the two never disagree.

use chrono::{DateTime, Local, Utc};

use crate::jobs::model::checks::CheckState;
use crate::jobs::model::job::{Job, Standing};
use crate::jobs::model::lifecycle::Stage;
use crate::jobs::model::session::format_cost;
use crate::jobs::model::time::format_duration;
use crate::jobs::text::sanitize::plain_text;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emphasis {
    Normal,
    /// The status line: drawn in the status's colour.
    Status,
    /// Something a person should act on: a pending question or gate.
    Attention,
    Problem,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    pub label: &'static str,
    pub value: String,
    pub emphasis: Emphasis,
}

fn fact(label: &'static str, value: impl Into<String>) -> Fact {
    Fact {
        label,
        value: value.into(),
        emphasis: Emphasis::Normal,
    }
}

/// `2026-01-09 15:12:00 (48m00s ago)` in local time, or `-`.
pub fn when(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    t.map_or("-".into(), |t| {
        let ago = format_duration((now - t).num_seconds());
        format!(
            "{} ({ago} ago)",
            t.with_timezone(&Local).format("%Y-%m-%d %H:%M:%S")
        )
    })
}

/// For a job the usage limit stopped: ` (usage limit · resets 17:00, in 2h 58m)`, or the job
/// that continued it.
fn limit_words(job: &Job, now: DateTime<Utc>) -> String {
    if job.status != crate::jobs::Status::Limited {
        return String::new();
    }
    if let Some(by) = job.continued_by() {
        return format!(" (usage limit · resumed as {by})");
    }
    match job.limit_resets_at() {
        Some(at) if at > now => format!(
            " (usage limit · resets {}, in {})",
            crate::jobs::model::limit::clock(at, now),
            format_duration((at - now).num_seconds())
        ),
        Some(at) => format!(
            " (usage limit · reset at {})",
            crate::jobs::model::limit::clock(at, now)
        ),
        None => String::new(),
    }
}

pub fn facts(job: &Job, now: DateTime<Utc>) -> Vec<Fact> {
    let waiting_for = match (job.waiting(), job.stage()) {
        (Some(w), _) => format!(" (for {})", w.as_str()),
        (None, Some(Stage::Answered)) => " (answered: retry to go on)".into(),
        (None, Some(Stage::Retried(id))) => format!(" (retried as {id})"),
        _ => limit_words(job, now),
    };
    let mut out = vec![
        Fact {
            label: "status",
            value: format!("{}{waiting_for}", job.status),
            emphasis: Emphasis::Status,
        },
        fact("project", plain_text(job.project())),
        fact("task", plain_text(job.task())),
        fact(
            "exit code",
            job.exit_code.map_or("-".into(), |c| c.to_string()),
        ),
        fact(
            "pid",
            match job.pid {
                Some(p) if job.status.is_active() => format!("{p} (alive)"),
                Some(p) => p.to_string(),
                None => "-".into(),
            },
        ),
    ];
    if let Some(m) = &job.meta {
        // The session's chain: the job this one continues, and those that continued it.
        let resumed_by = m.resumed_by.join(", ");
        let extras = [
            ("type", m.kind.as_str()),
            ("user", m.user.as_str()),
            ("host", m.host.as_str()),
            ("agent", m.agent.as_str()),
            ("retry of", m.retry_of.as_str()),
            ("session", m.session_id.as_str()),
            ("resumes", m.resumes.as_str()),
            ("resumed by", resumed_by.as_str()),
        ];
        out.extend(
            extras
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| fact(k, plain_text(v))),
        );
    }
    out.push(fact("started", when(job.started, now)));
    out.push(fact("finished", when(job.finished, now)));
    if !job.retried_by.is_empty() {
        let ids: Vec<String> = job.retried_by.iter().map(ToString::to_string).collect();
        out.push(fact("retried as", ids.join(", ")));
    }
    if let Some(stop) = &job.stop {
        // Killed on request: the agent's own exit code (above) is kept, and who asked is said.
        out.push(fact("stopped", stop.who()));
    }
    if let Some(n) = job.queue_position {
        out.push(fact("queue", format!("#{n} (1 starts next)")));
    }
    out.push(fact(
        "elapsed",
        job.elapsed_secs(now).map_or("-".into(), format_duration),
    ));
    if let Some(est) = job.meta.as_ref().and_then(|m| m.estimated_duration_seconds) {
        out.push(fact("estimate", format_duration(est as i64)));
    }
    out.push(fact("progress", progress(job)));
    figures(job, now, &mut out);
    pending(job, now, &mut out);
    if let Some(r) = job.meta.as_ref().and_then(|m| m.review.as_deref()) {
        out.extend(
            r.described()
                .into_iter()
                .map(|(label, value, problem)| Fact {
                    label,
                    value: plain_text(&value),
                    emphasis: match problem {
                        true => Emphasis::Problem,
                        false => Emphasis::Normal,
                    },
                }),
        );
    }
    checks(job, &mut out);
    out.push(fact("path", job.dir().display().to_string()));
    out.extend(job.problems.iter().map(|p| Fact {
        label: "problem",
        value: p.to_string(),
        emphasis: Emphasis::Problem,
    }));
    out
}

/// The job's port, its setup's failure, its checks: their summary, then each one that failed
/// with its last lines.
fn checks(job: &Job, out: &mut Vec<Fact>) {
    let Some(m) = &job.meta else {
        return;
    };
    if let Some(p) = m.port {
        out.push(fact(
            "ports",
            format!(
                "{p}-{} (LUZIA_PORT)",
                p + crate::jobs::model::meta::PORTS_PER_JOB - 1
            ),
        ));
    }
    if !m.setup_error.is_empty() {
        out.push(Fact {
            label: "setup",
            value: plain_text(&m.setup_error),
            emphasis: Emphasis::Problem,
        });
    }
    let Some(c) = m.checks.as_deref() else {
        return;
    };
    let failed = c.state == CheckState::Failed;
    out.push(Fact {
        label: "checks",
        value: plain_text(&c.summary()),
        emphasis: if failed {
            Emphasis::Problem
        } else {
            Emphasis::Normal
        },
    });
    for r in c.results.iter().filter(|r| !r.passed()) {
        out.push(Fact {
            label: "failed check",
            value: plain_text(&crate::jobs::model::checks::failure(r)),
            emphasis: Emphasis::Problem,
        });
        for line in &r.tail {
            out.push(fact("", format!("  {}", plain_text(line))));
        }
    }
}

/// `40% step 2/5 Running tests (eta 2m00s)`, or `-`.
pub fn progress(job: &Job) -> String {
    let Some(p) = &job.progress else {
        return "-".into();
    };
    let mut parts = Vec::new();
    if let Some(pct) = p.percent_done() {
        parts.push(format!("{pct:.0}%"));
    }
    if let (Some(k), Some(n)) = (p.step, p.total_steps) {
        parts.push(format!("step {k}/{n}"));
    }
    if let Some(name) = &p.step_name {
        parts.push(plain_text(name));
    }
    if let Some(eta) = p.eta_seconds {
        parts.push(format!("(eta {})", format_duration(eta as i64)));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

/// `Bash: npm test (for 3m12s)`: the call in flight, while the job runs.
pub fn activity(job: &Job, now: DateTime<Utc>) -> Option<String> {
    let a = job.activity.as_ref().filter(|_| job.status.is_active())?;
    let what = plain_text(&a.what);
    let what = if what.is_empty() { "busy".into() } else { what };
    Some(match a.since {
        Some(t) => format!("{what} (for {})", format_duration((now - t).num_seconds())),
        None => what,
    })
}

/// What the agent is doing now, then the figures of its run, those that are known: model,
/// turns, tokens, cost.
fn figures(job: &Job, now: DateTime<Utc>, out: &mut Vec<Fact>) {
    if let Some(doing) = activity(job, now) {
        out.push(fact("doing", doing));
    }
    let Some(u) = job.meta.as_ref().and_then(|m| m.usage.as_ref()) else {
        return;
    };
    if !u.model.is_empty() {
        out.push(fact("model", plain_text(&u.model)));
    }
    if let Some(turns) = u.turns {
        let took = u.duration_ms.map_or(String::new(), |ms| {
            format!(" in {}", format_duration((ms / 1000) as i64))
        });
        out.push(fact("turns", format!("{turns}{took}")));
    }
    if let Some(tokens) = u.tokens_text() {
        out.push(fact("tokens", tokens));
    }
    if let Some(cost) = u.cost_usd {
        out.push(fact("cost", format_cost(cost)));
    }
    if !u.outcome.is_empty() && u.outcome != "success" {
        out.push(fact("outcome", plain_text(&u.outcome)));
    }
    if !u.error.is_empty() {
        out.push(Fact {
            label: "error",
            value: plain_text(&u.error),
            emphasis: Emphasis::Problem,
        });
    }
}

fn pending(job: &Job, now: DateTime<Utc>, out: &mut Vec<Fact>) {
    // While the job waits its status says so; otherwise say why nobody is waiting (an answered
    // question says so with its answer, below).
    let exchange = job.exchange.as_ref();
    let answer = exchange.and_then(|e| e.answer.as_ref());
    let standing = match job.standing() {
        Standing::Pending => String::new(),
        _ if answer.is_some() => " [answered]".into(),
        other => format!(" [{}]", other.note()),
    };
    let attention = |label, value| Fact {
        label,
        value,
        emphasis: Emphasis::Attention,
    };
    if let Some(q) = job.question.as_deref().or(exchange.map(|e| &e.question)) {
        let head = format!(
            "{} ({}){standing}: {}",
            plain_text(&q.id),
            q.kind.as_str(),
            plain_text(&q.question)
        );
        out.push(attention("question", head));
        if let Some(note) = &q.note {
            out.push(attention("note", note.clone()));
        }
        if !q.options.is_empty() {
            let label = if q.multi_select {
                "options (several)"
            } else {
                "options"
            };
            out.push(fact(label, q.numbered_options("  ")));
        }
        if !q.context.is_empty() {
            out.push(fact("context", plain_text(&q.context)));
        }
        out.push(fact("asked", when(q.asked_at, now)));
        if let Some(t) = q.timeout_minutes {
            let default = q
                .default_if_timeout
                .as_deref()
                .map_or("none".into(), plain_text);
            out.push(fact("timeout", format!("{t} min, then: {default}")));
        }
    }
    if let Some(a) = answer {
        out.push(fact("answer", plain_text(&a.answer)));
        let by = if a.answered_by.is_empty() {
            "someone".to_string()
        } else {
            plain_text(&a.answered_by)
        };
        let source = if a.source.is_empty() {
            String::new()
        } else {
            format!(" ({})", plain_text(&a.source))
        };
        out.push(fact(
            "answered",
            format!("by {by}{source}, {}", when(a.answered_at, now)),
        ));
    }
    if let Some(g) = &job.gate {
        out.push(attention(
            "gate",
            format!(
                "{}{standing}: {}",
                plain_text(&g.gate),
                plain_text(&g.description)
            ),
        ));
        out.push(fact("since", when(g.awaiting_since, now)));
        if let Some(m) = g.auto_approve_after_minutes {
            out.push(fact(
                "auto",
                format!("approved automatically after {m} min"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::read_job;
    use chrono::TimeZone;

    fn sample(id: &str) -> Job {
        let now = Utc.with_ymd_and_hms(2026, 1, 9, 16, 0, 0).unwrap();
        read_job(
            std::path::Path::new("assets/sample-jobs"),
            &crate::jobs::JobId::parse(id).unwrap(),
            now,
        )
        .unwrap()
    }

    fn value<'a>(facts: &'a [Fact], label: &str) -> &'a str {
        facts
            .iter()
            .find(|f| f.label == label)
            .map(|f| f.value.as_str())
            .unwrap_or_else(|| panic!("no {label}: {facts:?}"))
    }

    #[test]
    fn a_needs_input_job_in_full() {
        let now = Utc.with_ymd_and_hms(2026, 1, 9, 16, 0, 0).unwrap();
        let f = facts(&sample("151200-q1q1"), now);
        assert_eq!(value(&f, "status"), "needs_input");
        assert_eq!(value(&f, "exit code"), "100");
        assert_eq!(value(&f, "pid"), "15120");
        assert_eq!(value(&f, "elapsed"), "2m05s");
        assert_eq!(
            value(&f, "question"),
            "q1 (choice) [the agent stopped for this: answer, then retry]: Which database: production or staging?"
        );
        assert_eq!(value(&f, "options"), "1) production  2) staging");
        assert_eq!(value(&f, "timeout"), "30 min, then: staging");
        assert!(
            f.iter()
                .any(|x| x.label == "question" && x.emphasis == Emphasis::Attention)
        );
    }

    #[test]
    fn an_answered_and_retried_job_shows_question_answer_and_retry() {
        use crate::jobs::model::lifecycle::{Answer, Exchange};
        let now = Utc.with_ymd_and_hms(2026, 1, 9, 16, 0, 0).unwrap();
        let mut job = sample("151200-q1q1");
        let question = job.question.take().unwrap();
        job.exchange = Some(Box::new(Exchange {
            question: *question,
            answer: Some(Answer {
                question_id: "q1".into(),
                answer: "staging".into(),
                answered_by: "ana@host".into(),
                answered_at: Some(now - chrono::Duration::minutes(2)),
                source: "tui".into(),
            }),
        }));
        let f = facts(&job, now);
        assert_eq!(
            value(&f, "status"),
            "needs_input (answered: retry to go on)"
        );
        assert_eq!(
            value(&f, "question"),
            "q1 (choice) [answered]: Which database: production or staging?"
        );
        assert_eq!(value(&f, "answer"), "staging");
        assert!(value(&f, "answered").starts_with("by ana@host (tui), "));
        assert!(value(&f, "answered").ends_with("(2m00s ago)"));
        job.retried_by = Box::new([crate::jobs::JobId::parse("160000-next").unwrap()]);
        let f = facts(&job, now);
        assert_eq!(value(&f, "status"), "needs_input (retried as 160000-next)");
        assert_eq!(value(&f, "retried as"), "160000-next");
    }

    #[test]
    fn a_session_s_chain_is_shown_both_ways() {
        let mut job = sample("151200-q1q1");
        let mut meta = job.meta.take().unwrap_or_default();
        meta.resumes = "150000-aaaa".into();
        meta.resumed_by = vec!["152000-bbbb".into(), "153000-cccc".into()];
        job.meta = Some(meta);
        let f = facts(&job, Utc::now());
        assert_eq!(value(&f, "resumes"), "150000-aaaa");
        assert_eq!(value(&f, "resumed by"), "152000-bbbb, 153000-cccc");
        let plain = facts(&sample("142315-a1b2"), Utc::now());
        assert!(!plain.iter().any(|x| x.label.starts_with("resume")));
    }

    #[test]
    fn problems_and_hostile_text() {
        let now = Utc::now();
        let f = facts(&sample("154500-trnc"), now);
        let problem = f.iter().find(|x| x.emphasis == Emphasis::Problem).unwrap();
        assert!(
            problem
                .value
                .contains("154500-trnc/meta.json is not valid JSON"),
            "{problem:?}"
        );
        let evil = facts(&sample("155500-evil"), now);
        assert!(
            evil.iter()
                .all(|x| !x.value.contains('\x1b') && !x.value.contains('\x07'))
        );
        assert_eq!(value(&evil, "progress"), "-");
        assert_eq!(
            value(&facts(&sample("142315-a1b2"), now), "progress"),
            "100% step 5/5 Report"
        );
    }

    #[test]
    fn the_figures_of_a_claude_run_and_what_it_does_now() {
        use crate::jobs::model::session::{Activity, Usage};
        let now = Utc.with_ymd_and_hms(2026, 1, 9, 16, 0, 0).unwrap();
        let mut job = sample("142315-a1b2");
        let m = job.meta.as_mut().unwrap();
        m.session_id = "5f0c6a1e-9d7b-4c1a-8f3e-2b6d0a9c7e41".into();
        m.resumes = "141000-prev".into();
        m.usage = Some(Box::new(Usage {
            model: "claude-sonnet-4-5".into(),
            turns: Some(7),
            duration_ms: Some(192_400),
            input_tokens: Some(1_234),
            output_tokens: Some(5_678),
            cache_read_tokens: Some(90_000),
            cache_creation_tokens: Some(2_000),
            cost_usd: Some(0.4213),
            outcome: "error_max_turns".into(),
            error: "API Error: 529 \x1b[31moverloaded".into(),
            resets_at: None,
        }));
        let f = facts(&job, now);
        assert_eq!(value(&f, "session"), "5f0c6a1e-9d7b-4c1a-8f3e-2b6d0a9c7e41");
        assert_eq!(value(&f, "resumes"), "141000-prev");
        assert_eq!(value(&f, "model"), "claude-sonnet-4-5");
        assert_eq!(value(&f, "turns"), "7 in 3m12s");
        assert_eq!(
            value(&f, "tokens"),
            "1.2k in · 5.7k out · 90.0k cache read · 2.0k cache write"
        );
        assert_eq!(value(&f, "cost"), "$0.42");
        assert_eq!(value(&f, "outcome"), "error_max_turns");
        assert_eq!(value(&f, "error"), "API Error: 529 overloaded");
        assert!(f.iter().all(|x| x.label != "doing"), "finished: {f:?}");

        job.status = crate::jobs::Status::Running;
        job.activity = Some(Box::new(Activity {
            what: "Bash: npm test".into(),
            since: Some(now - chrono::Duration::seconds(192)),
        }));
        assert_eq!(
            value(&facts(&job, now), "doing"),
            "Bash: npm test (for 3m12s)"
        );
        let plain = sample("151200-q1q1");
        let f = facts(&plain, now);
        assert!(
            f.iter()
                .all(|x| !["cost", "tokens", "session", "model"].contains(&x.label)),
            "{f:?}"
        );
    }
}
