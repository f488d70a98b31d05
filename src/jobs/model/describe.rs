//! One job in full, as labelled facts in plain (sanitized) text. `luzia jobs ID` prints them;
//! the cockpit's detail view draws them. Said once, so the two never disagree.

use chrono::{DateTime, Local, Utc};

use crate::jobs::model::job::{Job, Standing};
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

pub fn facts(job: &Job, now: DateTime<Utc>) -> Vec<Fact> {
    let waiting_for = job
        .waiting()
        .map_or(String::new(), |w| format!(" (for {})", w.as_str()));
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
        let extras = [
            ("type", &m.kind),
            ("user", &m.user),
            ("host", &m.host),
            ("agent", &m.agent),
            ("retry of", &m.retry_of),
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
    pending(job, now, &mut out);
    out.push(fact("path", job.dir.display().to_string()));
    out.extend(job.problems.iter().map(|p| Fact {
        label: "problem",
        value: p.to_string(),
        emphasis: Emphasis::Problem,
    }));
    out
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

fn pending(job: &Job, now: DateTime<Utc>, out: &mut Vec<Fact>) {
    // While the job waits its status says so; otherwise say why nobody is waiting.
    let standing = match job.standing() {
        Standing::Pending => String::new(),
        other => format!(" [{}]", other.note()),
    };
    let attention = |label, value| Fact {
        label,
        value,
        emphasis: Emphasis::Attention,
    };
    if let Some(q) = &job.question {
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
}
