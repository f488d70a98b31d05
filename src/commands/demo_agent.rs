//! `luzia demo-agent`: a simulated agent for the demo. It writes its own job directory the way
//! a supervised agent's is written (pid, output.log with colours, progress.json replaced
//! atomically, questions and gates, the exit line), at a human pace.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::jobs::agent::{self, Ask, AskResult, GateResult, GateSpec};
use crate::jobs::hitl::QuestionType;
use serde_json::json;

pub struct DemoAgent {
    dir: PathBuf,
}

pub fn run(job_dir: &Path, scenario: &str) -> Result<()> {
    let agent = DemoAgent {
        dir: job_dir.to_owned(),
    };
    agent.write("pid", &format!("{}\n", std::process::id()))?;
    let code = match scenario {
        "tests" => agent.tests()?,
        "build" => agent.build()?,
        "question" => agent.question()?,
        "gate" => agent.gate()?,
        "stream" => agent.stream()?,
        "fail" => agent.fail()?,
        "long" => agent.long()?,
        other => anyhow::bail!(
            "unknown demo scenario '{other}' (tests, build, question, gate, stream, fail, long)"
        ),
    };
    agent.say(&format!("\nexit:{code}"))?;
    Ok(())
}

impl DemoAgent {
    fn write(&self, name: &str, text: &str) -> Result<()> {
        let tmp = self.dir.join(format!(".{name}.tmp"));
        fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, self.dir.join(name))?;
        Ok(())
    }

    fn say(&self, line: &str) -> Result<()> {
        let path = self.dir.join("output.log");
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot append to {}", path.display()))?;
        writeln!(f, "{line}")?;
        Ok(())
    }

    fn progress(&self, value: serde_json::Value) -> Result<()> {
        let mut v = value;
        v["updated_at"] = json!(chrono::Utc::now().to_rfc3339());
        self.write("progress.json", &v.to_string())
    }

    fn pause(ms: u64) {
        sleep(Duration::from_millis(ms));
    }

    fn tests(&self) -> Result<i32> {
        let steps = [
            "Installing dependencies",
            "Building",
            "Running unit tests",
            "Running integration tests",
            "Writing the report",
        ];
        for (i, step) in steps.iter().enumerate() {
            self.progress(json!({"step": i + 1, "total_steps": steps.len(), "step_name": step}))?;
            self.say(&format!("\x1b[1m==> {step}\x1b[0m"))?;
            for k in 0..6 {
                self.say(&format!("  {step}: item {k} \x1b[32mok\x1b[0m"))?;
                Self::pause(700);
            }
        }
        self.say("\x1b[32m214 passed\x1b[0m, 0 failed in 27.1s")?;
        Ok(0)
    }

    fn build(&self) -> Result<i32> {
        for pct in (0..=100).step_by(4) {
            self.progress(json!({"percent": pct, "eta_seconds": (100 - pct) / 2}))?;
            self.say(&format!("\x1b[36mcompiling\x1b[0m crate {} of 25", pct / 4))?;
            Self::pause(2000);
        }
        self.say("\x1b[32mFinished\x1b[0m release artefacts in dist/")?;
        Ok(0)
    }

    /// Asks through the real protocol (the same code as `luzia ask`); after ten minutes the
    /// default stands.
    fn question(&self) -> Result<i32> {
        self.say("Found 3 pending migrations: 0041_add_index, 0042_split_table, 0043_backfill")?;
        self.say("\x1b[33mWaiting for an answer: which database?\x1b[0m")?;
        let spec = Ask {
            question: "Which database: production or staging?".into(),
            kind: QuestionType::Choice,
            options: vec!["production".into(), "staging".into()],
            context: "Running migration task".into(),
            timeout: Some(Duration::from_secs(600)),
            default: Some("staging".into()),
        };
        let answer = match agent::ask(&self.dir, &spec)? {
            AskResult::Answered(r) => format!("{} (answered by {})", r.answer, r.who()),
            AskResult::TimedOutDefault(r) => format!("{} (the default, nobody answered)", r.answer),
            AskResult::TimedOut => "nothing".into(),
        };
        self.say(&format!("Using: {answer}"))?;
        let notes = Ask {
            question: "Anything to note in the migration log?".into(),
            kind: QuestionType::Text,
            options: vec![],
            context: "free text, several lines are fine".into(),
            timeout: Some(Duration::from_secs(600)),
            default: Some("(nothing)".into()),
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

    fn gate(&self) -> Result<i32> {
        self.say("Index built: 1.2M documents, 3.4 GB")?;
        self.say("\x1b[33mWaiting at the approval gate 'deploy_index'\x1b[0m")?;
        let spec = GateSpec {
            gate: "deploy_index".into(),
            description: "About to swap the live search index (1.2M documents)".into(),
            context: String::new(),
            auto_approve_after: None,
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

    fn stream(&self) -> Result<i32> {
        for i in 0..2400 {
            if i % 40 == 0 {
                self.progress(json!({"percent": i * 100 / 2400}))?;
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

    fn fail(&self) -> Result<i32> {
        self.say("Upgrading dependencies...")?;
        Self::pause(3000);
        self.say("Collecting importer==2.0")?;
        Self::pause(4000);
        self.say("Traceback (most recent call last):")?;
        self.say("  File \"importer/cli.py\", line 3, in <module>")?;
        self.say("    import yaml")?;
        self.say("\x1b[31mModuleNotFoundError: No module named 'yaml'\x1b[0m")?;
        Ok(1)
    }

    fn long(&self) -> Result<i32> {
        for i in 0..180 {
            self.say(&format!("reading module {i} of 180"))?;
            Self::pause(5000);
        }
        Ok(0)
    }
}
