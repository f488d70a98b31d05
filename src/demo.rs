//! The built-in demo: a fresh jobs root with finished jobs of every kind and a handful of live,
//! simulated agents (`luzia demo-agent`, real processes writing real job directories), so the
//! cockpit can be seen working with nothing installed but Rust.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{Duration, Utc};
use serde_json::json;

use crate::config::{Config, Overrides};
use crate::dispatcher::{Dispatcher, Request};

/// Tasks the demo dispatches at start: (project, task). The task's words pick what the
/// simulated agent does (see `luzia demo-agent`).
const LIVE: &[(&str, &str)] = &[
    ("musica", "Run the test suite and report the results"),
    ("overbits", "Build the release artefacts"),
    (
        "musica",
        "Apply the database migration (ask which database)",
    ),
    ("librec", "Deploy the search index behind an approval gate"),
    (
        "overbits",
        "Re-index 40,000 documents, streaming the output",
    ),
    (
        "librec",
        "Upgrade the importer dependencies (this one fails)",
    ),
    ("musica", "Refactor the playlist module: a long one"),
    ("librec", "Clean the staging database: stops, needs input"),
];

/// The demo's jobs root, queue and config: a fresh directory under the system's temporary
/// directory, three projects, and `luzia demo-agent` as the agent. Its agents are started through
/// the real dispatcher and supervisor.
pub fn create() -> Result<Config> {
    let base =
        std::env::temp_dir().join(format!("luzia-demo-{}", Utc::now().format("%Y%m%d-%H%M%S")));
    let jobs = base.join("jobs");
    fs::create_dir_all(&jobs)
        .with_context(|| format!("cannot create the demo directory {}", jobs.display()))?;
    let exe =
        std::env::current_exe().context("cannot find the luzia executable to run demo agents")?;
    let mut projects = String::new();
    for name in ["musica", "overbits", "librec"] {
        let dir = base.join("projects").join(name);
        fs::create_dir_all(&dir)?;
        projects.push_str(&format!(
            "\n[projects.{name}]\npath = {:?}\n",
            dir.display().to_string()
        ));
    }
    let toml = format!(
        "# The demo's configuration: `luzia --config {cfg} jobs` works on it too.\n\
         jobs_dir = {jobs:?}\nqueue_dir = {queue:?}\nnotifications_log = {notes:?}\n\n\
         [agent]\ncommand = [{exe:?}, \"demo-agent\"]\nmax_concurrent = 10\n{projects}",
        cfg = base.join("config.toml").display(),
        jobs = jobs.display().to_string(),
        queue = base.join("queue").display().to_string(),
        notes = base.join("notifications.log").display().to_string(),
        exe = exe.display().to_string(),
    );
    let cfg_path = base.join("config.toml");
    fs::write(&cfg_path, toml).with_context(|| format!("cannot write {}", cfg_path.display()))?;
    let cfg = Config::load(&Overrides {
        config: Some(cfg_path),
        jobs_dir: None,
    })?;
    write_finished(&jobs)?;
    let dispatcher = Dispatcher::new(&cfg)?;
    for (project, task) in LIVE {
        dispatcher.dispatch(&Request::new(project, task))?;
    }
    Ok(cfg)
}

fn write_meta(
    dir: &Path,
    id: &str,
    project: &str,
    task: &str,
    started: chrono::DateTime<Utc>,
    extra: &[(&str, serde_json::Value)],
) -> Result<()> {
    let mut meta = json!({
        "id": id, "project": project, "task": task, "type": "agent", "user": project,
        "started": started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), "status": "running",
    });
    for (k, v) in extra {
        if !v.is_null() {
            meta[*k] = v.clone();
        }
    }
    fs::write(dir.join("meta.json"), serde_json::to_vec_pretty(&meta)?)?;
    Ok(())
}

/// Jobs that ended before the demo began: one of each ending.
fn write_finished(jobs: &Path) -> Result<()> {
    let now = Utc::now();
    let finished: &[(&str, &str, &str, i64, i64, &str)] = &[
        (
            "081500-done",
            "musica",
            "Run tests and report results",
            400,
            90,
            "Collecting tests...\n\x1b[32m128 passed\x1b[0m in 41.2s\nAll good.\n\nexit:0\n",
        ),
        (
            "083000-fail",
            "librec",
            "Type-check the frontend",
            350,
            60,
            "src/app.ts(12,5): \x1b[31merror\x1b[0m TS2322: Type 'string' is not assignable to type 'number'.\nFound 1 error.\n\nexit:2\n",
        ),
        (
            "090000-kill",
            "overbits",
            "Long crawl",
            300,
            1200,
            "crawling...\ncrawling...\nTerminated\n\nexit:-9\n",
        ),
        (
            "093000-ask",
            "musica",
            "Clean the staging database",
            200,
            30,
            "Found 3 stale tables.\nNeed to know which database to clean.\n\nexit:100\n",
        ),
    ];
    for (id, project, task, ago_min, took_secs, log) in finished {
        let dir = jobs.join(id);
        fs::create_dir(&dir)?;
        let started = now - Duration::minutes(*ago_min);
        let end = started + Duration::seconds(*took_secs);
        let code = crate::jobs::tail::parse_exit_line(
            log.trim_end().lines().last().unwrap_or("").as_bytes(),
        );
        write_meta(
            &dir,
            id,
            project,
            task,
            started,
            &[
                (
                    "finished",
                    json!(end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                ),
                ("exit_code", json!(code)),
            ],
        )?;
        fs::write(dir.join("prompt.txt"), format!("{task}\n"))?;
        fs::write(dir.join("output.log"), log)?;
    }
    write_extras(jobs, now)
}

/// The question the needs_input job stopped for, and an agent that vanished without a word.
fn write_extras(jobs: &Path, now: chrono::DateTime<Utc>) -> Result<()> {
    let ask = jobs.join("093000-ask");
    fs::write(
        ask.join("clarification.json"),
        serde_json::to_vec_pretty(&json!({
            "id": "q1", "type": "choice", "question": "Which database should I clean: staging or dev?",
            "options": ["staging", "dev"], "context": "3 stale tables found",
        }))?,
    )?;
    // An agent that vanished without a word: its pid is long gone.
    let died = jobs.join("094500-gone");
    fs::create_dir(&died)?;
    write_meta(
        &died,
        "094500-gone",
        "librec",
        "Refactor the importer",
        now - Duration::minutes(120),
        &[],
    )?;
    fs::write(died.join("pid"), "999999999\n")?;
    fs::write(died.join("output.log"), "step 1 ok\nstep 2...\n")?;
    Ok(())
}
