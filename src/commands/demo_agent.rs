//! `luzia demo-agent`: a simulated agent for the demo, run by the real supervisor like any
//! agent. It reads its prompt on stdin, picks what to do from the task's words, writes coloured
//! output on stdout at a human pace, reports progress, asks questions and waits at gates through
//! the real protocol, and exits with a code that means something. The Claude-style agent, which
//! prints Claude Code's stream-json instead, is `demo_claude`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;

use crate::cli::DemoAgentArgs;
use crate::jobs::fs::publish::write_atomic;
use crate::jobs::hitl::agent::{self, Ask, AskResult, GateResult, GateSpec, ProgressReport};
use crate::jobs::model::waiting::QuestionType;

/// The scenario a task's words ask for, first match wins.
pub fn scenario_for(task: &str) -> &'static str {
    let t = task.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| t.contains(w));
    // Whole words: "installs" and "installed" must not stall.
    let stalls = t
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.starts_with("stall"));
    if has(&["claude"]) {
        "claude"
    } else if stalls || has(&["goes quiet"]) {
        "stall"
    } else if has(&["needs input", "input"]) {
        "needs_input"
    } else if has(&["ask", "question", "which"]) {
        "question"
    } else if has(&["gate", "deploy", "approv"]) {
        "gate"
    } else if has(&["fail", "error", "break"]) {
        "fail"
    } else if has(&["stream", "fast", "index"]) {
        "stream"
    } else if has(&["long", "slow", "refactor"]) {
        "long"
    } else if has(&["build", "compile"]) {
        "build"
    } else {
        "tests"
    }
}

pub fn run(args: &DemoAgentArgs) -> Result<u8> {
    // The prompt arrives on stdin like any agent's; the scenario comes from the task alone (the
    // prompt's own instructions mention asking and gates).
    let mut prompt = String::new();
    std::io::stdin()
        .read_to_string(&mut prompt)
        .context("cannot read the prompt on stdin")?;
    // A retry of a job that stopped for an answer carries the answer at the end of its prompt.
    let answer = prompt
        .split_once("\nThe answer is:\n")
        .map(|(_, a)| a.trim().to_string());
    let meta = crate::jobs::fs::files::read_capped(
        &args.job_dir.join("meta.json"),
        crate::jobs::fs::files::META_FILE_CAP,
    )
    .ok()
    .flatten()
    .and_then(|b| crate::jobs::Meta::parse(&b).ok());
    let task = meta.as_ref().map_or(prompt, |m| m.task.to_string());
    let scenario = args
        .scenario
        .clone()
        .unwrap_or_else(|| scenario_for(&task).to_string());
    let agent = Demo {
        dir: args.job_dir.clone(),
        out: std::io::stdout(),
    };
    let code = match scenario.as_str() {
        "claude" => {
            // The session luzia fixed at dispatch, when it did; else a fresh one, as Claude
            // Code makes.
            let session = meta
                .map(|m| m.session_id.to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(super::demo_claude::session_id);
            super::demo_claude::run(&args.job_dir, session)?
        }
        "tests" => agent.tests()?,
        "build" => agent.build()?,
        "question" => agent.question()?,
        "gate" => agent.gate()?,
        "stream" => agent.stream()?,
        "fail" => agent.fail()?,
        "long" => agent.long()?,
        "stall" => agent.stall()?,
        "needs_input" => agent.needs_input(answer.as_deref())?,
        other => anyhow::bail!("unknown demo scenario '{other}'"),
    };
    Ok(code)
}

/// What pip prints in the failing scenario: the upgrade itself goes through.
const FAIL_PIP: &[&str] = &[
    "Collecting importer-core==2.0.1 (from -r requirements.txt (line 1))",
    "  Downloading importer_core-2.0.1-py3-none-any.whl (48 kB)",
    "Collecting requests>=2.31 (from -r requirements.txt (line 2))",
    "  Using cached requests-2.32.3-py3-none-any.whl (64 kB)",
    "Installing collected packages: importer-core, requests",
    "  Attempting uninstall: importer-core",
    "    Found existing installation: importer-core 1.4.2",
    "    Uninstalling importer-core-1.4.2:",
    "      Successfully uninstalled importer-core-1.4.2",
    "Successfully installed importer-core-2.0.1 requests-2.32.3",
];
const FAIL_RUN: &str = "$ python /srv/librec/importer/run.py --check";
/// ...and the importer no longer starts: importer-core 2 stopped pulling in PyYAML.
const FAIL_TRACEBACK: &[&str] = &[
    "Traceback (most recent call last):",
    "  File \"/srv/librec/importer/run.py\", line 12, in <module>",
    "    import yaml",
    "ModuleNotFoundError: No module named 'yaml'",
];

/// How long the stalling scenario stays silent before it gives up.
const STALL_CAP_SECS: u64 = 30 * 60;

struct Demo {
    dir: PathBuf,
    out: std::io::Stdout,
}

impl Demo {
    fn say(&self, line: &str) -> Result<()> {
        let mut out = self.out.lock();
        writeln!(out, "{line}")?;
        out.flush()?;
        Ok(())
    }

    fn progress(&self, report: ProgressReport) -> Result<()> {
        agent::report_progress(&self.dir, &report)?;
        Ok(())
    }

    /// Step `k` of `n`, called `name`.
    fn step(k: usize, n: usize, name: &str) -> ProgressReport {
        ProgressReport {
            step: Some(k as u64),
            total_steps: Some(n as u64),
            step_name: Some(name.into()),
            ..ProgressReport::default()
        }
    }

    fn percent(p: usize) -> ProgressReport {
        ProgressReport {
            percent: Some(p as f64),
            ..ProgressReport::default()
        }
    }

    fn pause(ms: u64) {
        sleep(Duration::from_millis(ms));
    }

    fn tests(&self) -> Result<u8> {
        let steps = [
            "Installing dependencies",
            "Building",
            "Running unit tests",
            "Running integration tests",
            "Writing the report",
        ];
        for (i, step) in steps.iter().enumerate() {
            self.progress(Self::step(i + 1, steps.len(), step))?;
            self.say(&format!("\x1b[1m==> {step}\x1b[0m"))?;
            for k in 0..6 {
                self.say(&format!("  {step}: item {k} \x1b[32mok\x1b[0m"))?;
                Self::pause(700);
            }
        }
        self.say("\x1b[32m214 passed\x1b[0m, 0 failed in 27.1s")?;
        Ok(0)
    }

    fn build(&self) -> Result<u8> {
        for pct in (0..=100).step_by(4) {
            self.progress(ProgressReport {
                eta_seconds: Some((100 - pct) as u64 / 2),
                ..Self::percent(pct)
            })?;
            self.say(&format!("\x1b[36mcompiling\x1b[0m crate {} of 25", pct / 4))?;
            Self::pause(2000);
        }
        self.say("\x1b[32mFinished\x1b[0m release artefacts in dist/")?;
        Ok(0)
    }

    /// A choice, then free text, through the real protocol; after ten minutes the defaults stand.
    fn question(&self) -> Result<u8> {
        self.say("Found 3 pending migrations: 0041_add_index, 0042_split_table, 0043_backfill")?;
        self.say("\x1b[33mWaiting for an answer: which database?\x1b[0m")?;
        let which = Ask {
            question: "Which database: production or staging?".into(),
            kind: QuestionType::Choice,
            options: vec!["production".into(), "staging".into()],
            context: "Running migration task".into(),
            timeout: Some(Duration::from_secs(600)),
            default: Some("staging".into()),
            header: String::new(),
            descriptions: Vec::new(),
            multi_select: false,
        };
        let answer = match agent::ask(&self.dir, &which)? {
            AskResult::Answered(r) => format!("{} (answered by {})", r.answer, r.who()),
            AskResult::TimedOutDefault(r) => format!("{} (the default: nobody answered)", r.answer),
            AskResult::TimedOut => "nothing".into(),
        };
        self.say(&format!("Using: {answer}"))?;
        let notes = Ask {
            question: "Anything to note in the migration log?".into(),
            kind: QuestionType::Text,
            options: vec![],
            context: "free text; several lines are fine".into(),
            timeout: Some(Duration::from_secs(600)),
            default: Some("(nothing)".into()),
            header: String::new(),
            descriptions: Vec::new(),
            multi_select: false,
        };
        if let AskResult::Answered(r) | AskResult::TimedOutDefault(r) =
            agent::ask(&self.dir, &notes)?
        {
            for line in r.answer.lines() {
                self.say(&format!("note: {line}"))?;
            }
        }
        for m in ["0041_add_index", "0042_split_table", "0043_backfill"] {
            self.say(&format!("applied {m}"))?;
            Self::pause(1500);
        }
        Ok(0)
    }

    fn gate(&self) -> Result<u8> {
        self.say("Index built: 1.2M documents, 3.4 GB")?;
        self.say("\x1b[33mWaiting at the approval gate 'deploy_index'\x1b[0m")?;
        let spec = GateSpec {
            gate: "deploy_index".into(),
            description: "About to swap the live search index (1.2M documents)".into(),
            context: String::new(),
            auto_approve_after: None,
            allow_session: None,
        };
        match agent::gate(&self.dir, &spec)? {
            GateResult::Decided(d) if !d.approved => {
                self.say(&format!("\x1b[31mDenied\x1b[0m: {}", d.reason))?;
                Ok(1)
            }
            _ => {
                self.say("Approved: swapping the index")?;
                Ok(0)
            }
        }
    }

    fn stream(&self) -> Result<u8> {
        for i in 0..2400 {
            if i % 40 == 0 {
                self.progress(Self::percent(i * 100 / 2400))?;
            }
            let colour = 31 + (i % 6);
            self.say(&format!(
                "indexed doc {i:05} \x1b[{colour}m■\x1b[0m {} bytes",
                1000 + (i * 37) % 9000
            ))?;
            Self::pause(50);
        }
        Ok(0)
    }

    /// An upgrade that goes through, then the importer cannot start: pip's own lines, then a
    /// traceback exactly as Python prints it (no colour: stdout is a file).
    fn fail(&self) -> Result<u8> {
        self.say("$ pip install --upgrade -r requirements.txt")?;
        Self::pause(1500);
        for line in FAIL_PIP {
            self.say(line)?;
            Self::pause(400);
        }
        self.say(FAIL_RUN)?;
        Self::pause(1500);
        for line in FAIL_TRACEBACK {
            self.say(line)?;
        }
        Ok(1)
    }

    fn long(&self) -> Result<u8> {
        for i in 0..180 {
            self.progress(Self::step(i + 1, 180, "reading modules"))?;
            self.say(&format!("reading module {i} of 180"))?;
            Self::pause(5000);
        }
        Ok(0)
    }

    /// A few lines and one progress report, then silence: no output, no progress, until it is
    /// killed (or gives up after half an hour, so that nothing lingers).
    fn stall(&self) -> Result<u8> {
        self.say("$ sphinx-build -b html docs docs/_build/html")?;
        Self::pause(500);
        self.say("Running Sphinx v7.2.6")?;
        self.say("loading pickled environment... done")?;
        self.progress(ProgressReport {
            step_name: Some("reading sources".into()),
            ..Self::percent(12)
        })?;
        self.say("reading sources... [ 12%] api/importer")?;
        self.say("waiting for the lock on docs/_build/.doctrees (held by pid 4242)")?;
        for _ in 0..STALL_CAP_SECS {
            sleep(Duration::from_secs(1));
        }
        self.say("gave up waiting for the lock after 30 minutes")?;
        Ok(1)
    }

    /// The orchestrator's pattern: write the question by hand and stop with exit 100; retried
    /// with the answer, go on with it.
    fn needs_input(&self, answer: Option<&str>) -> Result<u8> {
        if let Some(answer) = answer {
            self.say(&format!("Told which tables to drop: {answer}."))?;
            Self::pause(1500);
            self.say("Dropped what I was told to; the rest stays.")?;
            return Ok(0);
        }
        self.say("Found 3 stale tables in the staging database.")?;
        Self::pause(2000);
        let q = json!({"id": "q1", "type": "choice", "question": "Which tables may I drop?",
                       "options": ["all three", "only the empty ones", "none"],
                       "context": "tmp_import, tmp_export, old_users"});
        write_atomic(
            Path::new(&self.dir),
            "clarification.json",
            q.to_string().as_bytes(),
        )?;
        self.say("Stopping: I need to know which tables to drop.")?;
        Ok(100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_picks_the_scenario() {
        let cases = [
            ("Claude Code: fix the failing playlist test", "claude"),
            ("Run the test suite", "tests"),
            ("Apply the migration (ask which database)", "question"),
            ("Deploy the index behind an approval gate", "gate"),
            ("This one fails", "fail"),
            ("Re-index, streaming", "stream"),
            ("Refactor: a long one", "long"),
            ("Build the artefacts", "build"),
            ("Clean up: stops, needs input", "needs_input"),
            (
                "Generate the API reference (goes quiet and stalls)",
                "stall",
            ),
            ("The job that stalls", "stall"),
            ("Stalling on purpose", "stall"),
            // "installs" holds "stalls" and must not pick it.
            ("Run the script that installs the linter", "tests"),
            ("Check what was installed", "tests"),
            ("Upgrade the importer dependencies (this one fails)", "fail"),
        ];
        for (task, want) in cases {
            assert_eq!(scenario_for(task), want, "{task}");
        }
    }

    /// The failing scenario's output is found for what it is: a missing Python module, and not
    /// anything worse on the way there.
    #[test]
    fn the_failure_is_a_known_issue() {
        use crate::jobs::insight::known_issues::{PatternSet, scan_text};
        let set = PatternSet::builtin();
        let pip = FAIL_PIP.join("\n") + "\n" + FAIL_RUN + "\n";
        assert!(scan_text(&set, pip.as_bytes()).is_empty(), "{pip}");
        let all = pip + &FAIL_TRACEBACK.join("\n") + "\n";
        let found = scan_text(&set, all.as_bytes());
        let worst = found.worst().expect("a known issue");
        assert_eq!(set.pattern(worst.pattern).name, "python-module-not-found");
        assert_eq!(
            &*worst.last_line,
            "ModuleNotFoundError: No module named 'yaml'"
        );
    }
}
