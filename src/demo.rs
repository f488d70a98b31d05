//! The built-in demo: a fresh jobs root with finished jobs of every kind and a handful of live,
//! simulated agents (`luzia demo-agent`, real processes writing real job directories), so the
//! cockpit can be seen working with nothing installed but Rust.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use chrono::{Duration, Utc};
use serde_json::json;

/// Simulated agents the demo starts: (scenario, project, task).
const LIVE: &[(&str, &str, &str)] = &[
    ("tests", "musica", "Run the test suite and report failures"),
    ("build", "overbits", "Build the release artefacts"),
    ("question", "musica", "Apply the database migration"),
    ("gate", "librec", "Deploy the search index"),
    ("stream", "overbits", "Re-index 40,000 documents"),
    ("fail", "librec", "Upgrade the importer dependencies"),
    ("long", "musica", "Refactor the playlist module"),
];

/// Creates the demo root under the system's temporary directory and starts the agents.
pub fn create() -> Result<PathBuf> {
    let root =
        std::env::temp_dir().join(format!("luzia-demo-{}", Utc::now().format("%Y%m%d-%H%M%S")));
    let jobs = root.join("jobs");
    fs::create_dir_all(&jobs)
        .with_context(|| format!("cannot create the demo directory {}", jobs.display()))?;
    write_finished(&jobs)?;
    let exe =
        std::env::current_exe().context("cannot find the luzia executable to start demo agents")?;
    for (i, (scenario, project, task)) in LIVE.iter().enumerate() {
        let id = format!("{}-{}", Utc::now().format("%H%M%S"), tag(scenario));
        let dir = jobs.join(&id);
        fs::create_dir(&dir)?;
        let started = Utc::now() - Duration::seconds(i as i64);
        write_meta(
            &dir,
            &id,
            project,
            task,
            started,
            &[("estimated_duration_seconds", estimate(scenario))],
        )?;
        fs::write(dir.join("prompt.txt"), format!("{task}\n"))?;
        start_agent(&exe, &dir, scenario)?;
    }
    Ok(jobs)
}

fn estimate(scenario: &str) -> serde_json::Value {
    match scenario {
        "long" => json!(900),
        "stream" => json!(120),
        _ => serde_json::Value::Null,
    }
}

/// Detached in its own session: it outlives the cockpit, as real agents do.
fn start_agent(exe: &Path, dir: &Path, scenario: &str) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(exe);
    cmd.arg("demo-agent")
        .arg("--job-dir")
        .arg(dir)
        .arg("--scenario")
        .arg(scenario);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid() is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    cmd.spawn()
        .with_context(|| format!("cannot start the demo agent for {}", dir.display()))?;
    Ok(())
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

/// Short id suffixes, so demo ids look like the orchestrator's (`142315-a1b2`).
fn tag(scenario: &str) -> &str {
    match scenario {
        "question" => "ask",
        "stream" => "strm",
        "tests" => "test",
        "build" => "make",
        other => other,
    }
}
