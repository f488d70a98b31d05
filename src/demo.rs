//! The built-in demo: a fresh jobs root with finished jobs of every kind and a handful of live,
//! simulated agents (`luzia demo-agent`, real processes writing real job directories), so the
//! cockpit can be seen working with nothing installed but Rust.

mod review;
pub mod stop;

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{Duration, Utc};
use serde_json::json;

use crate::commands::demo_claude;
use crate::config::{Config, Overrides};
use crate::dispatcher::{Dispatcher, Request};
use crate::jobs::fs::names::STREAM_FILE;
use crate::jobs::hitl::agent::GateSpec;
use crate::jobs::model::session::Usage;

/// Tasks the demo dispatches at start: (project, task). The task's words pick what the
/// simulated agent does (see `luzia demo-agent`).
const LIVE: &[(&str, &str)] = &[
    (
        "musica",
        "Claude Code: fix the failing playlist test (asks before rm -rf build)",
    ),
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
    (
        "overbits",
        "Generate the API reference (goes quiet and stalls)",
    ),
];

/// How long a silent running job may go before it is called stalled, in the demo: short, so that
/// the stalling agent raises its alarm within half a minute.
const STALL_AFTER: &str = "20s";

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
    for name in PROJECTS {
        fs::create_dir_all(base.join("projects").join(name))?;
    }
    let toml = config_toml(&base, &exe);
    let cfg_path = base.join("config.toml");
    fs::write(&cfg_path, toml).with_context(|| format!("cannot write {}", cfg_path.display()))?;
    let cfg = Config::load(&Overrides {
        config: Some(cfg_path),
        jobs_dir: None,
    })?;
    write_finished(&jobs)?;
    // Best effort: the demo works without git, only without this job.
    let _ = review::write(&base, &jobs);
    let dispatcher = Dispatcher::new(&cfg)?;
    for (project, task) in LIVE {
        dispatcher.dispatch(&Request::new(project, task))?;
    }
    Ok(cfg)
}

const PROJECTS: [&str; 3] = ["musica", "overbits", "librec"];

/// The demo's config file, for a demo in `base` whose agent is `exe demo-agent`.
fn config_toml(base: &Path, exe: &Path) -> String {
    let mut projects = String::new();
    for name in PROJECTS {
        let dir = base.join("projects").join(name);
        projects.push_str(&format!(
            "\n[projects.{name}]\npath = {:?}\n",
            dir.display().to_string()
        ));
    }
    format!(
        "# The demo's configuration: `luzia --config {cfg} jobs` works on it too.\n\
         jobs_dir = {jobs:?}\nqueue_dir = {queue:?}\nnotifications_log = {notes:?}\n\n\
         [agent]\ncommand = [{exe:?}, \"demo-agent\", \"--output-format\", \"stream-json\"]\nmax_concurrent = 12\n\n\
         # Short, so that the demo's stalling agent is called stalled within half a minute\n\
         # (the default is 10m).\n\
         [alarms]\nstall_after = {STALL_AFTER:?}\n{projects}",
        cfg = base.join("config.toml").display(),
        jobs = base.join("jobs").display().to_string(),
        queue = base.join("queue").display().to_string(),
        notes = base.join("notifications.log").display().to_string(),
        exe = exe.display().to_string(),
    )
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
            "084500-disk",
            "overbits",
            "Rebuild the thumbnail cache",
            320,
            140,
            "Rebuilding thumbnails for 18204 images\n  [ 4096/18204] thumbs/2024/03/IMG_4410.jpg\n  \
             [ 8192/18204] thumbs/2024/07/IMG_9021.jpg\nTraceback (most recent call last):\n  \
             File \"/srv/overbits/tools/thumbs.py\", line 88, in <module>\n    \
             thumb.save(target, \"JPEG\", quality=85)\n  \
             File \"/usr/lib/python3/dist-packages/PIL/Image.py\", line 2568, in save\n    \
             save_handler(self, fp, filename)\nOSError: [Errno 28] No space left on device\n\n\
             exit:1\n",
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
        let code = crate::jobs::fs::tail::parse_exit_line(
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
    write_claude(jobs, now)?;
    write_extras(jobs, now)
}

/// A Claude Code session that finished before the demo began: its stream (`stream.jsonl`), the
/// figures of its run and its session in meta.json, so that costs show from the start.
fn write_claude(jobs: &Path, now: chrono::DateTime<Utc>) -> Result<()> {
    let (id, task) = (
        "091500-clde",
        "Claude Code: make the importer skip empty rows",
    );
    let dir = jobs.join(id);
    fs::create_dir(&dir)?;
    let cwd = jobs.with_file_name("projects").join("librec");
    let session = demo_claude::session_id();
    let mut stream = demo_claude::Stream::new(
        Vec::new(),
        0.0,
        session.clone(),
        cwd.display().to_string(),
        |_: &GateSpec| Ok(None),
    );
    demo_claude::session(&mut stream)?;
    let took = Duration::seconds(252);
    let usage = Usage {
        duration_ms: Some(took.num_milliseconds() as u64),
        ..stream.usage()
    };
    let started = now - Duration::minutes(150);
    write_meta(
        &dir,
        id,
        "librec",
        task,
        started,
        &[
            ("finished", json!(rfc3339(started + took))),
            ("exit_code", json!(0)),
            ("session_id", json!(session)),
            ("usage", serde_json::to_value(&usage)?),
        ],
    )?;
    let raw = stream.into_output();
    fs::write(dir.join(STREAM_FILE), &raw)?;
    // What the supervisor writes of such a stream (its rendering), then its exit line.
    let mut renderer = crate::jobs::run::stream::render::Renderer::new();
    let mut log: Vec<u8> = raw
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .flat_map(|line| renderer.line(line).text.into_bytes())
        .collect();
    log.extend_from_slice(b"exit:0\n");
    fs::write(dir.join("output.log"), log)?;
    fs::write(dir.join("prompt.txt"), format!("{task}\n"))?;
    Ok(())
}

fn rfc3339(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::demo_agent::scenario_for;
    use crate::jobs::insight::known_issues::{PatternSet, scan_text};

    fn worst_issue(log: &[u8]) -> Option<String> {
        let set = PatternSet::builtin();
        let found = scan_text(&set, log);
        found.worst().map(|f| set.pattern(f.pattern).name.clone())
    }

    #[test]
    fn the_live_tasks_show_every_scenario() {
        let picked: Vec<&str> = LIVE.iter().map(|(_, task)| scenario_for(task)).collect();
        for want in [
            "claude",
            "tests",
            "build",
            "question",
            "gate",
            "stream",
            "fail",
            "long",
            "needs_input",
            "stall",
        ] {
            assert!(
                picked.contains(&want),
                "no live task runs '{want}': {picked:?}"
            );
        }
        for (project, _) in LIVE {
            assert!(PROJECTS.contains(project), "{project}");
        }
    }

    #[test]
    fn the_config_is_valid_and_stalls_quickly() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.toml");
        let toml = config_toml(tmp.path(), Path::new("/usr/bin/luzia"));
        assert!(
            toml.contains("# Short, so that the demo's stalling agent"),
            "{toml}"
        );
        fs::write(&path, toml).unwrap();
        let overrides = Overrides {
            config: Some(path),
            jobs_dir: None,
        };
        let cfg = Config::load_with(&overrides, &|_| None).unwrap();
        assert_eq!(cfg.alarms.stall_after, std::time::Duration::from_secs(20));
        assert_eq!(cfg.jobs_dir, tmp.path().join("jobs"));
        assert_eq!(cfg.projects.len(), 3);
    }

    #[test]
    fn the_finished_failures_carry_known_issues() {
        let tmp = tempfile::tempdir().unwrap();
        write_finished(tmp.path()).unwrap();
        let log = |id: &str| fs::read(tmp.path().join(id).join("output.log")).unwrap();
        assert_eq!(
            worst_issue(&log("084500-disk")).as_deref(),
            Some("disk-full")
        );
        assert_eq!(
            worst_issue(&log("083000-fail")).as_deref(),
            Some("type-check-errors")
        );
        assert_eq!(worst_issue(&log("081500-done")), None);
        let disk = String::from_utf8(log("084500-disk")).unwrap();
        assert!(disk.ends_with("\n\nexit:1\n"), "{disk}");
        assert!(
            disk.contains("\nOSError: [Errno 28] No space left on device\n"),
            "{disk}"
        );
    }

    #[test]
    fn the_finished_claude_session_has_its_stream_its_figures_and_its_session() {
        let tmp = tempfile::tempdir().unwrap();
        let jobs = tmp.path().join("jobs");
        fs::create_dir(&jobs).unwrap();
        write_finished(&jobs).unwrap();
        let id = crate::jobs::JobId::parse("091500-clde").unwrap();
        let job = crate::jobs::read_job(&jobs, &id, Utc::now()).unwrap();
        assert_eq!(job.status, crate::jobs::Status::Completed);
        assert!(job.problems.is_empty(), "{:?}", job.problems);
        let meta = job.meta.unwrap();
        let usage = meta.usage.clone().unwrap();
        assert_eq!(usage.model, demo_claude::MODEL);
        assert_eq!(usage.duration_ms, Some(252_000));
        assert!(usage.cost_usd.unwrap() > 0.0 && usage.total_tokens() > 0);
        let stream = fs::read_to_string(jobs.join("091500-clde").join(STREAM_FILE)).unwrap();
        let last: serde_json::Value = serde_json::from_str(stream.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "result");
        assert_eq!(last["session_id"], meta.session_id.as_str());
        assert_eq!(last["total_cost_usd"].as_f64(), usage.cost_usd);
        assert_eq!(last["num_turns"].as_u64(), usage.turns);
    }
}
