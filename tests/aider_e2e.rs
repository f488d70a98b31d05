//! The real Aider run by `luzia run` as a text agent, against the fake Chat Completions API the
//! test starts: the job completes, and the figures Aider prints after its message (`Tokens: N
//! sent, M received. Cost: $X message, $Y session.`) are recorded in meta.json's usage and shown
//! by `luzia jobs ID`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::agents::{AIDER, agent_or_skip};
use common::fake_chat::{self, FakeChat};
use common::http::Reply;
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long Aider may take (it starts slowly on a loaded machine).
const GUARD: Duration = Duration::from_secs(120);
/// What the fake model costs, per token, as a user tells Aider of a model it does not know.
const INPUT_PRICE: f64 = 0.000_003;
const OUTPUT_PRICE: f64 = 0.000_015;

struct World {
    tmp: TempDir,
    jobs: PathBuf,
    config: PathBuf,
}

impl World {
    fn new(aider: &Path, api: &FakeChat) -> World {
        let tmp = tempfile::Builder::new()
            .prefix("luzia-aider-")
            .tempdir()
            .unwrap();
        let base = tmp.path();
        let (jobs, proj, home) = (base.join("jobs"), base.join("proj"), base.join("home"));
        for d in [&jobs, &proj, &home, &base.join("xdg")] {
            fs::create_dir_all(d).unwrap();
        }
        let model = format!("openai/{}", fake_chat::MODEL);
        let metadata = home.join("model-metadata.json");
        let price = json!({&model: {"max_tokens": 8192, "max_input_tokens": 128000,
            "max_output_tokens": 8192, "input_cost_per_token": INPUT_PRICE,
            "output_cost_per_token": OUTPUT_PRICE, "litellm_provider": "openai", "mode": "chat"}});
        fs::write(&metadata, price.to_string()).unwrap();
        let q = |s: &str| Value::from(s).to_string();
        let p = |p: &Path| q(p.to_str().unwrap());
        // Not streamed: then Aider's figures are the API's usage, not its own estimate.
        let argv = [
            p(aider),
            q("--model"),
            q(&model),
            q("--model-metadata-file"),
            p(&metadata),
            q("--no-stream"),
            q("--yes-always"),
            q("--no-git"),
            q("--no-check-update"),
            q("--no-show-release-notes"),
            q("--analytics-disable"),
            q("--message-file"),
            q("{job_dir}/prompt.txt"),
        ];
        let env = format!(
            "{{ OPENAI_API_BASE = {}, OPENAI_API_KEY = {}, HOME = {} }}",
            q(&api.base_url()),
            q(fake_chat::KEY),
            p(&home)
        );
        let text = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n\
             [agent]\ncommand = [{}]\nprompt_template = \"{{task}}\"\nenv = {env}\n\n\
             [projects.p]\npath = {}\n",
            p(&jobs),
            p(&base.join("notifications.log")),
            p(&base.join("queue")),
            argv.join(", "),
            p(&proj),
        );
        let config = base.join("config.toml");
        fs::write(&config, text).unwrap();
        World { tmp, jobs, config }
    }

    fn luzia(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = assert_cmd::Command::cargo_bin("luzia").unwrap();
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.tmp.path().join("xdg"))
            .env("NO_COLOR", "1")
            .env("TZ", "UTC")
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .timeout(GUARD)
            .output()
            .unwrap()
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.jobs.join(id).join("output.log")).unwrap_or_default()
    }
}

#[test]
fn an_aider_job_completes_and_its_tokens_and_cost_are_recorded_and_shown() {
    let test = "an_aider_job_completes_and_its_tokens_and_cost_are_recorded_and_shown";
    let Some(aider) = agent_or_skip(test, &AIDER) else {
        return;
    };
    let api = FakeChat::every_request(vec![Reply::text("Hello from the fake model.")]);
    let world = World::new(&aider, &api);
    let out = world.luzia(&["run", "p", "--", "Say hello."]);
    assert!(out.status.success(), "{}", common::stderr_of(&out));
    let id = common::stdout_of(&out).trim().to_owned();

    let luzia = |args: &[&str]| world.luzia(args);
    let job = common::claude::wait_finished(luzia, || world.log(&id), &id, GUARD);
    let log = world.log(&id);
    assert_eq!(job["status"], "completed", "{job}\n{log}");
    assert!(log.contains("Hello from the fake model."), "{log}");
    assert!(log.contains("Tokens: 900 sent, 40 received."), "{log}");

    let usage = &job["usage"];
    assert_eq!(usage["input_tokens"], fake_chat::INPUT_TOKENS, "{job}");
    assert_eq!(usage["output_tokens"], fake_chat::OUTPUT_TOKENS, "{job}");
    let cost = usage["cost_usd"]
        .as_f64()
        .unwrap_or_else(|| panic!("no cost: {job}"));
    let priced = fake_chat::INPUT_TOKENS as f64 * INPUT_PRICE
        + fake_chat::OUTPUT_TOKENS as f64 * OUTPUT_PRICE;
    assert!((cost - priced).abs() < 0.000_05, "{cost} is not {priced}");

    let shown = common::stdout_of(&world.luzia(&["jobs", &id]));
    assert!(shown.contains("900 in · 40 out"), "{shown}");
    assert!(shown.contains("<$0.01"), "{shown}");
}
