//! Claude Code's permission requests and questions, end to end: the real CLI, started by luzia
//! with its DEFAULT agent command (no bypass: it works as root), against a scripted fake
//! Messages API. A permission request becomes an approval gate of the job; denied from the CLI,
//! the model receives the reason word for word as an error tool result; approved, the command
//! really runs. AskUserQuestion becomes the job's questions, asked in turn, and the model
//! receives the answers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[macro_use]
mod tmux;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::claude::{FakeApi, Reply, clis_or_skip, offers, tool_results};
use serde_json::{Value, json};

/// Generous: the real CLI starts in a second or two, more on a loaded machine.
const WAIT: Duration = Duration::from_secs(90);

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    jobs: PathBuf,
    claude_dir: PathBuf,
}

impl Drop for World {
    fn drop(&mut self) {
        // An agent left waiting by a failed assertion must not outlive the test.
        common::kill_processes_mentioning(&self.base);
    }
}

impl World {
    /// A project with a `build/` directory, and a config that names no agent command: the
    /// default one runs.
    fn new(claude: &Path, api: &FakeApi) -> World {
        World::with_jobs(claude, api, None)
    }

    /// The same with the jobs root `jobs` (a cockpit's), else one of its own.
    fn with_jobs(claude: &Path, api: &FakeApi, jobs: Option<&Path>) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_owned();
        let jobs = jobs.map_or_else(|| base.join("jobs"), Path::to_owned);
        for d in ["jobs", "queue", "xdg", "home", "proj/build"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        fs::write(base.join("proj/build/out.o"), "x").unwrap();
        let q = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
        let config = format!(
            "jobs_dir = {}\nnotifications_log = {}\nqueue_dir = {}\n\n[agent]\nenv = {}\n\n\
             [projects.p]\npath = {}\n",
            q(&jobs),
            q(&base.join("notes.log")),
            q(&base.join("queue")),
            api.agent_env_toml(&base.join("home")),
            q(&base.join("proj")),
        );
        fs::write(base.join("config.toml"), config).unwrap();
        World {
            _tmp: tmp,
            claude_dir: claude.parent().unwrap().to_owned(),
            base,
            jobs,
        }
    }

    fn luzia(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_luzia"));
        for var in common::LUZIA_VARS {
            cmd.env_remove(var);
        }
        let path = std::env::join_paths(
            std::iter::once(self.claude_dir.clone())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
        )
        .unwrap();
        cmd.env("XDG_CONFIG_HOME", self.base.join("xdg"))
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .arg("--config")
            .arg(self.base.join("config.toml"))
            .args(args)
            .output()
            .unwrap()
    }

    /// `luzia run p TASK`: the new job's id.
    fn run(&self, task: &str) -> String {
        let out = self.luzia(&["run", "p", task]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        let jobs: Vec<Value> =
            serde_json::from_slice(&self.luzia(&["jobs", "--json"]).stdout).unwrap();
        jobs[0]["id"].as_str().unwrap().to_owned()
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.jobs.join(id)
    }

    fn log(&self, id: &str) -> String {
        fs::read_to_string(self.dir(id).join("output.log")).unwrap_or_default()
    }

    /// Waits until the job's pending request (`questions --json`) satisfies `want`.
    fn wait_pending(&self, id: &str, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        common::claude::wait_pending(luzia, || self.log(id), id, what, WAIT, want)
    }

    fn wait_finished(&self, id: &str) -> Value {
        let luzia = |args: &[&str]| self.luzia(args);
        common::claude::wait_finished(luzia, || self.log(id), id, WAIT)
    }
}

fn gate_of(q: &Value) -> Option<&Value> {
    q.get("approval").filter(|a| !a.is_null())
}

#[test]
fn a_permission_request_is_a_gate_and_a_denial_reaches_the_model_word_for_word() {
    for claude in clis_or_skip("a_permission_request_is_a_gate_and_a_denial_reaches") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "rm -rf build", "description": "Remove the build directory"}),
            ),
            Reply::text("Understood, the build stays."),
        ]);
        let w = World::new(&claude, &api);
        let id = w.run("Clean the build directory.");
        let pending = w.wait_pending(&id, "permission gate", |q| gate_of(q).is_some());
        let gate = gate_of(&pending).unwrap();
        assert_eq!(gate["gate"], "Bash: rm -rf build", "{pending}");
        assert!(
            gate["description"]
                .as_str()
                .unwrap()
                .contains("Remove the build directory"),
            "{pending}"
        );
        let reason = "not now: the release build is still being copied";
        let out = w.luzia(&["deny", &id, "--reason", reason]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));

        let turns = api.wait_for_requests(2, WAIT);
        let results = tool_results(&turns[1]);
        assert!(
            results
                .iter()
                .any(|(text, err)| *err && text.contains(reason)),
            "the reason reaches the model as an error tool result: {results:?}"
        );
        let first = &turns[0];
        let tools = &first["tools"];
        assert!(
            offers(first, "mcp__luzia__progress") && offers(first, "AskUserQuestion"),
            "the model is offered the progress tool and AskUserQuestion: {tools}"
        );
        assert!(
            !offers(first, "mcp__luzia__permission"),
            "the permission prompt tool is Claude Code's, never the model's: {tools}"
        );
        let job = w.wait_finished(&id);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
        assert!(
            w.base.join("proj/build/out.o").exists(),
            "denied: nothing was removed"
        );
        let meta: Value =
            serde_json::from_slice(&fs::read(w.dir(&id).join("meta.json")).unwrap()).unwrap();
        let argv: Vec<&str> = meta["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            !argv.contains(&"--dangerously-skip-permissions"),
            "{argv:?}"
        );
        assert!(argv.contains(&"mcp__luzia__permission"), "{argv:?}");
    }
}

#[test]
fn an_approved_permission_request_runs_the_command() {
    for claude in clis_or_skip("an_approved_permission_request_runs_the_command") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "rm -rf build", "description": "Remove the build directory"}),
            ),
            Reply::text("Removed."),
        ]);
        let w = World::new(&claude, &api);
        let id = w.run("Clean the build directory.");
        w.wait_pending(&id, "permission gate", |q| gate_of(q).is_some());
        assert!(
            w.base.join("proj/build").exists(),
            "nothing runs before the decision"
        );
        let out = w.luzia(&["approve", &id]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        let turns = api.wait_for_requests(2, WAIT);
        let results = tool_results(&turns[1]);
        assert!(results.iter().all(|(_, err)| !err), "{results:?}");
        let job = w.wait_finished(&id);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
        assert!(
            !w.base.join("proj/build").exists(),
            "approved: the command ran"
        );
    }
}

/// Claude Code's permission requests answered from a phone: `luzia notify --watch` with
/// `[telegram]` posts each as a gate to a Bot API server of the test's own; Deny with a reply
/// gives the model the reply word for word, and Approve lets the next command run.
#[test]
fn permission_requests_are_decided_from_telegram() {
    use common::telegram::{FakeBot, TOKEN};
    for claude in clis_or_skip("permission_requests_are_decided_from_telegram") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "rm -rf build", "description": "Remove the build directory"}),
            ),
            Reply::tool(
                "Bash",
                json!({"command": "touch build/stamp", "description": "Mark the build"}),
            ),
            Reply::text("Marked, and the build stays."),
        ]);
        let w = World::new(&claude, &api);
        let bot = FakeBot::start();
        let mut config = fs::read_to_string(w.base.join("config.toml")).unwrap();
        config.push_str(&format!(
            "\n[telegram]\nchat_id = \"{}\"\nallowed_users = [111]\napi = \"{}\"\n",
            common::telegram::CHAT,
            bot.url()
        ));
        fs::write(w.base.join("config.toml"), config).unwrap();
        let mut watch = Command::new(env!("CARGO_BIN_EXE_luzia"));
        for var in common::LUZIA_VARS {
            watch.env_remove(var);
        }
        let watcher = common::ChildGuard::new(
            watch
                .env("XDG_CONFIG_HOME", w.base.join("xdg"))
                .env("XDG_STATE_HOME", w.base.join("state"))
                .env("TELEGRAM_BOT_TOKEN", TOKEN)
                .arg("--config")
                .arg(w.base.join("config.toml"))
                .args(["notify", "--watch"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        let id = w.run("Clean the build directory.");
        let gate = bot.wait_message("Bash: rm -rf build");
        assert!(
            gate.text.contains("Remove the build directory"),
            "{}",
            gate.text
        );
        let buttons = bot.buttons(gate.id);
        let deny = bot.press((111, "bruno"), gate.id, &buttons[1].1);
        bot.wait_notice(deny);
        let prompt = bot.wait_message("Why deny?");
        let reason = "not now: the release build is still being copied";
        bot.reply((111, "bruno"), prompt.id, reason);
        let turns = api.wait_for_requests(2, WAIT);
        let results = tool_results(&turns[1]);
        assert!(
            results
                .iter()
                .any(|(text, err)| *err && text.contains(reason)),
            "the reason reaches the model as an error tool result: {results:?}"
        );
        let second = bot.wait_message("Bash: touch build/stamp");
        let approve = bot.press((111, "bruno"), second.id, &bot.buttons(second.id)[0].1);
        assert!(bot.wait_notice(approve).starts_with("Done"));
        let job = w.wait_finished(&id);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
        assert!(
            w.base.join("proj/build/out.o").exists(),
            "denied: nothing removed"
        );
        assert!(
            w.base.join("proj/build/stamp").exists(),
            "approved: the command ran"
        );
        bot.wait_edit(second.id, "approved by @bruno from Telegram");
        drop(watcher);
    }
}

/// AskUserQuestion's input: one single-choice question, then one of several choices.
fn migration_questions() -> Value {
    json!({"questions": [
        {"question": "Which database should the migration run on?", "header": "Database",
         "multiSelect": false, "options": [
            {"label": "staging", "description": "The copy refreshed every night"},
            {"label": "production", "description": "Live customer data"}]},
        {"question": "Which checks should run after it?", "header": "Checks",
         "multiSelect": true, "options": [
            {"label": "unit tests", "description": "Fast, no database"},
            {"label": "smoke tests", "description": "Against the migrated database"},
            {"label": "load tests", "description": "Slow"}]}
    ]})
}

#[test]
fn ask_user_question_is_asked_in_turn_and_the_model_receives_the_answers() {
    for claude in clis_or_skip("ask_user_question_is_asked_in_turn") {
        let api = FakeApi::start(vec![
            Reply::tool("AskUserQuestion", migration_questions()),
            Reply::text("Migrating staging."),
        ]);
        let w = World::new(&claude, &api);
        let id = w.run("Migrate the database.");
        let first = w.wait_pending(&id, "first question", |q| {
            q["question"]["question"] == "Which database should the migration run on?"
        });
        assert_eq!(
            first["question"]["options"],
            json!(["staging", "production"]),
            "{first}"
        );
        let out = w.luzia(&["answer", &id, "staging"]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
        let second = w.wait_pending(&id, "second question", |q| {
            q["question"]["question"] == "Which checks should run after it?"
        });
        assert_eq!(second["question"]["multi_select"], true, "{second}");
        let out = w.luzia(&["answer", &id, "3,1"]);
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));

        let turns = api.wait_for_requests(2, WAIT);
        let results = tool_results(&turns[1]);
        let said: String = results.iter().map(|(t, _)| t.as_str()).collect();
        assert!(results.iter().all(|(_, err)| !err), "{results:?}");
        assert!(said.contains("staging"), "{said}");
        assert!(said.contains("unit tests, load tests"), "{said}");
        let job = w.wait_finished(&id);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    }
}

#[test]
fn the_progress_tool_reports_without_asking_whether_deferred_or_not() {
    for claude in clis_or_skip("the_progress_tool_reports_without_asking") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "mcp__luzia__progress",
                json!({"percent": 40, "step": 2, "total_steps": 5, "step_name": "Running tests"}),
            ),
            Reply::text("Tests are running."),
        ]);
        let w = World::new(&claude, &api);
        let id = w.run("Run the tests and say how far you are.");
        // Luzia's own harmless tool never becomes a gate: nobody would be there to approve it.
        let deadline = Instant::now() + WAIT;
        let job = loop {
            let pending = w.luzia(&["questions", "--json"]);
            let pending: Vec<Value> = serde_json::from_slice(&pending.stdout).unwrap_or_default();
            assert!(
                !pending.iter().any(|q| q["job_id"] == id.as_str()),
                "the progress call asked the operator: {pending:?}"
            );
            let job: Value =
                serde_json::from_slice(&w.luzia(&["jobs", &id, "--json"]).stdout).unwrap();
            if !job["exit_code"].is_null() {
                break job;
            }
            assert!(Instant::now() < deadline, "{job}\n{}", w.log(&id));
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
        let progress: Value =
            serde_json::from_slice(&fs::read(w.dir(&id).join("progress.json")).unwrap()).unwrap();
        assert_eq!(progress["percent"], json!(40.0), "{progress}");
        assert_eq!(progress["step_name"], "Running tests", "{progress}");
        let turns = api.requests();
        let results = tool_results(turns.last().unwrap());
        assert!(
            results
                .iter()
                .any(|(t, err)| !err && t.contains("progress recorded")),
            "{results:?}"
        );
        // A version that defers MCP tools had the model load it first, as a real model does.
        if !turns[0]["tools"]
            .to_string()
            .contains("mcp__luzia__progress")
        {
            assert_eq!(api.searched(), ["mcp__luzia__progress"]);
        }
    }
}

// ----------------------------------------------------------------------------------------------
// The same from the cockpit, in a real terminal (tmux).

/// The cockpit on the jobs root the agents are dispatched to, and the world dispatching them.
fn cockpit_world(claude: &Path, api: &FakeApi) -> (tmux::Sandbox, World) {
    let sb = tmux::Sandbox::new();
    let w = World::with_jobs(claude, api, Some(&sb.root));
    (sb, w)
}

/// Opens the inbox until it shows `text` (the request may be published a moment after the row
/// says waiting, or after the inbox closed on the previous answer).
fn open_inbox_on(ck: &tmux::Cockpit, text: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        // The popup's title names what it shows; without one, the inbox is closed. The text
        // alone is not enough: the table's activity cell can show it too, and a key meant for
        // the popup would then reach the main screen (`d` opening the diff view).
        let screen = ck.screen();
        let open = screen.contains(" question · ") || screen.contains(" approval gate · ");
        if open && screen.contains(text) {
            return;
        }
        if !open {
            ck.key("i");
        }
        assert!(
            Instant::now() < deadline,
            "the inbox never showed {text:?}:\n{}",
            ck.screen().text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_permission_request_denied_in_the_cockpit_gives_the_model_the_reason() {
    require_tmux!();
    for claude in clis_or_skip("a_permission_request_denied_in_the_cockpit") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "rm -rf build", "description": "Remove the build directory"}),
            ),
            Reply::text("Leaving it."),
        ]);
        let (sb, w) = cockpit_world(&claude, &api);
        let ck = tmux::Cockpit::start(&sb, tmux::Opts::default());
        ck.wait_ready();
        let id = w.run("Clean the build directory.");
        w.wait_pending(&id, "permission gate", |q| gate_of(q).is_some());
        open_inbox_on(&ck, "Bash: rm -rf build");
        ck.wait_text("Remove the build directory");
        ck.key("d");
        ck.wait_text("reason for the denial");
        let reason = "not from the cockpit either: keep build";
        ck.type_text(reason);
        ck.key("Enter");
        let turns = api.wait_for_requests(2, WAIT);
        let results = tool_results(&turns[1]);
        assert!(
            results
                .iter()
                .any(|(text, err)| *err && text.contains(reason)),
            "{results:?}"
        );
        let job = w.wait_finished(&id);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
        assert!(w.base.join("proj/build/out.o").exists());
    }
}

#[test]
fn a_permission_request_approved_in_the_cockpit_runs_the_command() {
    require_tmux!();
    for claude in clis_or_skip("a_permission_request_approved_in_the_cockpit") {
        let api = FakeApi::start(vec![
            Reply::tool(
                "Bash",
                json!({"command": "rm -rf build", "description": "Remove the build directory"}),
            ),
            Reply::text("Removed."),
        ]);
        let (sb, w) = cockpit_world(&claude, &api);
        let ck = tmux::Cockpit::start(&sb, tmux::Opts::default());
        ck.wait_ready();
        let id = w.run("Clean the build directory.");
        w.wait_pending(&id, "permission gate", |q| gate_of(q).is_some());
        open_inbox_on(&ck, "Bash: rm -rf build");
        ck.key("a");
        let job = w.wait_finished(&id);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
        assert!(
            !w.base.join("proj/build").exists(),
            "approved: the command ran"
        );
    }
}

#[test]
fn ask_user_question_answered_in_the_cockpit_inbox_reaches_the_model() {
    require_tmux!();
    for claude in clis_or_skip("ask_user_question_answered_in_the_cockpit") {
        let api = FakeApi::start(vec![
            Reply::tool("AskUserQuestion", migration_questions()),
            Reply::text("Migrating staging."),
        ]);
        let (sb, w) = cockpit_world(&claude, &api);
        let ck = tmux::Cockpit::start(&sb, tmux::Opts::default());
        ck.wait_ready();
        let id = w.run("Migrate the database.");
        open_inbox_on(&ck, "Which database should the migration run on?");
        ck.wait_text("Live customer data");
        ck.keys(&["2", "Enter"]);
        open_inbox_on(&ck, "Which checks should run after it?");
        ck.wait_text("Against the migrated database");
        ck.keys(&["1", "Space", "3", "Space"]);
        ck.wait_text("[x] 3) load tests");
        ck.key("Enter");

        let turns = api.wait_for_requests(2, WAIT);
        let results = tool_results(&turns[1]);
        let said: String = results.iter().map(|(t, _)| t.as_str()).collect();
        assert!(results.iter().all(|(_, err)| !err), "{results:?}");
        assert!(said.contains("production"), "{said}");
        assert!(said.contains("unit tests, load tests"), "{said}");
        let job = w.wait_finished(&id);
        assert_eq!(job["status"], "completed", "{job}\n{}", w.log(&id));
    }
}
