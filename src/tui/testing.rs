//! Fixtures for the cockpit's tests: an `App` loaded from the sample job directories, plus
//! live jobs made from them (a live pid cannot be committed), at a fixed time and size.

use std::collections::HashSet;
use std::path::PathBuf;

use chrono::{DateTime, TimeZone, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Options};
use super::effect::Effect;
use super::event::{Event, Synced};
use crate::jobs::fs::tail::RawLine;
use crate::jobs::model::review::{Change, ChangeKind, FileChange, Isolation, Review};
use crate::jobs::model::session::{Activity, Usage};
use crate::jobs::model::waiting::{Gate, Question, QuestionType};
use crate::jobs::{Job, JobId, Progress, Status, read_job, scan};

pub const SAMPLES: &str = "assets/sample-jobs";

pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 9, 16, 0, 0).unwrap()
}

pub fn id(s: &str) -> JobId {
    JobId::parse(s).unwrap()
}

pub fn live(from: &str, new_id: &str, started_min_ago: i64, tweak: impl FnOnce(&mut Job)) -> Job {
    let mut job = read_job(&PathBuf::from(SAMPLES), &id(from), now()).expect("sample exists");
    job.id = id(new_id);
    job.set_dir(PathBuf::from(SAMPLES).join(new_id));
    job.status = Status::Running;
    job.exit_code = None;
    job.finished = None;
    job.pid = Some(4242);
    job.started = Some(now() - chrono::Duration::minutes(started_min_ago));
    // Wrote a line half a minute ago: not stalled.
    job.log_mtime = Some(now() - chrono::Duration::seconds(30));
    job.problems = Box::default();
    tweak(&mut job);
    job
}

/// The samples, plus three live jobs: one with a percent, one with steps, one waiting at a gate.
pub fn jobs() -> Vec<Job> {
    let mut jobs = scan(std::path::Path::new(SAMPLES), now()).expect("samples readable");
    for job in jobs.iter_mut().filter(|j| j.status == Status::Died) {
        // A died job ends at its log's mtime, which for the samples is the checkout time.
        job.finished = job.started.map(|s| s + chrono::Duration::minutes(7));
    }
    // Times taken from files' mtimes are the checkout's: pin them before `now`.
    let pin = |t: &mut Option<DateTime<Utc>>| {
        if t.is_some_and(|t| t > now()) {
            *t = Some(now() - chrono::Duration::hours(1));
        }
    };
    for job in &mut jobs {
        pin(&mut job.finished);
        pin(&mut job.log_mtime);
        if let Some(q) = job.question.as_mut() {
            pin(&mut q.asked_at);
        }
        if let Some(g) = job.gate.as_mut() {
            pin(&mut g.awaiting_since);
        }
    }
    // Two finished Claude Code runs with their figures: the table's cost column and the
    // detail view's facts come from these.
    for job in &mut jobs {
        let usage = match job.id.as_str() {
            "142315-a1b2" => claude_usage(0.4213, 7),
            "151200-q1q1" => claude_usage(1.0749, 12),
            _ => continue,
        };
        if let Some(m) = job.meta.as_mut() {
            m.session_id = format!(
                "5f0c6a1e-9d7b-4c1a-8f3e-{}",
                job.id.as_str().replace('-', "")
            )
            .into();
            m.usage = Some(Box::new(usage));
        }
    }
    jobs.push(live("142315-a1b2", "155900-run1", 3, |j| {
        j.progress = Some(Box::new(Progress {
            percent: Some(40.0),
            ..Progress::default()
        }));
        if let Some(m) = j.meta.as_mut() {
            m.task = "Run the full test suite and summarise failures".into();
        }
    }));
    jobs.push(live("143002-c3d4", "155800-run2", 12, |j| {
        j.progress = Some(Box::new(Progress {
            step: Some(2),
            total_steps: Some(5),
            step_name: Some("Running tests".into()),
            ..Progress::default()
        }));
        // A tool call in flight: what the table shows instead of the step.
        j.activity = Some(Box::new(Activity {
            what: "Bash: cargo test --workspace".into(),
            since: Some(now() - chrono::Duration::seconds(150)),
        }));
    }));
    jobs.push(live("150110-e5f6", "155700-gate", 20, |j| {
        j.status = Status::Waiting;
        j.gate = Some(Box::new(Gate {
            id: "g1".into(),
            gate: "deploy".into(),
            description: "Deploy the index to production".into(),
            context: String::new(),
            awaiting_since: Some(now() - chrono::Duration::minutes(4)),
            auto_approve_after_minutes: None,
            allow_session: None,
        }));
    }));
    jobs
}

/// The figures of a Claude Code run that cost `usd` over `turns` turns.
pub fn claude_usage(usd: f64, turns: u64) -> Usage {
    Usage {
        model: "claude-sonnet-4-5".into(),
        turns: Some(turns),
        duration_ms: Some(turns * 27_000),
        input_tokens: Some(turns * 1_500),
        output_tokens: Some(turns * 800),
        cache_read_tokens: Some(turns * 21_000),
        cache_creation_tokens: Some(4_096),
        cost_usd: Some(usd),
        outcome: "success".into(),
        error: String::new(),
        resets_at: None,
    }
}

/// A Claude Code job the session limit stopped ten minutes ago, in Claude Code's words: it
/// resets at 17:00 UTC, an hour after [`now`].
pub fn limited_job() -> Job {
    live("142315-a1b2", "155000-limt", 40, |j| {
        j.status = Status::Limited;
        j.exit_code = Some(1);
        j.pid = None;
        j.progress = None;
        j.finished = Some(now() - chrono::Duration::minutes(10));
        if let Some(m) = j.meta.as_mut() {
            m.task = "Port the billing module to the new API".into();
            m.usage = Some(Box::new(Usage {
                outcome: "success".into(),
                error: "You've hit your session limit · resets 5pm (UTC)".into(),
                ..claude_usage(0.0, 1)
            }));
        }
    })
}

/// The account's limit that stopped [`limited_job`], holding the queue until its reset.
pub fn claude_hold() -> crate::jobs::model::limit::Hold {
    crate::jobs::model::limit::Hold {
        agent: "claude".into(),
        resets_at: Utc.with_ymd_and_hms(2026, 1, 9, 17, 0, 0).unwrap(),
        job: "155000-limt".into(),
    }
}

/// The queue's rows for `tasks` of project musica, in order.
pub fn queued_rows(tasks: &[&str]) -> Vec<Job> {
    let entries: Vec<crate::jobs::run::queue::Queued> = tasks
        .iter()
        .enumerate()
        .map(|(i, task)| crate::jobs::run::queue::Queued {
            id: format!("q{:07}", i + 1),
            project: "musica".into(),
            priority: crate::jobs::run::queue::Priority::Normal,
            task: (*task).into(),
            enqueued_at: "2026-01-09T15:55:00Z".into(),
            enqueued_by: "ana".into(),
            project_path: None,
            agent: None,
            path: PathBuf::from("/q").join(format!("q{:07}", i + 1)),
        })
        .collect();
    let mut rows = crate::jobs::run::queue::rows(&entries);
    // Each as the cockpit's listing gives it: with the program its agent runs.
    for row in &mut rows {
        if let Some(meta) = row.meta.as_mut() {
            meta.agent = "claude".into();
        }
    }
    rows
}

/// A live job waiting for a free-text answer (for the inbox tests).
pub fn text_question_job() -> Job {
    live("150500-a9b8", "155600-text", 25, |j| {
        j.status = Status::Waiting;
        j.question = Some(Box::new(Question {
            id: "q3".into(),
            kind: QuestionType::Text,
            question: "What should the release be called?".into(),
            options: vec![],
            context: "Drafting the release notes".into(),
            asked_at: Some(now() - chrono::Duration::minutes(6)),
            timeout_minutes: Some(30.0),
            default_if_timeout: Some("v2.1".into()),
            note: None,
            header: String::new(),
            descriptions: Vec::new(),
            multi_select: false,
        }));
    })
}

/// A live job of Gemini CLI stopped at a permission request that may be approved for the
/// session (as the ACP supervisor writes it).
pub fn session_gate_job() -> Job {
    live("150110-e5f6", "160100-gemi", 3, |j| {
        j.status = Status::Waiting;
        j.gate = Some(Box::new(Gate {
            id: "g2".into(),
            gate: "execute: touch second.txt".into(),
            description: "Gemini CLI asks permission: touch second.txt".into(),
            context: "Deny sends the agent a rejection only.".into(),
            awaiting_since: Some(now() - chrono::Duration::minutes(1)),
            auto_approve_after_minutes: None,
            allow_session: Some("Allow for this session".into()),
        }));
    })
}

/// A live job asking a choice of several, with options described (as Claude Code asks).
pub fn multi_question_job() -> Job {
    live("150500-a9b8", "155800-many", 25, |j| {
        j.status = Status::Waiting;
        j.question = Some(Box::new(Question {
            id: "q4".into(),
            kind: QuestionType::Choice,
            question: "Which checks should run after the migration?".into(),
            options: vec![
                "unit tests".into(),
                "smoke tests".into(),
                "load tests".into(),
            ],
            context: String::new(),
            asked_at: Some(now() - chrono::Duration::minutes(7)),
            timeout_minutes: None,
            default_if_timeout: None,
            note: None,
            header: "Checks".into(),
            descriptions: vec![
                "Fast, no database".into(),
                "Against the migrated database".into(),
                "Slow: an hour".into(),
            ],
            multi_select: true,
        }));
    })
}

pub fn options(read_only: bool) -> Options {
    Options {
        root: PathBuf::from("/var/log/luz-orchestrator/jobs"),
        read_only,
        ..Options::default()
    }
}

/// An app of `w` x `h` with every fixture job loaded, and the effects the load asked for.
pub fn app_with(opts: Options, w: u16, h: u16) -> (App, Vec<Effect>) {
    let mut app = App::new(opts, now());
    app.update(Event::Resize(w, h), now());
    let all = jobs();
    let present = all.iter().map(|j| j.id.clone()).collect();
    let effects = app.update(
        Event::Synced(Synced {
            present,
            read: all,
            error: None,
        }),
        now(),
    );
    (app, effects)
}

pub fn app(w: u16, h: u16) -> App {
    app_with(options(false), w, h).0
}

pub fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ch(c: char) -> Event {
    key(KeyCode::Char(c))
}

pub fn press(app: &mut App, events: impl IntoIterator<Item = Event>) -> Vec<Effect> {
    events
        .into_iter()
        .flat_map(|e| app.update(e, now()))
        .collect()
}

pub fn lines(texts: &[&str]) -> Vec<RawLine> {
    texts
        .iter()
        .map(|t| RawLine {
            bytes: t.as_bytes().to_vec(),
            cut: false,
        })
        .collect()
}

pub fn ids_of(app: &App) -> Vec<&str> {
    app.table.view.iter().map(|i| i.as_str()).collect()
}

pub fn no_skip() -> HashSet<JobId> {
    HashSet::new()
}

/// `from` as a job whose change was recorded (`isolation`: how), the sample change's size.
pub fn reviewed(from: &str, isolation: Isolation) -> Job {
    let mut job = read_job(&PathBuf::from(SAMPLES), &id(from), now()).expect("sample exists");
    if let Some(m) = job.meta.as_mut() {
        m.review = Some(Box::new(Review {
            isolation,
            repo: "/srv/api".into(),
            base: "4f1c2a9".into(),
            after: "9e8d7c6".into(),
            branch: match isolation {
                Isolation::Worktree => format!("luzia/{from}"),
                _ => String::new(),
            },
            changes: Some(change().stat()),
            ..Review::default()
        }));
    }
    job
}

/// A change of three files: one edited, one added, one deleted; a line of it carries escape
/// sequences (a title change, a screen clear), which must never reach the terminal.
pub fn change() -> Change {
    let file = |path: &str, kind, added, removed| FileChange {
        path: path.into(),
        kind,
        added,
        removed,
        ..FileChange::default()
    };
    let patch = "\
diff --git a/src/retry.rs b/src/retry.rs
index 4f1c2a9..9e8d7c6 100644
--- a/src/retry.rs
+++ b/src/retry.rs
@@ -10,7 +10,9 @@ pub fn backoff(attempt: u32) -> Duration {
     let base = Duration::from_millis(100);
-    base * 2u32.pow(attempt)
+    // Capped: a long outage must not mean hour-long sleeps.
+    let wait = base * 2u32.pow(attempt.min(10));
+    wait.min(Duration::from_secs(30))
 }
 
 #[cfg(test)]
diff --git a/src/jitter.rs b/src/jitter.rs
new file mode 100644
index 0000000..1a2b3c4
--- /dev/null
+++ b/src/jitter.rs
@@ -0,0 +1,3 @@
+//! Spreads retries out \x1b]0;pwned\x07\x1b[2Jso clients do not retry in step.
+pub fn jitter(d: Duration) -> Duration {
+    d.mul_f64(0.5 + fastrand::f64() / 2.0) }
diff --git a/docs/old-retry.md b/docs/old-retry.md
deleted file mode 100644
index 5d6e7f8..0000000
--- a/docs/old-retry.md
+++ /dev/null
@@ -1,2 +0,0 @@
-# Retries
--- retried forever, without a cap
";
    Change {
        files: vec![
            file("src/retry.rs", ChangeKind::Modified, 3, 1),
            file("src/jitter.rs", ChangeKind::Added, 3, 0),
            file("docs/old-retry.md", ChangeKind::Deleted, 0, 2),
        ],
        patch: patch.to_string(),
        truncated: false,
        notes: vec!["the project also changed outside the job while it ran".into()],
    }
}

/// `job` as host `host` reports it: keyed `"<id>@<host>"`, with a directory that is not here.
pub fn remote(host: &str, mut job: Job) -> Job {
    job.id = JobId::on_host(host, &job.id);
    let dir = PathBuf::from("/nonexistent/remote").join(job.id.as_str());
    job.set_dir(dir);
    job
}

/// What host `host`'s link reports.
pub fn host_news(host: &str, news: super::event::HostNews) -> Event {
    Event::Host {
        host: host.into(),
        news,
    }
}

/// Host `host` up, with these projects, its `jobs` sent, and synced.
pub fn host_up(app: &mut App, host: &str, projects: &[&str], jobs: Vec<Job>) -> Vec<Effect> {
    use super::event::HostNews;
    let mut effects = app.update(
        host_news(
            host,
            HostNews::Up {
                luzia: "0.1.0".into(),
                projects: projects.iter().map(|p| p.to_string()).collect(),
            },
        ),
        now(),
    );
    effects.extend(app.update(host_news(host, HostNews::Jobs(jobs)), now()));
    effects.extend(app.update(host_news(host, HostNews::Synced), now()));
    effects
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// The cockpit's modules, each with the cockpit's modules it imports, read from the code
    /// (`crate::tui::x` and `super::` paths), leaving out the loop (`tui/mod.rs`) and tests.
    fn imports() -> BTreeMap<String, BTreeSet<String>> {
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut files = Vec::new();
        collect(Path::new("src/tui"), &mut files);
        let crate_path = regex::Regex::new(r"crate::tui::(\w+)").unwrap();
        let super_path = regex::Regex::new(r"\b((?:super::)+)(\{[^}]*\}|\w+)").unwrap();
        for file in files {
            let rel = file.strip_prefix("src/tui").unwrap().with_extension("");
            let mut path: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into()).collect();
            if path.last().is_some_and(|p| p == "mod") {
                path.pop();
            }
            let tests = path
                .last()
                .is_some_and(|p| p == "tests" || p.ends_with("_tests"));
            if path.is_empty() || path[0] == "testing" || tests {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            // Code only: a module's own `#[cfg(test)] mod tests { .. }` is a test too.
            let code = text
                .split("#[cfg(test)]\nmod tests {")
                .next()
                .unwrap_or_default();
            let uses = graph.entry(path[0].clone()).or_default();
            for c in crate_path.captures_iter(code) {
                uses.insert(c[1].to_string());
            }
            for c in super_path.captures_iter(code) {
                let up = c[1].matches("super::").count();
                let base = &path[..path.len().saturating_sub(up)];
                let names: Vec<&str> = c[2]
                    .trim_matches(|ch| ch == '{' || ch == '}')
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or_default())
                    .collect();
                match base.first() {
                    Some(top) => {
                        uses.insert(top.clone());
                    }
                    None => uses.extend(names.iter().map(|n| n.to_string())),
                }
            }
            let own = path[0].clone();
            uses.remove(&own);
        }
        graph
    }

    fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                collect(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }

    /// The modules `from` reaches through imports.
    fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    }

    #[test]
    fn the_cockpits_modules_import_each_other_in_one_direction() {
        let graph = imports();
        assert!(
            graph["ui"].contains("app"),
            "the reading itself works: {graph:?}"
        );
        for module in graph.keys() {
            assert!(
                !reach(&graph, module).contains(module),
                "{module} imports itself through {:?}",
                graph[module]
            );
        }
        assert!(
            !reach(&graph, "app").contains("ui"),
            "app must not import ui"
        );
        for base in ["action", "input", "layout", "theme"] {
            let up: Vec<_> = reach(&graph, base)
                .into_iter()
                .filter(|m| ["app", "ui", "effects"].contains(&m.as_str()))
                .collect();
            assert!(up.is_empty(), "{base} imports {up:?}");
        }
    }
}
